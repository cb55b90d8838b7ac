/* conv_dw_plane.h: the AVX-512 float loops of conv_dw.c for depthwise planes of more than
 * DW_BLK_OS outputs, or at least 16 wide (dw_in_place), with square 3x3 or 5x5 kernels,
 * strides 1 or 2 (both axes), no dilation: MobileNet's and EfficientNet's large planes.
 * Included by conv_dw.c only, after dw_geom.
 *
 * The generic plane loop (conv_plane) reads every tap's input from memory, K·K loads per
 * 16 outputs, which is what bounds it (a 512-bit load a cycle on AMD's Zen 4); its stride-2
 * loads are gathers.  Here R output rows are computed together: each of their (R−1)·S + K
 * input rows is loaded once, K vectors of it, and every output row it reaches takes its K
 * taps from those registers, so that a 3x3 stride-1 block of 4 rows makes 18 loads for 36
 * multiply-adds.  Stride 1 reads a zero-padded copy of the plane, or the plane in place
 * when it is at most 32 wide (dwp_np).  Stride 2 reads the plane in place (dwp_ws2): each
 * input row's even and odd columns are permuted apart in registers.
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

/* Stride-1 planes that dwp_plane reads in place (dwp_np_k*) rather than through a padded
 * copy: narrow ones (at most DWP_NP_MAX_W wide, where the copy's per-row cost was 41 % of a
 * 28x28 plane's time), and those whose padded copy would not stay in L1 (more than
 * DWP_PAD_MAX_BYTES).  MobileNet-v2 224's 32 planes of 112x112 (52 KB padded each) took
 * 0.267 ms through the copy, 0.173 in place (one thread, per-node medians of 150
 * alternating runs); its 56x56 ones (13 KB) 0.229 by the copy, 0.231 in place.  And every
 * 3x3 plane with a left pad of 1, whose in-place loop (dwp_np3) loads one vector a row:
 * 144 planes of 56x56 0.161 ms by the copy, 0.119 in place; 96 of them 0.108 -> 0.080
 * (alone, one thread, medians of 5 alternating runs). */
#define DWP_NP_MAX_W      32
#define DWP_PAD_MAX_BYTES 32768
static bool dwp_np(const dw_geom *d)
{
    return d->w <= DWP_NP_MAX_W || (d->kh == 3 && d->pw == 1) ||
           d->rows * d->wp * (int64_t)sizeof(float) > DWP_PAD_MAX_BYTES;
}

/* Scratch floats of dwp_plane: stride 1's padded plane where it copies one (else none, but
 * one float). */
static int64_t dwp_scratch(const dw_geom *d)
{
    return d->sh == 1 && !dwp_np(d) ? d->rows * d->wp : 1;
}

/* What a plane's sums start from and end with: the bias, and the activation when it is a
 * clamp (og_act_clamp_f32) or one of vact.h's, applied in registers before the store. */
typedef struct dwp_out {
    float bias;
    bool clamp;
    float lo, hi;
    int vact; /* else an activation applied in registers (vact.h: og_vact_of), 0 none */
} dwp_out;

/* The dwp_out of bias b and activation a: a clamp or one of vact.h's applied in the
 * stores, else neither (the caller applies a after the plane). */
static inline dwp_out dwp_out_of(const og_act *a, float b)
{
    dwp_out o = {b, false, 0.0f, 0.0f, 0};
    o.clamp = og_act_clamp_f32(a, &o.lo, &o.hi);
    o.vact = o.clamp ? 0 : og_vact_of(a);
    return o;
}

/* Planes of at least this many outputs take a vact.h activation (SiLU, Sigmoid,
 * HardSwish) in one pass after the plane (og_cpu_act, the plane still in L1 or L2) instead
 * of in the stores, where its constants and temporaries crowd the sums' registers:
 * EfficientNet-B0's depthwise layers at 224 (planes of 112x112 to 28x28, SiLU) 3.50 ->
 * 3.26 ms in all on one thread (per-node minimums, 6 alternating runs); smaller planes
 * (its 8x64x64 run's) measured the same or slower that way. */
#define DWP_POST_ACT_MIN 784

/* o for a plane of `outputs` values: dwp_post_act's activation after the plane */
static inline void dwp_post_act(dwp_out *o, int64_t outputs)
{
    if (outputs >= DWP_POST_ACT_MIN) o->vact = 0;
}

/* Stores the `m` lanes of sums v at y with o's activation (as E_CLIP for a clamp: NaN
 * passes). */
