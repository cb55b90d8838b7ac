/* test_float8.c: the 8-bit floats and 4-bit integers through one-node graphs: every code of
 * each float8 format decoded by Cast against the formats' definitions written out here
 * (sign, exponent bias, mantissa; the NaN and infinity codes of FN, FNUZ and E5M2), every
 * finite code round-tripping through float, float16 and double, ties between neighbouring
 * codes going to the even one, saturate on and off at the largest values and at
 * infinities (the spec's Cast table, and onnx's reference for infinities under FNUZ), 4-bit
 * rounding and clipping, QuantizeLinear/DequantizeLinear of these types, packed 4-bit
 * TensorProtos (raw_data, int32_data, a short one) through the loader and the saver, and
 * the byte movers. */
#include <string.h>

#include "onnx/onnx_io.h"
#include "unit/node_harness.h"

typedef struct fmt {
    og_dtype t;
    const char *name;
    int mbits, bias;
    double max;
} fmt;

static const fmt fmts[] = {{OG_FLOAT8E4M3FN, "e4m3fn", 3, 7, 448},
                           {OG_FLOAT8E4M3FNUZ, "e4m3fnuz", 3, 8, 240},
                           {OG_FLOAT8E5M2, "e5m2", 2, 15, 57344},
                           {OG_FLOAT8E5M2FNUZ, "e5m2fnuz", 2, 16, 57344}};

/* The value of code c by the format's definition (NaN for its NaN codes). */
static double decode(const fmt *f, unsigned c)
{
    bool uz = f->t == OG_FLOAT8E4M3FNUZ || f->t == OG_FLOAT8E5M2FNUZ;
    unsigned e = (c & 0x7f) >> f->mbits, m = c & ((1u << f->mbits) - 1);
    unsigned emax = (1u << (7 - f->mbits)) - 1;
    if (uz && c == 0x80) return NAN;
    if (f->t == OG_FLOAT8E4M3FN && (c & 0x7f) == 0x7f) return NAN;
    if (f->t == OG_FLOAT8E5M2 && e == emax) return m ? NAN : (c & 0x80 ? -INFINITY : INFINITY);
    double v = e ? ldexp(1.0 + m / (double)(1u << f->mbits), (int)e - f->bias)
                 : ldexp(m / (double)(1u << f->mbits), 1 - f->bias);
    return c & 0x80 ? -v : v;
}

/* Cast x to `to` with saturate (-1: attribute absent); the output tensor, NULL on failure. */
static og_tensor *cast(og_tensor *x, og_dtype to, int saturate, nh_result *r)
{
    nh_node n = {.op = "Cast", .opset = 21, .attrs = {NH_INT("to", to)}, .in = {x}};
    if (saturate >= 0) n.attrs[1] = (nh_attr)NH_INT("saturate", saturate);
    og_status st = nh_run(&n, r);
    CHECKF(st == OG_OK, "Cast to %s", og_dtype_name(to));
    return st ? NULL : r->out[0];
}

static void test_codes(const fmt *f)
{
    uint8_t codes[256];
    for (int i = 0; i < 256; i++) codes[i] = (uint8_t)i;
    og_tensor *x = nh_tensor_raw(f->t, 1, (int64_t[]){256}, codes);
    const og_dtype wide[] = {OG_FLOAT, OG_DOUBLE, OG_FLOAT16};
    for (int w = 0; w < 3; w++) {
        nh_result r1, r2;
        og_tensor *y = cast(x, wide[w], -1, &r1);
        int bad = 0, bad_back = 0;
        og_tensor *b = y ? cast(y, f->t, 1, &r2) : NULL;
        for (int c = 0; y && c < 256; c++) {
            double want = decode(f, (unsigned)c), got = og_tensor_get_f64(y, c);
            bool same = isnan(want) ? isnan(got) : got == want && !signbit(got) == !signbit(want);
            if (!same && bad++ < 3)
                CHECKF(0, "%s code 0x%02x to %s: %.9g, expected %.9g", f->name, c,
                       og_dtype_name(wide[w]), got, want);
            /* back: every code but a NaN comes back itself; infinities saturate (E5M2) */
            unsigned back = b ? ((const uint8_t *)b->data)[c] : 0;
            bool ok = isnan(want)   ? isnan(decode(f, back))
                      : isinf(want) ? back == (unsigned)(c & 0x80) + (unsigned)(0x7b)
                                    : back == (unsigned)c;
            if (!ok && bad_back++ < 3)
                CHECKF(0, "%s code 0x%02x through %s came back as 0x%02x", f->name, c,
                       og_dtype_name(wide[w]), back);
        }
        CHECKF(bad == 0 && bad_back == 0, "%s: %d codes decoded wrong, %d did not round-trip",
               f->name, bad, bad_back);
        if (b) nh_release(&r2);
        if (y) nh_release(&r1);
    }
    og_tensor_free(x);
}

