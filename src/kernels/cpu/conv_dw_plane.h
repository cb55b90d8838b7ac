/* conv_dw_plane.h: the AVX-512 float loops of conv_dw.c for depthwise planes of more than
 * DW_BLK_OS outputs, or 16 to 32 wide (dw_in_place), with square 3x3 or 5x5 kernels,
 * strides 1 or 2 (both axes), no dilation: MobileNet's and EfficientNet's large planes.
 * Included by conv_dw.c only, after dw_geom.
 *
 * The generic plane loop (conv_plane) reads every tap's input from memory, K·K loads per
 * 16 outputs, which is what bounds it (a 512-bit load a cycle on AMD's Zen 4); its stride-2
 * loads are gathers.  Here R output rows are computed together: each of their (R−1)·S + K
 * input rows is loaded once, K vectors of it, and every output row it reaches takes its K
 * taps from those registers, so that a 3x3 stride-1 block of 4 rows makes 18 loads for 36
 * multiply-adds.  For stride 2 the padded plane is stored with each row's even columns
 * first and its odd columns after (`half` values in): input column 2j + kw of output j is
 * then at j + kw/2 of the even or the odd half, a plain load.  Planes at most 32 wide are
 * read in place instead (dwp_np for stride 1, dwp_ns2 for stride 2).
 *
 * Each output is summed as the generic loops sum it, b + w0·x0 + w1·x1 + ... in tap order
 * (row-major), so both give the same bits. */
#ifdef OG_DW_X86
#include "kernels/cpu/split_row.h"
#include "kernels/cpu/vact.h"

/* Whether dwp_plane computes geometry d (one input channel per group). */
static bool dwp_applies(const dw_geom *d)
{
    return og_cpu_isa() >= 2 && d->cg == 1 && !d->dot && d->kh == d->kw &&
           (d->kh == 3 || d->kh == 5) && d->sh == d->sw && (d->sh == 1 || d->sh == 2) &&
           d->dh == 1 && d->dw == 1;
}

/* Whether dwp_plane pads a block's rows at a time (stride 2, input planes of more than 64
 * x 64 values), else the whole plane first. */
static bool dwp_blocks(const dw_geom *d) { return d->sh == 2 && d->h * d->w > 4096; }

/* Scratch floats of dwp_plane: the padded plane, or the padded input rows of a block of 2
 * output rows (dwp_blocks). */
static int64_t dwp_scratch(const dw_geom *d)
{
    return (dwp_blocks(d) ? 2 + d->kh : d->rows) * d->wp;
}

/* What a plane's sums start from and end with: the bias, and the activation when it is a
 * clamp (og_act_clamp_f32) or one of vact.h's, applied in registers before the store. */
typedef struct dwp_out {
    float bias;
    bool clamp;
    float lo, hi;
    int vact; /* else an activation applied in registers (vact.h: og_vact_of), 0 none */
} dwp_out;

/* Stores the `m` lanes of sums v at y with o's activation (as E_CLIP for a clamp: NaN
 * passes). */
static inline OG_TARGET_AVX512 void dwp_store(const dwp_out *o, __m512 v, float *y, __mmask16 m)
{
    _mm512_mask_storeu_ps(
        y, m, og_v_out(v, o->clamp, _mm512_set1_ps(o->lo), _mm512_set1_ps(o->hi), o->vact));
}

/* Input row ir of a block of R output rows (stride S), its K tap vectors v: each output
 * row q it reaches (kernel row kh = ir − q·S) adds its K taps, in tap order. */
#define DWP_ACC(K, S, R, ir, v, acc, w)                                                            \
    _Pragma("GCC unroll 4") for (int q = 0; q < R; q++)                                            \
    {                                                                                              \
        const int kh = (ir)-q * (S);                                                               \
        if (kh < 0 || kh >= K) continue;                                                           \
        _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) acc[q] =                            \
            _mm512_fmadd_ps(_mm512_set1_ps(w[kh * K + kw]), v[kw], acc[q]);                        \
    }

