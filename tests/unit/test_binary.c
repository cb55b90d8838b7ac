/* test_binary.c: the broadcasting elementwise ops, one node at a time (node_harness.h:
 * static inference, a session's run), against naive references. */
#include "unit/node_harness.h"

/* Run `op` (opset) on ins[0..n_in-1] with `threads` threads; *out gets the result (NULL on
 * failure).  fmod < 0: no fmod attribute. */
static og_status run_node(const char *op, int opset, int fmod, og_tensor *const *ins, int n_in,
                          og_tensor **out, int threads)
{
    nh_node n = {.op = op, .opset = opset, .n_in = n_in, .threads = threads};
    for (int i = 0; i < n_in; i++) n.in[i] = ins[i];
    if (fmod >= 0) n.attrs[0] = (nh_attr)NH_INT("fmod", fmod);
    nh_result r;
    og_status st = nh_run(&n, &r);
    *out = nh_take(&r, 0);
    nh_release(&r);
    return st;
}

static og_tensor *make(og_dtype t, int rank, const int64_t *dims, const void *data)
{
    og_tensor *x = NULL;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    if (og_tensor_from_data(t, rank, dims, data, (size_t)n * og_dtype_size(t), NULL, &x)) abort();
    return x;
}

/* Offset into an input of shape (r, d) for output flat index i of shape (orank, od). */
static int64_t bidx(int orank, const int64_t *od, int r, const int64_t *d, int64_t i)
{
    int64_t off = 0, stride = 1;
    for (int k = orank - 1; k >= 0; k--) {
        int64_t c = i % od[k];
        i /= od[k];
        int j = k - (orank - r);
        if (j >= 0) {
            if (d[j] != 1) off += c * stride;
            stride *= d[j];
        }
    }
    return off;
}

static float rnd(void) { return (float)(rand() % 2001 - 1000) / 100.0f; }