/* Code of v: Cast float -> float8 with saturate s. */
static unsigned to_code(const fmt *f, double v, int s)
{
    og_tensor *x = nh_tensor(OG_DOUBLE, 1, (int64_t[]){1}, &v);
    nh_result r;
    og_tensor *y = cast(x, f->t, s, &r);
    unsigned c = y ? ((const uint8_t *)y->data)[0] : 0xffff;
    if (y) nh_release(&r);
    og_tensor_free(x);
    return c;
}

static void test_rounding(const fmt *f)
{
    /* between each pair of neighbouring positive finite codes: the midpoint goes to the even
     * code, a hair above it to the upper, a hair below to the lower */
    int bad = 0;
    for (unsigned c = 0; c < 0x7f; c++) {
        double lo = decode(f, c), hi = decode(f, c + 1);
        if (!isfinite(lo) || !isfinite(hi)) continue;
        double mid = (lo + hi) / 2, eps = (hi - lo) / 64;
        unsigned even = (c & 1) ? c + 1 : c;
        if (to_code(f, mid, 1) != even || to_code(f, mid + eps, 1) != c + 1 ||
            to_code(f, mid - eps, 1) != c || to_code(f, -(mid + eps), 1) != (c + 1) + 0x80u)
            if (bad++ < 3)
                CHECKF(0, "%s: rounding between codes 0x%02x and 0x%02x", f->name, c, c + 1);
    }
    CHECKF(bad == 0, "%s: %d pairs rounded wrong", f->name, bad);

    /* out of range: saturate gives the largest value of the sign; without it E5M2 gives
     * infinity and the others NaN; an infinity is out of range alike (onnx's reference);
     * -0 keeps its sign but under FNUZ */
    bool uz = f->t == OG_FLOAT8E4M3FNUZ || f->t == OG_FLOAT8E5M2FNUZ;
    unsigned maxc = f->t == OG_FLOAT8E4M3FN ? 0x7e : f->t == OG_FLOAT8E5M2 ? 0x7b : 0x7f;
    CHECK(decode(f, maxc) == f->max);
    const double big[] = {f->max * 1.25, 1e30, INFINITY};
    for (int i = 0; i < 3; i++)
        for (int s = -1; s <= 1; s += 2) {
            double v = s * big[i];
            unsigned sat = to_code(f, v, 1), raw = to_code(f, v, 0);
            CHECKF(sat == maxc + (s < 0 ? 0x80u : 0), "%s: saturate(%g) = 0x%02x", f->name, v, sat);
            double d = decode(f, raw);
            if (f->t == OG_FLOAT8E5M2)
                CHECKF(isinf(d) && (d < 0) == (s < 0), "%s: %g unsaturated = 0x%02x", f->name, v,
                       raw);
            else
                CHECKF(isnan(d), "%s: %g unsaturated = 0x%02x", f->name, v, raw);
        }
    /* the largest value itself, and just under the tie above it, stay the largest */
    CHECK(to_code(f, f->max, 0) == maxc);
    CHECK(isnan(decode(f, to_code(f, NAN, 1))) && isnan(decode(f, to_code(f, NAN, 0))));
    CHECK(to_code(f, -0.0, 1) == (uz ? 0u : 0x80u));
    /* the smallest subnormal, half of it (a tie to zero) and a bit more */
    double tiny = decode(f, 1);
    CHECK(to_code(f, tiny, 1) == 1 && to_code(f, tiny / 2, 1) == 0 &&
          to_code(f, tiny * 0.51, 1) == 1);
}