static inline OG_TARGET_AVX512 void dwp_store(const dwp_out *o, __m512 v, float *y, __mmask16 m)
{
    _mm512_mask_storeu_ps(
        y, m, og_v_out(v, o->clamp, _mm512_set1_ps(o->lo), _mm512_set1_ps(o->hi), o->vact));
}

/* Input row ir of a block of R output rows (stride S), its K tap vectors v: each output
 * row q it reaches (kernel row kh = ir − q·S) adds its K taps, in tap order.  wv: the K·K
 * weights, broadcast once per call (a broadcast per multiply-add, which the compiler made
 * a shuffle on the port the multiply-adds use, cost MobileNet-v2's 28x28 and 112x112
 * planes 10 % of their time, its stride-2 56x56 ones 7 %). */
#define DWP_ACC(K, S, R, ir, v, acc, wv)                                                           \
    _Pragma("GCC unroll 4") for (int q = 0; q < R; q++)                                            \
    {                                                                                              \
        const int kh = (ir)-q * (S);                                                               \
        if (kh < 0 || kh >= K) continue;                                                           \
        _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) acc[q] =                            \
            _mm512_fmadd_ps(wv[kh * K + kw], v[kw], acc[q]);                                       \
    }

/* The start of each plane kernel below: its K x K weights broadcast once (wv), and o replaced
 * by a local copy, which no store to y can alias, so that it stays in registers. */
#define DWP_BEGIN(K)                                                                               \
    __m512 wv[(K) * (K)];                                                                          \
    _Pragma("GCC unroll 25") for (int ti = 0; ti < (K) * (K); ti++) wv[ti] =                       \
        _mm512_set1_ps(w[ti]);                                                                     \
    const dwp_out oc = *o;                                                                         \
    o = &oc

/* The lanes of a vector of output columns with `left` columns left in the row */
static inline __mmask16 dwp_lanes(int64_t left)
{
    return (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1u);
}

/* Stride 1: output rows [r0, r0 + R) of the plane, all columns, from the padded plane xp
 * (rows ws apart). */
#define DWP_KERNEL(K, R)                                                                           \
    static OG_TARGET_AVX512 void dwp_k##K##r##R(const float *xp, int64_t ws, const float *w,       \
                                                const dwp_out *o, float *y, int64_t ow,            \
                                                int64_t r0)                                        \
    {                                                                                              \
        DWP_BEGIN(K);                                                                              \
        for (int64_t j0 = 0; j0 < ow; j0 += 16) {                                                  \
            const __mmask16 m = dwp_lanes(ow - j0);                                                \
            __m512 acc[R];                                                                         \
            _Pragma("GCC unroll 4") for (int q = 0; q < R; q++) acc[q] = _mm512_set1_ps(o->bias);  \
            _Pragma("GCC unroll 8") for (int ir = 0; ir < R - 1 + K; ir++)                         \
            {                                                                                      \
                const float *row = xp + (r0 + ir) * ws + j0;                                       \
                __m512 v[K];                                                                       \
                _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) v[kw] =                     \
                    _mm512_maskz_loadu_ps(m, row + kw);                                            \
                DWP_ACC(K, 1, R, ir, v, acc, wv);                                                  \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int q = 0; q < R; q++)                                    \
                dwp_store(o, acc[q], y + (r0 + q) * ow + j0, m);                                   \
        }                                                                                          \
    }
DWP_KERNEL(3, 4)
DWP_KERNEL(3, 1)
DWP_KERNEL(5, 4)
DWP_KERNEL(5, 1)
#undef DWP_KERNEL

/* v's lanes 1-15, then c's lane 0 (one valignd) */
static inline OG_TARGET_AVX512 __m512 dwp_next1(__m512 v, __m512 c)
{
    return _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(c), _mm512_castps_si512(v), 1));
}

/* p's lane 15, then v's lanes 0-14 (one valignd) */
static inline OG_TARGET_AVX512 __m512 dwp_prev1(__m512 v, __m512 p)
{
    return _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(v), _mm512_castps_si512(p), 15));
}

/* Stride 1, read in place: output rows [r0, r0 + R) of plane x (H x W) without a padded
 * copy.  A tap's input vector is a masked load of the input row (lanes left of column 0,
 * right of column W − 1 or past the output's width read as zeros, and not read: masked
 * lanes do not touch memory); a row above or below the input is a zero vector.  Every tap
 * still adds its product, zeros included, so the sums are dwp_k##K##s1's bit for bit
 * (signed zeros too).  The masks of a vector of columns are the same for every row. */
