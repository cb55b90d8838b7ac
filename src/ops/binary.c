/* binary.c: the elementwise ops with numpy (multidirectional) broadcasting: arithmetic
 * (Add, Sub, Mul, Div, Pow, Mod, PRelu), comparisons (Equal, Greater, GreaterOrEqual,
 * Less, LessOrEqual), logic (And, Or, Xor), the variadic Max, Min, Mean, Sum, Where, and the
 * integer bit ops (BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot, BitShift).
 *
 * Opsets 7..21 only: the legacy `broadcast`/`axis` attributes of opsets 1 and 6 are
 * rewritten into numpy broadcasting by the loader (src/onnx/upgrade.c), and the semantics
 * never changed since 7 (later versions only widened the type lists). */
#include <string.h>

#include "ops/op.h"

/* Mod's parsed attribute; the kernel file declares the same struct. */
typedef struct og_mod_params {
    int fmod;
} og_mod_params;

static const og_dtype types_bool[] = {OG_BOOL, OG_UNDEFINED};
static const og_dtype types_int[] = {OG_UINT8, OG_UINT16, OG_UINT32, OG_UINT64,   OG_INT8,
                                     OG_INT16, OG_INT32,  OG_INT64,  OG_UNDEFINED};
static const og_dtype types_uint[] = {OG_UINT8, OG_UINT16, OG_UINT32, OG_UINT64, OG_UNDEFINED};

/* BitShift's direction; the kernel file declares the same struct. */
typedef struct og_bitshift_params {
    int left;
} og_bitshift_params;

static og_status parse_bitshift(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "direction", OG_ATTR_STRING);
    if (st) return st;
    const char *d = og_attr_string(c->node, "direction", NULL);
    if (!d) return og_op_error(c, OG_ERR_MODEL, "attribute 'direction' is required");
    if (strcmp(d, "LEFT") != 0 && strcmp(d, "RIGHT") != 0)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'direction' must be LEFT or RIGHT, got '%s'",
                           d);
    og_bitshift_params *p = og_malloc(c->alloc, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->left = strcmp(d, "LEFT") == 0;
    *params = p;
    return OG_OK;
}

static og_status parse_mod(const og_op_ctx *c, void **params)
{
    og_status st = og_attr_check_type(c, "fmod", OG_ATTR_INT);
    if (st) return st;
    int64_t f = og_attr_int(c->node, "fmod", 0);
    if (f != 0 && f != 1)
        return og_op_error(c, OG_ERR_MODEL, "attribute 'fmod' must be 0 or 1, got %lld",
                           (long long)f);
    og_mod_params *p = og_malloc(c->alloc, sizeof *p);
    if (!p) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    p->fmod = (int)f;
    *params = p;
    return OG_OK;
}

/* Check in[from..to) against `allowed` and require the known ones to agree; *dt gets their
 * common type (OG_UNDEFINED while all are unknown). */
static og_status common_dtype(const og_op_ctx *c, const og_vinfo *in, int from, int to,
                              const og_dtype *allowed, og_dtype *dt)
{
    int first = -1;
    *dt = OG_UNDEFINED;
    for (int i = from; i < to; i++) {
        og_status st = og_check_dtype(c, in, i, allowed);
        if (st) return st;
        if (in[i].dtype == OG_UNDEFINED) continue;
        if (first < 0) {
            first = i;
            *dt = in[i].dtype;
        } else if ((st = og_check_same_dtype(c, in, first, i))) {
            return st;
        }
    }
    return OG_OK;
}