/* Float ops over many broadcast patterns, single- and multi-threaded. */
static void test_broadcast_patterns(void)
{
    static const struct {
        int ra, rb;
        int64_t a[5], b[5];
    } cases[] = {
        {3, 3, {3, 4, 5}, {3, 4, 5}},
        {3, 1, {3, 4, 5}, {5}},
        {2, 0, {6, 7}, {0}},
        {0, 2, {0}, {6, 7}},
        {4, 4, {2, 3, 4, 5}, {1, 3, 1, 1}},
        {4, 4, {1, 4, 1, 6}, {3, 1, 5, 6}},
        {2, 2, {2, 3}, {2, 1}},
        {3, 2, {4, 1, 3}, {5, 1}},
        {1, 1, {1}, {1}},
        {5, 3, {2, 1, 3, 1, 7}, {3, 1, 7}},
        {3, 3, {64, 33, 40}, {64, 1, 40}},
        {2, 1, {300, 257}, {257}},
        {4, 4, {8, 16, 30, 31}, {1, 16, 1, 1}},
        {3, 3, {0, 4, 5}, {1, 4, 5}},
        {3, 3, {5, 7, 1001}, {5, 1, 1001}},
        {3, 2, {9, 5, 997}, {5, 1}},
        {3, 3, {3000, 3, 2}, {3000, 1, 2}},
    };
    static const char *ops[] = {"Add", "Sub",     "Mul", "Div",  "Max",
                                "Min", "Greater", "Pow", "PRelu"};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int64_t na = 1, nb = 1;
        for (int i = 0; i < cases[ci].ra; i++) na *= cases[ci].a[i];
        for (int i = 0; i < cases[ci].rb; i++) nb *= cases[ci].b[i];
        float *da = malloc((size_t)(na ? na : 1) * sizeof *da);
        float *db = malloc((size_t)(nb ? nb : 1) * sizeof *db);
        for (int64_t i = 0; i < na; i++) da[i] = rnd();
        for (int64_t i = 0; i < nb; i++) db[i] = rnd() + (rand() % 2 ? 20.0f : -20.0f);
        og_tensor *ins[2] = {make(OG_FLOAT, cases[ci].ra, cases[ci].a, da),
                             make(OG_FLOAT, cases[ci].rb, cases[ci].b, db)};
        for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
            for (int threads = 1; threads <= 4; threads += 3) {
                og_tensor *o = NULL;
                og_status st = run_node(ops[oi], 17, -1, ins, 2, &o, threads);
                if (oi == 8 && cases[ci].rb > cases[ci].ra) {
                    CHECK(st == OG_ERR_SHAPE); /* slope must broadcast to X */
                    continue;
                }
                if (oi == 8 && st == OG_ERR_SHAPE) continue; /* checked below for one case */
                CHECK(st == OG_OK);
                if (st) continue;
                int bad = 0;
                for (int64_t i = 0; i < o->numel && !bad; i++) {
                    double x = da[bidx(o->rank, o->dims, cases[ci].ra, cases[ci].a, i)];
                    double y = db[bidx(o->rank, o->dims, cases[ci].rb, cases[ci].b, i)];
                    double want, got;
                    switch (oi) {
                    case 0: want = x + y; break;
                    case 1: want = x - y; break;
                    case 2: want = x * y; break;
                    case 3: want = x / y; break;
                    case 4: want = x > y ? x : y; break;
                    case 5: want = x < y ? x : y; break;
                    case 6: want = x > y; break;
                    case 8: want = x < 0 ? x * y : x; break;
                    case 7: want = pow(x, y); break;
                    default: want = 0; break;
                    }
                    if (oi == 6)
                        got = ((const uint8_t *)o->data)[i];
                    else
                        got = ((const float *)o->data)[i];
                    if (oi == 7 && (x < 0 || fabs(want) > 1e38)) continue; /* NaN, overflow */
                    if (fabs(got - want) > 1e-5 * (1 + fabs(want)) &&
                        !(isinf(got) && isinf(want))) {
                        bad = 1;
                        fprintf(stderr, "  x=%g y=%g got=%g want=%g\n", x, y, got, want);
                    }
                }
                if (bad)
                    fprintf(stderr, "case %zu op %s threads %d: mismatch\n", ci, ops[oi], threads);
                CHECK(!bad);
                og_tensor_free(o);
            }
        }
        og_tensor_free(ins[0]);
        og_tensor_free(ins[1]);
        free(da);
        free(db);
    }
}

static void test_int_div_mod(void)
{
    int64_t d6[] = {6};
    int32_t a[] = {7, -7, 7, -7, INT32_MIN, 5}, b[] = {3, 3, -3, -3, -1, 5};
    og_tensor *ins[2] = {make(OG_INT32, 1, d6, a), make(OG_INT32, 1, d6, b)};
    og_tensor *o = NULL;
    CHECK(run_node("Div", 14, -1, ins, 2, &o, 1) == OG_OK);
    if (o) {
        const int32_t *v = o->data;
        CHECK(v[0] == 2 && v[1] == -2 && v[2] == -2 && v[3] == 2 && v[4] == INT32_MIN && v[5] == 1);
        og_tensor_free(o);
    }
    CHECK(run_node("Mod", 13, 0, ins, 2, &o, 1) == OG_OK); /* Python: divisor's sign */
    if (o) {
        const int32_t *v = o->data;
        CHECK(v[0] == 1 && v[1] == 2 && v[2] == -2 && v[3] == -1 && v[4] == 0 && v[5] == 0);
        og_tensor_free(o);
    }
    CHECK(run_node("Mod", 13, 1, ins, 2, &o, 1) == OG_OK); /* C: dividend's sign */
    if (o) {
        const int32_t *v = o->data;
        CHECK(v[0] == 1 && v[1] == -1 && v[2] == 1 && v[3] == -1 && v[4] == 0 && v[5] == 0);
        og_tensor_free(o);
    }
    og_tensor_free(ins[1]);
    int32_t z[] = {1, 2, 0, 4, 5, 6};
    ins[1] = make(OG_INT32, 1, d6, z);
    CHECK(run_node("Div", 14, -1, ins, 2, &o, 1) == OG_ERR_RUNTIME && !o);
    CHECK(strstr(og_last_error(), "n0") != NULL);
    CHECK(run_node("Mod", 13, 0, ins, 2, &o, 1) == OG_ERR_RUNTIME && !o);
    og_tensor_free(ins[0]);
    og_tensor_free(ins[1]);

    double fa[] = {5.5, -5.5, 5.5, -5.5}, fb[] = {2, 2, -2, -2};
    int64_t d4[] = {4};
    ins[0] = make(OG_DOUBLE, 1, d4, fa);
    ins[1] = make(OG_DOUBLE, 1, d4, fb);
    CHECK(run_node("Mod", 13, 1, ins, 2, &o, 1) == OG_OK);
    if (o) {
        const double *v = o->data;
        CHECK(v[0] == 1.5 && v[1] == -1.5 && v[2] == 1.5 && v[3] == -1.5);
        og_tensor_free(o);
    }
    CHECK(run_node("Mod", 13, 0, ins, 2, &o, 1) == OG_OK);
    if (o) {
        const double *v = o->data;
        CHECK(v[0] == 1.5 && v[1] == 0.5 && v[2] == -0.5 && v[3] == -1.5);
        og_tensor_free(o);
    }
    og_tensor_free(ins[0]);
    og_tensor_free(ins[1]);
}