#define DWP_NP_KERNEL(K, R)                                                                        \
    static OG_TARGET_AVX512 void dwp_np_k##K##r##R(                                                \
        const dw_geom *d, const float *x, const float *w, const dwp_out *o, float *y, int64_t r0)  \
    {                                                                                              \
        DWP_BEGIN(K);                                                                              \
        const int64_t ow = d->ow, h = d->h, wd = d->w;                                             \
        for (int64_t j0 = 0; j0 < ow; j0 += 16) {                                                  \
            const __mmask16 m = dwp_lanes(ow - j0);                                                \
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
                DWP_ACC(K, 1, R, ir, v, acc, wv);                                                  \
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

/* The same for 3x3 kernels with a left pad of 1: per input row one load of the 16
 * columns j0 .. j0 + 15 (the vector of tap 1), whose lanes moved up and down by one
 * (dwp_prev1, dwp_next1) with a broadcast of the column before and after them give taps 0
 * and 2, instead of two more loads across cache lines.  Lanes past the output's width are
 * loaded where the row has them (their sums are not stored).  MobileNet-v2 224's depthwise
 * layers on 32 planes of 112x112 0.097 -> 0.091 ms, on 192 of 28x28 0.049 -> 0.044 (alone,
 * one thread, medians of 5 alternating runs); the same bits. */
#define DWP_NP3_KERNEL(R)                                                                          \
    static OG_TARGET_AVX512 void dwp_np3_r##R(const dw_geom *d, const float *x, const float *w,    \
                                              const dwp_out *o, float *y, int64_t r0)              \
    {                                                                                              \
        DWP_BEGIN(3);                                                                              \
        const int64_t ow = d->ow, h = d->h, wd = d->w;                                             \
        for (int64_t j0 = 0; j0 < ow; j0 += 16) {                                                  \
            const __mmask16 m = dwp_lanes(ow - j0);                                                \
            const __mmask16 mc = split_lanes_in(j0, 0, wd);                                        \
            const bool pin = j0 >= 1, nin = j0 + 16 < wd;                                          \
            __m512 acc[R];                                                                         \
            _Pragma("GCC unroll 4") for (int q = 0; q < R; q++) acc[q] = _mm512_set1_ps(o->bias);  \
            _Pragma("GCC unroll 8") for (int ir = 0; ir < R + 2; ir++)                             \
            {                                                                                      \
                const int64_t ih = r0 + ir - d->ph;                                                \
                __m512 v[3];                                                                       \
                if (ih >= 0 && ih < h) {                                                           \
                    const float *row = x + ih * wd + j0;                                           \
                    const __m512 c = _mm512_maskz_loadu_ps(mc, row);                               \
                    v[0] = dwp_prev1(c, _mm512_set1_ps(pin ? row[-1] : 0.0f));                     \
                    v[1] = c;                                                                      \
                    v[2] = dwp_next1(c, _mm512_set1_ps(nin ? row[16] : 0.0f));                     \
                } else {                                                                           \
                    v[0] = v[1] = v[2] = _mm512_setzero_ps();                                      \
                }                                                                                  \
                DWP_ACC(3, 1, R, ir, v, acc, wv);                                                  \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int q = 0; q < R; q++)                                    \
                dwp_store(o, acc[q], y + (r0 + q) * ow + j0, m);                                   \
        }                                                                                          \
    }
DWP_NP3_KERNEL(4)
DWP_NP3_KERNEL(1)
#undef DWP_NP3_KERNEL

/* Stride 2 on planes of any width, read in place: the output row in vectors of 16 columns
 * j0 + l, whose taps read input columns base + 2l + kw (base = 2·j0 − pw).  Three masked
 * loads of the input row, a, b and c, at base, base + 16 and base + 32 (lanes outside the
 * row read as zeros, not read); E and O, its even and odd columns from a and b; tap kw =
 * E or O (kw even or odd) moved down kw/2 lanes with c's columns 32 + ... after them:
 * tap 2 by one valignd (E's lanes 1-15, then c's first), taps 3 and 4 by a two-source
 * permutation each.  On AMD's Zen 4 a 512-bit permutation and a multiply-add share their
 * pipes (a pair of them took 1.7 cycles, a valignd and a multiply-add 1.25), and a load
 * across two cache lines costs one and a half.
 *
 * SH = 1 (3x3 kernels, odd left pad: MobileNet's and EfficientNet's pads of 1): a and b
 * at base + 1 instead, so that they start where a row's vector does, E and O their even
 * and odd columns, which are taps 1 and 2; tap 0 is O moved up a lane with column base
 * (a broadcast, zero left of the row) in front, by one valignd.  MobileNet-v2 224's
 * 112x112 -> 56x56 layer on 96 planes alone 0.160 -> 0.152 ms, fused with its expansion
 * (conv_pwdw.c) 0.609 -> 0.583, its 56x56 -> 28x28 one 0.064 -> 0.058 (one thread, per-node
 * minimums of 4 alternating runs).
 *
 * Each output sums its taps in tap order, as the generic loops do: the same bits. */
typedef struct dwp_s2w {
    __m512i ev, od; /* E and O from a:b */
    __m512i sh[5];  /* tap kw >= 3 from (E or O):c */
} dwp_s2w;

static OG_TARGET_AVX512 void dwp_s2w_init(dwp_s2w *t)
{
    int32_t ev[16], od[16], sh[5][16];
    for (int l = 0; l < 16; l++) {
        ev[l] = 2 * l;
        od[l] = 2 * l + 1;
        for (int kw = 0; kw < 5; kw++) {
            const int q = l + kw / 2;
            sh[kw][l] = q < 16 ? q : 16 + 2 * (q - 16) + (kw & 1);
        }
    }
    t->ev = _mm512_loadu_si512(ev);
    t->od = _mm512_loadu_si512(od);
    for (int kw = 0; kw < 5; kw++) t->sh[kw] = _mm512_loadu_si512(sh[kw]);
}

#define DWP_WS2_KERNEL(K, R, SH)                                                                   \
    static OG_TARGET_AVX512 void dwp_ws2_k##K##r##R##s##SH(const dw_geom *d, const dwp_s2w *t,     \
                                                           const float *x, const float *w,         \
                                                           const dwp_out *o, float *y, int64_t r0) \
    {                                                                                              \
        DWP_BEGIN(K);                                                                              \
        const int64_t h = d->h, wd = d->w, ow = d->ow;                                             \
        for (int64_t j0 = 0; j0 < ow; j0 += 16) {                                                  \
            const int64_t base = 2 * j0 - d->pw;                                                   \
            const __mmask16 m = dwp_lanes(ow - j0);                                                \
            const __mmask16 ma = split_lanes_in(base + SH, 0, wd);                                 \
            const __mmask16 mb = split_lanes_in(base + SH + 16, 0, wd);                            \
            const bool pin = base >= 0 && base < wd;                                               \
            const __mmask16 mc = (__mmask16)(split_lanes_in(base + 32, 0, wd) & 0x7u);             \
            __m512 acc[R];                                                                         \
            _Pragma("GCC unroll 4") for (int q = 0; q < R; q++) acc[q] = _mm512_set1_ps(o->bias);  \
            _Pragma("GCC unroll 12") for (int ir = 0; ir < (R - 1) * 2 + K; ir++)                  \
            {                                                                                      \
                const int64_t ih = r0 * 2 + ir - d->ph;                                            \
                __m512 v[K];                                                                       \
                if (ih >= 0 && ih < h) {                                                           \
                    const float *row = x + ih * wd + base;                                         \
                    const __m512 a = _mm512_maskz_loadu_ps(ma, row + SH);                          \
                    const __m512 b = _mm512_maskz_loadu_ps(mb, row + SH + 16);                     \
                    const __m512 c = SH ? _mm512_set1_ps(pin ? row[0] : 0.0f)                      \
                                        : _mm512_maskz_loadu_ps(mc, row + 32);                     \
                    const __m512 e = _mm512_permutex2var_ps(a, t->ev, b);                          \
                    const __m512 od = _mm512_permutex2var_ps(a, t->od, b);                         \
                    _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) v[kw] =                 \
                        SH        ? (kw == 0   ? dwp_prev1(od, c)                                  \
                                     : kw == 1 ? e                                                 \
                                               : od)                                               \
                        : kw == 0 ? e                                                              \
                        : kw == 1 ? od                                                             \
                        : kw == 2 ? dwp_next1(e, c)                                                \
                                  : _mm512_permutex2var_ps(kw & 1 ? od : e, t->sh[kw], c);         \
                } else {                                                                           \
                    _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) v[kw] =                 \
                        _mm512_setzero_ps();                                                       \
                }                                                                                  \
                DWP_ACC(K, 2, R, ir, v, acc, wv);                                                  \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int q = 0; q < R; q++)                                    \
                dwp_store(o, acc[q], y + (r0 + q) * ow + j0, m);                                   \
        }                                                                                          \
    }
