/* linalg.c: gradients of MatMul, Gemm and Einsum.
 *   Y = A·B:                  dA = dY·Bᵀ,  dB = Aᵀ·dY  (batch dims summed back; a batch
 *                             of rows times a matrix folds into one Gemm each way)
 *   Y = α·op(A)·op(B) + β·C:  dA = α·dY·op(B)ᵀ (or its transpose when transA),
 *                             dB = α·op(A)ᵀ·dY (or its transpose when transB),
 *                             dC = β·dY summed back to C's shape
 *   Einsum:  dx_i = Einsum(dy, x_j (j != i)) onto x_i's subscripts; diagonals (a
 *            subscript repeated in a term) through an identity mask, broadcast or summed
 *            ellipsis axes summed back to x_i's shape
 *   Det:     d det(A)/dA = the cofactor matrix C, C_ij = (−1)^(i+j) det(A without row i and
 *            column j): dA = dY·C, the n² minors gathered at once and their Det taken
 *            (defined for singular A too, unlike det(A)·A⁻ᵀ) */
#include <string.h>

#include "grad/rule_util.h"
#include "ops/linalg_params.h"

/* x with its last two axes swapped (x of known rank >= 2) */
static int swap_last(og_gb *b, int x, int rank)
{
    int64_t perm[OG_MAX_RANK];
    for (int i = 0; i < rank; i++) perm[i] = i;
    perm[rank - 2] = rank - 1;
    perm[rank - 1] = rank - 2;
    return og_rule_transpose(b, x, perm, rank);
}

/* Do forward values u and v have the same rank and the same batch dims (all but the last
 * two), statically? */
static bool same_batch(og_gb *b, int u, int v)
{
    const og_value *x = og_gb_value(b, u), *y = og_gb_value(b, v);
    if (x->rank != y->rank || x->rank < 2) return false;
    for (int d = 0; d < x->rank - 2; d++)
        if (x->dims[d] != y->dims[d] || x->dims[d] == OG_DIM_UNKNOWN) return false;
    return true;
}

/* p·qᵀ (tq) or pᵀ·q (tp) for operands of known rank >= 2, without materializing the
 * transpose: Gemm for matrices (opset 11+), Einsum over equal batch dims (opset 12+, whose
 * CPU kernel reads the operands through strides; no broadcasting, which ONNX's Einsum type
 * inference does not follow), else Transpose + MatMul.  like_p/like_q: forward values with
 * the static shapes of p and q. */
static int matmul_t(og_gb *b, int p, int rp, bool tp, int q, int rq, bool tq, int like_p,
                    int like_q)
{
    if (rp == 2 && rq == 2 && og_gb_opset(b) >= 11) {
        int r = og_gb_op2(b, "Gemm", p, q);
        if (tp) og_gb_attr_int(b, og_gb_last(b), "transA", 1);
        if (tq) og_gb_attr_int(b, og_gb_last(b), "transB", 1);
        return r;
    }
    if (og_gb_opset(b) >= 12 && same_batch(b, like_p, like_q)) {
        const char *eq = tp ? "...km,...kn->...mn" : "...mk,...nk->...mn";
        int r = og_gb_op2(b, "Einsum", p, q);
        og_gb_attr_string(b, og_gb_last(b), "equation", eq);
        return r;
    }
    if (tp) p = swap_last(b, p, rp);
    if (tq) q = swap_last(b, q, rq);
    return og_gb_op2(b, "MatMul", p, q);
}

/* Y = A·B with A [..., M, K] of rank >= 3 and B a [K, N] matrix (a linear layer over a
 * batch of sequences), K and N static in B (A's dims may be known only at run time, as
 * after a Reshape to a computed shape): the batch folds into the rows of one Gemm each way,
 *   dA = reshape(dY [-1, N] · Bᵀ),   dB = A [-1, K]ᵀ · dY [-1, N],
 * so dB needs no batched product summed afterwards and no transpose is materialized. */