/* Output rows [r0, r0 + R) of the plane, all columns, from the padded plane xp (rows ws
 * apart; stride 2: odd columns from `half` on). */
#define DWP_KERNEL(K, S, R)                                                                        \
    static OG_TARGET_AVX512 void dwp_k##K##s##S##r##R(const float *xp, int64_t ws, int64_t half,   \
                                                      const float *w, const dwp_out *o, float *y,  \
                                                      int64_t ow, int64_t r0)                      \
    {                                                                                              \
        for (int64_t j0 = 0; j0 < ow; j0 += 16) {                                                  \
            const int64_t left = ow - j0;                                                          \
            const __mmask16 m = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1u);              \
            __m512 acc[R];                                                                         \
            _Pragma("GCC unroll 4") for (int q = 0; q < R; q++) acc[q] = _mm512_set1_ps(o->bias);  \
            _Pragma("GCC unroll 8") for (int ir = 0; ir < (R - 1) * S + K; ir++)                   \
            {                                                                                      \
                const float *row = xp + (r0 * S + ir) * ws + j0;                                   \
                __m512 v[K];                                                                       \
                _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) v[kw] =                     \
                    _mm512_maskz_loadu_ps(m, S == 1 ? row + kw : row + (kw & 1) * half + kw / 2);  \
                DWP_ACC(K, S, R, ir, v, acc, w);                                                   \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int q = 0; q < R; q++)                                    \
                dwp_store(o, acc[q], y + (r0 + q) * ow + j0, m);                                   \
        }                                                                                          \
    }
DWP_KERNEL(3, 1, 4)
DWP_KERNEL(3, 1, 1)
DWP_KERNEL(5, 1, 4)
DWP_KERNEL(5, 1, 1)
DWP_KERNEL(3, 2, 2)
DWP_KERNEL(3, 2, 1)
DWP_KERNEL(5, 2, 2)
DWP_KERNEL(5, 2, 1)
#undef DWP_KERNEL

/* Stride 1, read in place: output rows [r0, r0 + R) of plane x (H x W) without a padded
 * copy.  A tap's input vector is a masked load of the input row (lanes left of column 0,
 * right of column W − 1 or past the output's width read as zeros, and not read: masked
 * lanes do not touch memory); a row above or below the input is a zero vector.  Every tap
 * still adds its product, zeros included, so the sums are dwp_k##K##s1's bit for bit
 * (signed zeros too).  The masks of a vector of columns are the same for every row. */
#define DWP_NP_MAX_W  32 /* dwp_plane: the widest planes read in place (stride 1) */
#define DWP_NS2_MAX_W 32 /* the same for stride 2 (two vectors a row) */
#define DWP_NP_KERNEL(K, R)                                                                        \
    static OG_TARGET_AVX512 void dwp_np_k##K##r##R(                                                \
        const dw_geom *d, const float *x, const float *w, const dwp_out *o, float *y, int64_t r0)  \
    {                                                                                              \
        const int64_t ow = d->ow, h = d->h, wd = d->w;                                             \
        for (int64_t j0 = 0; j0 < ow; j0 += 16) {                                                  \
            const int64_t left = ow - j0;                                                          \
            const __mmask16 m = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1u);              \
            __mmask16 mk[K];                                                                       \
            _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++)                                 \
            {                                                                                      \
                const int64_t c0 = j0 + kw - d->pw; /* the input column of lane 0 */               \
                const int64_t lo = c0 < 0 ? -c0 : 0, hi = wd - c0 < 16 ? wd - c0 : 16;             \
                const uint32_t bits = hi > lo ? ((1u << hi) - 1u) & ~((1u << lo) - 1u) : 0u;       \
                mk[kw] = (__mmask16)(bits & m);                                                    \
            }                                                                                      \
            __m512 acc[R];                                                                         \
            _Pragma("GCC unroll 4") for (int q = 0; q < R; q++) acc[q] = _mm512_set1_ps(o->bias);  \
            _Pragma("GCC unroll 8") for (int ir = 0; ir < R - 1 + K; ir++)                         \
            {                                                                                      \
                const int64_t ih = r0 + ir - d->ph;                                                \
                const bool in = ih >= 0 && ih < h;                                                 \
                const float *row = x + (in ? ih : 0) * wd + j0 - d->pw;                            \
                __m512 v[K];                                                                       \
                _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) v[kw] =                     \
                    in ? _mm512_maskz_loadu_ps(mk[kw], row + kw) : _mm512_setzero_ps();            \
                DWP_ACC(K, 1, R, ir, v, acc, w);                                                   \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int q = 0; q < R; q++)                                    \
                dwp_store(o, acc[q], y + (r0 + q) * ow + j0, m);                                   \
        }                                                                                          \
    }
