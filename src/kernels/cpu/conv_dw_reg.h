/* conv_dw_reg.h: the AVX-512 float loops of conv_dw.c for depthwise 3x3 and 5x5 stride-1
 * Convs of small planes (at most 16 wide, at most DWR_MAX_OS values, padded by K / 2 all
 * around: the output the input's size), MobileNet's and EfficientNet's 14x14, 7x7, 8x8,
 * 4x4 and 2x2 layers.  Included by conv_dw.c only, after conv_dw_plane.h (dwp_out).
 *
 * A plane is read once, 16 consecutive values a vector (several rows), and every tap's
 * input comes from registers.  The kernel is taken by columns: with U_dy the input moved
 * by dy rows (the value dy·W positions on, zeros past the plane), S_dx = Σ_dy w[dy][dx]·U_dy
 * for each column dx of the kernel, and the output is y = b + S_0 + Σ_{dx≠0} S_dx moved
 * dx positions, each moved value kept only where it stays in its row.  So 16 outputs take
 * one load, 2(K − 1) permutations and K² multiply-adds, where the channels-last blocks
 * (blk_conv) moved each value through two 16 x 16 transposes and the plane loops load
 * each tap.
 *
 *   Planes of more than 16 values: vector v of the plane takes its U from vectors v − K/2
 *   .. v + K/2 (two-source permutations; W <= 16), and its moved S from the S of
 *   vectors v − 1 and v + 1: the loop computes S one vector ahead.
 *   Planes of at most 16 values: one vector holds g = min(16 / (H·W), 4) planes (2x2: 4
 *   channels), every move a one-source permutation masked to the lanes whose neighbour
 *   is in the same plane; the weights per lane (a channel's in its planes' lanes).
 *
 * Each output is b + Σ of its products, summed in another order than the other paths
 * (by columns): within rounding of them, and the same on any thread count. */
#ifdef OG_DW_X86

#define DWR_MAX_OS 256 /* values of a plane, at most */
#define DWR_MAX_G  4   /* planes per vector, at most */
#define DWR_MAX_K  5

/* Whether dwr_group computes geometry d (one input channel per group, Conv). */
static bool dwr_applies(const dw_geom *d)
{
    const int64_t k = d->kh, p = k / 2;
    return og_cpu_isa() >= 2 && d->cg == 1 && d->mg == 1 && !d->dot && (k == 3 || k == 5) &&
           d->kw == k && d->sh == 1 && d->sw == 1 && d->dh == 1 && d->dw == 1 && d->ph == p &&
           d->pw == p && d->oh == d->h && d->ow == d->w && d->h >= 1 && d->w >= 1 && d->w <= 16 &&
           d->h * d->w <= DWR_MAX_OS;
}

/* Lane masks of a call: per vector v of a plane (or of the vector of g planes), the lanes
 * stored (st) and, per kernel column dx, those whose neighbour dx positions on is in
 * their row (col[dx + K/2]); one vector: per kernel row dy, those whose row dy rows on is
 * in their plane (row[dy + K/2]). */
typedef struct dwr_plan {
    int64_t g, nv; /* planes per vector (one vector a plane: nv 1), vectors per plane */
    uint16_t st[DWR_MAX_OS / 16], col[DWR_MAX_K][DWR_MAX_OS / 16];
    uint16_t row[DWR_MAX_K];
} dwr_plan;

static void dwr_plan_make(const dw_geom *d, dwr_plan *p)
{
    const int64_t h = d->h, w = d->w, os = h * w, hk = d->kh / 2;
    memset(p, 0, sizeof *p);
    p->g = os <= 16 ? (16 / os < DWR_MAX_G ? 16 / os : DWR_MAX_G) : 1;
    p->nv = os <= 16 ? 1 : (os + 15) / 16;
    const int64_t used = os <= 16 ? p->g * os : os; /* values of the vectors */
    for (int64_t l = 0; l < used; l++) {
        const int64_t q = l % os, r = q / w, cl = q % w, v = l / 16;
        const uint16_t bit = (uint16_t)(1u << (l % 16));
        p->st[v] |= bit;
        for (int64_t t = -hk; t <= hk; t++) {
            if (cl + t >= 0 && cl + t < w) p->col[t + hk][v] |= bit;
            if (r + t >= 0 && r + t < h) p->row[t + hk] |= bit;
        }
    }
}

/* The kernel columns' sums S[dx + P] of one vector from its rows moved (U[dy + P]): the
 * bias first in S[P], the rows in order. */
#define DWR_COLUMNS(K, U, S)                                                                       \
    _Pragma("GCC unroll 5") for (int cx = 0; cx < K; cx++)                                         \
    {                                                                                              \
        S[cx] = cx == K / 2 ? _mm512_fmadd_ps(wv[cx], U[0], bv) : _mm512_mul_ps(wv[cx], U[0]);     \
        _Pragma("GCC unroll 5") for (int ry = 1; ry < K; ry++) S[cx] =                             \
            _mm512_fmadd_ps(wv[ry * K + cx], U[ry], S[cx]);                                        \
    }