static bool matmul_folded(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_value *A = og_gb_value(b, n->in[0]), *B = og_gb_value(b, n->in[1]);
    if (A->rank < 3 || B->rank != 2 || og_gb_opset(b) < 11) return false;
    int64_t k = B->dims[0], nn = B->dims[1], ka = A->dims[A->rank - 1];
    if (k < 0 || nn < 0 || (ka >= 0 && ka != k)) return false;
    int a = n->in[0], w = n->in[1];
    int64_t shape_y[2] = {-1, nn}, shape_a[2] = {-1, k};
    int dy2 = og_gb_op2(b, "Reshape", dy[0], og_gb_const_i64(b, shape_y, 2));
    if (og_gb_wants(b, n, 0)) {
        int g = og_gb_op2(b, "Gemm", dy2, w);
        og_gb_attr_int(b, og_gb_last(b), "transB", 1);
        dx[0] = og_gb_reshape_like(b, g, a);
    }
    if (og_gb_wants(b, n, 1)) {
        int a2 = og_gb_op2(b, "Reshape", a, og_gb_const_i64(b, shape_a, 2));
        dx[1] = og_gb_op2(b, "Gemm", a2, dy2);
        og_gb_attr_int(b, og_gb_last(b), "transA", 1);
    }
    return true;
}

static og_status g_matmul(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    if (matmul_folded(b, n, dy, dx)) return og_gb_status(b);
    const og_value *A = og_gb_value(b, n->in[0]), *B = og_gb_value(b, n->in[1]);
    const og_value *Y = og_gb_value(b, n->out[0]);
    int ra = A->rank, rb = B->rank, ry = Y->rank;
    if (ra < 2 || rb < 2 || ry < 2)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "MatMul gradients need both operands of known rank >= 2 (got %d and %d)",
                          ra, rb);
    /* dA = dY·Bᵀ and dB = Aᵀ·dY have the operands' own matrix dims; only the batch axes
     * may have been broadcast */
    int a = n->in[0], bb = n->in[1], out = n->out[0];
    if (og_gb_wants(b, n, 0))
        dx[0] =
            og_gb_sum_to_input(b, matmul_t(b, dy[0], ry, false, bb, rb, true, out, bb), n, 0, 2);
    if (og_gb_wants(b, n, 1))
        dx[1] = og_gb_sum_to_input(b, matmul_t(b, a, ra, true, dy[0], ry, false, a, out), n, 1, 2);
    return og_gb_status(b);
}

/* alpha * (p x q) with transposes, as Gemm from opset 11 (C optional) or MatMul before */
static int gemm2(og_gb *b, int p, bool tp, int q, bool tq, float alpha, og_dtype dt)
{
    int r;
    if (og_gb_opset(b) >= 11) {
        r = og_gb_op2(b, "Gemm", p, q);
        int node = og_gb_last(b);
        if (tp) og_gb_attr_int(b, node, "transA", 1);
        if (tq) og_gb_attr_int(b, node, "transB", 1);
        if (alpha != 1.0f) og_gb_attr_float(b, node, "alpha", alpha);
        return r;
    }
    if (tp) p = swap_last(b, p, 2);
    if (tq) q = swap_last(b, q, 2);
    r = og_gb_op2(b, "MatMul", p, q);
    if (alpha != 1.0f) r = og_gb_op2(b, "Mul", r, og_gb_scalar(b, alpha, dt));
    return r;
}

