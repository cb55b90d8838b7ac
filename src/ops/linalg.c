/* linalg.c: MatMul, Gemm, Einsum and Det: attributes, types and shapes. */
#include <stdio.h>
#include <string.h>

#include "ops/linalg_params.h"

/* MatMul-9/13 and Gemm-9/11/13: the floats, int32, int64, uint32, uint64 */
static const og_dtype matmul_types[] = {OG_FLOAT,  OG_DOUBLE, OG_INT32,    OG_INT64,
                                        OG_UINT32, OG_UINT64, OG_UNDEFINED};

/* Check both inputs' types and give the output theirs. */
static og_status infer_dtype2(const og_op_ctx *c, const og_vinfo *in, const og_dtype *allowed,
                              og_vinfo *out)
{
    og_status st = og_check_dtype(c, in, 0, allowed);
    if (!st) st = og_check_dtype(c, in, 1, allowed);
    if (!st) st = og_check_same_dtype(c, in, 0, 1);
    if (st) return st;
    out->dtype = in[0].dtype != OG_UNDEFINED ? in[0].dtype : in[1].dtype;
    return OG_OK;
}

/* `allowed` plus float16 (every version of MatMul and Gemm) and bfloat16 (from their opset
 * 13), which the kernels compute through float32 copies. */
static og_status infer_dtype2_half(const og_op_ctx *c, const og_vinfo *in, const og_dtype *allowed,
                                   og_vinfo *out)
{
    og_dtype types[23];
    return infer_dtype2(c, in, og_types_with_half(c, allowed, 1, 13, types), out);
}

/* ---- MatMul ---------------------------------------------------------------------- */

og_status og_matmul_shape(const og_op_ctx *c, const og_vinfo *a, const og_vinfo *b, og_vinfo *out)
{
    og_status st;
    if (a->rank < 0 || b->rank < 0) return OG_OK;
    if (a->rank == 0 || b->rank == 0)
        return og_op_error(c, OG_ERR_SHAPE, "input %d is a scalar; MatMul needs rank >= 1",
                           a->rank == 0 ? 0 : 1);
    /* numpy: a 1-D A is a row [1,K], a 1-D B a column [K,1]; the added dim is dropped. */
    int64_t ka = a->dims[a->rank - 1], kb = b->dims[b->rank == 1 ? 0 : b->rank - 2];
    if (ka >= 0 && kb >= 0 && ka != kb) {
        char sa[128], sb[128];
        return og_op_error(c, OG_ERR_SHAPE, "inner dims differ: A %s has K=%lld, B %s has K=%lld",
                           og_shape_str(a->rank, a->dims, sa, sizeof sa), (long long)ka,
                           og_shape_str(b->rank, b->dims, sb, sizeof sb), (long long)kb);
    }
    og_vinfo ba, bb, bo;
    og_vinfo_unknown(&ba);
    og_vinfo_unknown(&bb);
    og_vinfo_unknown(&bo);
    ba.rank = a->rank > 2 ? a->rank - 2 : 0;
    bb.rank = b->rank > 2 ? b->rank - 2 : 0;
    memcpy(ba.dims, a->dims, (size_t)ba.rank * sizeof *a->dims);
    memcpy(bb.dims, b->dims, (size_t)bb.rank * sizeof *b->dims);
    const og_vinfo *batch[2] = {&ba, &bb};
    st = og_infer_broadcast(c, batch, 2, &bo);
    if (st) return st;
    int r = bo.rank;
    if (a->rank >= 2) bo.dims[r++] = a->dims[a->rank - 2];
    if (b->rank >= 2) bo.dims[r++] = b->dims[b->rank - 1];
    out->rank = r;
    memcpy(out->dims, bo.dims, (size_t)r * sizeof *bo.dims);
    return OG_OK;
}

static og_status matmul_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    og_status st = infer_dtype2_half(c, in, matmul_types, out);
    return st ? st : og_matmul_shape(c, &in[0], &in[1], out);
}

/* ---- Gemm ------------------------------------------------------------------------ */