/* dwr_group##K##_##WIDE: channels [c, c + gc) (gc <= p->g) of images [0, n), input planes
 * at x + i·xs + c·os, output planes at y + i·ys + c·os, weights w [C][K·K], biases b (NULL:
 * none), o's activation (its bias unused).  WIDE: planes more than 8 wide (K 5: the rows 2
 * up and down are 2 vectors away). */
#define DWR_GROUP(K, WIDE)                                                                         \
    static OG_TARGET_AVX512 void dwr_group##K##_##WIDE(                                            \
        const dw_geom *d, const dwr_plan *p, const float *x, int64_t xs, const float *w,           \
        const float *b, int64_t c, int64_t gc, int64_t n, float *y, int64_t ys, const dwp_out *o)  \
    {                                                                                              \
        enum { P = K / 2, T = K * K };                                                             \
        const int64_t wd = d->w, os = d->h * wd, nv = p->nv;                                       \
        const __m512i iota =                                                                       \
            _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);                \
        __m512 wv[T], bv;                                                                          \
        if (p->g == 1) {                                                                           \
            _Pragma("GCC unroll 25") for (int t = 0; t < T; t++) wv[t] =                           \
                _mm512_set1_ps(w[c * T + t]);                                                      \
            bv = _mm512_set1_ps(b ? b[c] : 0.0f);                                                  \
        } else {                                                                                   \
            /* lane l: channel c + l / os (the last one past gc planes: not stored) */             \
            int32_t cl[16];                                                                        \
            for (int l = 0; l < 16; l++) cl[l] = (int32_t)(c + (l / os < gc ? l / os : gc - 1));   \
            const __m512i ch = _mm512_loadu_si512(cl);                                             \
            const __m512i wt = _mm512_mullo_epi32(ch, _mm512_set1_epi32(T));                       \
            _Pragma("GCC unroll 25") for (int t = 0; t < T; t++) wv[t] =                           \
                _mm512_i32gather_ps(_mm512_add_epi32(wt, _mm512_set1_epi32(t)), w, 4);             \
            bv = b ? _mm512_i32gather_ps(ch, b, 4) : _mm512_setzero_ps();                          \
        }                                                                                          \
        const __m512 lov = _mm512_set1_ps(o->lo), hiv = _mm512_set1_ps(o->hi),                     \
                     z = _mm512_setzero_ps();                                                      \
        if (nv == 1) {                                                                             \
            /* the lanes of the gc planes there are (a last group may have fewer than g) */        \
            const __mmask16 st = (__mmask16)(p->st[0] & ((1u << (gc * os)) - 1u));                 \
            for (int64_t i = 0; i < n; i++) {                                                      \
                const __m512 xv = _mm512_maskz_loadu_ps(st, x + i * xs + c * os);                  \
                __m512 u[K], s[K];                                                                 \
                _Pragma("GCC unroll 5") for (int ry = 0; ry < K; ry++) u[ry] =                     \
                    ry == P                                                                        \
                        ? xv                                                                       \
                        : _mm512_maskz_permutexvar_ps(                                             \
                              p->row[ry],                                                          \
                              _mm512_add_epi32(iota, _mm512_set1_epi32((ry - P) * (int)wd)), xv);  \
                DWR_COLUMNS(K, u, s);                                                              \
                __m512 a = s[P];                                                                   \
                _Pragma("GCC unroll 5") for (int cx = 0; cx < K; cx++) if (cx != P) a =            \
                    _mm512_add_ps(a,                                                               \
                                  _mm512_maskz_permutexvar_ps(                                     \
                                      p->col[cx][0],                                               \
                                      _mm512_add_epi32(iota, _mm512_set1_epi32(cx - P)), s[cx]));  \
                _mm512_mask_storeu_ps(y + i * ys + c * os, st,                                     \
                                      og_v_out(a, o->clamp, lov, hiv, o->vact));                   \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        /* row ry moved: from vectors v + lo and v + lo + 1 (in the window xw[j] = vector          \
         * v − P + j), lanes (ry − P)·W − 16·lo + l: lo −1 for the rows above within 16  \
         * values, −2 beyond (K 5, WIDE); 0 below within 16 (16 exactly: lanes 16 + l, the       \
         * whole next vector), 1 beyond */                                                         \
        int lo[K];                                                                                 \
        __m512i iu[K];                                                                             \
        _Pragma("GCC unroll 5") for (int ry = 0; ry < K; ry++)                                     \
        {                                                                                          \
            lo[ry] = ry == P  ? 0                                                                  \
                     : ry < P ? (ry == 0 && K == 5 && WIDE ? -2 : -1)                              \
                              : (ry == K - 1 && K == 5 && WIDE ? 1 : 0);                           \
            iu[ry] = _mm512_add_epi32(iota, _mm512_set1_epi32((ry - P) * (int)wd - 16 * lo[ry]));  \
        }                                                                                          \
        __m512i ih[K]; /* S moved dx = cx − P positions: from vectors (v−1, v) or (v, v+1) */  \
        _Pragma("GCC unroll 5") for (int cx = 0; cx < K; cx++) ih[cx] =                            \
            _mm512_add_epi32(iota, _mm512_set1_epi32(cx < P ? 16 + cx - P : cx - P));              \
        const __mmask16 last = p->st[nv - 1];                                                      \
        for (int64_t i = 0; i < n; i++) {                                                          \
            const float *xp = x + i * xs + c * os;                                                 \
            float *yp = y + i * ys + c * os;                                                       \
            /* vector v of the plane: whole, the last masked (lanes past it zeros), none           \
             * before or past */                                                                   \
            __m512 xw[2 * P + 1], sp[K], sc[K], sn[K];                                             \
            _Pragma("GCC unroll 5") for (int j = 0; j < 2 * P + 1; j++)                            \
            {                                                                                      \
                const int64_t v = j - P;                                                           \
                xw[j] = v < 0 || v >= nv ? z                                                       \
                        : v < nv - 1     ? _mm512_loadu_ps(xp + 16 * v)                            \
                                         : _mm512_maskz_loadu_ps(last, xp + 16 * v);                   \
            }                                                                                      \
            _Pragma("GCC unroll 5") for (int cx = 0; cx < K; cx++) sp[cx] = z;                     \
            {                                                                                      \
                __m512 u[K];                                                                       \
                _Pragma("GCC unroll 5") for (int ry = 0; ry < K; ry++) u[ry] =                     \
                    ry == P ? xw[P]                                                                \
                            : _mm512_permutex2var_ps(xw[P + lo[ry]], iu[ry], xw[P + lo[ry] + 1]);  \
                DWR_COLUMNS(K, u, sc);                                                             \
            }                                                                                      \
            for (int64_t v = 0; v < nv; v++) {                                                     \
                /* the window moves to vector v + 1 - P .. v + 1 + P */                            \
                _Pragma("GCC unroll 5") for (int j = 0; j < 2 * P; j++) xw[j] = xw[j + 1];         \
                const int64_t vn = v + 1 + P;                                                      \
                xw[2 * P] = vn >= nv      ? z                                                      \
                            : vn < nv - 1 ? _mm512_loadu_ps(xp + 16 * vn)                          \
                                          : _mm512_maskz_loadu_ps(last, xp + 16 * vn);             \
                __m512 u[K];                                                                       \
                _Pragma("GCC unroll 5") for (int ry = 0; ry < K; ry++) u[ry] =                     \
                    ry == P ? xw[P]                                                                \
                            : _mm512_permutex2var_ps(xw[P + lo[ry]], iu[ry], xw[P + lo[ry] + 1]);  \
                DWR_COLUMNS(K, u, sn);                                                             \
                __m512 a = sc[P];                                                                  \
                _Pragma("GCC unroll 5") for (int cx = 0; cx < K; cx++) if (cx != P) a =            \
                    _mm512_add_ps(a, cx < P ? _mm512_maskz_permutex2var_ps(p->col[cx][v], sp[cx],  \
                                                                           ih[cx], sc[cx])         \
                                            : _mm512_maskz_permutex2var_ps(p->col[cx][v], sc[cx],  \
                                                                           ih[cx], sn[cx]));       \
                _mm512_mask_storeu_ps(yp + 16 * v, p->st[v],                                       \
                                      og_v_out(a, o->clamp, lov, hiv, o->vact));                   \
                _Pragma("GCC unroll 5") for (int cx = 0; cx < K; cx++)                             \
                {                                                                                  \
                    sp[cx] = sc[cx];                                                               \
                    sc[cx] = sn[cx];                                                               \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DWR_GROUP(3, 0)
DWR_GROUP(5, 0)
DWR_GROUP(5, 1)
#undef DWR_GROUP
#undef DWR_COLUMNS

static void dwr_group(const dw_geom *d, const dwr_plan *p, const float *x, int64_t xs,
                      const float *w, const float *b, int64_t c, int64_t gc, int64_t n, float *y,
                      int64_t ys, const dwp_out *o)
{
    if (d->kh == 3)
        dwr_group3_0(d, p, x, xs, w, b, c, gc, n, y, ys, o);
    else if (d->w <= 8)
        dwr_group5_0(d, p, x, xs, w, b, c, gc, n, y, ys, o);
    else
        dwr_group5_1(d, p, x, xs, w, b, c, gc, n, y, ys, o);
}

#endif /* OG_DW_X86 */
