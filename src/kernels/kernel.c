/* kernel.c: finding and binding a device's kernels (kernel.h), shared by every backend. */
#include <stdio.h>
#include <string.h>

#include "kernels/kernel.h"

static bool same_domain(const char *a, const char *b)
{
    if (!a || strcmp(a, "ai.onnx") == 0) a = "";
    if (!b || strcmp(b, "ai.onnx") == 0) b = "";
    return strcmp(a, b) == 0;
}

static bool covers(const og_kernel_def *d, int since)
{
    return since == 0 || ((d->since_min == 0 || since >= d->since_min) &&
                          (d->since_max == 0 || since <= d->since_max));
}

const og_kernel_def *og_backend_find(const og_backend *b, const char *domain, const char *name,
                                     int since)
{
    for (int t = 0; b->tables[t]; t++)
        for (const og_kernel_def *d = b->tables[t]; d->name; d++)
            if (strcmp(d->name, name) == 0 && same_domain(d->domain, domain) && covers(d, since))
                return d;
    return NULL;
}

static bool in_list(const og_dtype *types, og_dtype t)
{
    for (; *types; types++)
        if (*types == t) return true;
    return false;
}

/* Every dtype code onnxgrad names, for the list of what an entry computes. */
static const og_dtype all_dtypes[] = {OG_FLOAT,          OG_DOUBLE,     OG_FLOAT16,
                                      OG_BFLOAT16,       OG_INT8,       OG_INT16,
                                      OG_INT32,          OG_INT64,      OG_UINT8,
                                      OG_UINT16,         OG_UINT32,     OG_UINT64,
                                      OG_BOOL,           OG_STRING,     OG_FLOAT8E4M3FN,
                                      OG_FLOAT8E4M3FNUZ, OG_FLOAT8E5M2, OG_FLOAT8E5M2FNUZ,
                                      OG_UINT4,          OG_INT4,       0};

/* The address whose meaning is "no binding: the kernel picks at run time" (kernel.h). */
const char og_kernel_at_run = 0;

/* Whether entry d computes node n with its type input of dtype t, the other inputs' static
 * dtypes being types[] and the outputs' outs[] (for select_types; n->n_in and n->n_out <=
 * OG_KERNEL_MAX_TYPED): the implementation it chose in *impl (NULL for none, or for one
 * picked at run time). */
static bool entry_has(const og_kernel_def *d, const og_node *n, const og_dtype *types,
                      const og_dtype *outs, og_dtype t, const void **impl)
{
    *impl = NULL;
    if (d->types && !in_list(d->types, t)) return false;
    if (d->select) {
        *impl = d->select(n, t);
        return *impl != NULL;
    }
    if (d->select_types) {
        og_dtype all[OG_KERNEL_MAX_TYPED];
        for (int i = 0; i < n->n_in; i++) all[i] = i == d->type_input ? t : types[i];
        const void *p = d->select_types(n, all, outs);
        if (p == OG_KERNEL_AT_RUN) return true;
        *impl = p;
        return p != NULL;
    }
    return true;
}

/* ", with input 1 float32, output 0 int8": the other inputs' and the outputs' static dtypes
 * that a select_types entry read, for a refusal (empty otherwise). */
static void other_types(const og_kernel_def *d, const og_node *n, const og_dtype *types,
                        const og_dtype *outs, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    if (!d->select_types) return;
    for (int i = 0; i < n->n_in + n->n_out && used < size - 1; i++) {
        bool is_in = i < n->n_in;
        og_dtype t = is_in ? types[i] : outs[i - n->n_in];
        if ((!is_in || i != d->type_input) && t != OG_UNDEFINED)
            used += (size_t)snprintf(buf + used, size - used, "%s %s %d %s", used ? "," : " with",
                                     is_in ? "input" : "output", is_in ? i : i - n->n_in,
                                     og_dtype_name(t));
    }
}

