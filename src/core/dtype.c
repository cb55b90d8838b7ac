/* dtype.c: element types and the 16-bit float conversions. */
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
    case OG_UNDEFINED: break;
    }
    return "undefined";
}

size_t og_dtype_size(og_dtype dtype)
{
    switch (dtype) {
    case OG_BOOL:
    case OG_UINT8:
    case OG_INT8: return 1;
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