/* Broadcast the shapes of in[0..n) into out. */
static og_status broadcast_all(const og_op_ctx *c, const og_vinfo *in, int n, og_vinfo *out)
{
    const og_vinfo *stack[16] = {0};
    const og_vinfo **ptrs = stack;
    if (n > 16) {
        ptrs = og_malloc(c->alloc, (size_t)n * sizeof *ptrs);
        if (!ptrs) return og_op_error(c, OG_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) ptrs[i] = &in[i];
    og_status st = og_infer_broadcast(c, ptrs, n, out);
    if (ptrs != stack) og_free(c->alloc, ptrs);
    return st;
}

/* All inputs share one type from `allowed`; the output has it, or bool when out_bool. */
static og_status infer_same(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                            const og_dtype *allowed, bool out_bool)
{
    og_dtype dt;
    og_status st = common_dtype(c, in, 0, n_in, allowed, &dt);
    if (st) return st;
    if ((st = broadcast_all(c, in, n_in, out))) return st;
    out->dtype = out_bool ? OG_BOOL : dt;
    return OG_OK;
}

/* Float and every integer type (the spec's numeric T from opset 12-14; earlier versions
 * listed fewer, and are taken as generously). */
static const og_dtype types_num[] = {OG_FLOAT,  OG_DOUBLE, OG_INT32,    OG_INT64,
                                     OG_INT8,   OG_INT16,  OG_UINT8,    OG_UINT16,
                                     OG_UINT32, OG_UINT64, OG_UNDEFINED};

/* `allowed` plus float16 from opset f16_from and bfloat16 from opset bf16_from (0: never),
 * as the op's schema at this node's version lists them; the kernels compute both through
 * float32 copies. */
static og_status infer_same_half(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                 const og_dtype *allowed, bool out_bool, int f16_from,
                                 int bf16_from)
{
    og_dtype types[23];
    return infer_same(c, in, n_in, out, og_types_with_half(c, allowed, f16_from, bf16_from, types),
                      out_bool);
}

/* Add, Sub, Mul, Div, Sum: float16 in every version, bfloat16 from opset 13. */
static og_status infer_numeric(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    return infer_same_half(c, in, n_in, out, types_num, false, 1, 13);
}

/* Max, Min and Mod: the numeric types, float16, bfloat16 from opset 13 */
static og_status infer_numeric_f16(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                   int n_out)
{
    return infer_same_half(c, in, n_in, out, types_num, false, 1, 13);
}

/* Mean: float16 in every version, bfloat16 from opset 13 */
static og_status infer_float(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    return infer_same_half(c, in, n_in, out, og_types_float, false, 1, 13);
}

static og_status infer_compare(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    /* float16 in every version; bfloat16 from Less/Greater-13, LessOrEqual/GreaterOrEqual-16 */
    const char *op = c->node->op_type;
    int bf16_from = strstr(op, "OrEqual") ? 16 : 13;
    return infer_same_half(c, in, n_in, out, types_num, true, 1, bf16_from);
}

/* Equal compares strings too from opset 19. */
static og_status infer_equal(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    static const og_dtype all[] = {OG_FLOAT,  OG_DOUBLE, OG_INT32, OG_INT64,
                                   OG_INT8,   OG_INT16,  OG_UINT8, OG_UINT16,
                                   OG_UINT32, OG_UINT64, OG_BOOL,  OG_UNDEFINED},
                          with_strings[] = {OG_FLOAT, OG_DOUBLE, OG_INT32,    OG_INT64,  OG_INT8,
                                            OG_INT16, OG_UINT8,  OG_UINT16,   OG_UINT32, OG_UINT64,
                                            OG_BOOL,  OG_STRING, OG_UNDEFINED};
    /* float16 from Equal-11, bfloat16 from Equal-13 */
    return infer_same_half(c, in, n_in, out, c->node->since_version >= 19 ? with_strings : all,
                           true, 11, 13);
}

static og_status infer_logic(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    return infer_same(c, in, n_in, out, types_bool, true);
}

static og_status infer_bitwise(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                               int n_out)
{
    return infer_same(c, in, n_in, out, types_int, false);
}

static og_status infer_bitshift(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                int n_out)
{
    return infer_same(c, in, n_in, out, types_uint, false);
}

static og_status infer_bitwise_not(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                                   int n_out)
{
    og_status st = og_check_dtype(c, in, 0, types_int);
    if (st) return st;
    og_vinfo_copy_shape(out, &in[0]);
    return OG_OK;
}

/* Pow: base and exponent typed independently (opset 12 split their types; a model of opset
 * 7 with mixed types is accepted all the same): the base (T) float16, float, double, int32
 * or int64, bfloat16 from opset 13; the exponent (T1) any of those or a narrower or
 * unsigned integer, bfloat16 from opset 15 (the spec's T and T1). */
static og_status infer_pow(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                           int n_out)
{
    static const og_dtype base_types[] = {OG_FLOAT,   OG_DOUBLE,   OG_INT32,    OG_INT64,
                                          OG_FLOAT16, OG_BFLOAT16, OG_UNDEFINED};
    static const og_dtype exp_types[] = {OG_FLOAT,   OG_DOUBLE,   OG_INT8,     OG_INT16,  OG_INT32,
                                         OG_INT64,   OG_UINT8,    OG_UINT16,   OG_UINT32, OG_UINT64,
                                         OG_FLOAT16, OG_BFLOAT16, OG_UNDEFINED};
    int v = c->node->since_version;
    /* bfloat16 is the last entry before the end of each list: cut it before its opset */
    og_dtype bt[sizeof base_types / sizeof *base_types], et[sizeof exp_types / sizeof *exp_types];
    memcpy(bt, base_types, sizeof bt);
    memcpy(et, exp_types, sizeof et);
    if (v < 13) bt[5] = OG_UNDEFINED;
    if (v < 15) et[11] = OG_UNDEFINED;
    og_status st = og_check_dtype(c, in, 0, bt);
    if (st || (st = og_check_dtype(c, in, 1, et))) return st;
    if ((st = broadcast_all(c, in, 2, out))) return st;
    out->dtype = in[0].dtype;
    return OG_OK;
}

/* PRelu: slope broadcasts to X one way only, so the output has X's shape.  float16 in every
 * version, bfloat16 from opset 16; the integer types (int32, int64, uint32, uint64) from 9
 * (int32 and int64 before too, as onnxgrad always ran them). */
static og_status infer_prelu(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    static const og_dtype prelu9[] = {OG_FLOAT,  OG_DOUBLE, OG_INT32,    OG_INT64,
                                      OG_UINT32, OG_UINT64, OG_UNDEFINED};
    og_dtype dt, types[23];
    og_status st =
        common_dtype(c, in, 0, 2,
                     og_types_with_half(c, c->node->since_version >= 9 ? prelu9 : og_types_numeric,
                                        1, 16, types),
                     &dt);
    if (st) return st;
    og_vinfo b;
    og_vinfo_unknown(&b);
    if ((st = broadcast_all(c, in, 2, &b))) return st;
    if (og_vinfo_static(&in[0]) && og_vinfo_static(&b)) {
        bool same = b.rank == in[0].rank;
        for (int d = 0; same && d < b.rank; d++) same = b.dims[d] == in[0].dims[d];
        if (!same) {
            char xs[128], ss[128];
            return og_op_error(c, OG_ERR_SHAPE,
                               "input 1 (slope) of shape %s does not broadcast to the shape %s "
                               "of input 0 (X)",
                               og_shape_str(in[1].rank, in[1].dims, ss, sizeof ss),
                               og_shape_str(in[0].rank, in[0].dims, xs, sizeof xs));
        }
    }
    og_vinfo_copy_shape(out, &in[0]);
    out->dtype = dt;
    return OG_OK;
}

static og_status infer_where(const og_op_ctx *c, const og_vinfo *in, int n_in, og_vinfo *out,
                             int n_out)
{
    /* values of any dtype with a size: the kernel moves them by element size */
    static const og_dtype any[] = {OG_FLOAT,  OG_DOUBLE, OG_FLOAT16, OG_BFLOAT16, OG_INT8,
                                   OG_INT16,  OG_INT32,  OG_INT64,   OG_UINT8,    OG_UINT16,
                                   OG_UINT32, OG_UINT64, OG_BOOL,    OG_UNDEFINED};
    og_dtype dt;
    og_status st = og_check_dtype(c, in, 0, types_bool);
    if (st || (st = common_dtype(c, in, 1, 3, any, &dt))) return st;
    if ((st = broadcast_all(c, in, 3, out))) return st;
    out->dtype = dt;
    return OG_OK;
}

#define BIN(name, infer)                                                                           \
    {                                                                                              \
#name, "", OG_SINCE(name), 2, 2, 1, 1, NULL, NULL, infer, 0                                \
    }
#define VAR(name, infer)                                                                           \
    {                                                                                              \
#name, "", OG_SINCE(name), 1, -1, 1, 1, NULL, NULL, infer, 0                               \
    }

const og_op_def og_ops_binary[] = {
    BIN(Add, infer_numeric),
    BIN(Sub, infer_numeric),
    BIN(Mul, infer_numeric),
    BIN(Div, infer_numeric),
    BIN(Pow, infer_pow),
    {"Mod", "", OG_SINCE(Mod), 2, 2, 1, 1, parse_mod, NULL, infer_numeric_f16, 0},
    BIN(PRelu, infer_prelu),
    BIN(Equal, infer_equal),
    BIN(Greater, infer_compare),
    BIN(GreaterOrEqual, infer_compare),
    BIN(Less, infer_compare),
    BIN(LessOrEqual, infer_compare),
    BIN(And, infer_logic),
    BIN(Or, infer_logic),
    BIN(Xor, infer_logic),
    VAR(Max, infer_numeric_f16),
    VAR(Min, infer_numeric_f16),
    VAR(Mean, infer_float),
    VAR(Sum, infer_numeric),
    {"Where", "", OG_SINCE(Where), 3, 3, 1, 1, NULL, NULL, infer_where, 0},
    BIN(BitwiseAnd, infer_bitwise),
    BIN(BitwiseOr, infer_bitwise),
    BIN(BitwiseXor, infer_bitwise),
    {"BitwiseNot", "", OG_SINCE(BitwiseNot), 1, 1, 1, 1, NULL, NULL, infer_bitwise_not, 0},
    {"BitShift", "", OG_SINCE(BitShift), 2, 2, 1, 1, parse_bitshift, NULL, infer_bitshift, 0},
    {0},
};