DWP_NP_KERNEL(3, 4)
DWP_NP_KERNEL(3, 1)
DWP_NP_KERNEL(5, 4)
DWP_NP_KERNEL(5, 1)
#undef DWP_NP_KERNEL

/* Stride 2 on planes at most 32 wide (so at most 16 outputs a row), read in place: each
 * input row is two masked loads, a and b (columns 0-15 and 16-31; lanes past the row read
 * as zeros, not read), and tap kw's vector, input column 2j + kw − pw for lane j, is one
 * two-source permutation of a and b, zero where that column is outside the row or j is
 * past the output's width (t->mk).  A row above or below the input is a zero vector.  As
 * dwp_np, every tap adds its product, zeros included: dwp_k##K##s2's bits. */
typedef struct dwp_s2n {
    __m512i idx[5];   /* tap kw: lane j reads column 2j + kw − pw of a:b */
    __mmask16 mk[5];  /* tap kw: lanes whose column is inside the row (and j < ow) */
    __mmask16 ma, mb; /* the row's lanes in a and in b */
    __mmask16 m;      /* the output row's lanes */
} dwp_s2n;

static OG_TARGET_AVX512 void dwp_s2n_init(const dw_geom *d, dwp_s2n *t)
{
    const int64_t wd = d->w, ow = d->ow;
    t->ma = (__mmask16)(wd >= 16 ? 0xFFFF : (1u << wd) - 1u);
    t->mb = (__mmask16)(wd >= 32 ? 0xFFFF : wd > 16 ? (1u << (wd - 16)) - 1u : 0u);
    t->m = (__mmask16)(ow >= 16 ? 0xFFFF : (1u << ow) - 1u);
    const __m512i two_j = _mm512_slli_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1);
    const __m512i wv = _mm512_set1_epi32((int32_t)wd), zero = _mm512_setzero_si512();
    for (int kw = 0; kw < d->kw && kw < 5; kw++) {
        const __m512i c = _mm512_add_epi32(two_j, _mm512_set1_epi32((int32_t)(kw - d->pw)));
        const __mmask16 in = _mm512_mask_cmplt_epi32_mask(
            _mm512_mask_cmpge_epi32_mask(t->m, c, zero), c, wv); /* 0 <= c < w, j < ow */
        t->idx[kw] = _mm512_maskz_mov_epi32(in, c);
        t->mk[kw] = in;
    }
}