static og_status gemm_parse(const og_op_ctx *c, void **params)
{
    static const struct {
        const char *name;
        og_attr_type type;
    } attrs[] = {{"alpha", OG_ATTR_FLOAT},
                 {"beta", OG_ATTR_FLOAT},
                 {"transA", OG_ATTR_INT},
                 {"transB", OG_ATTR_INT},
                 {"broadcast", OG_ATTR_INT}};
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
        og_status st = og_attr_check_type(c, attrs[i].name, attrs[i].type);
        if (st) return st;
    }
    og_gemm_params *p = og_malloc(c->alloc, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    const og_node *n = c->node;
    p->alpha = og_attr_float(n, "alpha", 1.0f);
    p->beta = og_attr_float(n, "beta", 1.0f);
    p->trans_a = og_attr_int(n, "transA", 0) != 0;
    p->trans_b = og_attr_int(n, "transB", 0) != 0;
    /* before opset 7, C had to be [M,N] unless broadcast was set */
    p->c_broadcast = n->since_version >= 7 || og_attr_int(n, "broadcast", 0) != 0;
    *params = p;
    return OG_OK;
}

static og_status gemm_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            int n_out)
{
    const og_gemm_params *p = c->node->params;
    bool int_ok = c->node->since_version >= 9;
    og_status st = infer_dtype2_half(c, in, int_ok ? matmul_types : og_types_float, out);
    if (st) return st;
    bool has_c = n_in > 2 && c->node->in[2] >= 0;
    if (!has_c && c->node->since_version < 11)
        return og_op_error(c, OG_ERR_MODEL, "input 2 (C) is required before opset 11");
    if (has_c) {
        st = og_check_same_dtype(c, in, 0, 2);
        if (st) return st;
    }
    for (int i = 0; i < 2; i++)
        if (in[i].rank >= 0 && in[i].rank != 2)
            return og_op_error(c, OG_ERR_SHAPE, "input %d (%s) has rank %d, Gemm needs rank 2", i,
                               i ? "B" : "A", in[i].rank);
    int64_t m = OG_DIM_UNKNOWN, n = OG_DIM_UNKNOWN, ka = OG_DIM_UNKNOWN, kb = OG_DIM_UNKNOWN;
    if (in[0].rank == 2) {
        m = in[0].dims[p->trans_a ? 1 : 0];
        ka = in[0].dims[p->trans_a ? 0 : 1];
    }
    if (in[1].rank == 2) {
        kb = in[1].dims[p->trans_b ? 1 : 0];
        n = in[1].dims[p->trans_b ? 0 : 1];
    }
    if (ka >= 0 && kb >= 0 && ka != kb)
        return og_op_error(c, OG_ERR_SHAPE,
                           "inner dims differ: op(A) has K=%lld, op(B) has K=%lld (transA=%d, "
                           "transB=%d)",
                           (long long)ka, (long long)kb, p->trans_a, p->trans_b);
    if (has_c && in[2].rank >= 0) {
        const og_vinfo *cv = &in[2];
        const int64_t mn[2] = {m, n};
        bool bad = cv->rank > 2 || (!p->c_broadcast && cv->rank != 2);
        for (int d = 0; d < cv->rank && !bad; d++) {
            int64_t want = mn[2 - cv->rank + d], got = cv->dims[d];
            if (got >= 0 && want >= 0 && got != want && (got != 1 || !p->c_broadcast)) bad = true;
        }
        if (bad) {
            char s[128];
            return og_op_error(
                c, OG_ERR_SHAPE, "input 2 (C) has shape %s, which does not %s to [%lld, %lld]",
                og_shape_str(cv->rank, cv->dims, s, sizeof s),
                p->c_broadcast ? "broadcast" : "match (broadcast=0)", (long long)m, (long long)n);
        }
    }
    out->rank = 2;
    out->dims[0] = m;
    out->dims[1] = n;
    return OG_OK;
}

/* ---- Einsum ---------------------------------------------------------------------- */

static int ein_label(char ch)
{
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
    return -1;
}

bool og_einsum_axes(const og_einsum_term *t, int rank, int ell_rank, int *lab)
{
    int e = rank - t->n;
    if (e < 0 || (t->ell < 0 && e != 0) || e > ell_rank) return false;
    int r = 0;
    int split = t->ell < 0 ? t->n : t->ell;
    for (int i = 0; i < split; i++) lab[r++] = ein_label(t->sub[i]);
    for (int j = 0; j < e; j++) lab[r++] = OG_EIN_ELL0 + ell_rank - e + j;
    for (int i = split; i < t->n; i++) lab[r++] = ein_label(t->sub[i]);
    return true;
}