DWP_WS2_KERNEL(3, 4, 0)
DWP_WS2_KERNEL(3, 2, 0)
DWP_WS2_KERNEL(3, 1, 0)
DWP_WS2_KERNEL(3, 4, 1)
DWP_WS2_KERNEL(3, 2, 1)
DWP_WS2_KERNEL(3, 1, 1)
DWP_WS2_KERNEL(5, 4, 0)
DWP_WS2_KERNEL(5, 2, 0)
DWP_WS2_KERNEL(5, 1, 0)
#undef DWP_WS2_KERNEL
#undef DWP_ACC
#undef DWP_BEGIN

/* Padded row r of input plane x into dst by plan p (og_pad_plan_init), wp values: zeros
 * outside the input (stride 1).  Masked loads read only the input row's own values. */
static OG_TARGET_AVX512 void dwp_pad_row(const dw_geom *d, const og_row_plan *p, const float *x,
                                         int64_t r, float *dst)
{
    const int64_t ih = r - d->ph;
    const float *row = ih >= 0 && ih < d->h ? x + ih * d->w : NULL;
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
 * Stride 2 and narrow stride-1 planes in place; other stride-1 planes padded whole into
 * scratch first, then the blocks of 4 output rows.  Stride 2 went through rows split into
 * even and odd columns before (a third of its time in the split): MobileNet-v2's 56x56
 * layer 0.103 -> 0.066 ms, EfficientNet's 5x5 one 0.169 -> 0.121. */
static OG_TARGET_AVX512 void dwp_plane(const dw_geom *d, const float *x, const float *w,
                                       const dwp_out *o, float *y, float *scratch)
{
    const int64_t wp = d->wp, oh = d->oh, ow = d->ow, kh = d->kh;
    int64_t r0 = 0;
    if (d->sh == 2) {
        dwp_s2w t;
        dwp_s2w_init(&t);
        /* blocks of 4 rows, then of 2 (pwdw's bands of 6), then of 1 */
        if (kh == 3 && (d->pw & 1)) {
            for (; r0 + 4 <= oh; r0 += 4) dwp_ws2_k3r4s1(d, &t, x, w, o, y, r0);
            for (; r0 + 2 <= oh; r0 += 2) dwp_ws2_k3r2s1(d, &t, x, w, o, y, r0);
            for (; r0 < oh; r0++) dwp_ws2_k3r1s1(d, &t, x, w, o, y, r0);
        } else if (kh == 3) {
            for (; r0 + 4 <= oh; r0 += 4) dwp_ws2_k3r4s0(d, &t, x, w, o, y, r0);
            for (; r0 + 2 <= oh; r0 += 2) dwp_ws2_k3r2s0(d, &t, x, w, o, y, r0);
            for (; r0 < oh; r0++) dwp_ws2_k3r1s0(d, &t, x, w, o, y, r0);
        } else {
            for (; r0 + 4 <= oh; r0 += 4) dwp_ws2_k5r4s0(d, &t, x, w, o, y, r0);
            for (; r0 + 2 <= oh; r0 += 2) dwp_ws2_k5r2s0(d, &t, x, w, o, y, r0);
            for (; r0 < oh; r0++) dwp_ws2_k5r1s0(d, &t, x, w, o, y, r0);
        }
        return;
    }
    /* stride 1 on narrow planes and on those too large for a copy in L1: in place (dwp_np);
     * on the others the copy, read once into L1, measured faster (56x56: 0.130 against
     * 0.134) */
    if (dwp_np(d)) {
        if (kh == 3 && d->pw == 1) {
            for (; r0 + 4 <= oh; r0 += 4) dwp_np3_r4(d, x, w, o, y, r0);
            for (; r0 < oh; r0++) dwp_np3_r1(d, x, w, o, y, r0);
        } else if (kh == 3) {
            for (; r0 + 4 <= oh; r0 += 4) dwp_np_k3r4(d, x, w, o, y, r0);
            for (; r0 < oh; r0++) dwp_np_k3r1(d, x, w, o, y, r0);
        } else {
            for (; r0 + 4 <= oh; r0 += 4) dwp_np_k5r4(d, x, w, o, y, r0);
            for (; r0 < oh; r0++) dwp_np_k5r1(d, x, w, o, y, r0);
        }
        return;
    }
    og_row_plan plan;
    og_pad_plan_init(&plan, d->pw, d->w, wp);
    for (int64_t r = 0; r < d->rows; r++) dwp_pad_row(d, &plan, x, r, scratch + r * wp);
    if (kh == 3) {
        for (; r0 + 4 <= oh; r0 += 4) dwp_k3r4(scratch, wp, w, o, y, ow, r0);
        for (; r0 < oh; r0++) dwp_k3r1(scratch, wp, w, o, y, ow, r0);
    } else {
        for (; r0 + 4 <= oh; r0 += 4) dwp_k5r4(scratch, wp, w, o, y, ow, r0);
        for (; r0 < oh; r0++) dwp_k5r1(scratch, wp, w, o, y, ow, r0);
    }
}

#endif /* OG_DW_X86 */
