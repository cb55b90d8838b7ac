/* conv_dw_reg.h: the AVX-512 float loop of conv_dw.c for depthwise 3x3 stride-1 Convs of
 * small planes (at most 16 wide, at most DWR_MAX_OS values, padded by one all around: the
 * output the input's size), MobileNet's and EfficientNet's 14x14, 7x7, 8x8, 4x4 and 2x2
 * layers.  Included by conv_dw.c only, after conv_dw_plane.h (dwp_out, dwp_store).
 *
 * A plane is read once, 16 consecutive values a vector (several rows), and every tap's
 * input comes from registers.  The kernel is taken as three columns: with U and D the
 * input moved down and up one row (the values W positions before and after, zeros past the
 * plane), S_dx = w[0][dx]·U + w[1][dx]·X + w[2][dx]·D for dx = -1, 0, 1, and the output
 * is y = b + S_0 + S_-1 moved one position right + S_1 moved one position left, each
 * moved value kept only where it stays in its row.  So 16 outputs take one load, four
 * permutations and nine multiply-adds, where the channels-last blocks (blk_conv) moved
 * each value through two 16 x 16 transposes and the plane loops load each tap.
 *
 *   Planes of more than 16 values: a vector v of the plane takes U and D from vectors v−1,
 *   v and v+1 (two-source permutations; W <= 16), and its shifted sums from the S of
 *   v−1 and v+1: the loop computes S one vector ahead.
 *   Planes of at most 16 values: one vector holds g = min(16 / (H·W), 4) planes (2x2: 4
 *   channels), every move a one-source permutation masked to the lanes whose neighbour
 *   is in the same plane; the weights per lane (a channel's in its planes' lanes).
 *
 * Each output is b + Σ of its nine products, summed in another order than the other paths
 * (the columns first): within rounding of them, and the same on any thread count. */
#ifdef OG_DW_X86

#define DWR_MAX_OS 256 /* values of a plane, at most */
#define DWR_MAX_G  4   /* planes per vector, at most */

/* Whether dwr_group computes geometry d (one input channel per group, Conv). */
static bool dwr_applies(const dw_geom *d)
{
    return og_cpu_isa() >= 2 && d->cg == 1 && d->mg == 1 && !d->dot && d->kh == 3 && d->kw == 3 &&
           d->sh == 1 && d->sw == 1 && d->dh == 1 && d->dw == 1 && d->ph == 1 && d->pw == 1 &&
           d->oh == d->h && d->ow == d->w && d->h >= 1 && d->w >= 1 && d->w <= 16 &&
           d->h * d->w <= DWR_MAX_OS;
}

/* Lane masks of a call: per vector v of a plane (or of the vector of g planes), the lanes
 * stored (st), those whose left and right neighbours are in their row (lf, rt); one
 * vector: those whose rows above and below are in their plane (up, dn). */
typedef struct dwr_plan {
    int64_t g, nv; /* planes per vector (one vector a plane: nv 1), vectors per plane */
    uint16_t st[DWR_MAX_OS / 16], lf[DWR_MAX_OS / 16], rt[DWR_MAX_OS / 16];
    uint16_t up, dn;
} dwr_plan;

static void dwr_plan_make(const dw_geom *d, dwr_plan *p)
{
    const int64_t h = d->h, w = d->w, os = h * w;
    memset(p, 0, sizeof *p);
    p->g = os <= 16 ? (16 / os < DWR_MAX_G ? 16 / os : DWR_MAX_G) : 1;
    p->nv = os <= 16 ? 1 : (os + 15) / 16;
    const int64_t used = os <= 16 ? p->g * os : os; /* values of the vectors */
    for (int64_t l = 0; l < 16 * p->nv && l < used; l++) {
        const int64_t q = l % os, r = q / w, col = q % w, v = l / 16;
        const uint16_t bit = (uint16_t)(1u << (l % 16));
        p->st[v] |= bit;
        if (col > 0) p->lf[v] |= bit;
        if (col < w - 1) p->rt[v] |= bit;
        if (r > 0) p->up |= bit;
        if (r < h - 1) p->dn |= bit;
    }
}

/* The sums S_-1, S_0 (with the bias), S_1 of one vector x, from its rows above (u) and
 * below (dv); wv: the taps row-major. */
#define DWR_COLUMNS(u, x, dv, sl, s0, sr)                                                          \
    do {                                                                                           \
        sl = _mm512_fmadd_ps(wv[6], dv, _mm512_fmadd_ps(wv[3], x, _mm512_mul_ps(wv[0], u)));       \
        s0 = _mm512_fmadd_ps(wv[7], dv, _mm512_fmadd_ps(wv[4], x, _mm512_fmadd_ps(wv[1], u, bv))); \
        sr = _mm512_fmadd_ps(wv[8], dv, _mm512_fmadd_ps(wv[5], x, _mm512_mul_ps(wv[2], u)));       \
    } while (0)

/* Channels [c, c + gc) (gc <= p->g) of images [0, n): input planes at x + i·xs + c·os,
 * output planes at y + i·ys + c·os, weights w [C][9], biases b (NULL: none), o's
 * activation (its bias unused). */