static void test_pow(void)
{
    int64_t d3[] = {3};
    int64_t ia[] = {2, -3, 5}, ib[] = {10, 3, 0};
    float fb[] = {2.0f, 0.5f, 3.0f}, fa[] = {4.0f, 9.0f, 2.0f};
    og_tensor *ins[2] = {make(OG_INT64, 1, d3, ia), make(OG_INT64, 1, d3, ib)}, *o = NULL;
    CHECK(run_node("Pow", 15, -1, ins, 2, &o, 1) == OG_OK);
    if (o) {
        const int64_t *v = o->data;
        CHECK(o->dtype == OG_INT64 && v[0] == 1024 && v[1] == -27 && v[2] == 1);
        og_tensor_free(o);
    }
    og_tensor_free(ins[1]);
    ins[1] = make(OG_FLOAT, 1, d3, fb); /* int base, float exponent */
    CHECK(run_node("Pow", 15, -1, ins, 2, &o, 1) == OG_OK);
    if (o) {
        const int64_t *v = o->data;
        CHECK(o->dtype == OG_INT64 && v[0] == 4 && v[2] == 125);
        og_tensor_free(o);
    }
    og_tensor_free(ins[0]);
    og_tensor_free(ins[1]);
    /* float base, one exponent value of each fast path and of another type */
    const double exps[] = {2, 3, 0.5, 1, -1.5};
    for (int e = 0; e < 5; e++) {
        int64_t ev = (int64_t)exps[e];
        ins[0] = make(OG_FLOAT, 1, d3, fa);
        ins[1] = exps[e] == (double)ev ? make(OG_INT64, 0, NULL, &ev)
                                       : make(OG_DOUBLE, 0, NULL, &exps[e]);
        CHECK(run_node("Pow", 15, -1, ins, 2, &o, 1) == OG_OK);
        if (o) {
            const float *v = o->data;
            for (int i = 0; i < 3; i++)
                CHECK(fabs(v[i] - pow(fa[i], exps[e])) < 1e-5 * (1 + pow(fa[i], exps[e])));
            og_tensor_free(o);
        }
        og_tensor_free(ins[0]);
        og_tensor_free(ins[1]);
    }
}

/* Pow-12+ with an unsigned or narrow integer exponent (T1): a float base against numpy's
 * np.power(float32, uint64) (float64 promotion, rounded to float32), uint64 exponents past
 * INT64_MAX included; an integer base by squaring, exact, the parity of a huge exponent kept;
 * a bool exponent refused by type inference. */
