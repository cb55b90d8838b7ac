/* tensor_cast.c: the CPU kernel of Cast and CastLike.
 *
 * The conversion of a node is bound once, when its session is created (select_cast): the
 * (from, to) pair of dtypes is known then (to: Cast's attribute, CastLike's input 1, both
 * the output's static dtype), and so is Cast-19's `saturate`.  The binding is a cast_impl
 * whose loops are those of the pair, so no element loop tests a dtype:
 * - two native types (CAST_TYPES): one loop per pair (cast_<from>_<to>), in blocks;
 * - float16 or bfloat16 on a side: through float, a block at a time (the widening or the
 *   rounding, and the native loop to or from float);
 * - an 8-bit float or a 4-bit integer on a side: through double (every value of these types
 *   and of the others but int64 and uint64 is exact in double), the typed loads of x and the
 *   stores of y (og_elem_io; to float8 nearest, ties to even, `saturate` as the spec's table;
 *   to int4/uint4 rounded to nearest even and clipped, as the reference implementation);
 * - strings: a string to a number parses the plain or scientific form ("1e-5", "+INF",
 *   "-inf" and "NaN" in any case; an integer target takes an integer literal exactly, a
 *   decimal one truncated, "100.5" -> 100), a number to a string is its shortest plain form
 *   that reads back to the same value ("0.9767611" for that float32, "%.{p}g" with the
 *   smallest p, at most 9 for float and 17 for double), the integers (and the 8-bit floats,
 *   truncated) as integers; both in the "C" locale of the calling thread (uselocale),
 *   whatever the process's.  The parse or the format of the number's dtype is bound.
 * A kernel called without a binding (a direct call, a run whose dtypes differ from the
 * static ones) finds the same cast_impl for the tensors' dtypes. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cast.h"
#include "kernels/cpu/kernel.h"
#include "ops/tensor_shared.h"

#define CAST_BLOCK 1024

typedef struct cast_impl cast_impl;
/* n elements (n <= CAST_BLOCK) of one dtype at s to another at d */
typedef void (*cast_fn)(const void *restrict s, void *restrict d, int64_t n);
/* the string s into element i of y, through io's store */
typedef void (*cast_parse_fn)(const og_elem_io *io, const char *s, void *y, int64_t i);
/* element i of x (read through io's load) as a string into buf */
typedef void (*cast_format_fn)(const og_elem_io *io, const void *x, int64_t i, char *buf,
                               size_t size);

struct cast_impl {
    og_status (*run)(const og_kernel_ctx *k, const cast_impl *c, const og_tensor *x, og_tensor *y);
    cast_fn first, last;       /* run_blocks: first, then last on its float result (or NULL) */
    const og_elem_io *io, *to; /* run_double: x's loads (io) and y's stores (to); strings:
                                  the number side's loads and stores (io) */
    cast_parse_fn parse;       /* run_parse */
    cast_format_fn format;     /* run_format */
};

/* ---- the runs ------------------------------------------------------------------------- */

static og_status run_copy(const og_kernel_ctx *k, const cast_impl *c, const og_tensor *x,
                          og_tensor *y)
{
    (void)k;
    (void)c;
    if (x->numel) memcpy(y->data, x->data, og_tensor_nbytes(x));
    return OG_OK;
}

static og_status run_copy_strings(const og_kernel_ctx *k, const cast_impl *c, const og_tensor *x,
                                  og_tensor *y)
{
    (void)k;
    (void)c;
    if (x->numel) memcpy(y->data, x->data, (size_t)x->numel * sizeof(char *));
    return og_tensor_own_strings(y);
}

/* run_blocks' and run_double's blocks of CAST_BLOCK elements for og_par_for */
typedef struct cast_job {
    const cast_impl *c;
    const char *s;
    char *d;
    size_t ses, des;
    int64_t n;
} cast_job;

static void blocks_range(void *ctx, int64_t b0, int64_t b1, int slot)
{
    const cast_job *j = ctx;
    const cast_impl *c = j->c;
    (void)slot;
    for (int64_t b = b0; b < b1; b++) {
        int64_t i0 = b * CAST_BLOCK;
        int64_t m = j->n - i0 < CAST_BLOCK ? j->n - i0 : CAST_BLOCK;
        const char *src = j->s + (size_t)i0 * j->ses;
        char *dst = j->d + (size_t)i0 * j->des;
        if (c->last) {
            float f[CAST_BLOCK];
            c->first(src, f, m);
            c->last(f, dst, m);
        } else {
            c->first(src, dst, m);
        }
    }
}

