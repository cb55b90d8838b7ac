/* conv_dw_tmpl.h: the loops of conv_dw.c for one element type and one instruction set.
 * Included by conv_dw.c only, once per (T, ISA) with these defined:
 *   T       float or double
 *   FN(x)   x suffixed with the type and the instruction set
 *   ATTR    the function attribute that targets the instruction set (or nothing)
 *   MADD    MADD(a, b, c) = a*b + c, fused where the instruction set has FMA
 *   DWFNS   the table type of T (dw_fns_f32 or dw_fns_f64)
 * The compiler vectorizes the loops for the instruction set of ATTR. */

/* dst[i] (+)= Σ_t wt[t] * src[i*S + off[t]] for i < n (acc: onto dst, else onto bias),
 * the NT taps written out (REP) and S known, so that the i loop vectorizes with the tap
 * sums kept in registers: per output NT loads from cache and NT multiply-adds, one store.
 * (GCC does not vectorize the i loop around a tap loop, even a constant one.) */
#define DW_TAP_LOAD(t)                                                                             \
    const T w##t = wt[t];                                                                          \
    const int64_t o##t = off[t];
#define DW_TAP_MADD(t) a = MADD(w##t, src[i * S_ + o##t], a);
#define DW_ROW_FIXED(NAME, REP, S)                                                                 \
    static ATTR void FN(NAME)(const T *restrict src, const int64_t *off, const T *wt,              \
                              T *restrict dst, int64_t n, bool acc, T bias)                        \
    {                                                                                              \
        enum { S_ = S };                                                                           \
        REP(DW_TAP_LOAD)                                                                           \
        if (acc) {                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T a = dst[i];                                                                      \
                REP(DW_TAP_MADD)                                                                   \
                dst[i] = a;                                                                        \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T a = bias;                                                                        \
                REP(DW_TAP_MADD)                                                                   \
                dst[i] = a;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }
DW_ROW_FIXED(row9_s1, DW_REP9, 1)
DW_ROW_FIXED(row9_s2, DW_REP9, 2)
DW_ROW_FIXED(row25_s1, DW_REP25, 1)
DW_ROW_FIXED(row25_s2, DW_REP25, 2)
#undef DW_TAP_LOAD
#undef DW_TAP_MADD
#undef DW_ROW_FIXED

/* The same for any tap count and stride: one pass per tap. */
static ATTR void FN(row_any)(const T *restrict src, int64_t s, const int64_t *off, const T *wt,
                             int nt, T *restrict dst, int64_t n, bool acc, T bias)
{
    if (!acc)
        for (int64_t i = 0; i < n; i++) dst[i] = bias;
    for (int t = 0; t < nt; t++) {
        const T w = wt[t];
        const T *restrict sp = src + off[t];
        if (s == 1)
            for (int64_t i = 0; i < n; i++) dst[i] = MADD(w, sp[i], dst[i]);
        else if (s == 2)
            for (int64_t i = 0; i < n; i++) dst[i] = MADD(w, sp[2 * i], dst[i]);
        else
            for (int64_t i = 0; i < n; i++) dst[i] = MADD(w, sp[i * s], dst[i]);
    }
}

static ATTR void FN(row)(const T *src, int64_t s, const int64_t *off, const T *wt, int nt, T *dst,
                         int64_t n, bool acc, T bias)
{
    if (nt == 9 && s == 1)
        FN(row9_s1)(src, off, wt, dst, n, acc, bias);
    else if (nt == 9 && s == 2)
        FN(row9_s2)(src, off, wt, dst, n, acc, bias);
    else if (nt == 25 && s == 1)
        FN(row25_s1)(src, off, wt, dst, n, acc, bias);
    else if (nt == 25 && s == 2)
        FN(row25_s2)(src, off, wt, dst, n, acc, bias);
    else
        FN(row_any)(src, s, off, wt, nt, dst, n, acc, bias);
}

/* One output plane of a Conv from padded input planes (see conv_dw.c): output channel
 * weights wj ([cg][KH*KW]), input planes xp (cg of them, d->plane values apart, d->wp
 * wide), result into y (OH x OW) by way of yw (stride 1: the wide rows). */
static ATTR void FN(conv_plane)(const dw_geom *d, const T *xp, const T *wj, T bias, T *y, T *yw)
{
    const int nt = (int)(d->kh * d->kw);
    if (d->sh == 1 && d->sw == 1) {
        /* every output row is wp wide: one row of (OH-1)*wp + OW values over all planes */
        const int64_t n = (d->oh - 1) * d->wp + d->ow;
        for (int64_t c = 0; c < d->cg; c++)
            FN(row)(xp + c * d->plane, 1, d->off, wj + c * nt, nt, yw, n, c > 0, bias);
        for (int64_t r = 0; r < d->oh; r++)
            memcpy(y + r * d->ow, yw + r * d->wp, (size_t)d->ow * sizeof(T));
        return;
    }
    for (int64_t r = 0; r < d->oh; r++)
        for (int64_t c = 0; c < d->cg; c++) FN(row)
    (xp + c * d->plane + r * d->sh * d->wp, d->sw, d->off, wj + c * nt, nt, y + r * d->ow, d->ow,
     c > 0, bias);
}

/* One output plane of a Conv whose kernel is larger than its output (the weight gradient
 * of a depthwise Conv: X by dY, the output the kernel's size): each output value is a sum
 * of dot products along kernel rows, y[r][q] = b + Σ_c Σ_kh Σ_kw w[c][kh][kw] ·
 * xp_c[r·sh + kh·dh][q·sw + kw·dw], the kw loop vectorized as a reduction. */
static ATTR void FN(dot_plane)(const dw_geom *d, const T *xp, const T *wj, T bias, T *y)
{
    const int64_t nt = d->kh * d->kw, kw_n = d->kw;
    for (int64_t o = 0; o < d->oh * d->ow; o++) y[o] = bias;
    for (int64_t c = 0; c < d->cg; c++)
        for (int64_t kh = 0; kh < d->kh; kh++) {
            const T *restrict wr = wj + c * nt + kh * kw_n;
            for (int64_t r = 0; r < d->oh; r++) {
                const T *xr = xp + c * d->plane + (r * d->sh + kh * d->dh) * d->wp;
                for (int64_t q = 0; q < d->ow; q++) {
                    const T *restrict xs = xr + q * d->sw;
                    T acc = 0;
                    if (d->dw == 1) {
#ifdef _OPENMP
#pragma omp simd reduction(+ : acc)
#endif
                        for (int64_t i = 0; i < kw_n; i++) acc = MADD(wr[i], xs[i], acc);
                    } else if (d->dw == 2) {
#ifdef _OPENMP
#pragma omp simd reduction(+ : acc)
#endif
                        for (int64_t i = 0; i < kw_n; i++) acc = MADD(wr[i], xs[2 * i], acc);
                    } else {
                        const int64_t s = d->dw;
                        for (int64_t i = 0; i < kw_n; i++) acc = MADD(wr[i], xs[i * s], acc);
                    }
                    y[r * d->ow + q] += acc;
                }
            }
        }
}

#ifdef DW_TR16
/* blk_conv's sums for output rows of a K x K kernel of stride S (dilation 1), R positions of
 * a row at a time: every input vector of a kernel row is loaded once and multiplied into
 * each of the up to K sums it enters, where the position loops load it for each tap.
 * a[q] = b + Σ_kh Σ_kw w[kh][kw]·x[kh][q·S + kw], in tap order as the other loops.  All R
 * sums are stored: those past the row's end are the next row's positions, stored again
 * when their row is summed (past the last row, the scratch has room for these stores and
 * their reads: DW_BLK_ROW_SLACK). */
static inline ATTR __attribute__((always_inline)) void FN(blk_row)(const float *xr, int64_t rs,
                                                                   const float *wb, __m512 bv,
                                                                   float *yo, const int K,
                                                                   const int S, const int R)
{
    __m512 a[16];
    _Pragma("GCC unroll 16") for (int q = 0; q < R; q++) a[q] = bv;
    _Pragma("GCC unroll 5") for (int kh = 0; kh < K; kh++)
    {
        /* opaque pointers: else GCC hoists every tap's weights out of the row loops and
         * spills the sums */
        const float *wk = wb + kh * K * DW_L, *xk = xr + kh * rs;
        __asm__("" : "+r"(wk), "+r"(xk));
        __m512 wv[5];
        _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) wv[kw] =
            _mm512_loadu_ps(wk + kw * DW_L);
        _Pragma("GCC unroll 40") for (int jx = 0; jx < (R - 1) * S + K; jx++)
        {
            const __m512 xv = _mm512_loadu_ps(xk + jx * DW_L);
            _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++)
            {
                const int dq = jx - kw;
                if (dq >= 0 && dq % S == 0 && dq / S < R)
                    a[dq / S] = _mm512_fmadd_ps(wv[kw], xv, a[dq / S]);
            }
        }
    }
    /* every sum stored: a store under a test of q took the sums' products into its
     * branch, every input vector held until then (spilled) */
    _Pragma("GCC unroll 16") for (int q = 0; q < R; q++) _mm512_storeu_ps(yo + q * DW_L, a[q]);
}