#define DWP_NS2_KERNEL(K, R)                                                                       \
    static OG_TARGET_AVX512 void dwp_ns2_k##K##r##R(const dw_geom *d, const dwp_s2n *t,            \
                                                    const float *x, const float *w,                \
                                                    const dwp_out *o, float *y, int64_t r0)        \
    {                                                                                              \
        const int64_t h = d->h, wd = d->w;                                                         \
        __m512 acc[R];                                                                             \
        _Pragma("GCC unroll 4") for (int q = 0; q < R; q++) acc[q] = _mm512_set1_ps(o->bias);      \
        _Pragma("GCC unroll 12") for (int ir = 0; ir < (R - 1) * 2 + K; ir++)                      \
        {                                                                                          \
            const int64_t ih = r0 * 2 + ir - d->ph;                                                \
            __m512 v[K];                                                                           \
            if (ih >= 0 && ih < h) {                                                               \
                const float *row = x + ih * wd;                                                    \
                const __m512 a = _mm512_maskz_loadu_ps(t->ma, row);                                \
                const __m512 b = _mm512_maskz_loadu_ps(t->mb, row + 16);                           \
                _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) v[kw] =                     \
                    _mm512_maskz_permutex2var_ps(t->mk[kw], a, t->idx[kw], b);                     \
            } else {                                                                               \
                _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) v[kw] =                     \
                    _mm512_setzero_ps();                                                           \
            }                                                                                      \
            DWP_ACC(K, 2, R, ir, v, acc, w);                                                       \
        }                                                                                          \
        _Pragma("GCC unroll 4") for (int q = 0; q < R; q++)                                        \
            dwp_store(o, acc[q], y + (r0 + q) * d->ow, t->m);                                      \
    }
DWP_NS2_KERNEL(3, 4)
DWP_NS2_KERNEL(3, 1)
DWP_NS2_KERNEL(5, 4)
DWP_NS2_KERNEL(5, 1)
#undef DWP_NS2_KERNEL
#undef DWP_ACC

/* Padded row r of input plane x into dst by plan p (og_pad_plan_init for stride 1,
 * og_split_plan_init for stride 2: its even columns at dst[0, half), its odd ones from
 * dst[half] on), wp values: zeros outside the input.  Masked loads read only the input
 * row's own values. */
static OG_TARGET_AVX512 void dwp_pad_row(const dw_geom *d, const og_row_plan *p, const float *x,
                                         int64_t r, float *dst)
{
    const int64_t ih = r - d->ph;
    const float *row = ih >= 0 && ih < d->h ? x + ih * d->w : NULL;
    if (d->sw == 2) {
        og_split_row_planned(p, row, dst);
        return;
    }
    if (og_pad_row_planned(p, row, dst)) return;
    const int64_t wp = d->wp;
    if (!row) { /* rows wider than a plan: zeros, the row, zeros */
        memset(dst, 0, (size_t)wp * sizeof(float));
        return;
    }
    const int64_t pw = d->pw < wp ? d->pw : wp, w = d->w < wp - pw ? d->w : wp - pw;
    for (int64_t c = 0; c < pw; c++) dst[c] = 0.0f;
    memcpy(dst + pw, row, (size_t)w * sizeof(float));
    for (int64_t c = pw + w; c < wp; c++) dst[c] = 0.0f;
}

/* One output plane y (OH x OW) = bias + the K x K taps w over input plane x (H x W).
 * The whole padded plane into scratch, then the blocks of R output rows; or, for large
 * stride-2 planes (dwp_blocks), a block's (R − 1)·S + K padded input rows at a time, split
 * just before its sums (the input is read once, cold, and its split rows are used while in
 * L1; rows shared by two blocks are split twice).  Measured in MobileNet-v2 at 224x224: its
 * 112x112 stride-2 layer 0.37-0.42 ms by blocks, 0.60-0.69 by planes; its 56x56 stride-2
 * one 0.20-0.21 by blocks, 0.17-0.19 by planes; stride 1 by blocks (6 rows padded per 4)
 * was slower everywhere. */