static void test_pow_unsigned_exponent(void)
{
    nh_result r;
    og_tensor *x = nh_tensor(OG_FLOAT, 1, (int64_t[]){6}, (double[]){1.5, -2, 0.5, 1, 3, -1}),
              *e = nh_tensor_raw(OG_UINT64, 1, (int64_t[]){6},
                                 (uint64_t[]){3, 5, 40, ((uint64_t)1 << 63) + 5, 0, UINT64_MAX});
    nh_node n = {.op = "Pow", .opset = 15, .in = {x, e}};
    CHECK_OK(nh_run(&n, &r));
    CHECK(r.out[0] && r.out[0]->dtype == OG_FLOAT);
    /* numpy: [3.375, -32.0, 9.094947017729282e-13, 1.0, 1.0, 1.0] */
    nh_expect_close("pow float32^uint64", r.out[0], 6,
                    (double[]){3.375, -32, 9.094947017729282e-13, 1, 1, 1}, 0, 0);
    nh_release(&r);
    og_tensor *e32 = nh_tensor(OG_UINT32, 1, (int64_t[]){1}, (double[]){3});
    n.in[1] = e32; /* one exponent broadcast: 1.5^3, (-2)^3, ... */
    CHECK_OK(nh_run(&n, &r));
    nh_expect_close("pow float32^uint32", r.out[0], 6, (double[]){3.375, -8, 0.125, 1, 27, -1}, 0,
                    0);
    nh_release(&r);
    og_tensor *b = nh_tensor(OG_INT64, 1, (int64_t[]){4}, (double[]){-1, 3, 2, -2}),
              *eb = nh_tensor_raw(OG_UINT64, 1, (int64_t[]){4},
                                  (uint64_t[]){UINT64_MAX, 5, 62, ((uint64_t)1 << 63) + 2});
    nh_node ni = {.op = "Pow", .opset = 15, .in = {b, eb}};
    CHECK_OK(nh_run(&ni, &r)); /* (-2)^(2^63 + 2) wraps to 0 modulo 2^64 */
    nh_expect_close("pow int64^uint64", r.out[0], 4, (double[]){-1, 243, 4611686018427387904.0, 0},
                    0, 0);
    nh_release(&r);
    og_tensor *eb8 = nh_tensor(OG_INT8, 1, (int64_t[]){4}, (double[]){3, -1, 4, 3});
    ni.in[1] = eb8; /* 3^-1 truncates to 0 */
    CHECK_OK(nh_run(&ni, &r));
    nh_expect_close("pow int64^int8", r.out[0], 4, (double[]){-1, 0, 16, -8}, 0, 0);
    nh_release(&r);
    og_tensor *bl = nh_tensor(OG_BOOL, 1, (int64_t[]){1}, (double[]){1});
    n.in[1] = bl;
    nh_expect_fail(&n, NH_LOAD, OG_ERR_UNSUPPORTED, "input 1 has element type bool");
    nh_free_tensors((og_tensor *[]){x, e, e32, b, eb, eb8, bl}, 7);
}