static void double_range(void *ctx, int64_t b0, int64_t b1, int slot)
{
    const cast_job *j = ctx;
    (void)slot;
    for (int64_t b = b0; b < b1; b++) {
        int64_t i0 = b * CAST_BLOCK;
        int64_t m = j->n - i0 < CAST_BLOCK ? j->n - i0 : CAST_BLOCK;
        double v[CAST_BLOCK];
        j->c->io->load(j->s, i0, 1, m, v);
        j->c->to->store(j->d, i0, 1, m, v);
    }
}

static og_status run_blocks(const og_kernel_ctx *k, const cast_impl *c, const og_tensor *x,
                            og_tensor *y)
{
    cast_job j = {c, x->data, y->data, og_dtype_size(x->dtype), og_dtype_size(y->dtype), x->numel};
    og_par_for(k, (x->numel + CAST_BLOCK - 1) / CAST_BLOCK, CAST_BLOCK, OG_PAR_MIN_COMPUTE,
               blocks_range, &j);
    return OG_OK;
}

static og_status run_double(const og_kernel_ctx *k, const cast_impl *c, const og_tensor *x,
                            og_tensor *y)
{
    cast_job j = {c, x->data, y->data, 0, 0, x->numel};
    og_par_for(k, (x->numel + CAST_BLOCK - 1) / CAST_BLOCK, CAST_BLOCK, OG_PAR_MIN_COMPUTE,
               double_range, &j);
    return OG_OK;
}

/* The calling thread in the "C" locale until c_locale_end(*loc, prev). */
static locale_t c_locale_begin(locale_t *prev)
{
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    *prev = c ? uselocale(c) : (locale_t)0;
    return c;
}

static void c_locale_end(locale_t c, locale_t prev)
{
    if (c) {
        uselocale(prev);
        freelocale(c);
    }
}

static og_status run_parse(const og_kernel_ctx *k, const cast_impl *c, const og_tensor *x,
                           og_tensor *y)
{
    (void)k;
    locale_t prev, loc = c_locale_begin(&prev);
    for (int64_t i = 0; i < x->numel; i++) c->parse(c->io, og_tensor_str(x, i), y->data, i);
    c_locale_end(loc, prev);
    return OG_OK;
}

static og_status run_format(const og_kernel_ctx *k, const cast_impl *c, const og_tensor *x,
                            og_tensor *y)
{
    (void)k;
    og_status rc = OG_OK;
    locale_t prev, loc = c_locale_begin(&prev);
    for (int64_t i = 0; i < x->numel && !rc; i++) {
        char buf[64];
        c->format(c->io, x->data, i, buf, sizeof buf);
        rc = og_tensor_set_str(y, i, buf, strlen(buf));
    }
    c_locale_end(loc, prev);
    return rc;
}

/* ---- native pairs --------------------------------------------------------------------- */

#define CAST_UNPAREN(...) __VA_ARGS__
#define CAST_CALL(m, ...) m(__VA_ARGS__)

/* cast_<from>_<to> for two native types: bool stores x != 0, a float to an integer
 * saturates (NaN gives 0). */
#define NATIVE_FN_(SE, ST, SF, DE, DT, DB, DF, DMIN, DMAX)                                         \
    static void cast_##SE##_##DE(const void *restrict s, void *restrict d, int64_t n)              \
    {                                                                                              \
        const ST *restrict sp = s;                                                                 \
        DT *restrict dp = d;                                                                       \
        if (DB) {                                                                                  \
            for (int64_t i = 0; i < n; i++) dp[i] = (DT)(sp[i] != 0);                              \
        } else if (SF && !DF) {                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                dp[i] = sp[i] != sp[i]            ? (DT)0                                          \
                        : sp[i] <= (double)(DMIN) ? (DT)(DMIN)                                     \
                        : sp[i] >= (double)(DMAX) ? (DT)(DMAX)                                     \
                                                  : (DT)sp[i];                                     \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) dp[i] = (DT)sp[i];                                     \
        }                                                                                          \
    }