static og_status g_gemm(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    bool ta = og_attr_int(n, "transA", 0) != 0, tb = og_attr_int(n, "transB", 0) != 0;
    float alpha = og_attr_float(n, "alpha", 1.0f), beta = og_attr_float(n, "beta", 1.0f);
    int A = n->in[0], B = n->in[1];
    og_dtype dt = og_gb_value(b, n->out[0])->dtype;
    if (og_gb_wants(b, n, 0)) /* dA = α dY op(B)ᵀ, or α op(B) dYᵀ when transA */
        dx[0] = ta ? gemm2(b, B, tb, dy[0], true, alpha, dt)
                   : gemm2(b, dy[0], false, B, !tb, alpha, dt);
    if (og_gb_wants(b, n, 1)) /* dB = α op(A)ᵀ dY, or α dYᵀ op(A) when transB */
        dx[1] = tb ? gemm2(b, dy[0], true, A, ta, alpha, dt)
                   : gemm2(b, A, !ta, dy[0], false, alpha, dt);
    if (n->n_in > 2 && og_gb_wants(b, n, 2)) {
        int g = og_gb_sum_to(b, dy[0], n->out[0], n->in[2]);
        dx[2] = beta == 1.0f ? g : og_gb_op2(b, "Mul", g, og_gb_scalar(b, beta, dt));
    }
    return og_gb_status(b);
}

/* ---- Einsum -------------------------------------------------------------------------- */

#define EIN_MAX_IN 16
#define EIN_TOK    (OG_MAX_RANK + 1) /* letters plus one '.' standing for an ellipsis */

/* Term t as tokens: its letters, with '.' where its ellipsis stands; the token count. */
static int ein_tokens(const og_einsum_term *t, char *tok)
{
    int k = 0;
    for (int j = 0; j < t->n; j++) {
        if (j == t->ell) tok[k++] = '.';
        tok[k++] = t->sub[j];
    }
    if (t->ell == t->n) tok[k++] = '.';
    return k;
}

/* Append term t (tokens, '.' = "...") to the equation being written. */
static int ein_put(char *e, int el, const char *t, int tl)
{
    for (int j = 0; j < tl; j++) {
        if (t[j] == '.') {
            memcpy(e + el, "...", 3);
            el += 3;
        } else {
            e[el++] = t[j];
        }
    }
    return el;
}

/* Index of the ellipsis token in term t, or -1. */
static int ein_ell(const char *t, int tl)
{
    const char *p = memchr(t, '.', (size_t)tl);
    return p ? (int)(p - t) : -1;
}

/* Static dim `axis` of value v (OG_DIM_UNKNOWN when not known). */
static int64_t ein_dim(og_gb *b, int v, int axis)
{
    const og_value *val = og_gb_value(b, v);
    return axis >= 0 && axis < val->rank ? val->dims[axis] : OG_DIM_UNKNOWN;
}

/* The numpy broadcast of two static dims: 1 gives way to anything, a known dim to a
 * symbolic one; two different symbols give OG_DIM_UNKNOWN. */
static int64_t ein_bcast(int64_t a, int64_t d)
{
    if (a == 1 || a == d) return d;
    if (d == 1) return a;
    if (a >= 0) return a;
    return d >= 0 ? d : OG_DIM_UNKNOWN;
}

/* First axis of token j of term t when its ellipsis stands for E axes. */
static int ein_axis(const char *t, int j, int E)
{
    int a = 0;
    for (int k = 0; k < j; k++) a += t[k] == '.' ? E : 1;
    return a;
}

/* dx_i = Einsum("out,t_j...->t_i'", dy, x_j...), t_i' holding the subscripts of t_i that
 * occur in the output or another operand, once each (an ellipsis when an operand of that
 * Einsum has one), then brought to x_i's shape:
 *   - leading ellipsis axes x_i lacks (broadcast from other operands) are summed away;
 *   - subscripts of t_i found nowhere else, later occurrences of a repeated subscript and
 *     ellipsis axes no other operand has come back as size-1 axes (Unsqueeze), filled to
 *     x_i's shape by Expand where needed;
 *   - a subscript repeated in t_i (a diagonal, "ii->i") multiplies the result by an
 *     identity mask [D, D] (Equal of two Ranges) over each pair (first, later occurrence): the
 * gradient lands on the diagonal only;
 *   - ellipsis axes (and, with static dims, subscript axes) where x_i has dim 1 and the
 *     others more are summed back (og_gb_sum_to_shape; at run time from opset 13 when a
 *     dim of x_i is symbolic and differs from the broadcast dim).
 * Ellipses are right-aligned across operands, numpy style, as the forward op does. */