/* Parse one term of `len` characters (spaces already removed). */
static og_status ein_parse_term(const og_op_ctx *c, const char *s, size_t len, og_einsum_term *t)
{
    t->n = 0;
    t->ell = -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (t->ell >= 0 || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return og_op_error(c, OG_ERR_MODEL,
                                   "attribute 'equation': a term has a stray '.' or a second "
                                   "ellipsis");
            t->ell = t->n;
            i += 2;
            continue;
        }
        if (ein_label(s[i]) < 0)
            return og_op_error(c, OG_ERR_MODEL,
                               "attribute 'equation': character '%c' is not a subscript letter",
                               s[i]);
        if (t->n == OG_MAX_RANK)
            return og_op_error(c, OG_ERR_UNSUPPORTED,
                               "attribute 'equation': a term has more than %d subscripts",
                               OG_MAX_RANK);
        t->sub[t->n++] = s[i];
    }
    return OG_OK;
}

static og_status einsum_parse(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "equation", OG_ATTR_STRING);
    if (st) return st;
    const og_attr *at = og_node_attr(c->node, "equation");
    if (!at) return og_op_error(c, OG_ERR_MODEL, "attribute 'equation' is missing");
    int n_in = c->node->n_in;
    og_einsum_params *p =
        og_calloc(c->alloc, 1, sizeof *p + (size_t)(n_in > 0 ? n_in : 1) * sizeof p->in[0]);
    char *eq = og_malloc(c->alloc, at->s_len + 1);
    if (!p || !eq) {
        st = og_op_error(c, OG_ERR_NOMEM, "out of memory");
        goto fail;
    }
    size_t len = 0;
    for (size_t i = 0; i < at->s_len; i++)
        if (at->s[i] != ' ') eq[len++] = at->s[i];
    eq[len] = 0;
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : len;
    if (arrow && strstr(arrow + 2, "->")) {
        st = og_op_error(c, OG_ERR_MODEL, "attribute 'equation' ('%s') has two '->'", at->s);
        goto fail;
    }
    /* left-hand side: one term per operand */
    int t = 0;
    size_t start = 0;
    for (size_t i = 0; i <= lhs_len; i++) {
        if (i < lhs_len && eq[i] != ',') continue;
        if (t == n_in) {
            t++;
            break;
        }
        st = ein_parse_term(c, eq + start, i - start, &p->in[t++]);
        if (st) goto fail;
        start = i + 1;
    }
    if (t != n_in) {
        st = og_op_error(c, OG_ERR_MODEL,
                         "attribute 'equation' ('%s') has %s terms than the node's %d inputs",
                         at->s, t > n_in ? "more" : "fewer", n_in);
        goto fail;
    }
    p->n_in = n_in;
    int count[OG_EIN_ELL0] = {0};
    bool any_ell = false;
    for (int i = 0; i < n_in; i++) {
        any_ell |= p->in[i].ell >= 0;
        for (int j = 0; j < p->in[i].n; j++) count[ein_label(p->in[i].sub[j])]++;
    }
    if (arrow) {
        st = ein_parse_term(c, arrow + 2, len - lhs_len - 2, &p->out);
        if (st) goto fail;
        int seen[OG_EIN_ELL0] = {0};
        for (int j = 0; j < p->out.n; j++) {
            int l = ein_label(p->out.sub[j]);
            if (!count[l] || seen[l]++) {
                st = og_op_error(c, OG_ERR_MODEL,
                                 "attribute 'equation' ('%s'): output subscript '%c' is %s", at->s,
                                 p->out.sub[j], count[l] ? "repeated" : "in no input term");
                goto fail;
            }
        }
    } else {
        /* implicit: ellipsis first, then the letters seen once, in ASCII order */
        p->out.ell = any_ell ? 0 : -1;
        for (int ch = 'A'; ch <= 'z'; ch++) {
            int l = ein_label((char)ch);
            if (l < 0 || count[l] != 1) continue;
            if (p->out.n == OG_MAX_RANK) {
                st = og_op_error(c, OG_ERR_UNSUPPORTED,
                                 "attribute 'equation' ('%s'): output has more than %d axes", at->s,
                                 OG_MAX_RANK);
                goto fail;
            }
            p->out.sub[p->out.n++] = (char)ch;
        }
    }
    og_free(c->alloc, eq);
    *params = p;
    return OG_OK;
fail:
    og_free(c->alloc, eq);
    og_free(c->alloc, p);
    return st;
}