static OG_TARGET_AVX512 void dwp_plane(const dw_geom *d, const float *x, const float *w,
                                       const dwp_out *o, float *y, float *scratch)
{
    const int64_t wp = d->wp, half = d->sh == 2 ? (wp + 1) / 2 : 0, oh = d->oh, ow = d->ow;
    const int64_t s = d->sh, kh = d->kh;
    /* stride 1 on narrow planes: in place, without the padded copy, whose per-row cost
     * was 41 % of a 28x28 plane's time (192 such planes: 0.0564 -> 0.0453 ms); on wider
     * ones the copy, read once into L1, measured faster (56x56: 0.130 against 0.134,
     * 112x112: 0.102 against 0.109) */
    if (s == 1 && d->w <= DWP_NP_MAX_W) {
        int64_t r0 = 0;
        if (kh == 3) {
            for (; r0 + 4 <= oh; r0 += 4) dwp_np_k3r4(d, x, w, o, y, r0);
            for (; r0 < oh; r0++) dwp_np_k3r1(d, x, w, o, y, r0);
        } else {
            for (; r0 + 4 <= oh; r0 += 4) dwp_np_k5r4(d, x, w, o, y, r0);
            for (; r0 < oh; r0++) dwp_np_k5r1(d, x, w, o, y, r0);
        }
        return;
    }
    /* stride 2 on planes at most 32 wide: in place, each input row deinterleaved in
     * registers */
    if (s == 2 && d->w <= DWP_NS2_MAX_W) {
        dwp_s2n t;
        dwp_s2n_init(d, &t);
        int64_t r0 = 0;
        if (kh == 3) {
            for (; r0 + 4 <= oh; r0 += 4) dwp_ns2_k3r4(d, &t, x, w, o, y, r0);
            for (; r0 < oh; r0++) dwp_ns2_k3r1(d, &t, x, w, o, y, r0);
        } else {
            for (; r0 + 4 <= oh; r0 += 4) dwp_ns2_k5r4(d, &t, x, w, o, y, r0);
            for (; r0 < oh; r0++) dwp_ns2_k5r1(d, &t, x, w, o, y, r0);
        }
        return;
    }
    const bool blocks = dwp_blocks(d);
    og_row_plan plan;
    if (s == 2)
        og_split_plan_init(&plan, d->pw, d->w, wp, half);
    else
        og_pad_plan_init(&plan, d->pw, d->w, wp);
    if (!blocks)
        for (int64_t r = 0; r < d->rows; r++) dwp_pad_row(d, &plan, x, r, scratch + r * wp);
#define DWP_RUN(K, S, R)                                                                           \
    do {                                                                                           \
        if (!blocks) {                                                                             \
            int64_t r0 = 0;                                                                        \
            for (; r0 + R <= oh; r0 += R)                                                          \
                dwp_k##K##s##S##r##R(scratch, wp, half, w, o, y, ow, r0);                          \
            for (; r0 < oh; r0++) dwp_k##K##s##S##r1(scratch, wp, half, w, o, y, ow, r0);          \
            break;                                                                                 \
        }                                                                                          \
        for (int64_t r0 = 0; r0 < oh; r0 += R) {                                                   \
            const int64_t nr = oh - r0 < R ? oh - r0 : R;                                          \
            for (int64_t q = 0; q < (nr - 1) * s + kh; q++)                                        \
                dwp_pad_row(d, &plan, x, r0 *s + q, scratch + q * wp);                             \
            if (nr == R)                                                                           \
                dwp_k##K##s##S##r##R(scratch, wp, half, w, o, y + r0 * ow, ow, 0);                 \
            else                                                                                   \
                for (int64_t i = 0; i < nr; i++)                                                   \
                    dwp_k##K##s##S##r1(scratch, wp, half, w, o, y + r0 * ow, ow, i);               \
        }                                                                                          \
    } while (0)
    if (kh == 3 && s == 1)
        DWP_RUN(3, 1, 4);
    else if (kh == 5 && s == 1)
        DWP_RUN(5, 1, 4);
    else if (kh == 3)
        DWP_RUN(3, 2, 2);
    else
        DWP_RUN(5, 2, 2);
#undef DWP_RUN
}

#endif /* OG_DW_X86 */