#define NATIVE_FN(S, DE, DT, DB, DF, DMIN, DMAX)                                                   \
    CAST_CALL(NATIVE_FN_, CAST_UNPAREN S, DE, DT, DB, DF, DMIN, DMAX)
#define NATIVE_FNS_FROM(C, SE, ST, SB, SF, SMIN, SMAX) CAST_TYPES_LATER((SE, ST, SF), NATIVE_FN)
CAST_EXPAND(CAST_TYPES(_, NATIVE_FNS_FROM))

#define NATIVE_IMPL(SE, DE, DT, DB, DF, DMIN, DMAX) {.run = run_blocks, .first = cast_##SE##_##DE},
#define NATIVE_ROW(C, SE, ST, SB, SF, SMIN, SMAX)   {CAST_TYPES_LATER(SE, NATIVE_IMPL)},
enum { N_NATIVE = 11 };
/* [from][to], in the order of CAST_TYPES */
static const cast_impl native_impls[N_NATIVE][N_NATIVE] = {CAST_EXPAND(CAST_TYPES(_, NATIVE_ROW))};

/* t's place in CAST_TYPES, -1 for another dtype */
static int native_index(og_dtype t)
{
#define NATIVE_CODE(C, E, T, B, F, MIN, MAX) E,
    static const og_dtype codes[N_NATIVE] = {CAST_TYPES(_, NATIVE_CODE)};
#undef NATIVE_CODE
    for (int i = 0; i < N_NATIVE; i++)
        if (codes[i] == t) return i;
    return -1;
}

/* ---- float16 and bfloat16, through float ---------------------------------------------- */

static void f16_to_f32(const void *restrict s, void *restrict d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) ((float *)d)[i] = og_half_to_float(((const uint16_t *)s)[i]);
}
static void bf16_to_f32(const void *restrict s, void *restrict d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        ((float *)d)[i] = og_bfloat16_to_float(((const uint16_t *)s)[i]);
}
static void f32_to_f16(const void *restrict s, void *restrict d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i] = og_float_to_half(((const float *)s)[i]);
}
static void f32_to_bf16(const void *restrict s, void *restrict d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        ((uint16_t *)d)[i] = og_float_to_bfloat16(((const float *)s)[i]);
}

/* [float16, bfloat16] to float, and float to them */
static const cast_impl half_to_float[2] = {{.run = run_blocks, .first = f16_to_f32},
                                           {.run = run_blocks, .first = bf16_to_f32}};
static const cast_impl float_to_half[2] = {{.run = run_blocks, .first = f32_to_f16},
                                           {.run = run_blocks, .first = f32_to_bf16}};
/* [float16, bfloat16][float16, bfloat16]: the other one (the diagonal is a copy) */
static const cast_impl half_to_half[2][2] = {
    {{.run = run_copy}, {.run = run_blocks, .first = f16_to_f32, .last = f32_to_bf16}},
    {{.run = run_blocks, .first = bf16_to_f32, .last = f32_to_f16}, {.run = run_copy}}};