static og_status g_einsum(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    /* the terms as the op's parse step read them (src/ops/linalg.c; implicit output
     * included), as tokens */
    const og_einsum_params *ein = n->params;
    if (!ein || !n->parsed)
        return og_gb_fail(b, n, OG_ERR_INTERNAL, "the node's attributes were not parsed");
    int n_in = n->n_in;
    if (n_in > EIN_MAX_IN)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "Einsum gradient: too many operands");
    if (ein->n_in != n_in) return og_gb_fail(b, n, OG_ERR_MODEL, "equation terms != inputs");
    char terms[EIN_MAX_IN][EIN_TOK], out[EIN_TOK];
    int tl[EIN_MAX_IN], ol = ein_tokens(&ein->out, out);
    for (int o = 0; o < n_in; o++) tl[o] = ein_tokens(&ein->in[o], terms[o]);
    /* how many axes each ellipsis stands for */
    int E[EIN_MAX_IN] = {0}, Ey = 0, yell = ein_ell(out, ol), yrank = -1;
    for (int o = 0; o < n_in; o++) {
        if (ein_ell(terms[o], tl[o]) < 0) continue;
        int r = og_gb_value(b, n->in[o])->rank;
        E[o] = r - (tl[o] - 1);
        if (r < 0 || E[o] < 0)
            return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                              "Einsum gradient needs the rank of operand %d (with an ellipsis)", o);
        if (E[o] > Ey) Ey = E[o];
    }
    if (yell >= 0) {
        yrank = og_gb_value(b, n->out[0])->rank;
        if (yrank >= 0) Ey = yrank - (ol - 1);
        if (Ey < 0 || Ey > OG_MAX_RANK) return og_gb_fail(b, n, OG_ERR_MODEL, "bad output rank");
    }
    for (int i = 0; i < n_in; i++) {
        if (!og_gb_wants(b, n, i)) continue;
        int x = n->in[i], ei = ein_ell(terms[i], tl[i]), Ei = ei >= 0 ? E[i] : 0;
        int ri = tl[i] - (ei >= 0) + Ei;
        if (ri > OG_MAX_RANK) return og_gb_fail(b, n, OG_ERR_MODEL, "bad operand rank");
        bool avail[128] = {false};
        for (int j = 0; j < ol; j++) avail[(int)out[j]] = true;
        for (int o = 0; o < n_in; o++)
            for (int j = 0; o != i && j < tl[o]; j++) avail[(int)terms[o][j]] = true;
        /* the ellipsis of the gradient Einsum: Eg axes of static dims gd (right-aligned) */
        bool ell_in = yell >= 0;
        int Eg = yell >= 0 ? Ey : 0;
        int64_t gd[OG_MAX_RANK];
        for (int o = 0; o < n_in; o++)
            if (o != i && ein_ell(terms[o], tl[o]) >= 0) {
                ell_in = true;
                if (E[o] > Eg) Eg = E[o];
            }
        for (int k = 0; k < Eg; k++) gd[k] = 1;
        if (yell >= 0 && yrank >= 0) {
            for (int k = 0; k < Eg; k++) gd[k] = ein_dim(b, n->out[0], yell + k);
        } else {
            for (int o = 0; o < n_in; o++) {
                int eo = ein_ell(terms[o], tl[o]);
                if (eo < 0 || (o == i && yell < 0)) continue;
                for (int m = 0; m < E[o]; m++)
                    gd[Eg - E[o] + m] = ein_bcast(gd[Eg - E[o] + m], ein_dim(b, n->in[o], eo + m));
            }
        }
        /* its output term */
        char gt[EIN_TOK];
        int gl = 0, gpos = 0;
        bool seen[128] = {false};
        if (ell_in && ei < 0) gt[gl++] = '.';
        for (int j = 0; j < tl[i]; j++) {
            char ch = terms[i][j];
            if (ch == '.') {
                if (ell_in) gpos = gl, gt[gl++] = '.';
            } else if (!seen[(int)ch]) {
                seen[(int)ch] = true;
                if (avail[(int)ch]) gt[gl++] = ch;
            }
        }
        /* x_i's layout: absent axes (Unsqueeze), and the static dims the result has there
         * (fd) against x_i's own (xd) */
        int64_t xd[OG_MAX_RANK], fd[OG_MAX_RANK], absent[OG_MAX_RANK];
        int na = 0, keep = ell_in ? (Eg < Ei ? Eg : Ei) : 0;
        bool expand = false, sum = false, diag = false;
        memset(seen, 0, sizeof seen);
        for (int j = 0, p = 0; j < tl[i]; j++) {
            char ch = terms[i][j];
            if (ch == '.') {
                for (int m = 0; m < Ei; m++, p++) {
                    int64_t td = xd[p] = ein_dim(b, x, p), g;
                    fd[p] = td;
                    if (m < Ei - keep) { /* no other operand has this axis */
                        absent[na++] = p;
                        expand = true;
                        continue;
                    }
                    g = gd[Eg - Ei + m];
                    if (g == td) continue;
                    if (td == 1) {
                        fd[p] = g; /* broadcast from x_i: summed */
                    } else if (td >= 0 || g == 1) {
                        expand = expand || g < 0 || g == 1; /* the result may have 1 there */
                    } else {
                        expand = expand || g < 0;
                        fd[p] = g; /* symbolic: decided at run time */
                    }
                }
                continue;
            }
            int64_t td = xd[p] = ein_dim(b, x, p);
            fd[p] = td;
            if (seen[(int)ch] || !avail[(int)ch]) {
                diag = diag || seen[(int)ch];
                absent[na++] = p;
                int reps = 0;
                for (int k = 0; k < tl[i]; k++) reps += terms[i][k] == ch;
                expand = expand || (!avail[(int)ch] && reps == 1);
            } else {
                /* the subscript's static size elsewhere: a size-1 axis of x_i broadcast */
                int64_t L = 1;
                int oj = ein_ell(out, ol), pos;
                const char *q = memchr(out, ch, (size_t)ol);
                if (q) {
                    pos = ein_axis(out, (int)(q - out), oj >= 0 ? Ey : 0);
                    L = og_gb_value(b, n->out[0])->rank == ol - (oj >= 0) + (oj >= 0 ? Ey : 0)
                            ? ein_dim(b, n->out[0], pos)
                            : OG_DIM_UNKNOWN;
                } else {
                    for (int o = 0; o < n_in; o++)
                        for (int k = 0; o != i && k < tl[o]; k++)
                            if (terms[o][k] == ch)
                                L = ein_bcast(L, ein_dim(b, n->in[o], ein_axis(terms[o], k, E[o])));
                }
                if (td == 1 && L > 1) fd[p] = L;
                if (L == 1 && td > 1) expand = true;
            }
            seen[(int)ch] = true;
            p++;
        }
        for (int p = 0; p < ri; p++) sum = sum || fd[p] != xd[p];
        /* the gradient Einsum */
        char e[EIN_MAX_IN * 3 * EIN_TOK + 3 * EIN_TOK + 8];
        int el = 0, ins[EIN_MAX_IN], ni = 0;
        el = ein_put(e, el, out, ol);
        ins[ni++] = dy[0];
        for (int o = 0; o < n_in; o++) {
            if (o == i) continue;
            e[el++] = ',';
            el = ein_put(e, el, terms[o], tl[o]);
            ins[ni++] = n->in[o];
        }
        e[el++] = '-';
        e[el++] = '>';
        el = ein_put(e, el, gt, gl);
        e[el] = 0;
        int g = og_gb_op(b, "Einsum", ni, ins);
        og_gb_attr_string(b, og_gb_last(b), "equation", e);
        if (ell_in && Eg > keep) {
            int64_t lead[OG_MAX_RANK];
            for (int k = 0; k < Eg - keep; k++) lead[k] = gpos + k;
            g = og_gb_reduce_sum(b, g, lead, Eg - keep, false);
        }
        if (na) g = og_rule_unsqueeze(b, g, absent, na);
        if (expand) g = og_gb_op2(b, "Expand", g, og_gb_op1(b, "Shape", x));
        /* diagonals: an identity mask per pair (first, later occurrence) of a subscript */
        memset(seen, 0, sizeof seen);
        for (int j = 0; diag && j < tl[i]; j++) {
            char ch = terms[i][j];
            if (ch == '.' || seen[(int)ch]) continue;
            seen[(int)ch] = true;
            int p0 = ein_axis(terms[i], j, Ei), eye = -1;
            for (int k = j + 1; k < tl[i]; k++) {
                if (terms[i][k] != ch) continue;
                int pk = ein_axis(terms[i], k, Ei);
                if (eye < 0) { /* Equal(Range(D)ᵀ, Range(D)) as x's type */
                    int D = xd[p0] >= 0 ? og_gb_scalar(b, (double)xd[p0], OG_INT64)
                                        : og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", x),
                                                    og_gb_scalar(b, p0, OG_INT64));
                    int64_t one = 1;
                    int rg = og_gb_op3(b, "Range", og_gb_scalar(b, 0, OG_INT64), D,
                                       og_gb_scalar(b, 1, OG_INT64));
                    eye = og_rule_cast(b,
                                       og_gb_op2(b, "Equal", og_rule_unsqueeze(b, rg, &one, 1), rg),
                                       og_gb_value(b, x)->dtype);
                }
                int64_t other[OG_MAX_RANK];
                int no = 0;
                for (int a = 0; a < ri; a++)
                    if (a != p0 && a != pk) other[no++] = a;
                int mask = no ? og_rule_unsqueeze(b, eye, other, no) : eye;
                g = og_gb_op2(b, "Mul", g, mask);
            }
        }
        if (sum) g = og_gb_sum_to_shape(b, g, ri, fd, x);
        dx[i] = g;
    }
    return og_gb_status(b);
}