static void test_variadic_where_logic(void)
{
    int64_t d3[] = {3}, d23[] = {2, 3}, d21[] = {2, 1}, d1[] = {1};
    float a[] = {1, 5, 3}, b[] = {4, 2, 6, -1, 0, 10}, c[] = {2, 7}, s[] = {3};
    og_tensor *ins[4] = {make(OG_FLOAT, 1, d3, a), make(OG_FLOAT, 2, d23, b),
                         make(OG_FLOAT, 2, d21, c), make(OG_FLOAT, 1, d1, s)};
    og_tensor *o = NULL;
    CHECK(run_node("Sum", 13, -1, ins, 4, &o, 1) == OG_OK);
    if (o) {
        const float *v = o->data;
        CHECK(o->rank == 2 && o->dims[0] == 2 && o->dims[1] == 3);
        CHECK(v[0] == 10 && v[1] == 12 && v[2] == 14 && v[3] == 10 && v[4] == 15 && v[5] == 23);
        og_tensor_free(o);
    }
    CHECK(run_node("Max", 13, -1, ins, 3, &o, 1) == OG_OK);
    if (o) {
        const float *v = o->data;
        CHECK(v[0] == 4 && v[1] == 5 && v[2] == 6 && v[3] == 7 && v[4] == 7 && v[5] == 10);
        og_tensor_free(o);
    }
    CHECK(run_node("Mean", 13, -1, ins, 2, &o, 1) == OG_OK);
    if (o) {
        const float *v = o->data;
        CHECK(v[0] == 2.5f && v[1] == 3.5f && v[5] == 6.5f);
        og_tensor_free(o);
    }
    CHECK(run_node("Min", 13, -1, ins, 1, &o, 1) == OG_OK);
    if (o) {
        CHECK(memcmp(o->data, a, sizeof a) == 0);
        og_tensor_free(o);
    }
    /* bad broadcast names the shapes */
    og_tensor *bad[2] = {ins[0], make(OG_FLOAT, 1, d21, c)};
    bad[1]->dims[0] = 2;
    CHECK(run_node("Add", 14, -1, bad, 2, &o, 1) == OG_ERR_SHAPE && !o);
    og_tensor_free(bad[1]);

    uint8_t cond[] = {1, 0};
    int64_t x[] = {1, 2, 3}, yv[] = {-1};
    og_tensor *w[3] = {make(OG_BOOL, 2, d21, cond), make(OG_INT64, 1, d3, x),
                       make(OG_INT64, 0, NULL, yv)};
    CHECK(run_node("Where", 16, -1, w, 3, &o, 1) == OG_OK);
    if (o) {
        const int64_t *v = o->data;
        CHECK(o->rank == 2 && v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == -1 && v[5] == -1);
        og_tensor_free(o);
    }
    CHECK(run_node("Xor", 7, -1, w, 2, &o, 1) != OG_OK && !o); /* int64 is not bool */
    og_tensor_free(w[1]);
    uint8_t bx[] = {1, 1, 0};
    w[1] = make(OG_BOOL, 1, d3, bx);
    CHECK(run_node("Xor", 7, -1, w, 2, &o, 1) == OG_OK);
    if (o) {
        const uint8_t *v = o->data;
        CHECK(v[0] == 0 && v[1] == 0 && v[2] == 1 && v[3] == 1 && v[4] == 1 && v[5] == 0);
        og_tensor_free(o);
    }
    for (int i = 0; i < 3; i++) og_tensor_free(w[i]);

    /* PRelu: slope must broadcast to X */
    og_tensor *p[2] = {ins[1], ins[0]};
    CHECK(run_node("PRelu", 16, -1, p, 2, &o, 1) == OG_OK);
    if (o) {
        const float *v = o->data;
        CHECK(v[3] == -1 && v[0] == 4);
        og_tensor_free(o);
    }
    p[0] = ins[0];
    p[1] = ins[1];
    CHECK(run_node("PRelu", 16, -1, p, 2, &o, 1) == OG_ERR_SHAPE && !o);
    for (int i = 0; i < 4; i++) og_tensor_free(ins[i]);
}

/* Load-time inference with unknown ranks, dtypes and symbolic dims never fails. */
static void test_static_unknowns(void)
{
    static const char *ops[] = {"Add", "Pow", "Equal", "And", "Sum", "Where", "PRelu", "Mod"};
    static const int n_ins[] = {2, 2, 2, 2, 3, 3, 2, 2};
    og_tensor *x = make(OG_FLOAT, 2, (int64_t[]){1, 3}, (float[]){0, 0, 0});
    for (int oi = 0; oi < 8; oi++) {
        /* x1 is [N, 3] of no known dtype; the others are unknown */
        nh_node n = {.op = ops[oi],
                     .opset = 21,
                     .in = {x, x, x},
                     .n_in = n_ins[oi],
                     .decl = {"?", "?:N,3", "?"}};
        nh_result r;
        CHECK(nh_load(&n, &r) == OG_OK);
        const og_value *y = nh_static_out(&r, 0);
        CHECK(y && y->rank == -1); /* x0's rank is unknown */
        CHECK(y && y->dtype == (oi == 2 || oi == 3 ? OG_BOOL : OG_UNDEFINED));
        nh_release(&r);
    }
    og_tensor_free(x);
}