og_status og_backend_bind(const og_backend *b, const og_node *n, const og_dtype *in_types,
                          const og_dtype *out_types, og_kernel_binding *out)
{
    char label[256];
    out->fn = NULL;
    out->impl = NULL;
    out->all_types = 0;
    out->type_input = 0;
    out->type = OG_UNDEFINED;
    out->strings = 0;
    out->act = 0;
    out->perm_in = 0;
    const og_kernel_def *d = og_backend_find(b, n->domain, n->op_type, n->since_version);
    if (!d) {
        if (n->op && (n->op->flags & OG_OP_ALIAS_INPUT0)) {
            out->strings = 1; /* a view moves nothing */
            return OG_OK;
        }
        if (og_backend_find(b, n->domain, n->op_type, 0))
            return og_error(OG_ERR_UNSUPPORTED,
                            "%s: the %s kernels of %s do not compute since-version %d of the op",
                            og_node_label(n, label, sizeof label), b->name, n->op_type,
                            n->since_version);
        return og_error(OG_ERR_UNSUPPORTED, "%s: op %s has no %s kernel",
                        og_node_label(n, label, sizeof label), n->op_type, b->name);
    }
    out->fn = d->fn;
    out->strings = d->strings;
    out->act = d->act;
    out->perm_in = d->perm_in;
    og_dtype type = d->type_input < n->n_in ? in_types[d->type_input] : OG_UNDEFINED;
    out->type_input = d->type_input;
    out->type = type;
    if (type == OG_UNDEFINED || (!d->types && !d->select && !d->select_types)) return OG_OK;
    if (d->select_types && (n->n_in > OG_KERNEL_MAX_TYPED || n->n_out > OG_KERNEL_MAX_TYPED))
        return og_error(
            OG_ERR_INTERNAL, "%s: %d inputs and %d outputs, more than the %s kernel of %s reads",
            og_node_label(n, label, sizeof label), n->n_in, n->n_out, b->name, n->op_type);
    og_dtype outs[OG_KERNEL_MAX_TYPED];
    for (int j = 0; d->select_types && j < n->n_out; j++)
        outs[j] = out_types ? out_types[j] : OG_UNDEFINED;
    if (entry_has(d, n, in_types, outs, type, &out->impl)) {
        out->all_types = d->select_types && out->impl;
        for (int i = 0; out->all_types && i < n->n_in; i++) out->types[i] = in_types[i];
        for (int j = 0; out->all_types && j < n->n_out; j++) out->out_types[j] = outs[j];
        return OG_OK;
    }
    char have[256] = "", others[160];
    size_t used = 0;
    const void *unused;
    for (const og_dtype *t = all_dtypes; *t && used < sizeof have - 1; t++)
        if (entry_has(d, n, in_types, outs, *t, &unused))
            used += (size_t)snprintf(have + used, sizeof have - used, "%s%s", used ? ", " : "",
                                     og_dtype_name(*t));
    other_types(d, n, in_types, outs, others, sizeof others);
    return og_error(OG_ERR_UNSUPPORTED,
                    "%s: input %d is %s, which the %s kernel of %s does not compute%s (it "
                    "computes %s)",
                    og_node_label(n, label, sizeof label), d->type_input, og_dtype_name(type),
                    b->name, n->op_type, others, used ? have : "no dtype");
}

og_status og_kernel_error(const og_kernel_ctx *k, og_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    og_status st = og_node_verror(k->node, status, fmt, ap);
    va_end(ap);
    return st;
}

void *og_scratch_get(const og_kernel_ctx *k, size_t bytes)
{
    if (!bytes) bytes = 1;
    if (!k->scratch) return og_malloc_aligned(k->alloc, bytes);
    og_scratch *s = k->scratch;
    if (s->size < bytes) {
        og_free_aligned(k->alloc, s->data);
        s->size = 0;
        s->data = og_malloc_aligned(k->alloc, bytes);
        if (!s->data) return NULL;
        s->size = bytes;
    }
    return s->data;
}

void *og_kcache_get(const og_kernel_ctx *k, const void *key, size_t bytes, bool *fresh)
{
    *fresh = true;
    og_kcache *c = k->cache;
    if (!c || !key || !bytes) return NULL;
    if (c->key == key && c->size == bytes) {
        *fresh = false;
        return c->data;
    }
    c->key = NULL;
    if (c->size != bytes) {
        og_free_aligned(k->alloc, c->data);
        c->size = 0;
        c->data = og_malloc_aligned(k->alloc, bytes);
        if (!c->data) return NULL;
        c->size = bytes;
    }
    c->key = key;
    return c->data;
}

void og_kcache_drop(const og_kernel_ctx *k)
{
    if (k->cache) k->cache->key = NULL;
}

void og_scratch_put(const og_kernel_ctx *k, void *p)
{
    if (!k->scratch || p != k->scratch->data) og_free_aligned(k->alloc, p);
}
