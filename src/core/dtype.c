/* dtype.c: element types and the 16-bit float conversions. */
#include <math.h>
#include <string.h>

#include "core/core.h"

const char *og_dtype_name(og_dtype dtype)
{
    switch (dtype) {
    case OG_FLOAT: return "float32";
    case OG_UINT8: return "uint8";
    case OG_INT8: return "int8";
    case OG_UINT16: return "uint16";
    case OG_INT16: return "int16";
    case OG_INT32: return "int32";
    case OG_INT64: return "int64";
    case OG_STRING: return "string";
    case OG_BOOL: return "bool";
    case OG_FLOAT16: return "float16";
    case OG_DOUBLE: return "float64";
    case OG_UINT32: return "uint32";
    case OG_UINT64: return "uint64";
    case OG_BFLOAT16: return "bfloat16";
    case OG_FLOAT8E4M3FN: return "float8e4m3fn";
    case OG_FLOAT8E4M3FNUZ: return "float8e4m3fnuz";
    case OG_FLOAT8E5M2: return "float8e5m2";
    case OG_FLOAT8E5M2FNUZ: return "float8e5m2fnuz";
    case OG_UINT4: return "uint4";
    case OG_INT4: return "int4";
    case OG_UNDEFINED: break;
    }
    return "undefined";
}

size_t og_dtype_size(og_dtype dtype)
{
    switch (dtype) {
    case OG_BOOL:
    case OG_UINT8:
    case OG_INT8:
    case OG_FLOAT8E4M3FN:
    case OG_FLOAT8E4M3FNUZ:
    case OG_FLOAT8E5M2:
    case OG_FLOAT8E5M2FNUZ:
    case OG_UINT4: /* unpacked: one element a byte */
    case OG_INT4: return 1;
    case OG_UINT16:
    case OG_INT16:
    case OG_FLOAT16:
    case OG_BFLOAT16: return 2;
    case OG_FLOAT:
    case OG_INT32:
    case OG_UINT32: return 4;
    case OG_DOUBLE:
    case OG_INT64:
    case OG_UINT64: return 8;
    case OG_STRING:
    case OG_UNDEFINED: break;
    }
    return 0;
}

bool og_dtype_is_float(og_dtype t)
{
    return t == OG_FLOAT || t == OG_DOUBLE || t == OG_FLOAT16 || t == OG_BFLOAT16;
}

bool og_dtype_is_integer(og_dtype t)
{
    switch (t) {
    case OG_UINT8:
    case OG_INT8:
    case OG_UINT16:
    case OG_INT16:
    case OG_INT32:
    case OG_INT64:
    case OG_UINT32:
    case OG_UINT64: return true;
    default: return false;
    }
}

bool og_dtype_is_known(og_dtype t) { return og_dtype_size(t) != 0; }

size_t og_dtype_storage_size(og_dtype t)
{
    return t == OG_STRING ? sizeof(char *) : og_dtype_size(t);
}

bool og_dtype_is_valid(og_dtype t) { return t == OG_STRING || og_dtype_is_known(t); }

float og_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalize */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) {
                man <<= 1;
                exp--;
            }
            man &= 0x3ff;
            bits = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t og_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t exp = (x >> 23) & 0xff;
    uint32_t man = x & 0x7fffff;
    if (exp == 0xff) /* inf or nan */
        return sign | 0x7c00 | (man ? 0x200 : 0);
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return sign | 0x7c00; /* overflow to inf */
    if (e <= 0) {                      /* subnormal or zero, round to nearest even */
        if (e < -10) return sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return sign | (uint16_t)half;
    }
    uint16_t h = sign | (uint16_t)(e << 10) | (uint16_t)(man >> 13);
    uint32_t rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* may carry into exp: correct */
    return h;
}

float og_bfloat16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t og_float_to_bfloat16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* nan */
    uint32_t lsb = (x >> 16) & 1;
    x += 0x7fff + lsb; /* round to nearest even */
    return (uint16_t)(x >> 16);
}

/* ---- 8-bit floats ---------------------------------------------------------------------- */

bool og_dtype_is_float8(og_dtype t)
{
    return t == OG_FLOAT8E4M3FN || t == OG_FLOAT8E4M3FNUZ || t == OG_FLOAT8E5M2 ||
           t == OG_FLOAT8E5M2FNUZ;
}

/* A format: mantissa bits, exponent bias, largest finite value. */
typedef struct f8_format {
    int mbits, bias;
    double max;
    bool uz; /* FNUZ: 0x80 is the only NaN, no negative zero */
} f8_format;

