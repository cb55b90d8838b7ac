/*
 * linalg_impl.h: what the linalg family's kernel files share.  Internal header.
 */
#ifndef OG_LINALG_IMPL_H
#define OG_LINALG_IMPL_H

#include "kernels/cpu/kernel.h"
#include "ops/linalg_params.h"

/* The loops of one element type, defined in linalg.c: what the MatMul and Gemm entries bind
 * (Einsum's binding holds it too), so that a product does not branch on the dtype.  The
 * 8- and 16-bit ones have no Gemm loops (axpby NULL): Einsum's alone. */
typedef struct og_linalg_type og_linalg_type;

extern const og_linalg_type og_linalg_f32, og_linalg_f64, og_linalg_i32, og_linalg_i64,
    og_linalg_u32, og_linalg_u64, og_linalg_i8, og_linalg_u8, og_linalg_i16, og_linalg_u16;
/* The loops of dtype t for MatMul and Gemm (float32, float64, int32, int64, uint32,
 * uint64), NULL if linalg has none. */
const og_linalg_type *og_linalg_type_of(og_dtype t);

/* C[b] = op(A[b]) · op(B[b]) for every index b of the batch shape bdims; the batches of A,
 * B and C start at the element offsets given by the batch strides sa, sb, sc (0 where
 * broadcast); lda, ldb, ldc are the row strides as in BLAS.  `type`: the loops of the
 * element type. */
typedef struct og_bgemm {
    const og_linalg_type *type;
    int64_t m, n, k;
    bool ta, tb;
    const void *a, *b;
    void *c;
    int64_t lda, ldb, ldc;
    int nb;
    int64_t bdims[OG_MAX_RANK], sa[OG_MAX_RANK], sb[OG_MAX_RANK], sc[OG_MAX_RANK];
} og_bgemm;

void og_bgemm_run(const og_kernel_ctx *k, const og_bgemm *g);

/* The binding of MatMul, Gemm and Einsum for float16 and bfloat16 (linalg.c): the kernels
 * run the float32 loops on widened copies and round the output once (og_kernel_via_f32).
 * A marker. */
extern const char og_linalg_via_f32;
/* Run fn on float32 copies when this call is bound to og_linalg_via_f32 or input 0 is
 * 16-bit (*done then true); the inputs must share input 0's type, which the widening would
 * hide. */
og_status og_linalg_half(const og_kernel_ctx *k, og_kernel_fn fn, const og_tensor *const *in,
                         int n_in, og_tensor *const *out, int n_out, bool *done);

og_status og_einsum_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                           og_tensor *const *out, int n_out);
/* Einsum's entry select (linalg_einsum.c): its loops for dtype t, NULL if none. */
const void *og_einsum_select(const og_node *n, og_dtype t);

#endif /* OG_LINALG_IMPL_H */
