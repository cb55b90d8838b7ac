/* linalg.c: gradients of MatMul and Gemm.
 *   Y = A·B:                  dA = dY·Bᵀ,  dB = Aᵀ·dY  (batch dims summed back; a batch
 *                             of rows times a matrix folds into one Gemm each way)
 *   Y = α·op(A)·op(B) + β·C:  dA = α·dY·op(B)ᵀ (or its transpose when transA),
 *                             dB = α·op(A)ᵀ·dY (or its transpose when transB),
 *                             dC = β·dY summed back to C's shape */
#include <string.h>

#include "grad/rule_util.h"

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
 * batch of sequences), K and N static: the batch folds into the rows of one Gemm each way,
 *   dA = reshape(dY [-1, N] · Bᵀ),   dB = A [-1, K]ᵀ · dY [-1, N],
 * so dB needs no batched product summed afterwards and no transpose is materialized. */
static bool matmul_folded(og_gb *b, const og_node *n, const int *dy, int *dx)
{
    const og_value *A = og_gb_value(b, n->in[0]), *B = og_gb_value(b, n->in[1]);
    if (A->rank < 3 || B->rank != 2 || og_gb_opset(b) < 11) return false;
    int64_t k = A->dims[A->rank - 1], nn = B->dims[1];
    if (k < 0 || nn < 0 || B->dims[0] != k) return false;
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
    int64_t from[OG_MAX_RANK];
    memcpy(from, Y->dims, sizeof from);
    int a = n->in[0], bb = n->in[1], out = n->out[0];
    if (og_gb_wants(b, n, 0)) {
        int g = matmul_t(b, dy[0], ry, false, bb, rb, true, out, bb);
        from[ry - 2] = A->dims[ra - 2];
        from[ry - 1] = A->dims[ra - 1];
        dx[0] = og_gb_sum_to_shape(b, g, ry, from, a);
    }
    if (og_gb_wants(b, n, 1)) {
        int g = matmul_t(b, a, ra, true, dy[0], ry, false, a, out);
        memcpy(from, og_gb_value(b, out)->dims, sizeof from);
        from[ry - 2] = og_gb_value(b, bb)->dims[rb - 2];
        from[ry - 1] = og_gb_value(b, bb)->dims[rb - 1];
        dx[1] = og_gb_sum_to_shape(b, g, ry, from, bb);
    }
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

const og_grad_rule og_grad_linalg[] = {{"MatMul", "", g_matmul}, {"Gemm", "", g_gemm}, {0}};