/* ---- Det ------------------------------------------------------------------------------ */

/* The minors gathered from A ([..., M, M]) by idx ([M, M − 1]: row i's kept indices),
 * returned as [..., i, j] = det(A without row i and column j) */
static int det_minors(og_gb *b, int a, int idx, int64_t bd)
{
    /* [..., i, a, M] then [..., i, a, j, c] -> [..., i, j, a, c] */
    int t = og_gb_op2(b, "Gather", a, idx);
    og_gb_attr_int(b, og_gb_last(b), "axis", bd);
    t = og_gb_op2(b, "Gather", t, idx);
    og_gb_attr_int(b, og_gb_last(b), "axis", bd + 2);
    int64_t perm[OG_MAX_RANK + 2];
    for (int i = 0; i < bd; i++) perm[i] = i;
    perm[bd] = bd;
    perm[bd + 1] = bd + 2;
    perm[bd + 2] = bd + 1;
    perm[bd + 3] = bd + 3;
    return og_gb_op1(b, "Det", og_rule_transpose(b, t, perm, (int)bd + 4));
}

/* d det(A) / dA = the cofactors C_ij = (−1)^(i+j) det(minor_ij), with M known only at run
 * time (Det exists from opset 11, so Range does): i = Range(0, M), k = Range(0, M − 1),
 * idx[i, k] = k + (k >= i) (the rows left when row i is removed), the sign
 * 1 − 2·((i + j) mod 2).  For M = 1 the minors are 0 x 0 matrices, whose Det is 1. */