/* 4-bit: rounded half to even, clipped; loaded, run and saved packed */
static void test_int4(void)
{
    double v[9] = {-9.5, -8.5, -2.5, -0.5, 0.5, 1.5, 6.5, 7.5, 100};
    og_tensor *x = nh_tensor(OG_FLOAT, 1, (int64_t[]){9}, v);
    double want_i4[9] = {-8, -8, -2, 0, 0, 2, 6, 7, 7}, want_u4[9] = {0, 0, 0, 0, 0, 2, 6, 8, 15};
    nh_result r, r2;
    og_tensor *y = cast(x, OG_INT4, -1, &r);
    if (y) {
        CHECK(y->dtype == OG_INT4 && nh_close("int4", y, 9, want_i4, 0, 0));
        og_tensor *back = cast(y, OG_FLOAT, -1, &r2);
        if (back) CHECK(nh_close("int4 back", back, 9, want_i4, 0, 0));
        if (back) nh_release(&r2);
        nh_release(&r);
    }
    y = cast(x, OG_UINT4, -1, &r);
    if (y) {
        CHECK(y->dtype == OG_UINT4 && nh_close("uint4", y, 9, want_u4, 0, 0));
        nh_release(&r);
    }
    og_tensor_free(x);

    /* a TensorProto of 5 int4 written out here (dims 5, data_type 22): two a byte, low nibble
     * first, the last byte's high half 0; as raw_data, and as int32_data (one byte an entry,
     * written unsigned here, sign-extended by onnx's helper) */
    const int8_t e[5] = {1, -2, 7, -8, -1};
    const uint8_t raw[] = {0x08, 0x05, 0x10, 0x16, 0x4a, 0x03, 0xe1, 0x87, 0x0f};
    const uint8_t i32[] = {0x08, 0x05, 0x10, 0x16, 0x2a, 0x05, 0xe1, 0x01, 0x87, 0x01, 0x0f};
    const uint8_t u4raw[] = {0x08, 0x03, 0x10, 0x15, 0x4a, 0x02, 0xe1, 0x0f};
    const uint8_t short_raw[] = {0x08, 0x05, 0x10, 0x16, 0x4a, 0x02, 0xe1, 0x87};
    for (int k = 0; k < 2; k++) {
        og_tensor *u = NULL;
        CHECK_OK(og_onnx_parse_tensor(k ? i32 : raw, k ? sizeof i32 : sizeof raw, NULL, &u, NULL));
        CHECK(u && u->dtype == OG_INT4 && u->numel == 5 && memcmp(u->data, e, 5) == 0);
        og_tensor_free(u);
    }
    /* the saver packs: a Constant holding those 5 int4 saved as a model carries raw_data
     * 0x4a 0x03 e1 87 0f (the loader's side is checked below) */
    og_tensor *c = nh_tensor_raw(OG_INT4, 1, (int64_t[]){5}, e);
    nh_node cn = {.op = "Constant", .opset = 21, .attrs = {NH_TENSOR("value", c)}};
    nh_result cr;
    if (!nh_load(&cn, &cr)) {
        void *buf = NULL;
        size_t len = 0;
        CHECK_OK(og_onnx_serialize_model(cr.g, NULL, &buf, &len));
        const uint8_t packed[5] = {0x4a, 0x03, 0xe1, 0x87, 0x0f};
        bool found = false;
        for (size_t i = 0; buf && i + 5 <= len; i++)
            found |= memcmp((uint8_t *)buf + i, packed, 5) == 0;
        CHECK(found);
        free(buf);
        nh_release(&cr);
    } else {
        CHECKF(0, "Constant of int4");
    }
    og_tensor_free(c);
    og_tensor *u = NULL;
    CHECK_OK(og_onnx_parse_tensor(u4raw, sizeof u4raw, NULL, &u, NULL));
    CHECK(u && u->dtype == OG_UINT4 && u->numel == 3 &&
          memcmp(u->data, (uint8_t[]){1, 14, 15}, 3) == 0);
    og_tensor_free(u);
    u = NULL;
    CHECK(og_onnx_parse_tensor(short_raw, sizeof short_raw, NULL, &u, NULL) == OG_ERR_MODEL);
    CHECK(u == NULL && strstr(og_last_error(), "needs 3 bytes") != NULL);
}

/* Q/DQ: float8 is x / scale rounded once to the nearest code (no integer rounding); int4
 * rounds half to even, adds the zero point and clips */
