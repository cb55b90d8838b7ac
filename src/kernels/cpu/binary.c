/* binary.c: CPU kernels of the broadcasting elementwise ops (see src/ops/binary.c).
 *
 * Every op runs through one engine.  A plan collapses the output shape and the inputs'
 * broadcast strides: size-1 dims are dropped and neighbouring dims merged wherever every
 * input is contiguous across them.  What is left is a few outer dims and one inner run in
 * which each input's stride is 0 (one value repeated) or 1 (contiguous):
 *   equal shapes          -> one run of N, both strides 1
 *   scalar operand        -> one run of N, strides (1, 0)
 *   [N,C] + [C]           -> N runs of C, strides (1, 1)
 *   [N,C,H,W] + [1,C,1,1] -> N*C runs of H*W, strides (1, 0)
 * and anything else becomes a strided walk over the outer dims with the same inner loops.
 * The output range is cut into one chunk per thread; each chunk walks its rows.  The inner
 * loops are instantiated per op and element type by macros, four variants each (both
 * contiguous, left/right repeated, both repeated) so that the compiler vectorizes them.
 * No restrict: the variadic ops accumulate into the output in place. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernel.h"

/* Must match src/ops/binary.c. */
typedef struct og_mod_params {
    int fmod;
} og_mod_params;
typedef struct og_bitshift_params {
    int left;
} og_bitshift_params;

#define BMAX_IN 3

typedef struct bplan {
    int rank; /* >= 1 */
    int n_in;
    int64_t total;
    int64_t dims[OG_MAX_RANK];
    int64_t st[BMAX_IN][OG_MAX_RANK]; /* elements; the innermost is 0 or 1 */
} bplan;

static void plan_init(bplan *p, const og_tensor *out, const og_tensor *const *ins, int n)
{
    int64_t st[BMAX_IN][OG_MAX_RANK], dims[OG_MAX_RANK], nst[BMAX_IN][OG_MAX_RANK];
    int r = out->rank, nr = 0;
    for (int k = 0; k < n; k++)
        og_broadcast_strides(ins[k]->rank, ins[k]->dims, r, out->dims, st[k]);
    /* from the innermost dim out; dims[]/nst[] are built innermost first */
    for (int d = r - 1; d >= 0; d--) {
        if (out->dims[d] == 1) continue;
        if (nr > 0) {
            bool merge = true;
            for (int k = 0; k < n; k++)
                if (st[k][d] != nst[k][nr - 1] * dims[nr - 1]) merge = false;
            if (merge) {
                dims[nr - 1] *= out->dims[d];
                continue;
            }
        }
        dims[nr] = out->dims[d];
        for (int k = 0; k < n; k++) nst[k][nr] = st[k][d];
        nr++;
    }
    if (nr == 0) { /* one element */
        dims[0] = 1;
        for (int k = 0; k < n; k++) nst[k][0] = 0;
        nr = 1;
    }
    p->rank = nr;
    p->n_in = n;
    p->total = out->numel;
    for (int i = 0; i < nr; i++) {
        p->dims[i] = dims[nr - 1 - i];
        for (int k = 0; k < n; k++) p->st[k][i] = nst[k][nr - 1 - i];
    }
}

/* Walks the rows of a plan between two output positions. */
typedef struct row_iter {
    int64_t pos, end;
    int64_t j; /* position inside the current row */
    int64_t idx[OG_MAX_RANK];
    int64_t off[BMAX_IN]; /* input offsets of the current row's start */
} row_iter;

static inline void rows_begin(const bplan *p, row_iter *it, int64_t start, int64_t end)
{
    int r = p->rank;
    int64_t inner = p->dims[r - 1], q = start / inner;
    it->pos = start;
    it->end = end;
    it->j = start % inner;
    for (int k = 0; k < p->n_in; k++) it->off[k] = 0;
    for (int d = r - 2; d >= 0; d--) {
        it->idx[d] = q % p->dims[d];
        q /= p->dims[d];
        for (int k = 0; k < p->n_in; k++) it->off[k] += it->idx[d] * p->st[k][d];
    }
}

/* The next block of output positions: *rows rows of n positions each (several only when
 * they are whole rows along the second-innermost dim), starting at output position *at and
 * at input offsets off[]; row t adds t times the inputs' second-innermost strides.  Returns
 * n, 0 when done.  Blocks keep the per-row cost low when rows are short. */
static inline int64_t rows_next(const bplan *p, row_iter *it, int64_t *at, int64_t *off,
                                int64_t *rows)
{
    if (it->pos >= it->end) return 0;
    int r = p->rank, d = r - 2;
    int64_t inner = p->dims[r - 1], n = inner - it->j, m = 1;
    *at = it->pos;
    for (int k = 0; k < p->n_in; k++) off[k] = it->off[k] + it->j * p->st[k][r - 1];
    if (n >= it->end - it->pos) { /* the chunk ends inside this row */
        n = it->end - it->pos;
        it->pos = it->end;
        *rows = 1;
        return n;
    }
    if (it->j == 0 && d >= 0) {
        m = p->dims[d] - it->idx[d];
        if (m > (it->end - it->pos) / inner) m = (it->end - it->pos) / inner;
    }
    *rows = m;
    it->pos += (m - 1) * inner + n;
    it->j = 0;
    if (d < 0) return n;
    it->idx[d] += m;
    for (int k = 0; k < p->n_in; k++) it->off[k] += m * p->st[k][d];
    while (it->idx[d] >= p->dims[d]) { /* carry into the outer dims */
        for (int k = 0; k < p->n_in; k++) it->off[k] -= p->st[k][d] * p->dims[d];
        it->idx[d] = 0;
        if (--d < 0) break;
        it->idx[d]++;
        for (int k = 0; k < p->n_in; k++) it->off[k] += p->st[k][d];
    }
    return n;
}

/* Second-innermost stride of input k (0 for rank 1). */
static inline int64_t row_stride(const bplan *p, int k)
{
    return p->rank > 1 ? p->st[k][p->rank - 2] : 0;
}

typedef void (*bin_fn)(const bplan *p, const void *a, const void *b, void *o, int64_t start,
                       int64_t end);

/* One binary loop: o = E(T, U, a, b) with TO the output type and U the type the arithmetic
 * is done in (unsigned for integers, so that overflow wraps instead of being UB). */
#define DEF_BIN(NAME, TA, TB, TO, U, E) DEF_BIN_A(, NAME, TA, TB, TO, U, E)
#define DEF_BIN_A(ATTR, NAME, TA, TB, TO, U, E)                                                    \
    static ATTR void NAME(const bplan *p, const void *va, const void *vb, void *vo, int64_t start, \
                          int64_t end)                                                             \
    {                                                                                              \
        const TA *a = va;                                                                          \
        const TB *b = vb;                                                                          \
        TO *o = vo;                                                                                \
        const bool sa = p->st[0][p->rank - 1] != 0, sb = p->st[1][p->rank - 1] != 0;               \
        const int64_t ra = row_stride(p, 0), rb = row_stride(p, 1);                                \
        row_iter it;                                                                               \
        int64_t n, at, rows, off[BMAX_IN];                                                         \
        rows_begin(p, &it, start, end);                                                            \
        while ((n = rows_next(p, &it, &at, off, &rows)) > 0)                                       \
            for (int64_t t = 0; t < rows; t++) {                                                   \
                const TA *x = a + off[0] + t * ra;                                                 \
                const TB *y = b + off[1] + t * rb;                                                 \
                TO *z = o + at + t * n;                                                            \
                if (sa && sb) {                                                                    \
                    for (int64_t i = 0; i < n; i++) z[i] = E(TO, U, x[i], y[i]);                   \
                } else if (sa) {                                                                   \
                    const TB yv = y[0];                                                            \
                    for (int64_t i = 0; i < n; i++) z[i] = E(TO, U, x[i], yv);                     \
                } else if (sb) {                                                                   \
                    const TA xv = x[0];                                                            \
                    for (int64_t i = 0; i < n; i++) z[i] = E(TO, U, xv, y[i]);                     \
                } else {                                                                           \
                    const TO v = E(TO, U, x[0], y[0]);                                             \
                    for (int64_t i = 0; i < n; i++) z[i] = v;                                      \
                }                                                                                  \
            }                                                                                      \
    }

