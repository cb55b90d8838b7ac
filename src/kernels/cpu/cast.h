/* cast.h: the dtypes Cast converts natively, for the CPU kernels that convert as Cast does
 * (tensor_cast.c; Pad's constant in tensor.c).  Internal header. */
#ifndef OG_KERNELS_CPU_CAST_H
#define OG_KERNELS_CPU_CAST_H

#include <math.h>
#include <stdint.h>

/* X(C, enum, C type, is bool (store x != 0), is float, min, max), C being the caller's
 * context (what an inner list needs of the outer one, see CAST_TYPES_LATER).  Float to integer
 * conversions saturate (NaN gives 0): out-of-range conversions are undefined behaviour in C.
 * float16 and bfloat16 go through float. */
#define CAST_TYPES(C, X)                                                                           \
    X(C, OG_FLOAT, float, 0, 1, -HUGE_VALF, HUGE_VALF)                                             \
    X(C, OG_DOUBLE, double, 0, 1, -HUGE_VAL, HUGE_VAL)                                             \
    X(C, OG_INT8, int8_t, 0, 0, INT8_MIN, INT8_MAX)                                                \
    X(C, OG_INT16, int16_t, 0, 0, INT16_MIN, INT16_MAX)                                            \
    X(C, OG_INT32, int32_t, 0, 0, INT32_MIN, INT32_MAX)                                            \
    X(C, OG_INT64, int64_t, 0, 0, INT64_MIN, INT64_MAX)                                            \
    X(C, OG_UINT8, uint8_t, 0, 0, 0, UINT8_MAX)                                                    \
    X(C, OG_UINT16, uint16_t, 0, 0, 0, UINT16_MAX)                                                 \
    X(C, OG_UINT32, uint32_t, 0, 0, 0, UINT32_MAX)                                                 \
    X(C, OG_UINT64, uint64_t, 0, 0, 0, UINT64_MAX)                                                 \
    X(C, OG_BOOL, uint8_t, 1, 0, 0, 1)

/* CAST_TYPES_LATER(C, X) inside an expansion of CAST_TYPES(_, Y) (Y's body using it, C
 * carrying what X needs of Y's element) expands the list again, for a table of pairs: the
 * preprocessor leaves CAST_TYPES alone inside its own expansion, so CAST_TYPES_LATER holds the
 * inner use back as `CAST_TYPES_AGAIN ()`, and the rescan of CAST_EXPAND(CAST_TYPES(_, Y)), outside
 * that expansion, turns it into the list. */
#define CAST_EMPTY()
#define CAST_DEFER(m)          m CAST_EMPTY()
#define CAST_EXPAND(...)       __VA_ARGS__
#define CAST_TYPES_AGAIN()     CAST_TYPES
#define CAST_TYPES_LATER(C, X) CAST_DEFER(CAST_TYPES_AGAIN)()(C, X)

#endif /* OG_KERNELS_CPU_CAST_H */
