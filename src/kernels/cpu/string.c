/* string.c: CPU kernels of the string ops (src/ops/string.c): StringNormalizer,
 * StringConcat, StringSplit, RegexFullMatch, TfIdfVectorizer.  Output strings are set one by
 * one (og_tensor_set_str, the buffer's allocator); an output string tensor arrives with every
 * element "". */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "kernels/cpu/kernel.h"
#include "ops/string.h"

static og_op_ctx op_ctx_of(const og_kernel_ctx *k)
{
    og_op_ctx c = {k->node, k->alloc, NULL, true};
    return c;
}

static og_status need_strings(const og_kernel_ctx *k, const og_tensor *t, int i)
{
    if (t->dtype == OG_STRING) return OG_OK;
    return og_kernel_error(k, OG_ERR_TYPE, "input %d is %s, not string", i,
                           og_dtype_name(t->dtype));
}

static og_status k_strnorm(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out)
{
    const og_strnorm_params *p = k->params;
    og_op_ctx c = op_ctx_of(k);
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    og_status st = need_strings(k, x, 0);
    int64_t j = 0;
    for (int64_t i = 0; !st && i < x->numel; i++) {
        bool stop;
        if ((st = og_strnorm_is_stop(&c, p, x, i, &stop)) || stop) continue;
        if (j >= y->numel)
            return og_kernel_error(k, OG_ERR_INTERNAL, "more strings kept than inferred");
        const char *s = og_tensor_str(x, i);
        if (p->action == OG_CASE_NONE) {
            st = og_tensor_set_str(y, j++, s, strlen(s));
            continue;
        }
        char *m = og_utf8_case(k->alloc, s, p->action == OG_CASE_UPPER, p->loc);
        if (!m) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
        st = og_tensor_set_str(y, j++, m, strlen(m));
        og_free(k->alloc, m);
    }
    return st;
}

static og_status k_strconcat(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    og_tensor *z = out[0];
    og_status st = need_strings(k, in[0], 0);
    if (!st) st = need_strings(k, in[1], 1);
    if (st || z->numel == 0) return st;
    int64_t sa[OG_MAX_RANK], sb[OG_MAX_RANK];
    og_broadcast_strides(in[0]->rank, in[0]->dims, z->rank, z->dims, sa);
    og_broadcast_strides(in[1]->rank, in[1]->dims, z->rank, z->dims, sb);
    og_index_iter it;
    og_index_init(&it, z->rank, z->dims);
    char *tmp = NULL;
    size_t cap = 0;
    int64_t o = 0;
    do {
        int64_t ia = 0, ib = 0;
        for (int d = 0; d < z->rank; d++) {
            ia += it.idx[d] * sa[d];
            ib += it.idx[d] * sb[d];
        }
        const char *a = og_tensor_str(in[0], ia), *b = og_tensor_str(in[1], ib);
        size_t la = strlen(a), lb = strlen(b);
        if (la + lb + 1 > cap) {
            og_free(k->alloc, tmp);
            cap = 2 * (la + lb + 1);
            if (!(tmp = og_malloc(k->alloc, cap)))
                return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
        }
        memcpy(tmp, a, la);
        memcpy(tmp + la, b, lb);
        st = og_tensor_set_str(z, o++, tmp, la + lb);
    } while (!st && og_index_next(&it));
    og_free(k->alloc, tmp);
    return st;
}

static og_status k_strsplit(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_strsplit_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0], *z = n_out > 1 ? out[1] : NULL;
    og_status st = need_strings(k, x, 0);
    if (st) return st;
    int64_t most = y ? y->dims[y->rank - 1] : 0;
    int64_t *start = og_malloc(k->alloc, (size_t)(2 * most + 2) * sizeof *start),
            *len = start + most + 1;
    if (!start) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; !st && i < x->numel; i++) {
        const char *s = og_tensor_str(x, i);
        int64_t n = og_strsplit(p, s, most, start, len);
        if (z) ((int64_t *)z->data)[i] = n;
        if (!y) continue;
        if (n > most) {
            st = og_kernel_error(k, OG_ERR_INTERNAL, "more pieces than inferred");
            break;
        }
        for (int64_t j = 0; !st && j < n; j++)
            st = og_tensor_set_str(y, i * most + j, s + start[j], (size_t)len[j]);
    }
    og_free(k->alloc, start);
    return st;
}

static og_status k_regex(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                         og_tensor *const *out, int n_out)
{
    const og_regex_params *p = k->params;
    const og_tensor *x = in[0];
    og_status st = need_strings(k, x, 0);
    if (st) return st;
    uint8_t *y = out[0]->data;
    /* the calling thread's locale for the call only: the process's is never touched */
    locale_t prev = p->loc ? uselocale(p->loc) : (locale_t)0;
    for (int64_t i = 0; i < x->numel; i++)
        y[i] = regexec(&p->re, og_tensor_str(x, i), 0, NULL, 0) == 0;
    if (p->loc) uselocale(prev);
    return OG_OK;
}

/* ---- TfIdfVectorizer ------------------------------------------------------------------- */

/* How a TfIdfVectorizer reads its items: an integer pool's reads of x's integer type (bound
 * by select_tfidf from x's dtype and the pool's kind), or a string pool's (get NULL). */