static int det_cofactor_grad(og_gb *b, const og_node *n, int g, int64_t bd, og_dtype dt)
{
    int64_t one1 = 1;
    int zero = og_gb_scalar(b, 0.0, OG_INT64), one = og_gb_scalar(b, 1.0, OG_INT64);
    int two = og_gb_scalar(b, 2.0, OG_INT64);
    /* M as a scalar: Shape(A) gathered at the scalar index −1 */
    int m =
        og_gb_op2(b, "Gather", og_gb_op1(b, "Shape", n->in[0]), og_gb_scalar(b, -1.0, OG_INT64));
    int ii = og_gb_op3(b, "Range", zero, m, one);
    int kk = og_gb_op3(b, "Range", zero, og_rule_sub(b, m, one), one);
    int icol = og_rule_unsqueeze(b, ii, &one1, 1); /* [M, 1] */
    int ge = og_rule_cast(b, og_gb_op1(b, "Not", og_gb_op2(b, "Less", kk, icol)), OG_INT64);
    int idx = og_rule_add(b, kk, ge);   /* [M, M − 1] */
    int sum = og_rule_add(b, icol, ii); /* [M, M] */
    int par = og_rule_sub(b, sum, og_rule_mul(b, og_rule_div(b, sum, two), two));
    int sg = og_rule_cast(b, og_rule_sub(b, one, og_rule_mul(b, par, two)), dt);
    int minors = det_minors(b, n->in[0], idx, bd);
    return og_gb_op2(b, "Mul", g, og_gb_op2(b, "Mul", minors, sg));
}