/* ---- float16 Max, Min, Mod (issue 12) ---- */

/* Run n and compare output 0 with want (count values); release everything. */
static void b12_case(const nh_node *n, const char *what, int64_t count, const double *want,
                     double tol, og_tensor **in, int n_in)
{
    nh_result r;
    CHECK_OK(nh_run(n, &r));
    if (r.status == OG_OK) nh_expect(what, r.out[0], count, want, tol);
    nh_release(&r);
    nh_free_tensors(in, n_in);
}

static void test_half_max_min_mod(void)
{
    og_tensor *in[] = {nh_tensor(OG_FLOAT16, 1, (int64_t[]){2}, (double[]){1, 3}),
                       nh_tensor(OG_FLOAT16, 1, (int64_t[]){2}, (double[]){2, -1})};
    nh_node mx = {.op = "Max", .opset = 13, .in = {in[0], in[1]}};
    nh_result r;
    CHECK_OK(nh_run(&mx, &r));
    nh_expect("max float16", r.out[0], 2, (double[]){2, 3}, 0);
    nh_release(&r);
    nh_node mn = {.op = "Min", .opset = 13, .in = {in[0], in[1]}};
    b12_case(&mn, "min float16", 2, (double[]){1, -1}, 0, in, 2);
    og_tensor *m[] = {nh_tensor(OG_FLOAT16, 1, (int64_t[]){2}, (double[]){5.5, -5.5}),
                      nh_tensor(OG_FLOAT16, 1, (int64_t[]){1}, (double[]){2})};
    nh_node mod = {.op = "Mod", .opset = 13, .attrs = {NH_INT("fmod", 1)}, .in = {m[0], m[1]}};
    b12_case(&mod, "fmod float16", 2, (double[]){1.5, -1.5}, 0, m, 2);
}

/* Every integer width: wrapping arithmetic, Python and C remainders, division by zero refused,
 * comparisons, Max/Min, Where moving 2-byte elements; Equal of strings (opset 19). */