static void test_quant(void)
{
    double xv[6] = {0.1, -3.3, 1000, -1000, 0.7, 0};
    og_tensor *x = nh_tensor(OG_FLOAT, 1, (int64_t[]){6}, xv), *s = nh_scalar(OG_FLOAT, 0.5);
    for (int i = 0; i < 4; i++) {
        const fmt *f = &fmts[i];
        og_tensor *z = nh_tensor_raw(f->t, 0, NULL, (uint8_t[]){0});
        nh_node q = {.op = "QuantizeLinear", .opset = 21, .in = {x, s, z}};
        nh_result r, r2;
        if (nh_run(&q, &r)) {
            CHECKF(0, "QuantizeLinear to %s", f->name);
        } else {
            int bad = 0;
            for (int j = 0; j < 6; j++) {
                unsigned want = to_code(f, (double)((float)xv[j] / 0.5f), 1);
                bad += ((const uint8_t *)r.out[0]->data)[j] != want;
            }
            CHECKF(bad == 0, "QuantizeLinear to %s: %d codes differ", f->name, bad);
            nh_node dq = {.op = "DequantizeLinear", .opset = 21, .in = {r.out[0], s, z}};
            if (!nh_run(&dq, &r2)) {
                for (int j = 0; j < 6; j++)
                    CHECK(((const float *)r2.out[0]->data)[j] ==
                          (float)decode(f, ((const uint8_t *)r.out[0]->data)[j]) * 0.5f);
                nh_release(&r2);
            } else {
                CHECKF(0, "DequantizeLinear from %s", f->name);
            }
            nh_release(&r);
        }
        og_tensor_free(z);
    }
    int8_t zi = 3;
    og_tensor *z4 = nh_tensor_raw(OG_INT4, 0, NULL, &zi);
    nh_node q = {.op = "QuantizeLinear", .opset = 21, .in = {x, s, z4}};
    nh_result r;
    CHECK_OK(nh_run(&q, &r));
    double want[6] = {3, -4, 7, -8, 4, 3}; /* rint(0.2)+3, rint(-6.6)+3, clip, clip, rint(1.4)+3 */
    CHECK(nh_close("q int4", r.out[0], 6, want, 0, 0));
    nh_release(&r);
    og_tensor_free(z4);
    og_tensor_free(x);
    og_tensor_free(s);
}

/* the byte movers carry float8 and int4 codes untouched */
static void test_movers(void)
{
    const og_dtype ts[] = {OG_FLOAT8E4M3FN, OG_FLOAT8E5M2FNUZ, OG_INT4, OG_UINT4};
    uint8_t v[6] = {0x01, 0x80, 0x7f, 0x05, 0x0f, 0x03};
    for (int i = 0; i < 4; i++) {
        og_tensor *x = nh_tensor_raw(ts[i], 2, (int64_t[]){2, 3}, v);
        og_tensor *shape = nh_tensor(OG_INT64, 1, (int64_t[]){2}, (double[]){3, 2});
        nh_node nodes[3] = {{.op = "Identity", .opset = 21, .in = {x}},
                            {.op = "Reshape", .opset = 21, .in = {x, shape}},
                            {.op = "Transpose", .opset = 21, .in = {x}}};
        const uint8_t want_t[6] = {0x01, 0x05, 0x80, 0x0f, 0x7f, 0x03};
        for (int k = 0; k < 3; k++) {
            nh_result r;
            if (nh_run(&nodes[k], &r)) {
                CHECKF(0, "%s of %s", nodes[k].op, og_dtype_name(ts[i]));
                continue;
            }
            CHECKF(r.out[0]->dtype == ts[i] && memcmp(r.out[0]->data, k == 2 ? want_t : v, 6) == 0,
                   "%s of %s: values", nodes[k].op, og_dtype_name(ts[i]));
            nh_release(&r);
        }
        og_tensor_free(shape);
        og_tensor_free(x);
    }
}

/* Cast to string writes a float8 value as a number, its fraction kept (onnxruntime's
 * "1.5", "-2.75", "0.3125" for e4m3fn), not truncated to an integer. */
static void test_to_string(const fmt *f)
{
    const double v[] = {1.5, -2.5, 0.3125, 0};
    const char *want[] = {"1.5", "-2.5", "0.3125", "0"};
    uint8_t codes[4];
    for (int i = 0; i < 4; i++) codes[i] = (uint8_t)to_code(f, v[i], 1);
    og_tensor *x = nh_tensor_raw(f->t, 1, (int64_t[]){4}, codes);
    nh_result r;
    og_tensor *y = cast(x, OG_STRING, -1, &r);
    for (int i = 0; y && i < 4; i++)
        CHECKF(strcmp(og_tensor_string(y, i), want[i]) == 0, "%s %g to string: '%s', expected '%s'",
               f->name, v[i], og_tensor_string(y, i), want[i]);
    if (y) nh_release(&r);
    og_tensor_free(x);
}

int main(void)
{
    test_movers();
    for (int i = 0; i < 4; i++) {
        test_codes(&fmts[i]);
        test_rounding(&fmts[i]);
        test_to_string(&fmts[i]);
    }
    test_int4();
    test_quant();
    NH_DONE();
}