static inline f8_format f8_fmt(og_dtype t)
{
    switch (t) {
    case OG_FLOAT8E4M3FN: return (f8_format){3, 7, 448.0, false};
    case OG_FLOAT8E4M3FNUZ: return (f8_format){3, 8, 240.0, true};
    case OG_FLOAT8E5M2: return (f8_format){2, 15, 57344.0, false};
    default: return (f8_format){2, 16, 57344.0, true}; /* E5M2FNUZ */
    }
}

/* The conversions of a format t: inline, so that the per-format entry points below (a
 * constant t) test no format. */
static inline double to_double(uint8_t code, og_dtype t)
{
    f8_format f = f8_fmt(t);
    int ebits = 7 - f.mbits;
    unsigned e = (code >> f.mbits) & ((1u << ebits) - 1), m = code & ((1u << f.mbits) - 1);
    bool neg = code & 0x80;
    if (f.uz && code == 0x80) return NAN;
    if (t == OG_FLOAT8E4M3FN && (code & 0x7f) == 0x7f) return neg ? -NAN : NAN;
    if (t == OG_FLOAT8E5M2 && e == 31) /* IEEE: infinities and NaNs */
        return m ? (neg ? -NAN : NAN) : (neg ? -INFINITY : INFINITY);
    /* value = 1.m * 2^(e - bias), or 0.m * 2^(1 - bias) when e = 0 (subnormal) */
    double v = e ? ldexp((double)((1u << f.mbits) | m), (int)e - f.bias - f.mbits)
                 : ldexp((double)m, 1 - f.bias - f.mbits);
    return neg ? -v : v;
}

static inline uint8_t from_double(double v, og_dtype t, bool saturate)
{
    f8_format f = f8_fmt(t);
    uint8_t sign = signbit(v) ? 0x80 : 0;
    uint8_t nan = f.uz ? 0x80 : (uint8_t)(sign | 0x7f);
    if (isnan(v)) return nan;
    double a = fabs(v);
    /* Round to the format's spacing at a's binade (that of the subnormals below the smallest
     * normal), ties to even: a / q is exact in double, rint rounds to even. */
    int emin = 1 - f.bias, e;
    if (a != 0 && !isinf(a)) {
        frexp(a, &e); /* a = r * 2^e, r in [0.5, 1): binade exponent e - 1 */
        e -= 1;
        if (e < emin) e = emin;
        a = rint(ldexp(a, f.mbits - e));
        a = ldexp(a, e - f.mbits);
    }
    if (a > f.max) { /* infinite or rounded past the largest value */
        if (saturate) return (uint8_t)(sign | from_double(f.max, t, false));
        return t == OG_FLOAT8E5M2 ? (uint8_t)(sign | 0x7c) : nan;
    }
    if (a == 0) return f.uz ? 0 : sign;
    frexp(a, &e);
    e -= 1;
    unsigned code;
    if (e < emin) /* subnormal: a = m * 2^(emin - mbits) */
        code = (unsigned)ldexp(a, f.mbits - emin);
    else /* a = (2^mbits + m) * 2^(e - mbits); rounding may have carried to the next binade */
        code = ((unsigned)(e + f.bias) << f.mbits) |
               ((unsigned)ldexp(a, f.mbits - e) & ((1u << f.mbits) - 1));
    return (uint8_t)(sign | code);
}

double og_float8_to_double(uint8_t code, og_dtype t) { return to_double(code, t); }

uint8_t og_double_to_float8(double v, og_dtype t, bool saturate)
{
    return from_double(v, t, saturate);
}

#define OG_FLOAT8_FORMAT(name, t)                                                                  \
    double og_##name##_to_double(uint8_t code) { return to_double(code, t); }                      \
    uint8_t og_double_to_##name(double v, bool saturate) { return from_double(v, t, saturate); }
OG_FLOAT8_FORMAT(float8e4m3fn, OG_FLOAT8E4M3FN)
OG_FLOAT8_FORMAT(float8e4m3fnuz, OG_FLOAT8E4M3FNUZ)
OG_FLOAT8_FORMAT(float8e5m2, OG_FLOAT8E5M2)
OG_FLOAT8_FORMAT(float8e5m2fnuz, OG_FLOAT8E5M2FNUZ)
#undef OG_FLOAT8_FORMAT

/* ---- 4-bit integers ---------------------------------------------------------------------- */

bool og_dtype_is_int4(og_dtype t) { return t == OG_INT4 || t == OG_UINT4; }

int8_t og_saturate_int4(double v, og_dtype t)
{
    double lo = t == OG_INT4 ? -8 : 0, hi = t == OG_INT4 ? 7 : 15;
    if (v != v) return 0;
    return (int8_t)(v <= lo ? lo : v >= hi ? hi : v);
}