/* All output rows of one block: blk_rows_K_S_R */
#define DW_ROWS_FN(K, S, R)                                                                        \
    static ATTR __attribute__((noinline)) void FN(blk_rows_##K##_##S##_##R)(                       \
        const dw_geom *d, const float *xb, const float *wb, const float *bb, float *yb)            \
    {                                                                                              \
        const int64_t wp = d->wp;                                                                  \
        const __m512 bv = _mm512_loadu_ps(bb);                                                     \
        for (int64_t oh = 0; oh < d->oh; oh++)                                                     \
            for (int64_t ow0 = 0; ow0 < d->ow; ow0 += R) FN(blk_row)                               \
        (xb + (oh * S * wp + ow0 * S) * DW_L, wp * DW_L, wb, bv, yb + (oh * d->ow + ow0) * DW_L,   \
         K, S, R);                                                                                 \
    }
#define DW_ROWS_FNS(K, S)                                                                          \
    DW_ROWS_FN(K, S, 4)                                                                            \
    DW_ROWS_FN(K, S, 7)                                                                            \
    DW_ROWS_FN(K, S, 8)                                                                            \
    DW_ROWS_FN(K, S, 14)
DW_ROWS_FNS(3, 1)
DW_ROWS_FNS(3, 2)
DW_ROWS_FNS(5, 1)
DW_ROWS_FNS(5, 2)
#define DW_ROWS_KS(K, S)                                                                           \
    switch (rr) {                                                                                  \
    case 4: FN(blk_rows_##K##_##S##_4)(d, xb, wb, bb, yb); break;                                  \
    case 7: FN(blk_rows_##K##_##S##_7)(d, xb, wb, bb, yb); break;                                  \
    case 14: FN(blk_rows_##K##_##S##_14)(d, xb, wb, bb, yb); break;                                \
    default: FN(blk_rows_##K##_##S##_8)(d, xb, wb, bb, yb); break;                                 \
    }

#endif

/* Depthwise Conv of DW_L channels at once, for small planes (where a plane at a time is
 * all overhead): the channels c0 + l (l < nl) of one image, xc their first input plane
 * (d->h * d->w values apart), are copied into xb channels-last and zero-padded,
 * xb[(r·wp + j)·DW_L + l]; then every output position is a vector over the channels,
 * acc[l] = b[l] + Σ_t w[l][t] · xb[(pos + off_t)·DW_L + l] (a row's positions at once
 * where blk_row applies, else a few positions at a time), for each multiplier jm of the
 * output channels (c0 + l)·mg + jm, and is copied back into their planes of y_img (the
 * image's output) after the activation. */
static ATTR void FN(blk_conv)(const dw_geom *d, const T *xc, int64_t nl, const T *w, const T *b,
                              int64_t c0, T *y_img, T *xb, T *yb, T *wk, bool pack,
                              const og_act *act, og_dtype dt)
{
    const int64_t wp = d->wp, nt = d->kh * d->kw, os = d->oh * d->ow, plane = d->h * d->w;
    const int64_t j0 = d->pw < wp ? d->pw : wp, j1 = d->pw + d->w < wp ? d->pw + d->w : wp;
    /* zeros where no input value goes: the rows above and below the input, the columns
     * left and right of it (and, without DW_TR16, the lanes past nl: everywhere) */
#ifndef DW_TR16
    if (nl < DW_L) memset(xb, 0, (size_t)(d->rows * wp * DW_L) * sizeof(T));
#endif
    for (int64_t r = 0; r < d->rows; r++) {
        const int64_t ih = r - d->ph;
        T *row = xb + r * wp * DW_L;
        if (ih < 0 || ih >= d->h) {
            memset(row, 0, (size_t)(wp * DW_L) * sizeof(T));
            continue;
        }
        memset(row, 0, (size_t)(j0 * DW_L) * sizeof(T));
        memset(row + j1 * DW_L, 0, (size_t)((wp - j1) * DW_L) * sizeof(T));
    }
#ifdef DW_TR16
    const int64_t ih0 = d->ph < 0 ? -d->ph : 0,
                  ih1 = d->rows - d->ph < d->h ? d->rows - d->ph : d->h;
    if (d->w < 16 && d->pw >= 0 && d->pw + d->w <= wp && ih1 > ih0) {
        /* narrow planes whose every column is read: 16 consecutive positions of the 16
         * planes at a time (several rows: a row-wise transpose of a 4x4 plane moved 4
         * values of 16), each position's vector stored where its row and column go */
        int64_t ih = ih0, iw = 0;
        const int64_t p1 = ih1 * d->w;
        for (int64_t p = ih0 * d->w; p < p1; p += 16) {
            const int64_t n = p1 - p < 16 ? p1 - p : 16;
            const __mmask16 mk = (__mmask16)((1u << n) - 1u);
            __m512 v[16];
            for (int l = 0; l < 16; l++)
                v[l] = l < nl ? _mm512_maskz_loadu_ps(mk, xc + l * plane + p) : _mm512_setzero_ps();
            DW_TR16(v);
            _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++) if (q < n)
            {
                _mm512_storeu_ps(xb + ((ih + d->ph) * wp + iw + d->pw) * DW_L, v[q]);
                if (++iw == d->w) {
                    iw = 0;
                    ih++;
                }
            }
        }
    } else
        /* 16 columns of the 16 planes at a time, transposed in registers */
        for (int64_t r = 0; r < d->rows; r++) {
            const int64_t ih = r - d->ph;
            if (ih < 0 || ih >= d->h) continue;
            for (int64_t j = j0; j < j1; j += 16) {
                const int64_t n = j1 - j < 16 ? j1 - j : 16;
                const __mmask16 mk = (__mmask16)((1u << n) - 1u);
                __m512 v[16];
                for (int l = 0; l < 16; l++)
                    v[l] = l < nl
                               ? _mm512_maskz_loadu_ps(mk, xc + l * plane + ih * d->w - d->pw + j)
                               : _mm512_setzero_ps();
                DW_TR16(v);
                T *dst = xb + (r * wp + j) * DW_L;
                /* stores from the registers: as a loop to n, GCC makes them a copy of v through
                 * the stack (rep movsq) */
                _Pragma("GCC unroll 16") for (int q = 0; q < 16; q++) if (q < n)
                    _mm512_storeu_ps(dst + q * DW_L, v[q]);
            }
        }
#else
    for (int64_t l = 0; l < nl; l++)
        for (int64_t r = 0; r < d->rows; r++) {
            const int64_t ih = r - d->ph;
            if (ih < 0 || ih >= d->h) continue;
            const T *src = xc + l * plane + ih * d->w - d->pw;
            T *dst = xb + r * wp * DW_L + l;
            for (int64_t j = j0; j < j1; j++) dst[j * DW_L] = src[j];
        }
#endif
    /* the block's kernels and biases, channels-last: wk [mg][nt + 1][DW_L] (the bias last),
     * kept from one image to the next of the same block (pack: the block changed) */
    if (pack)
        for (int64_t jm = 0; jm < d->mg; jm++)
            for (int64_t l = 0; l < DW_L; l++) {
                const int64_t m = (c0 + (l < nl ? l : 0)) * d->mg + jm;
                T *wj = wk + jm * (nt + 1) * DW_L;
                for (int64_t t = 0; t < nt; t++) wj[t * DW_L + l] = w[m * nt + t];
                wj[nt * DW_L + l] = b ? b[m] : 0;
            }
    for (int64_t jm = 0; jm < d->mg; jm++) {
        const T *wb = wk + jm * (nt + 1) * DW_L, *bb = wb + nt * DW_L;
        /* DW_BLK_P output positions at once, taken in row-major order across rows (a row
         * of tiny planes has fewer): independent sums, where one sum would wait on each
         * multiply-add's latency (the taps are few); each sum runs b + w0·x0 + w1·x1 + ...
         * in tap order, whatever the grouping */
        int64_t p0 = 0;
#ifdef DW_TR16
        const int rr = dw_blk_row_r(d);
        if (rr) {
            if (d->kw == 3 && d->sw == 1)
                DW_ROWS_KS(3, 1)
            else if (d->kw == 3)
                DW_ROWS_KS(3, 2)
            else if (d->sw == 1)
                DW_ROWS_KS(5, 1)
            else
                DW_ROWS_KS(5, 2)
            p0 = os;
        } else if (nt == 9) { /* 3x3: the taps' weights and offsets held in registers */
            __m512 wv[9];
            int64_t ot[9];
            _Pragma("GCC unroll 9") for (int t = 0; t < 9; t++)
            {
                wv[t] = _mm512_loadu_ps(wb + t * DW_L);
                ot[t] = d->off[t] * DW_L;
            }
            const __m512 bv = _mm512_loadu_ps(bb);
            for (; p0 + 8 <= os; p0 += 8) {
                __m512 a[8];
                const float *xs[8];
                _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
                {
                    const int64_t oh = (p0 + q) / d->ow, ow = (p0 + q) % d->ow;
                    xs[q] = xb + (oh * d->sh * wp + ow * d->sw) * DW_L;
                    a[q] = bv;
                }
                _Pragma("GCC unroll 9") for (int t = 0; t < 9; t++)
                    _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++) a[q] =
                        _mm512_fmadd_ps(wv[t], _mm512_loadu_ps(xs[q] + ot[t]), a[q]);
                _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
                    _mm512_storeu_ps(yb + (p0 + q) * DW_L, a[q]);
            }
        }
        for (; p0 + 8 <= os; p0 += 8) { /* eight sums in registers, one vector each */
            __m512 a[8];
            const float *xs[8];
            const __m512 bv = _mm512_loadu_ps(bb);
            _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
            {
                const int64_t oh = (p0 + q) / d->ow, ow = (p0 + q) % d->ow;
                xs[q] = xb + (oh * d->sh * wp + ow * d->sw) * DW_L;
                a[q] = bv;
            }
            for (int64_t t = 0; t < nt; t++) {
                const int64_t ot = d->off[t] * DW_L;
                const __m512 wv = _mm512_loadu_ps(wb + t * DW_L);
                _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++) a[q] =
                    _mm512_fmadd_ps(wv, _mm512_loadu_ps(xs[q] + ot), a[q]);
            }
            _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
                _mm512_storeu_ps(yb + (p0 + q) * DW_L, a[q]);
        }
#endif
        for (; p0 + DW_BLK_P <= os; p0 += DW_BLK_P) {
            T a[DW_BLK_P][DW_L];
            const T *xs[DW_BLK_P];
            _Pragma("GCC unroll 8") for (int q = 0; q < DW_BLK_P; q++)
            {
                const int64_t oh = (p0 + q) / d->ow, ow = (p0 + q) % d->ow;
                xs[q] = xb + (oh * d->sh * wp + ow * d->sw) * DW_L;
                for (int l = 0; l < DW_L; l++) a[q][l] = bb[l];
            }
            for (int64_t t = 0; t < nt; t++) {
                const int64_t ot = d->off[t] * DW_L;
                const T *wt = wb + t * DW_L;
                _Pragma("GCC unroll 8") for (int q = 0; q < DW_BLK_P; q++) for (int l = 0; l < DW_L;
                                                                                l++) a[q][l] =
                    MADD(wt[l], xs[q][ot + l], a[q][l]);
            }
            _Pragma("GCC unroll 8") for (int q = 0; q < DW_BLK_P; q++) for (int l = 0; l < DW_L;
                                                                            l++)
                yb[(p0 + q) * DW_L + l] = a[q][l];
        }
        for (; p0 < os; p0++) {
            T acc[DW_L];
            for (int l = 0; l < DW_L; l++) acc[l] = bb[l];
            const T *xs = xb + (p0 / d->ow * d->sh * wp + p0 % d->ow * d->sw) * DW_L;
            for (int64_t t = 0; t < nt; t++) {
                const T *xt = xs + d->off[t] * DW_L, *wt = wb + t * DW_L;
                for (int l = 0; l < DW_L; l++) acc[l] = MADD(wt[l], xt[l], acc[l]);
            }
            for (int l = 0; l < DW_L; l++) yb[p0 * DW_L + l] = acc[l];
        }
#ifdef DW_TR16
        /* a clamp (Relu, Clip; as E_CLIP: NaN passes) or vact.h's activations on the way
         * out, in registers */
        float lo = 0.0f, hi = 0.0f;
        const bool clamp = og_act_clamp_f32(act, &lo, &hi);
        const int vact = clamp ? 0 : og_vact_of(act);
        if (!clamp && !vact) og_cpu_act(act, dt, yb, os * DW_L);
        const __m512 lov = _mm512_set1_ps(lo), hiv = _mm512_set1_ps(hi);
        for (int64_t o = 0; o < os; o += 16) { /* 16 positions of the 16 channels at a time */
            const int64_t n = os - o < 16 ? os - o : 16;
            const __mmask16 mk = (__mmask16)((1u << n) - 1u);
            __m512 v[16];
            for (int q = 0; q < 16; q++) {
                v[q] = q < n ? _mm512_loadu_ps(yb + (o + q) * DW_L) : _mm512_setzero_ps();
                v[q] = og_v_out(v[q], clamp, lov, hiv, vact);
            }
            DW_TR16(v);
            for (int64_t l = 0; l < nl; l++)
                _mm512_mask_storeu_ps(y_img + ((c0 + l) * d->mg + jm) * os + o, mk, v[l]);
        }
#else
        og_cpu_act(act, dt, yb, os * DW_L);
        for (int64_t l = 0; l < nl; l++) {
            T *yc = y_img + ((c0 + l) * d->mg + jm) * os;
            for (int64_t o = 0; o < os; o++) yc[o] = yb[o * DW_L + l];
        }
#endif
    }
}
#ifdef DW_TR16
#undef DW_ROWS_FN
#undef DW_ROWS_FNS
#undef DW_ROWS_KS
#endif

/* Depthwise ConvTranspose (one input and one output channel per group: a depthwise
 * Conv's input gradient) of DW_L channels at once for small planes, channels-last in xb
 * (the input) and yb (the output): yb = b, then every input position scattered through
 * every tap as one vector over the channels, yb[o(ih, iw, t)·DW_L + l] += w[l][t] ·
 * xb[(ih·W + iw)·DW_L + l], then the activation and the copy back into the planes of
 * y_img. */
static ATTR void FN(blk_tr)(const dw_geom *d, const T *xc, int64_t nl, const T *w, const T *b,
                            int64_t c0, T *y_img, T *xb, T *yb, const og_act *act, og_dtype dt)
{
    const int64_t nt = d->kh * d->kw, os = d->oh * d->ow, is = d->h * d->w;
    for (int64_t l = 0; l < nl; l++)
        for (int64_t i = 0; i < is; i++) xb[i * DW_L + l] = xc[l * is + i];
    for (int64_t i = 0; i < is; i++)
        for (int64_t l = nl; l < DW_L; l++) xb[i * DW_L + l] = 0;
    T wb[DW_MAX_TAPS * DW_L], bb[DW_L];
    for (int64_t l = 0; l < DW_L; l++) {
        const int64_t c = c0 + (l < nl ? l : 0);
        bb[l] = b ? b[c] : 0;
        for (int64_t t = 0; t < nt; t++) wb[t * DW_L + l] = w[c * nt + t];
    }
    for (int64_t o = 0; o < os; o++)
        for (int l = 0; l < DW_L; l++) yb[o * DW_L + l] = bb[l];
    for (int64_t kh = 0; kh < d->kh; kh++) {
        const int64_t hoff = kh * d->dh - d->ph; /* oh = ih*sh + hoff */
        const int64_t ia = dw_clamp(dw_ceil_div(-hoff, d->sh), 0, d->h);
        const int64_t ib = dw_clamp(dw_ceil_div(d->oh - hoff, d->sh), ia, d->h);
        for (int64_t kw = 0; kw < d->kw; kw++) {
            const T *wt = wb + (kh * d->kw + kw) * DW_L;
            const int64_t woff = kw * d->dw - d->pw; /* ow = iw*sw + woff */
            const int64_t ja = dw_clamp(dw_ceil_div(-woff, d->sw), 0, d->w);
            const int64_t jb = dw_clamp(dw_ceil_div(d->ow - woff, d->sw), ja, d->w);
            for (int64_t ih = ia; ih < ib; ih++)
                for (int64_t iw = ja; iw < jb; iw++) {
                    const T *xs = xb + (ih * d->w + iw) * DW_L;
                    T *ys = yb + ((ih * d->sh + hoff) * d->ow + iw * d->sw + woff) * DW_L;
                    for (int l = 0; l < DW_L; l++) ys[l] = MADD(wt[l], xs[l], ys[l]);
                }
        }
    }
    og_cpu_act(act, dt, yb, os * DW_L);
    for (int64_t l = 0; l < nl; l++) {
        T *yc = y_img + (c0 + l) * os;
        for (int64_t o = 0; o < os; o++) yc[o] = yb[o * DW_L + l];
    }
}

/* The dot-product Conv (d->dot, one output channel per group: a depthwise Conv's weight
 * gradient) of DW_L groups g0 + l (l < nl) at once: their cg input planes each (x: the
 * image's input) zero-padded into xb channels-last, xb[((c·rows + r)·wp + j)·DW_L + l],
 * their kernels into wb, wb[(c·nt + t)·DW_L + l]; each output value is then a vector over
 * the groups, acc[l] = b[l] + Σ_c Σ_t wb[c, t][l] · xb[c, pos + tap t][l], its sum kept
 * in registers.  The results go to yb, then after the activation to the output planes of
 * y (the image's output). */
static ATTR void FN(blk_dot)(const dw_geom *d, const T *x, int64_t g0, int64_t nl, const T *w,
                             const T *b, T *y, T *xb, T *wb, T *yb, const og_act *act, og_dtype dt)
{
    const int64_t nt = d->kh * d->kw, wp = d->wp, pp = d->rows * wp, os = d->oh * d->ow;
    const int64_t plane = d->h * d->w, cg = d->cg;
    memset(xb, 0, (size_t)(cg * pp * DW_L) * sizeof(T));
    const int64_t j0 = d->pw < wp ? d->pw : wp, j1 = d->pw + d->w < wp ? d->pw + d->w : wp;
    for (int64_t l = 0; l < nl; l++)
        for (int64_t c = 0; c < cg; c++) {
            const T *src = x + ((g0 + l) * cg + c) * plane;
            for (int64_t r = 0; r < d->rows; r++) {
                const int64_t ih = r - d->ph;
                if (ih < 0 || ih >= d->h) continue;
                T *dst = xb + (c * pp + r * wp) * DW_L + l;
                const T *sr = src + ih * d->w - d->pw;
                for (int64_t j = j0; j < j1; j++) dst[j * DW_L] = sr[j];
            }
        }
    for (int64_t l = 0; l < DW_L; l++) {
        const T *src = w + (g0 + (l < nl ? l : 0)) * cg * nt;
        for (int64_t i = 0; i < cg * nt; i++) wb[i * DW_L + l] = l < nl ? src[i] : 0;
    }
    for (int64_t r = 0; r < d->oh; r++)
        for (int64_t q = 0; q < d->ow; q++) {
            T acc[DW_L];
            for (int l = 0; l < DW_L; l++) acc[l] = 0;
            for (int64_t c = 0; c < cg; c++)
                for (int64_t kh = 0; kh < d->kh; kh++) {
                    const T *xs = xb + (c * pp + (r * d->sh + kh * d->dh) * wp + q * d->sw) * DW_L;
                    const T *ws = wb + (c * nt + kh * d->kw) * DW_L;
                    const int64_t step = d->dw * DW_L;
                    for (int64_t kw = 0; kw < d->kw; kw++, xs += step, ws += DW_L)
                        for (int l = 0; l < DW_L; l++) acc[l] = MADD(ws[l], xs[l], acc[l]);
                }
            T *yo = yb + (r * d->ow + q) * DW_L;
            for (int l = 0; l < DW_L; l++) yo[l] = acc[l];
        }
    for (int64_t l = 0; l < nl; l++) {
        const T bias = b ? b[g0 + l] : 0;
        for (int64_t o = 0; o < os; o++) yb[o * DW_L + l] += bias;
    }
    og_cpu_act(act, dt, yb, os * DW_L);
    for (int64_t l = 0; l < nl; l++) {
        T *yc = y + (g0 + l) * os;
        for (int64_t o = 0; o < os; o++) yc[o] = yb[o * DW_L + l];
    }
}

/* Padded plane of one input channel: rows [0, d->rows) of d->wp values, input row
 * r - ph and column j - pw, zero outside the input. */
static ATTR void FN(pad_plane)(const dw_geom *d, const T *x, T *xp)
{
    const int64_t lo = d->pw < d->wp ? d->pw : d->wp;               /* first input col */
    const int64_t hi = d->pw + d->w < d->wp ? d->pw + d->w : d->wp; /* past the last */
    for (int64_t r = 0; r < d->rows; r++) {
        T *row = xp + r * d->wp;
        const int64_t ih = r - d->ph;
        if (ih < 0 || ih >= d->h || hi <= lo) {
            memset(row, 0, (size_t)d->wp * sizeof(T));
            continue;
        }
        memset(row, 0, (size_t)lo * sizeof(T));
        memcpy(row + lo, x + ih * d->w + (lo - d->pw), (size_t)(hi - lo) * sizeof(T));
        memset(row + hi, 0, (size_t)(d->wp - hi) * sizeof(T));
    }
}

/* ConvTranspose, one output plane y (OH x OW, filled with the bias already): each of the
 * cg input planes x (H x W, d->plane apart) scattered through its taps wj[c][t]:
 * y[ih*sh + kh*dh - ph][iw*sw + kw*dw - pw] += w * x[ih][iw]. */
static ATTR void FN(tr_plane)(const dw_geom *d, const T *x, const T *wj, int64_t wstride, T *y)
{
    for (int64_t c = 0; c < d->cg; c++) {
        const T *xc = x + c * d->plane;
        const T *wc = wj + c * wstride;
        for (int64_t kh = 0; kh < d->kh; kh++) {
            const int64_t hoff = kh * d->dh - d->ph; /* oh = ih*sh + hoff */
            const int64_t ia = dw_clamp(dw_ceil_div(-hoff, d->sh), 0, d->h);
            const int64_t ib = dw_clamp(dw_ceil_div(d->oh - hoff, d->sh), ia, d->h);
            for (int64_t kw = 0; kw < d->kw; kw++) {
                const T w = wc[kh * d->kw + kw];
                const int64_t woff = kw * d->dw - d->pw; /* ow = iw*sw + woff */
                const int64_t lo = dw_clamp(dw_ceil_div(-woff, d->sw), 0, d->w);
                const int64_t hi = dw_clamp(dw_ceil_div(d->ow - woff, d->sw), lo, d->w);
                const int64_t n = hi - lo, s = d->sw;
                for (int64_t ih = ia; ih < ib; ih++) {
                    const T *restrict src = xc + ih * d->w + lo;
                    T *restrict dst = y + (ih * d->sh + hoff) * d->ow + lo * s + woff;
                    if (s == 1)
                        for (int64_t i = 0; i < n; i++) dst[i] = MADD(w, src[i], dst[i]);
                    else if (s == 2)
                        for (int64_t i = 0; i < n; i++) dst[2 * i] = MADD(w, src[i], dst[2 * i]);
                    else
                        for (int64_t i = 0; i < n; i++) dst[i * s] = MADD(w, src[i], dst[i * s]);
                }
            }
        }
    }
}

static const DWFNS FN(fns) = {FN(conv_plane), FN(pad_plane), FN(tr_plane), FN(dot_plane),
                              FN(blk_conv),   FN(blk_tr),    FN(blk_dot)};