typedef struct tfidf_io {
    int64_t (*get)(const void *x, int64_t i);
} tfidf_io;
static int64_t get_i32(const void *x, int64_t i) { return ((const int32_t *)x)[i]; }
static int64_t get_i64(const void *x, int64_t i) { return ((const int64_t *)x)[i]; }
static const tfidf_io tfidf_strings = {NULL}, tfidf_i32 = {get_i32}, tfidf_i64 = {get_i64};

static const tfidf_io *tfidf_io_of(const og_tfidf_params *p, og_dtype t)
{
    if (p->pool_s) return t == OG_STRING ? &tfidf_strings : NULL;
    return t == OG_INT32 ? &tfidf_i32 : t == OG_INT64 ? &tfidf_i64 : NULL;
}

static const void *select_tfidf(const og_node *n, og_dtype t) { return tfidf_io_of(n->params, t); }

/* The table's entry for items x[at], x[at + d], ... (len of them), NULL if none; h is their
 * hash (string.h). */
static const og_ngram *lookup(const og_tfidf_params *p, const tfidf_io *io, const og_tensor *x,
                              int64_t at, int64_t d, int64_t len, uint64_t h)
{
    for (int64_t s = (int64_t)(h & (uint64_t)(p->cap - 1));; s = (s + 1) & (p->cap - 1)) {
        const og_ngram *e = &p->table[s];
        if (e->len == 0) return NULL;
        if (e->len != len) continue;
        bool same = true;
        for (int64_t k = 0; same && k < len; k++)
            same = p->pool_i ? p->pool_i[e->first + k] == io->get(x->data, at + k * d)
                             : strcmp(p->pool_s[e->first + k], og_tensor_str(x, at + k * d)) == 0;
        if (same) return e;
    }
}

/* Counts of one row: for each skip distance d (1 .. max_skip + 1) and each start, the
 * n-grams x[start], x[start + d], ... of every length from min to max that are in the pool,
 * extended only while the prefix is one of the pool's; lengths of 1 are counted at d = 1
 * only (the ONNX reference and onnxruntime do the same). */
static void tfidf_row(const og_tfidf_params *p, const tfidf_io *io, const og_tensor *x, int64_t row,
                      int64_t C, int64_t *counts)
{
    int64_t from = p->min_len;
    for (int64_t d = 1; d <= p->max_skip + 1; d++) {
        for (int64_t start = 0; start < C; start++) {
            uint64_t prefix = OG_NGRAM_SEED;
            int64_t at = row * C + start;
            for (int64_t len = 1; len <= p->max_len; len++) {
                if (start + (len - 1) * d >= C) break;
                int64_t last = at + (len - 1) * d;
                prefix = og_ngram_mix(prefix, p->pool_i ? (uint64_t)io->get(x->data, last)
                                                        : og_ngram_str(og_tensor_str(x, last)));
                const og_ngram *e =
                    lookup(p, io, x, at, d, len, og_ngram_mix(prefix, (uint64_t)len));
                if (!e) break;
                if (len >= from && e->id > 0) counts[p->indexes[e->id - 1]]++;
            }
        }
        if (from == 1) from = 2;
        if (from > p->max_len) break;
    }
}

static og_status k_tfidf(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                         og_tensor *const *out, int n_out)
{
    const og_tfidf_params *p = k->params;
    const og_tensor *x = in[0];
    og_tensor *y = out[0];
    const tfidf_io *io = k->impl ? k->impl : tfidf_io_of(p, x->dtype);
    if (!io)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "input 0 is %s, the pool holds %s",
                               og_dtype_name(x->dtype), p->pool_s ? "strings" : "integers");
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, C = x->rank == 0 ? 1 : x->dims[x->rank - 1];
    int64_t *counts = og_calloc(k->alloc, (size_t)(p->out_size + 1), sizeof *counts);
    if (!counts) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    float *o = y->data;
    for (int64_t r = 0; r < rows; r++) {
        memset(counts, 0, (size_t)p->out_size * sizeof *counts);
        if (C > 0) tfidf_row(p, io, x, r, C, counts);
        for (int64_t i = 0; i < p->out_size; i++) {
            double w = p->weights ? p->weights[i] : 1.0, f = (double)counts[i];
            o[r * p->out_size + i] = (float)(p->mode == 1   ? f
                                             : p->mode == 2 ? (f > 0 ? w : 0)
                                                            : f * w);
        }
    }
    og_free(k->alloc, counts);
    return OG_OK;
}

static const og_dtype tfidf_types[] = {OG_STRING, OG_INT32, OG_INT64, OG_UNDEFINED};
/* The string ops compute strings only: one dtype, no loop to pick, so the list is the point
 * (another dtype is refused when the session is created).  TfIdfVectorizer binds the reads
 * of x's integer type, or strings, whichever its pool holds. */
static const og_dtype strings_only[] = {OG_STRING, OG_UNDEFINED};

const og_kernel_def og_cpu_string[] = {
    {.name = "StringNormalizer",
     .domain = "",
     .fn = k_strnorm,
     .types = strings_only,
     .strings = 1},
    {.name = "StringConcat", .domain = "", .fn = k_strconcat, .types = strings_only, .strings = 1},
    {.name = "StringSplit", .domain = "", .fn = k_strsplit, .types = strings_only, .strings = 1},
    {.name = "RegexFullMatch", .domain = "", .fn = k_regex, .types = strings_only, .strings = 1},
    {.name = "TfIdfVectorizer",
     .domain = "",
     .fn = k_tfidf,
     .types = tfidf_types,
     .select = select_tfidf,
     .strings = 1},
    {.name = NULL},
};