static og_status g_det(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_value *A = og_gb_value(b, n->in[0]);
    int r = A->rank;
    if (r < 2) return og_gb_fail(b, n, OG_ERR_UNSUPPORTED, "gradient needs the rank of the input");
    int64_t m = A->dims[r - 1], bd = r - 2;
    og_dtype dt = og_gb_value(b, n->out[0])->dtype;
    int64_t axes2[2] = {bd, bd + 1};
    /* dY against [..., 1, 1] */
    int g = og_rule_unsqueeze(b, dy[0], axes2, 2);
    if (!og_dim_known(m)) m = A->dims[r - 2]; /* square */
    if (!og_dim_known(m)) {
        dx[0] = det_cofactor_grad(b, n, g, bd, dt);
        return og_gb_status(b);
    }
    if (m == 1) {
        dx[0] = g;
        return og_gb_status(b);
    }
    if (m > 64)
        return og_gb_fail(b, n, OG_ERR_UNSUPPORTED,
                          "gradient of Det of %lld x %lld matrices: the minors would take too "
                          "much memory (at most 64 x 64)",
                          (long long)m, (long long)m);
    const og_allocator *al = og_gb_alloc(b);
    int64_t *rows = og_malloc(al, (size_t)(m * (m - 1) + m * m) * sizeof *rows);
    if (!rows) return og_gb_fail(b, n, OG_ERR_NOMEM, "out of memory");
    int64_t *sign = rows + m * (m - 1);
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0, q = 0; j < m; j++) {
            if (j != i) rows[i * (m - 1) + q++] = j;
            sign[i * m + j] = (i + j) % 2 ? -1 : 1;
        }
    }
    int64_t rshape[2] = {m, m - 1}, sshape[2] = {m, m};
    int idx = og_rule_reshape_c(b, og_gb_const_i64(b, rows, (int)(m * (m - 1))), rshape, 2);
    int sg = og_rule_cast(
        b, og_rule_reshape_c(b, og_gb_const_i64(b, sign, (int)(m * m)), sshape, 2), dt);
    og_free(al, rows);
    int minors = det_minors(b, n->in[0], idx, bd);
    dx[0] = og_gb_op2(b, "Mul", g, og_gb_op2(b, "Mul", minors, sg));
    return og_gb_status(b);
}

const og_grad_rule og_grad_linalg[] = {{"MatMul", "", g_matmul},
                                       {"Gemm", "", g_gemm},
                                       {"Einsum", "", g_einsum},
                                       {"Det", "", g_det},
                                       {0}};