static void test_narrow_ints(void)
{
    struct {
        og_dtype t;
        double lo; /* the type's minimum */
    } ts[] = {{OG_INT8, -128}, {OG_INT16, -32768}, {OG_UINT8, 0},
              {OG_UINT16, 0},  {OG_UINT32, 0},     {OG_UINT64, 0}};
    nh_result r;
    for (int i = 0; i < 6; i++) {
        og_dtype t = ts[i].t;
        bool sgn = ts[i].lo < 0;
        double hi = t == OG_INT8     ? 127
                    : t == OG_INT16  ? 32767
                    : t == OG_UINT8  ? 255
                    : t == OG_UINT16 ? 65535
                    : t == OG_UINT32 ? 4294967295.0
                                     : 9223372036854775808.0; /* uint64: 2^63, no wrap */
        og_tensor *a = nh_tensor(t, 1, (int64_t[]){4}, (double[]){sgn ? -7 : 7, 5, 0, hi}),
                  *b = nh_tensor(t, 1, (int64_t[]){4}, (double[]){3, sgn ? -3 : 3, 2, 1}),
                  *z = nh_tensor(t, 1, (int64_t[]){4}, (double[]){1, 1, 0, 1});
        nh_node add = {.op = "Add", .opset = 14, .in = {a, b}};
        CHECK_OK(nh_run(&add, &r)); /* hi + 1 wraps to the minimum */
        CHECKF(
            nh_close("add", r.out[0], 4,
                     (double[]){sgn ? -4 : 10, sgn ? 2 : 8, 2, t == OG_UINT64 ? hi + 1 : ts[i].lo},
                     0, 0),
            "add %s", og_dtype_name(t));
        nh_release(&r);
        nh_node mod = {.op = "Mod", .opset = 13, .in = {a, b}};
        CHECK_OK(nh_run(&mod, &r)); /* Python's: the divisor's sign */
        CHECKF(nh_close("mod", r.out[0], 4, (double[]){sgn ? 2 : 1, sgn ? -1 : 2, 0, 0}, 0, 0),
               "mod %s", og_dtype_name(t));
        nh_release(&r);
        nh_node div = {.op = "Div", .opset = 14, .in = {a, b}};
        CHECK_OK(nh_run(&div, &r)); /* truncated toward zero */
        CHECKF(nh_close("div", r.out[0], 4, (double[]){sgn ? -2 : 2, sgn ? -1 : 1, 0, hi}, 0, 0),
               "div %s", og_dtype_name(t));
        nh_release(&r);
        div.in[1] = z;
        nh_expect_fail(&div, NH_RUN, OG_ERR_RUNTIME, "division by zero");
        nh_node mx = {.op = "Max", .opset = 13, .in = {a, b}},
                lt = {.op = "Less", .opset = 13, .in = {a, b}};
        CHECK_OK(nh_run(&mx, &r));
        CHECKF(nh_close("max", r.out[0], 4, (double[]){sgn ? 3 : 7, 5, 2, hi}, 0, 0), "max %s",
               og_dtype_name(t));
        nh_release(&r);
        CHECK_OK(nh_run(&lt, &r));
        CHECKF(nh_close("less", r.out[0], 4, (double[]){sgn ? 1 : 0, 0, 1, 0}, 0, 0), "less %s",
               og_dtype_name(t));
        nh_release(&r);
        nh_free_tensors((og_tensor *[]){a, b, z}, 3);
    }
    og_tensor *c = nh_tensor(OG_BOOL, 1, (int64_t[]){3}, (double[]){1, 0, 1}),
              *x = nh_tensor(OG_FLOAT16, 1, (int64_t[]){3}, (double[]){1.5, 2.5, 3.5}),
              *y = nh_tensor(OG_FLOAT16, 1, (int64_t[]){1}, (double[]){-1});
    nh_node w = {.op = "Where", .opset = 16, .in = {c, x, y}};
    CHECK_OK(nh_run(&w, &r));
    CHECK(nh_close("where float16", r.out[0], 3, (double[]){1.5, -1, 3.5}, 0, 0));
    nh_release(&r);
    const char *sa[] = {"a", "bc", ""}, *sb[] = {"bc"};
    og_tensor *s1 = NULL, *s2 = NULL;
    og_tensor_from_strings(1, (int64_t[]){3}, sa, NULL, &s1);
    og_tensor_from_strings(1, (int64_t[]){1}, sb, NULL, &s2);
    nh_node eq = {.op = "Equal", .opset = 19, .in = {s1, s2}};
    CHECK_OK(nh_run(&eq, &r));
    CHECK(nh_close("equal strings", r.out[0], 3, (double[]){0, 1, 0}, 0, 0));
    nh_release(&r);
    eq.opset = 13;
    nh_expect_fail(&eq, NH_LOAD, OG_ERR_UNSUPPORTED, "string");
    nh_free_tensors((og_tensor *[]){c, x, y, s1, s2}, 5);
}

/* float16 and bfloat16 in the arithmetic ops, the comparisons and Sum: computed through
 * float32 copies and rounded once, so a result is the exact one rounded to the type (within
 * half a step: 2^-11 relative for float16, 2^-8 for bfloat16); bfloat16 from opset 13
 * (LessOrEqual from 16), refused before. */