/* Dtype slots of the per-op tables. */
enum { S_F32, S_F64, S_I32, S_I64, S_BOOL, S_F16, S_I8, S_I16, S_U8, S_U16, S_U32, S_U64, S_N };

static int slot_of(og_dtype t)
{
    switch (t) {
    case OG_FLOAT: return S_F32;
    case OG_DOUBLE: return S_F64;
    case OG_INT32: return S_I32;
    case OG_INT64: return S_I64;
    case OG_BOOL: return S_BOOL;
    case OG_FLOAT16: return S_F16;
    case OG_INT8: return S_I8;
    case OG_INT16: return S_I16;
    case OG_UINT8: return S_U8;
    case OG_UINT16: return S_U16;
    case OG_UINT32: return S_U32;
    case OG_UINT64: return S_U64;
    default: return -1;
    }
}

/* The other integer widths: signed ones with ES, unsigned ones with EU (wrapping in the
 * unsigned type of their width; an int8 or int16 sum is computed in int and wrapped back). */
/* The 16-bit types wrap in uint32_t: uint16_t operands promote to int, whose product
 * 65535 * 65535 overflows (undefined); 8-bit products fit in int. */
#define DEF_SMALL(OP, ES, EU)                                                                      \
    DEF_BIN(OP##_i8, int8_t, int8_t, int8_t, uint8_t, ES)                                          \
    DEF_BIN(OP##_i16, int16_t, int16_t, int16_t, uint32_t, ES)                                     \
    DEF_BIN(OP##_u8, uint8_t, uint8_t, uint8_t, uint8_t, EU)                                       \
    DEF_BIN(OP##_u16, uint16_t, uint16_t, uint16_t, uint32_t, EU)                                  \
    DEF_BIN(OP##_u32, uint32_t, uint32_t, uint32_t, uint32_t, EU)                                  \
    DEF_BIN(OP##_u64, uint64_t, uint64_t, uint64_t, uint64_t, EU)
#define SMALL_SLOTS(OP)                                                                            \
    [S_I8] = OP##_i8, [S_I16] = OP##_i16, [S_U8] = OP##_u8, [S_U16] = OP##_u16,                    \
    [S_U32] = OP##_u32, [S_U64] = OP##_u64

/* Same-typed arithmetic, one expression for floats and signed integers (E) and one for
 * the unsigned ones (EU): PRelu, whose spec's T has these six types (from opset 9). */
#define DEF_NUMU(OP, E, EU)                                                                        \
    DEF_BIN(OP##_f32, float, float, float, float, E)                                               \
    DEF_BIN(OP##_f64, double, double, double, double, E)                                           \
    DEF_BIN(OP##_i32, int32_t, int32_t, int32_t, uint32_t, E)                                      \
    DEF_BIN(OP##_i64, int64_t, int64_t, int64_t, uint64_t, E)                                      \
    DEF_BIN(OP##_u32, uint32_t, uint32_t, uint32_t, uint32_t, EU)                                  \
    DEF_BIN(OP##_u64, uint64_t, uint64_t, uint64_t, uint64_t, EU)                                  \
    static const bin_fn OP##_fns[S_N] = {                                                          \
        [S_F32] = OP##_f32, [S_F64] = OP##_f64, [S_I32] = OP##_i32,                                \
        [S_I64] = OP##_i64, [S_U32] = OP##_u32, [S_U64] = OP##_u64};
/* The float32 loop of an arithmetic op, also compiled for AVX-512 (the same IEEE
 * operation per element, 16 at a time: the same values) and picked at each call: Add, Sub,
 * Mul and Div of a squeeze-excite scale or a residual sum ran 4 floats an instruction. */
#ifdef OG_CPU_X86
#define DEF_F32X(OP, EF)                                                                           \
    DEF_BIN(OP##_f32_base, float, float, float, float, EF)                                         \
    DEF_BIN_A(OG_TARGET_AVX512, OP##_f32_avx512, float, float, float, float, EF)                   \
    static void OP##_f32(const bplan *p, const void *a, const void *b, void *o, int64_t start,     \
                         int64_t end)                                                              \
    {                                                                                              \
        if (og_cpu_isa() >= 2)                                                                     \
            OP##_f32_avx512(p, a, b, o, start, end);                                               \
        else                                                                                       \
            OP##_f32_base(p, a, b, o, start, end);                                                 \
    }
#else
#define DEF_F32X(OP, EF) DEF_BIN(OP##_f32, float, float, float, float, EF)
#endif
/* Every integer width: EU for the unsigned ones */
#define DEF_NUMX(OP, EF, EI, EU)                                                                   \
    DEF_F32X(OP, EF)                                                                               \
    DEF_BIN(OP##_f64, double, double, double, double, EF)                                          \
    DEF_BIN(OP##_i32, int32_t, int32_t, int32_t, uint32_t, EI)                                     \
    DEF_BIN(OP##_i64, int64_t, int64_t, int64_t, uint64_t, EI)                                     \
    DEF_SMALL(OP, EI, EU)                                                                          \
    static const bin_fn OP##_fns[S_N] = {[S_F32] = OP##_f32,                                       \
                                         [S_F64] = OP##_f64,                                       \
                                         [S_I32] = OP##_i32,                                       \
                                         [S_I64] = OP##_i64,                                       \
                                         SMALL_SLOTS(OP)};
/* The same with float16, computed in float on the widened values and rounded back once
 * (E_HALF): Max, Min and Mod, which the spec gives float16 */
#define DEF_NUM2H(OP, EF, EI, EU)                                                                  \
    DEF_BIN(OP##_f32, float, float, float, float, EF)                                              \
    DEF_BIN(OP##_f64, double, double, double, double, EF)                                          \
    DEF_BIN(OP##_i32, int32_t, int32_t, int32_t, uint32_t, EI)                                     \
    DEF_BIN(OP##_i64, int64_t, int64_t, int64_t, uint64_t, EI)                                     \
    DEF_BIN(OP##_f16, uint16_t, uint16_t, uint16_t, float, EF##_H)                                 \
    DEF_SMALL(OP, EI, EU)                                                                          \
    static const bin_fn OP##_fns[S_N] = {                                                          \
        [S_F32] = OP##_f32, [S_F64] = OP##_f64, [S_I32] = OP##_i32,                                \
        [S_I64] = OP##_i64, [S_F16] = OP##_f16, SMALL_SLOTS(OP)};

/* Numeric or bool inputs, bool output. */
#define DEF_CMP(OP, E)                                                                             \
    DEF_BIN(OP##_f32, float, float, uint8_t, float, E)                                             \
    DEF_BIN(OP##_f64, double, double, uint8_t, double, E)                                          \
    DEF_BIN(OP##_i32, int32_t, int32_t, uint8_t, int32_t, E)                                       \
    DEF_BIN(OP##_i64, int64_t, int64_t, uint8_t, int64_t, E)                                       \
    DEF_BIN(OP##_b, uint8_t, uint8_t, uint8_t, uint8_t, E)                                         \
    DEF_BIN(OP##_i8, int8_t, int8_t, uint8_t, int8_t, E)                                           \
    DEF_BIN(OP##_i16, int16_t, int16_t, uint8_t, int16_t, E)                                       \
    DEF_BIN(OP##_u8, uint8_t, uint8_t, uint8_t, uint8_t, E)                                        \
    DEF_BIN(OP##_u16, uint16_t, uint16_t, uint8_t, uint16_t, E)                                    \
    DEF_BIN(OP##_u32, uint32_t, uint32_t, uint8_t, uint32_t, E)                                    \
    DEF_BIN(OP##_u64, uint64_t, uint64_t, uint8_t, uint64_t, E)                                    \
    static const bin_fn OP##_fns[S_N] = {                                                          \
        [S_F32] = OP##_f32, [S_F64] = OP##_f64, [S_I32] = OP##_i32,                                \
        [S_I64] = OP##_i64, [S_BOOL] = OP##_b,  SMALL_SLOTS(OP)};

#define DEF_LOGIC(OP, E)                                                                           \
    DEF_BIN(OP##_b, uint8_t, uint8_t, uint8_t, uint8_t, E)                                         \
    static const bin_fn OP##_fns[S_N] = {[S_BOOL] = OP##_b};

/* ---- element expressions --------------------------------------------------------- */

#define E_ADD(T, U, x, y)  ((T)((U)(x) + (U)(y)))
#define E_SUB(T, U, x, y)  ((T)((U)(x) - (U)(y)))
#define E_MUL(T, U, x, y)  ((T)((U)(x) * (U)(y)))
#define E_DIVF(T, U, x, y) ((x) / (y))
#define E_DIVI(T, U, x, y) ((y) == -1 ? (T)((U)0 - (U)(x)) : (T)((x) / (y)))
/* NaN wins, as in numpy's maximum/minimum; folds away for integers */
#define E_MAX(T, U, x, y)    (((x) > (y) || (x) != (x)) ? (x) : (y))
#define E_MIN(T, U, x, y)    (((x) < (y) || (x) != (x)) ? (x) : (y))
#define E_FMODF(T, U, x, y)  ((T)fmod((double)(x), (double)(y))) /* exact, so = fmodf */
#define E_PYMODF(T, U, x, y) ((T)pymodf((double)(x), (double)(y)))
#define E_FMODI(T, U, x, y)  ((y) == -1 ? (T)0 : (T)((x) % (y)))
/* unsigned division and remainder: no -1 to special-case, both mods are C's % */
#define E_DIVU(T, U, x, y)   ((T)((x) / (y)))
#define E_MODU(T, U, x, y)   ((T)((x) % (y)))
#define E_PYMODI(T, U, x, y) ((T)pymod_adjust((y) == -1 ? 0 : (x) % (y), (y)))
#define E_EQ(T, U, x, y)     ((uint8_t)((x) == (y)))
#define E_GT(T, U, x, y)     ((uint8_t)((x) > (y)))
#define E_GE(T, U, x, y)     ((uint8_t)((x) >= (y)))
#define E_LT(T, U, x, y)     ((uint8_t)((x) < (y)))
#define E_LE(T, U, x, y)     ((uint8_t)((x) <= (y)))
#define E_AND(T, U, x, y)    ((uint8_t)(((x) != 0) & ((y) != 0)))
#define E_OR(T, U, x, y)     ((uint8_t)(((x) != 0) | ((y) != 0)))
#define E_XOR(T, U, x, y)    ((uint8_t)(((x) != 0) ^ ((y) != 0)))
/* float16 (bits in uint16_t): the float expression on the widened values, rounded once */
#define E_HALF(E, x, y)        og_float_to_half(E(float, float, og_half_to_float(x), og_half_to_float(y)))
#define E_MAX_H(T, U, x, y)    E_HALF(E_MAX, x, y)
#define E_MIN_H(T, U, x, y)    E_HALF(E_MIN, x, y)
#define E_FMODF_H(T, U, x, y)  E_HALF(E_FMODF, x, y)
#define E_PYMODF_H(T, U, x, y) E_HALF(E_PYMODF, x, y)

/* PRelu: x < 0 ? x * s : x.  GCC will not if-convert a float multiply under the default
 * -ftrapping-math (even one computed unconditionally: it sinks it into the branch), so
 * floats select on the bits, which vectorizes. */
#define E_PRELU(T, U, x, s) (NEG_SEL((x), (T)((U)(x) * (U)(s))))
#define NEG_SEL(x, m)                                                                              \
    _Generic((x), float                                                                            \
             : neg_sel_f32, double                                                                 \
             : neg_sel_f64, int32_t                                                                \
             : neg_sel_i32, int64_t                                                                \
             : neg_sel_i64)((x), (m))
static inline float neg_sel_f32(float x, float m)
{
    uint32_t xb, mb, k = (uint32_t)0 - (uint32_t)(x < 0);
    memcpy(&xb, &x, sizeof xb);
    memcpy(&mb, &m, sizeof mb);
    xb = (mb & k) | (xb & ~k);
    memcpy(&x, &xb, sizeof x);
    return x;
}
static inline double neg_sel_f64(double x, double m)
{
    uint64_t xb, mb, k = (uint64_t)0 - (uint64_t)(x < 0);
    memcpy(&xb, &x, sizeof xb);
    memcpy(&mb, &m, sizeof mb);
    xb = (mb & k) | (xb & ~k);
    memcpy(&x, &xb, sizeof x);
    return x;
}
static inline int32_t neg_sel_i32(int32_t x, int32_t m) { return x < 0 ? m : x; }
static inline int64_t neg_sel_i64(int64_t x, int64_t m) { return x < 0 ? m : x; }
/* an unsigned x is never negative: PRelu is the identity */
#define E_PRELU_U(T, U, x, s) ((void)(s), (x))

/* Integer Div and Mod (E_DIVI, E_*MODI) run in their own width; the kernels refuse a zero
 * divisor beforehand, and -1 is special-cased because MIN / -1 traps on x86. */
/* Python's %: the remainder r of C's % moved to the divisor's sign. */
static inline int64_t pymod_adjust(int64_t r, int64_t y)
{
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}
static inline double pymodf(double x, double y)
{
    double r = fmod(x, y);
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

DEF_NUMX(add, E_ADD, E_ADD, E_ADD)
DEF_NUMX(sub, E_SUB, E_SUB, E_SUB)
DEF_NUMX(mul, E_MUL, E_MUL, E_MUL)
DEF_NUMX(div, E_DIVF, E_DIVI, E_DIVU)
DEF_NUM2H(max, E_MAX, E_MAX, E_MAX)
DEF_NUM2H(min, E_MIN, E_MIN, E_MIN)
DEF_NUMU(prelu, E_PRELU, E_PRELU_U)
DEF_NUM2H(fmod, E_FMODF, E_FMODI, E_MODU)
DEF_NUM2H(pymod, E_PYMODF, E_PYMODI, E_MODU)
DEF_CMP(eq, E_EQ)
DEF_CMP(gt, E_GT)
DEF_CMP(ge, E_GE)
DEF_CMP(lt, E_LT)
DEF_CMP(le, E_LE)
DEF_LOGIC(and, E_AND)
DEF_LOGIC(or, E_OR)
DEF_LOGIC(xor, E_XOR)

/* ---- bit ops: by element size (signed and unsigned alike), shifts on unsigned types ---- */

#define E_BAND(T, U, x, y) ((T)((x) & (y)))
#define E_BOR(T, U, x, y)  ((T)((x) | (y)))
#define E_BXOR(T, U, x, y) ((T)((x) ^ (y)))
/* A shift by the width or more gives 0 (as numpy's), where C leaves it undefined. */
#define E_SHL(T, U, x, y) ((T)((y) >= sizeof(T) * 8 ? 0 : (U)(x) << (y)))
#define E_SHR(T, U, x, y) ((T)((y) >= sizeof(T) * 8 ? 0 : (x) >> (y)))

/* Tables indexed by size class: 1, 2, 4, 8 bytes. */
#define DEF_BITS(OP, E)                                                                            \
    DEF_BIN(OP##_8, uint8_t, uint8_t, uint8_t, uint32_t, E)                                        \
    DEF_BIN(OP##_16, uint16_t, uint16_t, uint16_t, uint32_t, E)                                    \
    DEF_BIN(OP##_32, uint32_t, uint32_t, uint32_t, uint32_t, E)                                    \
    DEF_BIN(OP##_64, uint64_t, uint64_t, uint64_t, uint64_t, E)                                    \
    static const bin_fn OP##_fns[4] = {OP##_8, OP##_16, OP##_32, OP##_64};
DEF_BITS(band, E_BAND)
DEF_BITS(bor, E_BOR)
DEF_BITS(bxor, E_BXOR)
DEF_BITS(shl, E_SHL)
DEF_BITS(shr, E_SHR)

/* ---- Pow: base and exponent types independent ------------------------------------ */

/* b^e by squaring, wrapping modulo 2^64 like a product of e factors; an unsigned exponent
 * (uint64 may pass INT64_MAX) takes it whole */
static inline int64_t ipow_u(int64_t b, uint64_t e)
{
    uint64_t r = 1, x = (uint64_t)b;
    while (e) {
        if (e & 1) r *= x;
        x *= x;
        e >>= 1;
    }
    return (int64_t)r;
}
static inline int64_t ipow(int64_t b, int64_t e)
{
    if (e < 0) return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0; /* truncated 1/b^-e */
    return ipow_u(b, (uint64_t)e);
}
/* double -> integer without UB on NaN or overflow */
static inline int64_t sat_i64(double d)
{
    if (d != d) return 0;
    if (d >= 9223372036854775807.0) return INT64_MAX;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
}
static inline int32_t sat_i32(double d)
{
    if (d != d) return 0;
    if (d >= 2147483647.0) return INT32_MAX;
    if (d <= -2147483648.0) return INT32_MIN;
    return (int32_t)d;
}

#define E_POWF(T, U, x, y)    (powf((x), (y)))
#define E_POWD(T, U, x, y)    ((T)pow((double)(x), (double)(y)))
#define E_POWI(T, U, x, y)    ((T)ipow((x), (int64_t)(y)))
#define E_POWU(T, U, x, y)    ((T)ipow_u((x), (uint64_t)(y)))
#define E_POWI32F(T, U, x, y) (sat_i32(pow((double)(x), (double)(y))))
#define E_POWI64F(T, U, x, y) (sat_i64(pow((double)(x), (double)(y))))
#define E_SQ(T, U, x, y)      ((void)(y), (x) * (x))
#define E_CUBE(T, U, x, y)    ((void)(y), (x) * (x) * (x))
#define E_SQRTF(T, U, x, y)   ((void)(y), sqrtf(x))
#define E_SQRTD(T, U, x, y)   ((void)(y), sqrt(x))

/* Pow-12+ lets the exponent (T1) be any numeric type apart from the base's (T): the columns
 * of the table, in pow_col's order. */
enum { P_F32, P_F64, P_I32, P_I64, P_I8, P_I16, P_U8, P_U16, P_U32, P_U64, P_N };

static int pow_col(og_dtype t)
{
    switch (t) {
    case OG_FLOAT: return P_F32;
    case OG_DOUBLE: return P_F64;
    case OG_INT32: return P_I32;
    case OG_INT64: return P_I64;
    case OG_INT8: return P_I8;
    case OG_INT16: return P_I16;
    case OG_UINT8: return P_U8;
    case OG_UINT16: return P_U16;
    case OG_UINT32: return P_U32;
    case OG_UINT64: return P_U64;
    default: return -1;
    }
}

/* One row of the table per base type: the exponent types of pow_col.  A float base takes an
 * integer exponent through double (exact for |e| < 2^53, as numpy's float64 promotion); an
 * integer base takes it by squaring (EI signed, EU unsigned, so that a uint64 exponent past
 * INT64_MAX stays positive). */
#define DEF_POW_INTS(B, TB, EI, EU)                                                                \
    DEF_BIN(pow_##B##_i32, TB, int32_t, TB, TB, EI)                                                \
    DEF_BIN(pow_##B##_i64, TB, int64_t, TB, TB, EI)                                                \
    DEF_BIN(pow_##B##_i8, TB, int8_t, TB, TB, EI)                                                  \
    DEF_BIN(pow_##B##_i16, TB, int16_t, TB, TB, EI)                                                \
    DEF_BIN(pow_##B##_u8, TB, uint8_t, TB, TB, EI)                                                 \
    DEF_BIN(pow_##B##_u16, TB, uint16_t, TB, TB, EI)                                               \
    DEF_BIN(pow_##B##_u32, TB, uint32_t, TB, TB, EI)                                               \
    DEF_BIN(pow_##B##_u64, TB, uint64_t, TB, TB, EU)
#define DEF_POW_ROW(B, TB, EF, EI, EU)                                                             \
    DEF_BIN(pow_##B##_f32, TB, float, TB, TB, EF)                                                  \
    DEF_BIN(pow_##B##_f64, TB, double, TB, TB, EF)                                                 \
    DEF_POW_INTS(B, TB, EI, EU)
#define POW_ROW(B)                                                                                 \
    {                                                                                              \
        pow_##B##_f32, pow_##B##_f64, pow_##B##_i32, pow_##B##_i64, pow_##B##_i8, pow_##B##_i16,   \
            pow_##B##_u8, pow_##B##_u16, pow_##B##_u32, pow_##B##_u64                              \
    }
DEF_BIN(pow_f32_f32, float, float, float, float, E_POWF)
DEF_BIN(pow_f32_f64, float, double, float, float, E_POWD)
DEF_POW_INTS(f32, float, E_POWD, E_POWD)
DEF_POW_ROW(f64, double, E_POWD, E_POWD, E_POWD)
DEF_POW_ROW(i32, int32_t, E_POWI32F, E_POWI, E_POWU)
DEF_POW_ROW(i64, int64_t, E_POWI64F, E_POWI, E_POWU)
static const bin_fn pow_fns[4][P_N] = {POW_ROW(f32), POW_ROW(f64), POW_ROW(i32), POW_ROW(i64)};
/* Fast paths for a float base and one exponent value (x^2 in norms, x^0.5, ...); they read
 * the base only (run with b == a). */
DEF_BIN(sq_f32, float, float, float, float, E_SQ)
DEF_BIN(sq_f64, double, double, double, double, E_SQ)
DEF_BIN(cube_f32, float, float, float, float, E_CUBE)
DEF_BIN(cube_f64, double, double, double, double, E_CUBE)
DEF_BIN(sqrt_f32, float, float, float, float, E_SQRTF)
DEF_BIN(sqrt_f64, double, double, double, double, E_SQRTD)

/* ---- Where: by element size ------------------------------------------------------ */

typedef void (*where_fn)(const bplan *p, const uint8_t *c, const void *x, const void *y, void *o,
                         int64_t start, int64_t end);

/* Branch-free select on the bits (T is an unsigned type of the element's size): a random
 * mask would defeat the branch predictor, and both values are loaded anyway. */
#define W_SEL(T, c, x, y) ((T)(((x) & (T)(0 - (T)((c) != 0))) | ((y) & (T)((T)((c) != 0) - 1))))

#define DEF_WHERE(NAME, T)                                                                         \
    static void NAME(const bplan *p, const uint8_t *c, const void *vx, const void *vy, void *vo,   \
                     int64_t start, int64_t end)                                                   \
    {                                                                                              \
        const T *x = vx, *y = vy;                                                                  \
        T *o = vo;                                                                                 \
        const bool sc = p->st[0][p->rank - 1] != 0, sx = p->st[1][p->rank - 1] != 0,               \
                   sy = p->st[2][p->rank - 1] != 0;                                                \
        const int64_t rc = row_stride(p, 0), rx = row_stride(p, 1), ry = row_stride(p, 2);         \
        row_iter it;                                                                               \
        int64_t n, at, rows, off[BMAX_IN];                                                         \
        rows_begin(p, &it, start, end);                                                            \
        while ((n = rows_next(p, &it, &at, off, &rows)) > 0)                                       \
            for (int64_t t = 0; t < rows; t++) {                                                   \
                const uint8_t *cc = c + off[0] + t * rc;                                           \
                const T *xx = x + off[1] + t * rx, *yy = y + off[2] + t * ry;                      \
                T *z = o + at + t * n;                                                             \
                if (!sc) { /* one condition for the run: a copy or a fill */                       \
                    const T *src = cc[0] ? xx : yy;                                                \
                    if (cc[0] ? sx : sy)                                                           \
                        memmove(z, src, (size_t)n * sizeof(T));                                    \
                    else                                                                           \
                        for (int64_t i = 0; i < n; i++) z[i] = src[0];                             \
                } else if (sx && sy) {                                                             \
                    for (int64_t i = 0; i < n; i++) z[i] = W_SEL(T, cc[i], xx[i], yy[i]);          \
                } else if (sx) {                                                                   \
                    const T yv = yy[0];                                                            \
                    for (int64_t i = 0; i < n; i++) z[i] = W_SEL(T, cc[i], xx[i], yv);             \
                } else if (sy) {                                                                   \
                    const T xv = xx[0];                                                            \
                    for (int64_t i = 0; i < n; i++) z[i] = W_SEL(T, cc[i], xv, yy[i]);             \
                } else {                                                                           \
                    const T xv = xx[0], yv = yy[0];                                                \
                    for (int64_t i = 0; i < n; i++) z[i] = W_SEL(T, cc[i], xv, yv);                \
                }                                                                                  \
            }                                                                                      \
    }
DEF_WHERE(where_1, uint8_t)
DEF_WHERE(where_2, uint16_t)
DEF_WHERE(where_4, uint32_t)
DEF_WHERE(where_8, uint64_t)

/* ---- drivers --------------------------------------------------------------------- */

/* Threads when the whole loop is worth it: one chunk per thread, 64-element aligned. */
static int64_t chunk_size(const og_kernel_ctx *k, int64_t total, double cost)
{
    int t = k->threads > 1 ? k->threads : 1;
    if (t == 1 || (double)total * cost <= og_par_min_stream(k)) return total;
    int64_t c = (total + t - 1) / t;
    return (c + 63) & ~(int64_t)63;
}

/* run_bin's chunks for og_par_range: output elements [i0, i1), then the activation */
typedef struct bin_job {
    const bplan *p;
    bin_fn fn;
    const void *a, *b;
    void *o;
    const og_act *act; /* NULL: none */
    og_dtype ot;
    size_t es;
} bin_job;

static void bin_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const bin_job *j = ctx;
    (void)slot;
    j->fn(j->p, j->a, j->b, j->o, i0, i1);
    if (j->act) og_cpu_act(j->act, j->ot, (char *)j->o + (size_t)i0 * j->es, i1 - i0);
}

/* fn over the output's chunks, each followed by the activation `act` unless NULL (a fused
 * one, k->act: float and double outputs, the only ones og_fusion_plan fuses) while it is in
 * cache; ot: o's element type. */
static void run_bin(const og_kernel_ctx *k, const bplan *p, double cost, bin_fn fn, const void *a,
                    const void *b, void *o, og_dtype ot, const og_act *fa)
{
    int64_t total = p->total, chunk = chunk_size(k, total, cost);
    const bool act = fa && fa->kind != OG_FUSE_NONE;
    const size_t es = og_dtype_storage_size(ot);
    if (chunk >= total) {
        fn(p, a, b, o, 0, total);
        if (act) og_cpu_act(fa, ot, o, total);
        return;
    }
    bin_job j = {p, fn, a, b, o, act ? fa : NULL, ot, es};
    og_par_range(k, k->threads, total, chunk, bin_range, &j);
}

static og_status bad_dtype(const og_kernel_ctx *k, int i, og_dtype t)
{
    return og_kernel_error(k, OG_ERR_UNSUPPORTED, "input %d has element type %s, not supported", i,
                           og_dtype_name(t));
}

static og_status type_mismatch(const og_kernel_ctx *k, const og_tensor *a, int i,
                               const og_tensor *b, int j)
{
    return og_kernel_error(k, OG_ERR_TYPE, "inputs %d and %d have different element types (%s, %s)",
                           i, j, og_dtype_name(a->dtype), og_dtype_name(b->dtype));
}

/* The typed loop of an op's table for dtype t (its address travels as the binding's
 * impl), NULL if none. */
static const bin_fn *pick(const bin_fn *fns, og_dtype t)
{
    int s = slot_of(t);
    return s >= 0 && fns[s] ? &fns[s] : NULL;
}

/* The loop bound at session creation (k->impl), or for a kernel called without one, the
 * table's entry for input 0's dtype. */
static bin_fn bound_fn(const og_kernel_ctx *k, const bin_fn *fns, og_dtype t)
{
    const bin_fn *fn = k->impl ? k->impl : pick(fns, t);
    return fn ? *fn : NULL;
}

/* The binding of an op whose table has no loop of a float16 or bfloat16 input: the inputs
 * are widened to float32, the float32 loop runs and the output is rounded back once
 * (og_kernel_via_f32).  A marker, never called. */
static const bin_fn half_via_f32 = NULL;

/* pick, or for a 16-bit float that fns has no loop of (but float32), half_via_f32. */
static const void *pick_or_half(const bin_fn *fns, og_dtype t)
{
    const bin_fn *f = pick(fns, t);
    if (f) return f;
    return og_is_half(t) && fns[S_F32] ? &half_via_f32 : NULL;
}

/* True when this call of an op with table fns computes through float32 copies: its
 * binding is half_via_f32, or without one, input 0 is a 16-bit float fns has no loop of. */
static bool runs_via_f32(const og_kernel_ctx *k, const bin_fn *fns, og_dtype t)
{
    if (k->impl) return k->impl == (const void *)&half_via_f32;
    return og_is_half(t) && !pick(fns, t) && fns[S_F32];
}

/* Run kernel fn on float32 copies of the 16-bit inputs and outputs: all inputs must share
 * input 0's type (the widening would hide a mismatch). */
static og_status via_f32_same(const og_kernel_ctx *k, og_kernel_fn fn, const og_tensor *const *in,
                              int n_in, og_tensor *const *out, int n_out)
{
    for (int i = 1; i < n_in; i++)
        if (in[i]->dtype != in[0]->dtype) return type_mismatch(k, in[0], 0, in[i], i);
    return og_kernel_via_f32_unbound(k, fn, in, n_in, out, n_out);
}

/* o = fns[dtype](a, b), a and b broadcast to o's shape. */
static og_status binary(const og_kernel_ctx *k, const og_tensor *a, const og_tensor *b,
                        og_tensor *o, const bin_fn *fns, double cost)
{
    bin_fn fn = bound_fn(k, fns, a->dtype);
    if (!fn) return bad_dtype(k, 0, a->dtype);
    if (b->dtype != a->dtype) return type_mismatch(k, a, 0, b, 1);
    if (o->numel == 0) return OG_OK;
    const og_tensor *ins[2] = {a, b};
    bplan p;
    plan_init(&p, o, ins, 2);
    run_bin(k, &p, cost, fn, a->data, b->data, o->data, o->dtype, &k->act);
    return OG_OK;
}

#define KERNEL2(NAME, FNS, COST)                                                                   \
    static const void *select_##NAME(const og_node *n, og_dtype t)                                 \
    {                                                                                              \
        (void)n;                                                                                   \
        return pick_or_half(FNS, t);                                                               \
    }                                                                                              \
    static og_status NAME(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,            \
                          og_tensor *const *out, int n_out)                                        \
    {                                                                                              \
        if (runs_via_f32(k, FNS, in[0]->dtype))                                                    \
            return via_f32_same(k, NAME, in, n_in, out, n_out);                                    \
        return binary(k, in[0], in[1], out[0], FNS, COST);                                         \
    }
KERNEL2(k_add, add_fns, 1)
KERNEL2(k_sub, sub_fns, 1)
KERNEL2(k_mul, mul_fns, 1)
KERNEL2(k_prelu, prelu_fns, 1)
/* Equal of strings (opset 19): by content, broadcast as the others. */
static og_status equal_strings(const og_kernel_ctx *k, const og_tensor *a, const og_tensor *b,
                               og_tensor *o)
{
    if (b->dtype != OG_STRING) return type_mismatch(k, a, 0, b, 1);
    if (o->numel == 0) return OG_OK;
    int64_t sa[OG_MAX_RANK], sb[OG_MAX_RANK];
    og_broadcast_strides(a->rank, a->dims, o->rank, o->dims, sa);
    og_broadcast_strides(b->rank, b->dims, o->rank, o->dims, sb);
    og_index_iter it;
    og_index_init(&it, o->rank, o->dims);
    uint8_t *y = o->data;
    int64_t i = 0;
    do {
        int64_t ia = 0, ib = 0;
        for (int d = 0; d < o->rank; d++) {
            ia += it.idx[d] * sa[d];
            ib += it.idx[d] * sb[d];
        }
        y[i++] = strcmp(og_tensor_str(a, ia), og_tensor_str(b, ib)) == 0;
    } while (og_index_next(&it));
    return OG_OK;
}

/* The binding of Equal for strings: any non-NULL pointer (the kernel checks the dtype). */
static const char equal_strings_bound = 's';

static const void *select_k_equal(const og_node *n, og_dtype t)
{
    (void)n;
    return t == OG_STRING ? (const void *)&equal_strings_bound : pick_or_half(eq_fns, t);
}

static og_status k_equal(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                         og_tensor *const *out, int n_out)
{
    if (in[0]->dtype == OG_STRING) return equal_strings(k, in[0], in[1], out[0]);
    if (runs_via_f32(k, eq_fns, in[0]->dtype))
        return via_f32_same(k, k_equal, in, n_in, out, n_out);
    og_kernel_ctx kk = *k;
    if (kk.impl == (const void *)&equal_strings_bound) kk.impl = NULL;
    return binary(&kk, in[0], in[1], out[0], eq_fns, 1);
}
KERNEL2(k_greater, gt_fns, 1)
KERNEL2(k_greater_equal, ge_fns, 1)
KERNEL2(k_less, lt_fns, 1)
KERNEL2(k_less_equal, le_fns, 1)
KERNEL2(k_and, and_fns, 1)
KERNEL2(k_or, or_fns, 1)
KERNEL2(k_xor, xor_fns, 1)

/* Integer Div and Mod: a zero divisor is an error, not a trap.  Every element of the
 * divisor reaches the output (when the output is not empty), so all are checked.  The scan
 * is the slot's of the bound loop (the binding is &fns[slot]): every integer width. */
#define ZERO_SCAN(NAME, T)                                                                         \
    static int64_t NAME(const void *bv, int64_t n)                                                 \
    {                                                                                              \
        const T *v = bv;                                                                           \
        for (int64_t i = 0; i < n; i++)                                                            \
            if (v[i] == 0) return i;                                                               \
        return -1;                                                                                 \
    }
ZERO_SCAN(zero_scan_i32, int32_t)
ZERO_SCAN(zero_scan_i64, int64_t)
ZERO_SCAN(zero_scan_i8, int8_t)
ZERO_SCAN(zero_scan_i16, int16_t)
ZERO_SCAN(zero_scan_u8, uint8_t)
ZERO_SCAN(zero_scan_u16, uint16_t)
ZERO_SCAN(zero_scan_u32, uint32_t)
ZERO_SCAN(zero_scan_u64, uint64_t)
typedef int64_t (*zero_scan_fn)(const void *b, int64_t n);
static const zero_scan_fn zero_scans[S_N] = {
    [S_I32] = zero_scan_i32, [S_I64] = zero_scan_i64, [S_I8] = zero_scan_i8,
    [S_I16] = zero_scan_i16, [S_U8] = zero_scan_u8,   [S_U16] = zero_scan_u16,
    [S_U32] = zero_scan_u32, [S_U64] = zero_scan_u64};

/* The slot of this call's loop in fns: the bound one's, or without a binding t's. */
static int bound_slot(const og_kernel_ctx *k, const bin_fn *fns, og_dtype t)
{
    return k->impl ? (int)((const bin_fn *)k->impl - fns) : slot_of(t);
}

static og_status check_divisor(const og_kernel_ctx *k, const og_tensor *b, int slot)
{
    int64_t zero = slot >= 0 && zero_scans[slot] ? zero_scans[slot](b->data, b->numel) : -1;
    if (zero >= 0)
        return og_kernel_error(k, OG_ERR_RUNTIME,
                               "integer division by zero (element %lld of input 1)",
                               (long long)zero);
    return OG_OK;
}

static const void *select_k_div(const og_node *n, og_dtype t)
{
    (void)n;
    return pick_or_half(div_fns, t);
}

static og_status k_div(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                       og_tensor *const *out, int n_out)
{
    if (runs_via_f32(k, div_fns, in[0]->dtype)) return via_f32_same(k, k_div, in, n_in, out, n_out);
    if (out[0]->numel > 0 && in[0]->dtype == in[1]->dtype) {
        og_status st = check_divisor(k, in[1], bound_slot(k, div_fns, in[0]->dtype));
        if (st) return st;
    }
    return binary(k, in[0], in[1], out[0], div_fns, 4);
}

static const void *select_k_mod(const og_node *n, og_dtype t)
{
    const og_mod_params *mp = n->params;
    return pick_or_half(mp && mp->fmod ? fmod_fns : pymod_fns, t);
}

static og_status k_mod(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                       og_tensor *const *out, int n_out)
{
    const og_mod_params *mp = k->params;
    const bin_fn *fns = mp && mp->fmod ? fmod_fns : pymod_fns;
    if (runs_via_f32(k, fns, in[0]->dtype)) return via_f32_same(k, k_mod, in, n_in, out, n_out);
    if (out[0]->numel > 0 && in[0]->dtype == in[1]->dtype) {
        og_status st = check_divisor(k, in[1], bound_slot(k, fns, in[0]->dtype));
        if (st) return st;
    }
    return binary(k, in[0], in[1], out[0], fns, 16);
}

/* A float16 or bfloat16 base or exponent: widened to float32, the power computed as
 * float32's and rounded back once (og_kernel_via_f32); the binding is this marker. */
static const bin_fn pow_half = NULL;

/* Pow binds on both type variables: the loop of (base, exponent), an entry of pow_fns. */
static const void *select_pow(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    (void)out; /* the inputs' dtypes (and attributes) fix the outputs' */
    if (n->n_in < 2 || t[1] == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
    int sa = slot_of(t[0]), sb = pow_col(t[1]);
    bool ha = og_is_half(t[0]), hb = og_is_half(t[1]);
    if (!(ha || (sa >= 0 && sa <= S_I64)) || !(hb || sb >= 0)) return NULL;
    return ha || hb ? &pow_half : &pow_fns[sa][sb];
}

static og_status k_pow(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                       og_tensor *const *out, int n_out)
{
    const og_tensor *a = in[0], *b = in[1];
    og_tensor *o = out[0];
    if (og_is_half(a->dtype) || og_is_half(b->dtype)) {
        og_kernel_ctx call = *k;
        call.impl = NULL; /* the float32 copies pick their loop */
        return og_kernel_via_f32(&call, k_pow, in, n_in, out, n_out);
    }
    int sa = slot_of(a->dtype), sb = pow_col(b->dtype);
    if (sa < 0 || sa > S_I64) return bad_dtype(k, 0, a->dtype);
    if (sb < 0) return bad_dtype(k, 1, b->dtype);
    if (o->numel == 0) return OG_OK;
    const og_tensor *ins[2] = {a, b};
    bplan p;
    if (b->numel == 1 && sa <= S_F64) {
        /* one exponent value: the output has the base's elements in order */
        double e = og_tensor_get_f64(b, 0);
        bin_fn fn = NULL;
        if (e == 2.0)
            fn = sa == S_F32 ? sq_f32 : sq_f64;
        else if (e == 3.0)
            fn = sa == S_F32 ? cube_f32 : cube_f64;
        else if (e == 0.5)
            fn = sa == S_F32 ? sqrt_f32 : sqrt_f64;
        if (e == 1.0) {
            memmove(o->data, a->data, og_tensor_nbytes(o));
            return OG_OK;
        }
        if (fn) {
            ins[1] = a;
            plan_init(&p, o, ins, 2);
            run_bin(k, &p, 1, fn, a->data, a->data, o->data, o->dtype, NULL);
            return OG_OK;
        }
    }
    plan_init(&p, o, ins, 2);
    /* k->impl: the loop bound at session creation (select_pow); the scalar-exponent fast
     * paths above pick on the exponent's value, so they stay per call */
    bin_fn fn = k->impl ? *(const bin_fn *)k->impl : pow_fns[sa][sb];
    run_bin(k, &p, 32, fn, a->data, b->data, o->data, o->dtype, NULL);
    return OG_OK;
}

/* Max, Min, Sum, Mean: o = in0 op in1, then o = o op in_i for the rest, all over o's
 * shape. */
static og_status variadic(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                          og_tensor *o, const bin_fn *fns)
{
    bin_fn fn = bound_fn(k, fns, in[0]->dtype);
    if (!fn) return bad_dtype(k, 0, in[0]->dtype);
    for (int i = 1; i < n_in; i++)
        if (in[i]->dtype != in[0]->dtype) return type_mismatch(k, in[0], 0, in[i], i);
    if (o->numel == 0) return OG_OK;
    if (n_in == 1) { /* the output has the input's shape */
        memmove(o->data, in[0]->data, og_tensor_nbytes(o));
        return OG_OK;
    }
    bplan p;
    plan_init(&p, o, in, 2);
    run_bin(k, &p, 1, fn, in[0]->data, in[1]->data, o->data, o->dtype, NULL);
    for (int i = 2; i < n_in; i++) {
        const og_tensor *ins[2] = {o, in[i]};
        plan_init(&p, o, ins, 2);
        run_bin(k, &p, 1, fn, o->data, in[i]->data, o->data, o->dtype, NULL);
    }
    return OG_OK;
}

/* via_f32_same for a variadic op (og_kernel_via_f32 copies at most 8 inputs). */
static og_status variadic_via_f32(const og_kernel_ctx *k, og_kernel_fn fn,
                                  const og_tensor *const *in, int n_in, og_tensor *const *out,
                                  int n_out)
{
    if (n_in > 8) return og_kernel_error(k, OG_ERR_UNSUPPORTED, "more than 8 16-bit float inputs");
    return via_f32_same(k, fn, in, n_in, out, n_out);
}

#define KERNELV(NAME, FNS)                                                                         \
    static const void *select_##NAME(const og_node *n, og_dtype t)                                 \
    {                                                                                              \
        (void)n;                                                                                   \
        return pick_or_half(FNS, t);                                                               \
    }                                                                                              \
    static og_status NAME(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,            \
                          og_tensor *const *out, int n_out)                                        \
    {                                                                                              \
        if (runs_via_f32(k, FNS, in[0]->dtype))                                                    \
            return variadic_via_f32(k, NAME, in, n_in, out, n_out);                                \
        return variadic(k, in, n_in, out[0], FNS);                                                 \
    }
KERNELV(k_max, max_fns)
KERNELV(k_min, min_fns)
KERNELV(k_sum, add_fns)

/* Mean's final division by the input count, the slot's of the bound Sum loop. */
#define SCALE_LOOP(NAME, T)                                                                        \
    static void NAME(void *ov, int64_t n, int count)                                               \
    {                                                                                              \
        T *v = ov;                                                                                 \
        const T d = (T)count;                                                                      \
        for (int64_t i = 0; i < n; i++) v[i] /= d;                                                 \
    }
SCALE_LOOP(scale_f32, float)
SCALE_LOOP(scale_f64, double)
typedef void (*scale_fn)(void *o, int64_t n, int count);
static const scale_fn mean_scales[S_N] = {[S_F32] = scale_f32, [S_F64] = scale_f64};

/* Mean sums with Sum's loops, then divides: float32 and float64; the 16-bit floats through
 * float32 (the sum is kept in float32, rounded once). */
static const void *select_k_mean(const og_node *n, og_dtype t)
{
    (void)n;
    return t == OG_FLOAT || t == OG_DOUBLE ? pick(add_fns, t)
           : og_is_half(t)                 ? &half_via_f32
                                           : NULL;
}

static og_status k_mean(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                        og_tensor *const *out, int n_out)
{
    og_tensor *o = out[0];
    if (k->impl ? k->impl == (const void *)&half_via_f32 : og_is_half(o->dtype))
        return variadic_via_f32(k, k_mean, in, n_in, out, n_out);
    int slot = bound_slot(k, add_fns, o->dtype);
    if (slot < 0 || !mean_scales[slot]) return bad_dtype(k, 0, o->dtype);
    og_status st = variadic(k, in, n_in, o, add_fns);
    if (st || n_in == 1) return st;
    mean_scales[slot](o->data, o->numel, n_in);
    return OG_OK;
}

/* The size-class loop of a bit op for integer dtype t (unsigned only for shifts). */
static const bin_fn *pick_bits(const bin_fn *fns, og_dtype t, bool unsigned_only)
{
    if (!og_dtype_is_integer(t)) return NULL;
    if (unsigned_only && t != OG_UINT8 && t != OG_UINT16 && t != OG_UINT32 && t != OG_UINT64)
        return NULL;
    switch (og_dtype_size(t)) {
    case 1: return &fns[0];
    case 2: return &fns[1];
    case 4: return &fns[2];
    case 8: return &fns[3];
    default: return NULL;
    }
}

static og_status bitwise(const og_kernel_ctx *k, const og_tensor *const *in, og_tensor *o,
                         const bin_fn *fns, bool unsigned_only)
{
    const bin_fn *fn = k->impl ? k->impl : pick_bits(fns, in[0]->dtype, unsigned_only);
    if (!fn) return bad_dtype(k, 0, in[0]->dtype);
    if (in[1]->dtype != in[0]->dtype) return type_mismatch(k, in[0], 0, in[1], 1);
    if (o->numel == 0) return OG_OK;
    bplan p;
    plan_init(&p, o, in, 2);
    run_bin(k, &p, 1, *fn, in[0]->data, in[1]->data, o->data, o->dtype, NULL);
    return OG_OK;
}

#define KERNELB(NAME, FNS)                                                                         \
    static const void *select_##NAME(const og_node *n, og_dtype t)                                 \
    {                                                                                              \
        (void)n;                                                                                   \
        return pick_bits(FNS, t, false);                                                           \
    }                                                                                              \
    static og_status NAME(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,            \
                          og_tensor *const *out, int n_out)                                        \
    {                                                                                              \
        return bitwise(k, in, out[0], FNS, false);                                                 \
    }
KERNELB(k_bitwise_and, band_fns)
KERNELB(k_bitwise_or, bor_fns)
KERNELB(k_bitwise_xor, bxor_fns)

static const void *select_k_bitshift(const og_node *n, og_dtype t)
{
    const og_bitshift_params *p = n->params;
    return pick_bits(p && p->left ? shl_fns : shr_fns, t, true);
}

static og_status k_bitshift(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                            og_tensor *const *out, int n_out)
{
    const og_bitshift_params *p = k->params;
    return bitwise(k, in, out[0], p && p->left ? shl_fns : shr_fns, true);
}

/* BitwiseNot: ~x over the bytes of any integer type. */
static const og_dtype bitnot_types[] = {OG_UINT8, OG_UINT16, OG_UINT32, OG_UINT64,   OG_INT8,
                                        OG_INT16, OG_INT32,  OG_INT64,  OG_UNDEFINED};

static og_status k_bitwise_not(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                               og_tensor *const *out, int n_out)
{
    const og_tensor *x = in[0];
    if (!og_dtype_is_integer(x->dtype)) return bad_dtype(k, 0, x->dtype);
    /* complementing every byte complements the element, whatever its width */
    const uint8_t *a = x->data;
    uint8_t *o = out[0]->data;
    size_t n = og_tensor_nbytes(out[0]);
    for (size_t i = 0; i < n; i++) o[i] = (uint8_t)~a[i];
    return OG_OK;
}

/* k_where's chunks for og_par_range */
typedef struct where_job {
    const bplan *p;
    where_fn fn;
    const uint8_t *c;
    const void *x, *y;
    void *o;
} where_job;

static void where_range(void *ctx, int64_t i0, int64_t i1, int slot)
{
    const where_job *j = ctx;
    (void)slot;
    j->fn(j->p, j->c, j->x, j->y, j->o, i0, i1);
}

static og_status k_where(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                         og_tensor *const *out, int n_out)
{
    og_tensor *o = out[0];
    if (in[0]->dtype != OG_BOOL) return bad_dtype(k, 0, in[0]->dtype);
    if (in[1]->dtype != in[2]->dtype) return type_mismatch(k, in[1], 1, in[2], 2);
    where_fn fn;
    switch (og_dtype_size(in[1]->dtype)) {
    case 1: fn = where_1; break;
    case 2: fn = where_2; break;
    case 4: fn = where_4; break;
    case 8: fn = where_8; break;
    default: return bad_dtype(k, 1, in[1]->dtype);
    }
    if (o->numel == 0) return OG_OK;
    bplan p;
    plan_init(&p, o, in, 3);
    const uint8_t *c = in[0]->data;
    int64_t total = p.total, chunk = chunk_size(k, total, 1);
    if (chunk >= total) {
        fn(&p, c, in[1]->data, in[2]->data, o->data, 0, total);
        return OG_OK;
    }
    where_job j = {&p, fn, c, in[1]->data, in[2]->data, o->data};
    og_par_range(k, k->threads, total, chunk, where_range, &j);
    return OG_OK;
}

const og_kernel_def og_cpu_binary[] = {
    /* act: a Relu (or another fused activation) after a residual Add runs in its chunks */
    {.name = "Add", .domain = "", .fn = k_add, .select = select_k_add, .act = 1},
    {.name = "Sub", .domain = "", .fn = k_sub, .select = select_k_sub},
    {.name = "Mul", .domain = "", .fn = k_mul, .select = select_k_mul},
    {.name = "Div", .domain = "", .fn = k_div, .select = select_k_div},
    {.name = "Pow", .domain = "", .fn = k_pow, .select_types = select_pow},
    {.name = "Mod", .domain = "", .fn = k_mod, .select = select_k_mod},
    {.name = "PRelu", .domain = "", .fn = k_prelu, .select = select_k_prelu},
    {.name = "Equal", .domain = "", .fn = k_equal, .select = select_k_equal, .strings = 1},
    {.name = "Greater", .domain = "", .fn = k_greater, .select = select_k_greater},
    {.name = "GreaterOrEqual",
     .domain = "",
     .fn = k_greater_equal,
     .select = select_k_greater_equal},
    {.name = "Less", .domain = "", .fn = k_less, .select = select_k_less},
    {.name = "LessOrEqual", .domain = "", .fn = k_less_equal, .select = select_k_less_equal},
    {.name = "And", .domain = "", .fn = k_and, .select = select_k_and},
    {.name = "Or", .domain = "", .fn = k_or, .select = select_k_or},
    {.name = "Xor", .domain = "", .fn = k_xor, .select = select_k_xor},
    {.name = "Max", .domain = "", .fn = k_max, .select = select_k_max},
    {.name = "Min", .domain = "", .fn = k_min, .select = select_k_min},
    {.name = "Mean", .domain = "", .fn = k_mean, .select = select_k_mean},
    {.name = "Sum", .domain = "", .fn = k_sum, .select = select_k_sum},
    {.name = "Where", .domain = "", .fn = k_where},
    {.name = "BitwiseAnd", .domain = "", .fn = k_bitwise_and, .select = select_k_bitwise_and},
    {.name = "BitwiseOr", .domain = "", .fn = k_bitwise_or, .select = select_k_bitwise_or},
    {.name = "BitwiseXor", .domain = "", .fn = k_bitwise_xor, .select = select_k_bitwise_xor},
    {.name = "BitwiseNot", .domain = "", .fn = k_bitwise_not, .types = bitnot_types},
    {.name = "BitShift", .domain = "", .fn = k_bitshift, .select = select_k_bitshift},
    {.name = NULL},
};
