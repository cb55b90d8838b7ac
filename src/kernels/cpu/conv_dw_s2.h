/* conv_dw_s2.h: the AVX-512 float loops of conv_dw.c for depthwise 3x3 and 5x5 stride-2
 * Convs of narrow planes (input rows of at most 16 values, output rows of at most 8):
 * MobileNet's and EfficientNet's 14x14 -> 7x7 and 16x16 -> 8x8 layers.  Included by
 * conv_dw.c only, after conv_dw_plane.h (dwp_out).
 *
 * Two output rows make one vector (lanes 0-7 the first, 8-15 the second).  An input row
 * is one masked load, and a tap's inputs for both output rows are one two-source
 * permutation of the two input rows it reads (column 2·x + dx − pad in each half, zero
 * outside the row), so 16 outputs take K² permutations and K² multiply-adds from 2K row
 * loads.  The channels-last blocks (blk_conv) moved each value through two 16 x 16
 * transposes instead, and the plane loops (dwp_ws2) filled at most half their lanes.
 *
 * Each output is b + w0·x0 + w1·x1 + ... in tap order, the padding's zero products
 * included, as the blocks and the plane loops sum it: the same bits. */
#ifdef OG_DW_X86

/* Input rows this narrow or wider: below it output rows of 4 or fewer values leave half
 * the lanes or more empty, and the blocks' 16 channels at a time won (8x8 planes:
 * MobileNet-v2 8x64x64's 192-channel layer 0.028 ms by the blocks against 0.057 this way,
 * MobileNet-v3's 5x5 one 0.020 against 0.066). */
#define DWS2_MIN_W 9

/* Whether dws2_plane computes geometry d (one input channel per group, Conv). */
static bool dws2_applies(const dw_geom *d)
{
    return og_cpu_isa() >= 2 && d->cg == 1 && d->mg == 1 && !d->dot && d->kh == d->kw &&
           (d->kh == 3 || d->kh == 5) && d->sh == 2 && d->sw == 2 && d->dh == 1 && d->dw == 1 &&
           d->w >= DWS2_MIN_W && d->w <= 16 && d->ow >= 1 && d->ow <= 8 && d->oh >= 1 &&
           d->ph >= 0 && d->pw >= 0;
}

/* Per kernel column dx: the lanes' sources in the two input rows (lane l of the first
 * at l, of the second at 16 + l) and the lanes whose column is in the row; the store's
 * compaction of two output rows of ow < 8 values (lanes 0-7 and 8-15 to 0 .. 2·ow − 1). */
typedef struct dws2_plan {
    int32_t idx[5][16];
    uint16_t keep[5];
    int32_t pack[16];
} dws2_plan;

static void dws2_plan_make(const dw_geom *d, dws2_plan *p)
{
    memset(p, 0, sizeof *p);
    for (int64_t dx = 0; dx < d->kw; dx++)
        for (int l = 0; l < 16; l++) {
            const int64_t ox = l % 8, col = 2 * ox + dx - d->pw;
            const bool in = col >= 0 && col < d->w && ox < d->ow;
            p->idx[dx][l] = (int32_t)((in ? col : 0) + (l >= 8 ? 16 : 0));
            if (in) p->keep[dx] |= (uint16_t)(1u << l);
        }
    for (int l = 0; l < 16; l++)
        p->pack[l] = (int32_t)(l < d->ow ? l : l < 2 * d->ow ? 8 + l - d->ow : 0);
}

/* One output plane y (OH x OW) = bias + the K x K taps w over input plane x (H x W): up
 * to DWS2_R vectors (2·DWS2_R output rows) at a time, whose chains of multiply-adds run
 * side by side (one vector's chain waited on each multiply-add's latency: 14x14 -> 7x7
 * planes took 1.3x as long). */
#define DWS2_R 4
#define DWS2_KERNEL(K)                                                                             \
    static OG_TARGET_AVX512 void dws2_plane_k##K(const dw_geom *d, const dws2_plan *p,             \
                                                 const float *x, const float *w, const dwp_out *o, \
                                                 float *y)                                         \
    {                                                                                              \
        __m512 wv[K * K];                                                                          \
        _Pragma("GCC unroll 25") for (int t = 0; t < K * K; t++) wv[t] = _mm512_set1_ps(w[t]);     \
        __m512i ix[K];                                                                             \
        __mmask16 keep[K];                                                                         \
        _Pragma("GCC unroll 5") for (int dx = 0; dx < K; dx++)                                     \
        {                                                                                          \
            ix[dx] = _mm512_loadu_si512(p->idx[dx]);                                               \
            keep[dx] = p->keep[dx];                                                                \
        }                                                                                          \
        const __m512i pack = _mm512_loadu_si512(p->pack);                                          \
        const __m512 bias = _mm512_set1_ps(o->bias), lo = _mm512_set1_ps(o->lo),                   \
                     hi = _mm512_set1_ps(o->hi);                                                   \
        const bool clamp = o->clamp;                                                               \
        const int vact = o->vact;                                                                  \
        const int64_t h = d->h, wd = d->w, oh = d->oh, ow = d->ow, ph = d->ph;                     \
        const __mmask16 lm = (__mmask16)((1u << wd) - 1u);                                         \
        for (int64_t oy0 = 0; oy0 < oh; oy0 += 2 * DWS2_R) {                                       \
            __m512 acc[DWS2_R];                                                                    \
            _Pragma("GCC unroll 4") for (int q = 0; q < DWS2_R; q++) acc[q] = bias;                \
            _Pragma("GCC unroll 5") for (int dy = 0; dy < K; dy++)                                 \
            {                                                                                      \
                __m512 a[DWS2_R], b[DWS2_R];                                                       \
                _Pragma("GCC unroll 4") for (int q = 0; q < DWS2_R; q++)                           \
                {                                                                                  \
                    const int64_t oy = oy0 + 2 * q, ra = 2 * oy + dy - ph, rb = ra + 2;            \
                    a[q] = oy < oh && ra >= 0 && ra < h ? _mm512_maskz_loadu_ps(lm, x + ra * wd)   \
                                                        : _mm512_setzero_ps();                     \
                    b[q] = oy + 1 < oh && rb >= 0 && rb < h                                        \
                               ? _mm512_maskz_loadu_ps(lm, x + rb * wd)                            \
                               : _mm512_setzero_ps();                                              \
                }                                                                                  \
                _Pragma("GCC unroll 5") for (int dx = 0; dx < K; dx++)                             \
                    _Pragma("GCC unroll 4") for (int q = 0; q < DWS2_R; q++) acc[q] =              \
                        _mm512_fmadd_ps(                                                           \
                            wv[dy * K + dx],                                                       \
                            _mm512_maskz_permutex2var_ps(keep[dx], a[q], ix[dx], b[q]), acc[q]);   \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int q = 0; q < DWS2_R; q++)                               \
            {                                                                                      \
                const int64_t oy = oy0 + 2 * q;                                                    \
                if (oy >= oh) break;                                                               \
                __m512 v = og_v_out(acc[q], clamp, lo, hi, vact);                                  \
                const int64_t n = oy + 1 < oh ? 2 * ow : ow;                                       \
                if (ow < 8) v = _mm512_permutexvar_ps(pack, v);                                    \
                _mm512_mask_storeu_ps(y + oy * ow, (__mmask16)((1u << n) - 1u), v);                \
            }                                                                                      \
        }                                                                                          \
    }
DWS2_KERNEL(3)
DWS2_KERNEL(5)
#undef DWS2_KERNEL
#undef DWS2_R

#endif /* OG_DW_X86 */