static og_status einsum_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                              int n_out)
{
    const og_einsum_params *p = c->node->params;
    if (n_in != p->n_in)
        return og_op_error(c, OG_ERR_MODEL, "has %d inputs, the equation %d terms", n_in, p->n_in);
    og_dtype types[23]; /* float16 (Einsum-12); no bfloat16 up to opset 21 */
    og_types_with_half(c, og_types_all_int, 1, 0, types); /* Einsum-12: every numeric type */
    for (int i = 0; i < n_in; i++) {
        og_status st = og_check_dtype(c, in, i, types);
        if (!st) st = og_check_same_dtype(c, in, 0, i);
        if (st) return st;
        if (out->dtype == OG_UNDEFINED) out->dtype = in[i].dtype;
    }
    int ell_rank = 0;
    bool ell_known = true;
    for (int i = 0; i < n_in; i++) {
        const og_einsum_term *t = &p->in[i];
        if (in[i].rank < 0) {
            if (t->ell >= 0) ell_known = false;
            continue;
        }
        int e = in[i].rank - t->n;
        if (e < 0 || (t->ell < 0 && e != 0))
            return og_op_error(c, OG_ERR_SHAPE,
                               "input %d has rank %d but its equation term has %d subscripts%s", i,
                               in[i].rank, t->n, t->ell >= 0 ? " and an ellipsis" : "");
        if (e > ell_rank) ell_rank = e;
    }
    if (p->out.ell >= 0 && !ell_known) return OG_OK;
    /* each label's size: dims of 1 broadcast; the first symbolic dim stands in for the rest */
    int64_t size[OG_EIN_LABELS], sym[OG_EIN_LABELS];
    for (int l = 0; l < OG_EIN_LABELS; l++) size[l] = sym[l] = OG_DIM_UNKNOWN;
    for (int i = 0; i < n_in; i++) {
        int lab[OG_MAX_RANK];
        if (in[i].rank < 0 || !og_einsum_axes(&p->in[i], in[i].rank, ell_rank, lab)) continue;
        for (int d = 0; d < in[i].rank; d++) {
            int64_t x = in[i].dims[d], *s = &size[lab[d]];
            if (x < 0) {
                if (sym[lab[d]] == OG_DIM_UNKNOWN) sym[lab[d]] = x;
            } else if (*s < 0 || *s == 1) {
                *s = x;
            } else if (x != 1 && x != *s) {
                char sh[128];
                return og_op_error(c, OG_ERR_SHAPE,
                                   "input %d %s: axis %d has size %lld where the same subscript "
                                   "has size %lld elsewhere",
                                   i, og_shape_str(in[i].rank, in[i].dims, sh, sizeof sh), d,
                                   (long long)x, (long long)*s);
            }
        }
    }
    out->rank = p->out.n + (p->out.ell >= 0 ? ell_rank : 0);
    int lab[OG_MAX_RANK];
    if (out->rank > OG_MAX_RANK || !og_einsum_axes(&p->out, out->rank, ell_rank, lab))
        return og_op_error(c, OG_ERR_UNSUPPORTED, "output rank %d is above %d", out->rank,
                           OG_MAX_RANK);
    for (int d = 0; d < out->rank; d++) {
        int64_t s = size[lab[d]];
        out->dims[d] = (s >= 0 && (s != 1 || sym[lab[d]] == OG_DIM_UNKNOWN)) ? s : sym[lab[d]];
    }
    return OG_OK;
}

/* Det: [..., M, M] -> [...] */
static og_status det_infer(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    static const og_dtype types[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, OG_UNDEFINED};
    og_status st = og_check_dtype(c, in, 0, types);
    if (st) return st;
    out[0].dtype = in[0].dtype;
    int r = in[0].rank;
    if (r < 0) return OG_OK;
    if (r < 2) return og_op_error(c, OG_ERR_SHAPE, "input 0 has rank %d, expected >= 2", r);
    int64_t a = in[0].dims[r - 2], b = in[0].dims[r - 1];
    if (og_dim_known(a) && og_dim_known(b) && a != b)
        return og_op_error(c, OG_ERR_SHAPE, "input 0 is [..., %lld, %lld], not square matrices",
                           (long long)a, (long long)b);
    out[0].rank = r - 2;
    memcpy(out[0].dims, in[0].dims, (size_t)(r - 2) * sizeof *out[0].dims);
    (void)n_in;
    (void)n_out;
    return OG_OK;
}

const og_op_def og_ops_linalg[] = {
    {"MatMul", "", OG_SINCE(MatMul), 2, 2, 1, 1, NULL, NULL, matmul_infer, 0},
    {"Gemm", "", OG_SINCE(Gemm), 2, 3, 1, 1, gemm_parse, NULL, gemm_infer, 0},
    {"Einsum", "", OG_SINCE(Einsum), 1, -1, 1, 1, einsum_parse, NULL, einsum_infer, 0},
    {"Det", "", OG_SINCE(Det), 1, 1, 1, 1, NULL, NULL, det_infer, 0},
    {0}};