static void test_half_arith(void)
{
    nh_result r;
    for (int d = 0; d < 2; d++) {
        og_dtype t = d ? OG_BFLOAT16 : OG_FLOAT16;
        double half_step = d ? 1.0 / 256 : 1.0 / 2048; /* relative, 7 or 10 stored bits */
        og_tensor *a = nh_tensor(t, 2, (int64_t[]){2, 2}, (double[]){1.5, -2, 3, 0.25}),
                  *b = nh_tensor(t, 1, (int64_t[]){2}, (double[]){3, -2});
        struct {
            const char *op;
            double want[4];
        } cases[] = {
            {"Add", {4.5, -4, 6, -1.75}}, {"Sub", {-1.5, 0, 0, 2.25}},
            {"Mul", {4.5, 4, 9, -0.5}},   {"Div", {0.5, 1, 1, -0.125}},
            {"Less", {1, 0, 0, 0}},       {"LessOrEqual", {1, 1, 1, 0}},
            {"Greater", {0, 0, 0, 1}},    {"Equal", {0, 1, 1, 0}},
            {"Sum", {4.5, -4, 6, -1.75}},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            nh_node n = {.op = cases[i].op, .opset = 16, .in = {a, b}};
            CHECK_OK(nh_run(&n, &r));
            bool cmp = r.out[0] && r.out[0]->dtype == OG_BOOL;
            CHECKF(r.out[0] && (cmp || r.out[0]->dtype == t), "%s %s dtype", cases[i].op,
                   og_dtype_name(t));
            CHECKF(nh_close(cases[i].op, r.out[0], 4, cases[i].want, 0, 0), "%s %s", cases[i].op,
                   og_dtype_name(t));
            nh_release(&r);
        }
        /* 1/3 and 2/3: one rounding of the float32 quotient */
        og_tensor *one = nh_tensor(t, 1, (int64_t[]){2}, (double[]){1, 2}),
                  *three = nh_tensor(t, 1, (int64_t[]){1}, (double[]){3});
        nh_node div = {.op = "Div", .opset = 14, .in = {one, three}};
        CHECK_OK(nh_run(&div, &r));
        CHECKF(nh_close("div thirds", r.out[0], 2, (double[]){1.0 / 3, 2.0 / 3}, 0, half_step),
               "div thirds %s", og_dtype_name(t));
        nh_release(&r);
        /* mismatched types are refused, not widened together */
        nh_node mixed = {.op = "Add",
                         .opset = 14,
                         .in = {a, nh_tensor(OG_FLOAT, 1, (int64_t[]){1}, (double[]){1})}};
        nh_expect_fail(&mixed, NH_LOAD, OG_ERR_TYPE, NULL);
        og_tensor_free((og_tensor *)mixed.in[1]);
        nh_free_tensors((og_tensor *[]){one, three}, 2);
        if (d) { /* bfloat16: from Add-13 and LessOrEqual-16 only */
            nh_node add12 = {.op = "Add", .opset = 12, .in = {a, b}},
                    le15 = {.op = "LessOrEqual", .opset = 15, .in = {a, b}};
            nh_expect_fail(&add12, NH_LOAD, OG_ERR_UNSUPPORTED, "bfloat16");
            nh_expect_fail(&le15, NH_LOAD, OG_ERR_UNSUPPORTED, "bfloat16");
        } else { /* float16 Equal from Equal-11 only */
            nh_node eq7 = {.op = "Equal", .opset = 10, .in = {a, b}};
            nh_expect_fail(&eq7, NH_LOAD, OG_ERR_UNSUPPORTED, "float16");
        }
        nh_free_tensors((og_tensor *[]){a, b}, 2);
    }
}

int main(void)
{
    srand(1);
    test_narrow_ints();
    test_broadcast_patterns();
    test_int_div_mod();
    test_pow();
    test_pow_unsigned_exponent();
    test_variadic_where_logic();
    test_static_unknowns();
    test_half_max_min_mod();
    test_half_arith();
    NH_DONE();
}
