/* select.c: CPU kernels of Unique and NonMaxSuppression (src/ops/select.c), which compute
 * the selection again after inference sized the outputs with it. */
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/select.h"

static og_op_ctx op_ctx_of(const og_kernel_ctx *k)
{
    og_op_ctx c = {k->node, k->alloc, NULL, true};
    return c;
}

static og_status k_unique(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *const *out, int n_out)
{
    og_op_ctx c = op_ctx_of(k);
    const og_tensor *x = in[0];
    og_unique u;
    /* the order bound to x's dtype (select_unique), or without a binding picked there */
    og_status st = og_unique_run(&c, x, k->impl, &u);
    if (st) return st;
    og_tensor *y = out[0];
    if (y->numel != 0 && u.n_unique != (u.axis < 0 ? y->numel : y->dims[u.axis])) {
        og_unique_free(k->alloc, &u);
        return og_kernel_error(k, OG_ERR_INTERNAL, "the output does not hold %lld items",
                               (long long)u.n_unique);
    }
    /* Y: item first[q] at position q; an item is `inner` contiguous elements in each of
     * `outer` rows (the flattened tensor: one element in one row) */
    size_t es = og_dtype_storage_size(x->dtype);
    int64_t outer = 1, inner = 1;
    if (u.axis >= 0) {
        for (int d = 0; d < u.axis; d++) outer *= x->dims[d];
        for (int d = u.axis + 1; d < x->rank; d++) inner *= x->dims[d];
    }
    const char *src = x->data;
    char *dst = y->data;
    for (int64_t o = 0; y->numel && o < outer; o++)
        for (int64_t q = 0; q < u.n_unique; q++)
            memcpy(dst + ((o * u.n_unique + q) * inner) * (int64_t)es,
                   src + ((o * u.m + u.first[q]) * inner) * (int64_t)es, (size_t)inner * es);
    if (x->dtype == OG_STRING && y->numel) st = og_tensor_own_strings(y);
    int64_t *const arrays[] = {u.first, u.inverse, u.count};
    for (int j = 1; !st && j < n_out && j < 4; j++)
        if (out[j] && out[j]->numel)
            memcpy(out[j]->data, arrays[j - 1], (size_t)out[j]->numel * sizeof(int64_t));
    og_unique_free(k->alloc, &u);
    return st;
}

static og_status k_nms(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                       og_tensor *const *out, int n_out)
{
    og_op_ctx c = op_ctx_of(k);
    int64_t *sel = NULL, n = 0;
    og_status st = og_nms_run(&c, in, n_in, &sel, &n);
    if (st) return st;
    if (out[0]->numel != 3 * n) {
        og_free(k->alloc, sel);
        return og_kernel_error(k, OG_ERR_INTERNAL, "the output does not hold %lld boxes",
                               (long long)n);
    }
    if (n) memcpy(out[0]->data, sel, (size_t)(3 * n) * sizeof *sel);
    og_free(k->alloc, sel);
    return OG_OK;
}

static const og_dtype nms_types[] = {OG_FLOAT, OG_UNDEFINED};

/* Unique compares its elements in an order of their dtype's (og_unique_order), every dtype
 * having one; it then moves the items it keeps by size. */
static const void *select_unique(const og_node *n, og_dtype t)
{
    (void)n;
    return og_unique_order_of(t);
}

/* NonMaxSuppression reads float32 boxes and scores through float pointers: its list is its
 * one type, no loop to pick. */
const og_kernel_def og_cpu_select[] = {
    {.name = "Unique", .domain = "", .fn = k_unique, .select = select_unique, .strings = 1},
    {.name = "NonMaxSuppression", .domain = "", .fn = k_nms, .types = nms_types},
    {.name = NULL},
};