static OG_TARGET_AVX512 void dwr_group(const dw_geom *d, const dwr_plan *p, const float *x,
                                       int64_t xs, const float *w, const float *b, int64_t c,
                                       int64_t gc, int64_t n, float *y, int64_t ys,
                                       const dwp_out *o)
{
    const int64_t wd = d->w, os = d->h * wd, nv = p->nv;
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    __m512 wv[9], bv;
    if (p->g == 1) {
        for (int t = 0; t < 9; t++) wv[t] = _mm512_set1_ps(w[c * 9 + t]);
        bv = _mm512_set1_ps(b ? b[c] : 0.0f);
    } else {
        /* lane l: channel c + l / os (the last one past gc planes: those lanes are not
         * stored) */
        int32_t cl[16];
        for (int l = 0; l < 16; l++) cl[l] = (int32_t)(l / os < gc ? l / os : gc - 1);
        const __m512i ch = _mm512_loadu_si512(cl);
        const __m512i w9 = _mm512_mullo_epi32(_mm512_add_epi32(ch, _mm512_set1_epi32((int)c)),
                                              _mm512_set1_epi32(9));
        for (int t = 0; t < 9; t++)
            wv[t] = _mm512_i32gather_ps(_mm512_add_epi32(w9, _mm512_set1_epi32(t)), w, 4);
        bv = b ? _mm512_i32gather_ps(_mm512_add_epi32(ch, _mm512_set1_epi32((int)c)), b, 4)
               : _mm512_setzero_ps();
    }
    const __m512 lov = _mm512_set1_ps(o->lo), hiv = _mm512_set1_ps(o->hi), z = _mm512_setzero_ps();
    if (nv == 1) {
        /* the lanes of the gc planes there are (a last group may have fewer than g) */
        const __mmask16 st = (__mmask16)(p->st[0] & ((1u << (gc * os)) - 1u));
        const __mmask16 lf = p->lf[0], rt = p->rt[0], up = p->up, dn = p->dn;
        const __m512i iu = _mm512_sub_epi32(iota, _mm512_set1_epi32((int)wd)),
                      id = _mm512_add_epi32(iota, _mm512_set1_epi32((int)wd)),
                      il = _mm512_sub_epi32(iota, _mm512_set1_epi32(1)),
                      ir = _mm512_add_epi32(iota, _mm512_set1_epi32(1));
        for (int64_t i = 0; i < n; i++) {
            const __m512 xv = _mm512_maskz_loadu_ps(st, x + i * xs + c * os);
            const __m512 u = _mm512_maskz_permutexvar_ps(up, iu, xv),
                         dv = _mm512_maskz_permutexvar_ps(dn, id, xv);
            __m512 sl, s0, sr;
            DWR_COLUMNS(u, xv, dv, sl, s0, sr);
            __m512 a = _mm512_add_ps(s0, _mm512_maskz_permutexvar_ps(lf, il, sl));
            a = _mm512_add_ps(a, _mm512_maskz_permutexvar_ps(rt, ir, sr));
            _mm512_mask_storeu_ps(y + i * ys + c * os, st,
                                  og_v_out(a, o->clamp, lov, hiv, o->vact));
        }
        return;
    }
    /* two-source moves: U from (v−1, v), D from (v, v+1); S_-1 from (v−1, v), S_1 from
     * (v, v+1) */
    const __m512i iu = _mm512_add_epi32(iota, _mm512_set1_epi32(16 - (int)wd)),
                  id = _mm512_add_epi32(iota, _mm512_set1_epi32((int)wd)),
                  il = _mm512_add_epi32(iota, _mm512_set1_epi32(15)),
                  ir = _mm512_add_epi32(iota, _mm512_set1_epi32(1));
    const __mmask16 last = p->st[nv - 1];
    for (int64_t i = 0; i < n; i++) {
        const float *xp = x + i * xs + c * os;
        float *yp = y + i * ys + c * os;
        /* vector v of the plane: whole, the last masked (lanes past it zeros), none past */
#define DWR_LOAD(v)                                                                                \
    ((v) < nv - 1    ? _mm512_loadu_ps(xp + 16 * (v))                                              \
     : (v) == nv - 1 ? _mm512_maskz_loadu_ps(last, xp + 16 * (v))                                  \
                     : z)
        __m512 x0 = DWR_LOAD(0), x1 = DWR_LOAD(1), sl, s0, sr, pl = z;
        DWR_COLUMNS(_mm512_permutex2var_ps(z, iu, x0), x0, _mm512_permutex2var_ps(x0, id, x1), sl,
                    s0, sr);
        __m512 xm = x0; /* vector v − 1 ... */
        x0 = x1;        /* ... and v + 1, while v's S are computed */
        for (int64_t v = 0; v < nv; v++) {
            const __m512 x2 = DWR_LOAD(v + 2);
            __m512 nl, n0, nr; /* the S of vector v + 1 */
            DWR_COLUMNS(_mm512_permutex2var_ps(xm, iu, x0), x0, _mm512_permutex2var_ps(x0, id, x2),
                        nl, n0, nr);
            __m512 a = _mm512_add_ps(s0, _mm512_maskz_permutex2var_ps(p->lf[v], pl, il, sl));
            a = _mm512_add_ps(a, _mm512_maskz_permutex2var_ps(p->rt[v], sr, ir, nr));
            _mm512_mask_storeu_ps(yp + 16 * v, p->st[v], og_v_out(a, o->clamp, lov, hiv, o->vact));
            pl = sl;
            sl = nl;
            s0 = n0;
            sr = nr;
            xm = x0;
            x0 = x2;
        }
#undef DWR_LOAD
    }
}
#undef DWR_COLUMNS

#endif /* OG_DW_X86 */