/* [float16, bfloat16][native]: widened to float, then float's loop */
#define HALF_NATIVE(H, DE, DT, DB, DF, DMIN, DMAX)                                                 \
    {.run = run_blocks, .first = H##_to_f32, .last = cast_OG_FLOAT_##DE},
static const cast_impl half_native[2][N_NATIVE] = {{CAST_TYPES(f16, HALF_NATIVE)},
                                                   {CAST_TYPES(bf16, HALF_NATIVE)}};
/* [native][float16, bfloat16]: the loop to float, then rounded */
#define NATIVE_HALF(C, SE, ST, SB, SF, SMIN, SMAX)                                                 \
    {{.run = run_blocks, .first = cast_##SE##_OG_FLOAT, .last = f32_to_f16},                       \
     {.run = run_blocks, .first = cast_##SE##_OG_FLOAT, .last = f32_to_bf16}},
static const cast_impl native_half[N_NATIVE][2] = {CAST_TYPES(_, NATIVE_HALF)};

static int half_index(og_dtype t) { return t == OG_FLOAT16 ? 0 : t == OG_BFLOAT16 ? 1 : -1; }

/* ---- 8-bit floats and 4-bit integers, through double ---------------------------------- */

#define F8_IO(name)                                                                                \
    static void load_##name(const void *x, int64_t off, int64_t stride, int64_t n, double *d)      \
    {                                                                                              \
        const uint8_t *p = (const uint8_t *)x + off;                                               \
        for (int64_t i = 0; i < n; i++) d[i] = og_float8##name##_to_double(p[i * stride]);         \
    }                                                                                              \
    static void store_##name##_sat(void *y, int64_t off, int64_t stride, int64_t n,                \
                                   const double *d)                                                \
    {                                                                                              \
        uint8_t *p = (uint8_t *)y + off;                                                           \
        for (int64_t i = 0; i < n; i++) p[i * stride] = og_double_to_float8##name(d[i], true);     \
    }                                                                                              \
    static void store_##name(void *y, int64_t off, int64_t stride, int64_t n, const double *d)     \
    {                                                                                              \
        uint8_t *p = (uint8_t *)y + off;                                                           \
        for (int64_t i = 0; i < n; i++) p[i * stride] = og_double_to_float8##name(d[i], false);    \
    }
F8_IO(e4m3fn)
F8_IO(e4m3fnuz)
F8_IO(e5m2)
F8_IO(e5m2fnuz)
#undef F8_IO
/* [e4m3fn, e4m3fnuz, e5m2, e5m2fnuz][saturate 0, 1] */
static const og_elem_io f8_ios[4][2] = {
    {{OG_FLOAT8E4M3FN, load_e4m3fn, store_e4m3fn},
     {OG_FLOAT8E4M3FN, load_e4m3fn, store_e4m3fn_sat}},
    {{OG_FLOAT8E4M3FNUZ, load_e4m3fnuz, store_e4m3fnuz},
     {OG_FLOAT8E4M3FNUZ, load_e4m3fnuz, store_e4m3fnuz_sat}},
    {{OG_FLOAT8E5M2, load_e5m2, store_e5m2}, {OG_FLOAT8E5M2, load_e5m2, store_e5m2_sat}},
    {{OG_FLOAT8E5M2FNUZ, load_e5m2fnuz, store_e5m2fnuz},
     {OG_FLOAT8E5M2FNUZ, load_e5m2fnuz, store_e5m2fnuz_sat}}};

/* int4 and uint4, one per byte (int8_t, uint8_t); Cast rounds to nearest even then clips
 * (store_<name>), a parsed string is truncated then clipped (store_<name>_trunc, as
 * og_tensor_set_f64) */
#define I4_IO(name, E, T)                                                                          \
    static void load_##name(const void *x, int64_t off, int64_t stride, int64_t n, double *d)      \
    {                                                                                              \
        const T *p = (const T *)x + off;                                                           \
        for (int64_t i = 0; i < n; i++) d[i] = (double)p[i * stride];                              \
    }                                                                                              \
    static void store_##name(void *y, int64_t off, int64_t stride, int64_t n, const double *d)     \
    {                                                                                              \
        uint8_t *p = (uint8_t *)y + off;                                                           \
        for (int64_t i = 0; i < n; i++) p[i * stride] = (uint8_t)og_saturate_int4(rint(d[i]), E);  \
    }                                                                                              \
    static void store_##name##_trunc(void *y, int64_t off, int64_t stride, int64_t n,              \
                                     const double *d)                                              \
    {                                                                                              \
        int8_t *p = (int8_t *)y + off;                                                             \
        for (int64_t i = 0; i < n; i++) p[i * stride] = og_saturate_int4(d[i], E);                 \
    }
I4_IO(int4, OG_INT4, int8_t)
I4_IO(uint4, OG_UINT4, uint8_t)
#undef I4_IO
/* [int4, uint4] */
static const og_elem_io i4_ios[2] = {{OG_INT4, load_int4, store_int4},
                                     {OG_UINT4, load_uint4, store_uint4}};
static const og_elem_io i4_trunc_ios[2] = {{OG_INT4, load_int4, store_int4_trunc},
                                           {OG_UINT4, load_uint4, store_uint4_trunc}};

static int f8_index(og_dtype t)
{
    return t == OG_FLOAT8E4M3FN     ? 0
           : t == OG_FLOAT8E4M3FNUZ ? 1
           : t == OG_FLOAT8E5M2     ? 2
           : t == OG_FLOAT8E5M2FNUZ ? 3
                                    : -1;
}
static int i4_index(og_dtype t) { return t == OG_INT4 ? 0 : t == OG_UINT4 ? 1 : -1; }

/* The loads of x's dtype: og_elem_ios' 13, the float8 loads, the int4 loads (19). */
/* clang-format off */
#define LOAD_IOS(X)                                                                                \
    X(&og_elem_ios[0]) X(&og_elem_ios[1]) X(&og_elem_ios[2]) X(&og_elem_ios[3])                    \
    X(&og_elem_ios[4]) X(&og_elem_ios[5]) X(&og_elem_ios[6]) X(&og_elem_ios[7])                    \
    X(&og_elem_ios[8]) X(&og_elem_ios[9]) X(&og_elem_ios[10]) X(&og_elem_ios[11])                  \
    X(&og_elem_ios[12])                                                                            \
    X(&f8_ios[0][1]) X(&f8_ios[1][1]) X(&f8_ios[2][1]) X(&f8_ios[3][1])                            \
    X(&i4_ios[0]) X(&i4_ios[1])
/* A row of the table: the loads L, then each store (og_elem_ios' 13, the float8 stores
 * without and with saturate, the int4 stores: 23). */
#define DOUBLE_IMPL(L, S) {.run = run_double, .io = (L), .to = (S)},
#define DOUBLE_ROW(L)                                                                              \
    {DOUBLE_IMPL(L, &og_elem_ios[0]) DOUBLE_IMPL(L, &og_elem_ios[1])                               \
     DOUBLE_IMPL(L, &og_elem_ios[2]) DOUBLE_IMPL(L, &og_elem_ios[3])                               \
     DOUBLE_IMPL(L, &og_elem_ios[4]) DOUBLE_IMPL(L, &og_elem_ios[5])                               \
     DOUBLE_IMPL(L, &og_elem_ios[6]) DOUBLE_IMPL(L, &og_elem_ios[7])                               \
     DOUBLE_IMPL(L, &og_elem_ios[8]) DOUBLE_IMPL(L, &og_elem_ios[9])                               \
     DOUBLE_IMPL(L, &og_elem_ios[10]) DOUBLE_IMPL(L, &og_elem_ios[11])                             \
     DOUBLE_IMPL(L, &og_elem_ios[12])                                                              \
     DOUBLE_IMPL(L, &f8_ios[0][0]) DOUBLE_IMPL(L, &f8_ios[0][1])                                   \
     DOUBLE_IMPL(L, &f8_ios[1][0]) DOUBLE_IMPL(L, &f8_ios[1][1])                                   \
     DOUBLE_IMPL(L, &f8_ios[2][0]) DOUBLE_IMPL(L, &f8_ios[2][1])                                   \
     DOUBLE_IMPL(L, &f8_ios[3][0]) DOUBLE_IMPL(L, &f8_ios[3][1])                                   \
     DOUBLE_IMPL(L, &i4_ios[0]) DOUBLE_IMPL(L, &i4_ios[1])},
/* clang-format on */
enum { N_LOADS = 19, N_STORES = 23 };
static const cast_impl double_impls[N_LOADS][N_STORES] = {LOAD_IOS(DOUBLE_ROW)};

/* t's row of double_impls, -1 for none (string) */
static int load_index(og_dtype t)
{
    const og_elem_io *io = og_elem_io_of(t);
    if (io) return (int)(io - og_elem_ios);
    if (f8_index(t) >= 0) return OG_ELEM_IO_N + f8_index(t);
    return i4_index(t) >= 0 ? OG_ELEM_IO_N + 4 + i4_index(t) : -1;
}

/* t's column of double_impls (saturate: a float8 target's), -1 for none */
static int store_index(og_dtype t, bool saturate)
{
    const og_elem_io *io = og_elem_io_of(t);
    if (io) return (int)(io - og_elem_ios);
    if (f8_index(t) >= 0) return OG_ELEM_IO_N + 2 * f8_index(t) + (saturate ? 1 : 0);
    return i4_index(t) >= 0 ? OG_ELEM_IO_N + 8 + i4_index(t) : -1;
}

/* ---- strings -------------------------------------------------------------------------- */

static void parse_number(const og_elem_io *io, const char *s, void *y, int64_t i)
{
    double v = strtod(s, NULL);
    io->store(y, i, 1, 1, &v);
}

/* An integer literal, or else a number; the value (saturated) is an integer either way.
 * Returns whether s was an integer literal, its value in *v. */
static bool int_literal(const char *s, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return end != s && *end == 0 && errno == 0;
}

static void parse_int(const og_elem_io *io, const char *s, void *y, int64_t i)
{
    long long v;
    if (!int_literal(s, &v)) {
        parse_number(io, s, y, i);
        return;
    }
    double d = (double)v;
    io->store(y, i, 1, 1, &d);
}

static void parse_int64(const og_elem_io *io, const char *s, void *y, int64_t i)
{
    long long v;
    if (int_literal(s, &v))
        ((int64_t *)y)[i] = v;
    else
        parse_number(io, s, y, i);
}

static void parse_uint64(const og_elem_io *io, const char *s, void *y, int64_t i)
{
    long long v;
    if (int_literal(s, &v))
        ((uint64_t *)y)[i] = v >= 0 ? (uint64_t)v : 0; /* negative: saturated */
    else
        parse_number(io, s, y, i);
}

/* The shortest "%.{p}g" (p <= maxp) of v that reads back to v (as a float: back_float). */
static void format_shortest(double v, int maxp, bool back_float, char *buf, size_t size)
{
    for (int p = 1; p <= maxp; p++) {
        snprintf(buf, size, "%.*g", p, v);
        double back = strtod(buf, NULL);
        if (back_float ? (float)back == (float)v : back == v) break;
    }
    if (v != v)
        snprintf(buf, size, "NaN");
    else if (v == HUGE_VAL)
        snprintf(buf, size, "INF");
    else if (v == -HUGE_VAL)
        snprintf(buf, size, "-INF");
}

static void format_float(const og_elem_io *io, const void *x, int64_t i, char *buf, size_t size)
{
    double v;
    io->load(x, i, 1, 1, &v);
    format_shortest(v, 9, true, buf, size);
}

static void format_double(const og_elem_io *io, const void *x, int64_t i, char *buf, size_t size)
{
    (void)io;
    format_shortest(((const double *)x)[i], 17, false, buf, size);
}

/* an integer, or an 8-bit float truncated (saturated, NaN 0) */
static void format_int(const og_elem_io *io, const void *x, int64_t i, char *buf, size_t size)
{
    double v;
    io->load(x, i, 1, 1, &v);
    long long n = v != v                        ? 0
                  : v >= 9223372036854775808.0  ? INT64_MAX
                  : v <= -9223372036854775808.0 ? INT64_MIN
                                                : (long long)v;
    snprintf(buf, size, "%lld", n);
}

static void format_int64(const og_elem_io *io, const void *x, int64_t i, char *buf, size_t size)
{
    (void)io;
    snprintf(buf, size, "%lld", (long long)((const int64_t *)x)[i]);
}

static void format_uint64(const og_elem_io *io, const void *x, int64_t i, char *buf, size_t size)
{
    (void)io;
    snprintf(buf, size, "%llu", (unsigned long long)((const uint64_t *)x)[i]);
}

/* X(dtype, its loads and stores as og_tensor_set_f64 converts, parse, format) */
#define STRING_SIDES(X)                                                                            \
    X(OG_FLOAT, &og_elem_ios[0], parse_number, format_float)                                       \
    X(OG_DOUBLE, &og_elem_ios[1], parse_number, format_double)                                     \
    X(OG_FLOAT16, &og_elem_ios[2], parse_number, format_float)                                     \
    X(OG_BFLOAT16, &og_elem_ios[3], parse_number, format_float)                                    \
    X(OG_INT8, &og_elem_ios[4], parse_int, format_int)                                             \
    X(OG_INT16, &og_elem_ios[5], parse_int, format_int)                                            \
    X(OG_INT32, &og_elem_ios[6], parse_int, format_int)                                            \
    X(OG_INT64, &og_elem_ios[7], parse_int64, format_int64)                                        \
    X(OG_UINT8, &og_elem_ios[8], parse_int, format_int)                                            \
    X(OG_UINT16, &og_elem_ios[9], parse_int, format_int)                                           \
    X(OG_UINT32, &og_elem_ios[10], parse_int, format_int)                                          \
    X(OG_UINT64, &og_elem_ios[11], parse_uint64, format_uint64)                                    \
    X(OG_BOOL, &og_elem_ios[12], parse_number, format_int)                                         \
    X(OG_FLOAT8E4M3FN, &f8_ios[0][1], parse_number, format_float)                                  \
    X(OG_FLOAT8E4M3FNUZ, &f8_ios[1][1], parse_number, format_float)                                \
    X(OG_FLOAT8E5M2, &f8_ios[2][1], parse_number, format_float)                                    \
    X(OG_FLOAT8E5M2FNUZ, &f8_ios[3][1], parse_number, format_float)                                \
    X(OG_INT4, &i4_trunc_ios[0], parse_number, format_int)                                         \
    X(OG_UINT4, &i4_trunc_ios[1], parse_number, format_int)
#define STRING_CODE(E, IO, P, F)   E,
#define STRING_PARSE(E, IO, P, F)  {.run = run_parse, .io = (IO), .parse = P},
#define STRING_FORMAT(E, IO, P, F) {.run = run_format, .io = (IO), .format = F},
enum { N_STRING_SIDES = 19 };
static const og_dtype string_codes[N_STRING_SIDES] = {STRING_SIDES(STRING_CODE)};
/* [the number's dtype, in the order of string_codes] */
static const cast_impl string_to[N_STRING_SIDES] = {STRING_SIDES(STRING_PARSE)};
static const cast_impl string_from[N_STRING_SIDES] = {STRING_SIDES(STRING_FORMAT)};

static int string_index(og_dtype t)
{
    for (int i = 0; i < N_STRING_SIDES; i++)
        if (string_codes[i] == t) return i;
    return -1;
}

/* ---- the binding ---------------------------------------------------------------------- */

static const cast_impl copy_bytes = {.run = run_copy};
static const cast_impl copy_strings = {.run = run_copy_strings};

/* The conversion from `from` to `to` (saturate: Cast-19's, for a float8 target), NULL when
 * there is none. */
static const cast_impl *cast_impl_of(og_dtype from, og_dtype to, bool saturate)
{
    if (from == to)
        return from == OG_STRING ? &copy_strings : og_dtype_size(from) ? &copy_bytes : NULL;
    if (from == OG_STRING || to == OG_STRING) {
        int i = string_index(from == OG_STRING ? to : from);
        return i < 0 ? NULL : from == OG_STRING ? &string_to[i] : &string_from[i];
    }
    int a = native_index(from), b = native_index(to), ha = half_index(from), hb = half_index(to);
    if (a >= 0 && b >= 0) return &native_impls[a][b];
    if (ha >= 0 && hb >= 0) return &half_to_half[ha][hb];
    if (ha >= 0 && b >= 0) return to == OG_FLOAT ? &half_to_float[ha] : &half_native[ha][b];
    if (a >= 0 && hb >= 0) return from == OG_FLOAT ? &float_to_half[hb] : &native_half[a][hb];
    int l = load_index(from), s = store_index(to, saturate);
    return l < 0 || s < 0 ? NULL : &double_impls[l][s];
}

static bool saturate_of(const og_node *n)
{
    const og_cast_params *p = n->params;
    return p ? p->saturate : true;
}

/* The output's static dtype is the target (Cast's `to`, CastLike's input 1). */
static const void *select_cast(const og_node *n, const og_dtype *t, const og_dtype *out)
{
    if (out[0] == OG_UNDEFINED) return OG_KERNEL_AT_RUN;
    return cast_impl_of(t[0], out[0], saturate_of(n));
}

static og_status cast_kernel(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                             og_tensor *const *out, int n_out)
{
    const cast_impl *c =
        k->impl ? k->impl : cast_impl_of(in[0]->dtype, out[0]->dtype, saturate_of(k->node));
    (void)n_in;
    (void)n_out;
    if (!c)
        return og_kernel_error(k, OG_ERR_UNSUPPORTED, "cast from %s to %s is not supported",
                               og_dtype_name(in[0]->dtype), og_dtype_name(out[0]->dtype));
    return in[0]->numel ? c->run(k, c, in[0], out[0]) : OG_OK;
}

/* Cast converts between every two dtypes onnxgrad names (select_cast says which pairs). */
const og_kernel_def og_cpu_tensor_cast[] = {
    {.name = "Cast", .domain = "", .fn = cast_kernel, .select_types = select_cast, .strings = 1},
    {.name = "CastLike",
     .domain = "",
     .fn = cast_kernel,
     .select_types = select_cast,
     .strings = 1},
    {.name = NULL}};
