/* test_random.c: the random ops' draws (means, variances and frequencies of 20000 draws within
 * 6 standard errors), their dtypes and shapes, and where the draws come from (the run's key,
 * the node's name and seed attribute). */
#include "unit/node_harness.h"

enum { N = 20000 };

static void moments(const og_tensor *t, double *mean, double *var)
{
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        double v = og_tensor_get_f64(t, i);
        s += v;
        s2 += v * v;
    }
    *mean = s / (double)t->numel;
    *var = s2 / (double)t->numel - *mean * *mean;
}

/* Run resolved case r in a session with `seed` twice (runs 0 and 1), then once more after
 * og_session_set_rng back to run 0 (into *again, when not NULL). */
static og_status run_twice(nh_result *r, uint64_t seed, og_tensor **out1, og_tensor **out2,
                           og_tensor **again)
{
    og_session *s = NULL;
    og_session_options o = {.threads = 1, .seed = seed};
    const nh_node *n = r->spec;
    const char *names[NH_MAX_IO];
    const og_tensor *ins[NH_MAX_IO];
    int k = 0;
    for (int i = 0; i < NH_MAX_IO; i++)
        if (n->in[i]) {
            names[k] = r->g->values[r->node->in[i]].name;
            ins[k++] = n->in[i];
        }
    og_status st = og_exec_create(r->g, NULL, og_default_allocator(), &o, &s);
    if (!st) st = og_session_run(s, names, ins, k, out1);
    if (!st) st = og_session_run(s, names, ins, k, out2);
    if (!st && again) st = og_session_set_rng(s, seed, 0);
    if (!st && again) st = og_session_run(s, names, ins, k, again);
    og_session_free(s);
    return st;
}

static void test_distributions(void)
{
    nh_result r;
    double m, v;
    nh_node u = {
        .op = "RandomUniform",
        .opset = 17,
        .attrs = {NH_INTS("shape", 100, N / 100), NH_FLOAT("low", -1), NH_FLOAT("high", 3)}};
    CHECK_OK(nh_run(&u, &r));
    moments(r.out[0], &m, &v);
    /* uniform on [-1, 3): mean 1, variance 16 / 12 */
    CHECKF(fabs(m - 1) < 6 * sqrt(16.0 / 12 / N) && fabs(v - 16.0 / 12) < 0.05, "uniform %g %g", m,
           v);
    bool inside = true;
    for (int64_t i = 0; r.out[0] && i < r.out[0]->numel; i++) {
        double x = og_tensor_get_f64(r.out[0], i);
        inside = inside && x >= -1 && x < 3;
    }
    CHECK(inside && r.out[0]->dtype == OG_FLOAT && r.out[0]->dims[0] == 100);
    nh_release(&r);

    nh_node g = {.op = "RandomNormal",
                 .opset = 17,
                 .attrs = {NH_INTS("shape", N), NH_FLOAT("mean", 2), NH_FLOAT("scale", 0.5),
                           NH_INT("dtype", OG_DOUBLE), NH_FLOAT("seed", 3)}};
    CHECK_OK(nh_run(&g, &r));
    moments(r.out[0], &m, &v);
    CHECKF(r.out[0]->dtype == OG_DOUBLE && fabs(m - 2) < 6 * 0.5 / sqrt(N) && fabs(v - 0.25) < 0.02,
           "normal %g %g", m, v);
    nh_release(&r);

    /* the Like ops: the input's shape, dtype from it (float16) or from the attribute */
    og_tensor *h = nh_tensor(OG_FLOAT16, 2, (int64_t[]){4, N / 4}, NULL),
              *i = nh_tensor(OG_INT32, 1, (int64_t[]){3}, NULL);
    nh_node ul = {.op = "RandomUniformLike", .opset = 17, .in = {h}};
    CHECK_OK(nh_run(&ul, &r));
    moments(r.out[0], &m, &v);
    CHECK(r.out[0]->dtype == OG_FLOAT16 && r.out[0]->dims[1] == N / 4 && fabs(m - 0.5) < 0.01);
    nh_release(&r);
    nh_node nl = {
        .op = "RandomNormalLike", .opset = 17, .attrs = {NH_INT("dtype", OG_FLOAT)}, .in = {i}};
    CHECK_OK(nh_run(&nl, &r));
    CHECK(r.out[0] && r.out[0]->dtype == OG_FLOAT && r.out[0]->numel == 3);
    nh_release(&r);
    nl.attrs[0] = (nh_attr){0};
    nh_expect_fail(&nl, NH_LOAD, OG_ERR_TYPE, "set dtype");
    nh_node bad = {.op = "RandomUniform",
                   .opset = 17,
                   .attrs = {NH_INTS("shape", 2), NH_INT("dtype", OG_INT32)}};
    nh_expect_fail(&bad, NH_LOAD, OG_ERR_UNSUPPORTED, "dtype");
    nh_node noshape = {.op = "RandomNormal", .opset = 17};
    nh_expect_fail(&noshape, NH_LOAD, OG_ERR_MODEL, "'shape' is required");
    nh_free_tensors((og_tensor *[]){h, i}, 2);
}

static void test_bernoulli_multinomial(void)
{
    double p[N];
    for (int i = 0; i < N; i++) p[i] = i % 4 == 0 ? 0.0 : i % 4 == 1 ? 1.0 : 0.3;
    og_tensor *pt = nh_tensor(OG_FLOAT, 1, (int64_t[]){N}, p);
    nh_node b = {.op = "Bernoulli", .opset = 15, .attrs = {NH_INT("dtype", OG_BOOL)}, .in = {pt}};
    nh_result r;
    CHECK_OK(nh_run(&b, &r));
    int exact = 1, ones = 0, n3 = 0;
    for (int i = 0; r.out[0] && i < N; i++) {
        int v = ((const uint8_t *)r.out[0]->data)[i];
        if (i % 4 == 0) exact &= v == 0;
        if (i % 4 == 1) exact &= v == 1;
        if (i % 4 >= 2) ones += v, n3++;
    }
    double f = (double)ones / n3;
    CHECKF(exact && fabs(f - 0.3) < 6 * sqrt(0.21 / n3), "bernoulli: exact %d, frequency %g", exact,
           f);
    nh_release(&r);
    og_tensor *bad = nh_tensor(OG_DOUBLE, 1, (int64_t[]){2}, (double[]){0.5, 1.5});
    nh_node bb = {.op = "Bernoulli", .opset = 15, .in = {bad}};
    nh_expect_fail(&bb, NH_RUN, OG_ERR_RUNTIME, "outside [0, 1]");

    /* Multinomial: 2 rows, classes drawn with softmax(logits) */
    double lg[6] = {0, log(2.0), log(5.0), -INFINITY, 0, 0};
    og_tensor *l = nh_tensor(OG_FLOAT, 2, (int64_t[]){2, 3}, lg);
    nh_node mn = {
        .op = "Multinomial",
        .opset = 7,
        .attrs = {NH_INT("sample_size", N), NH_INT("dtype", OG_INT64), NH_FLOAT("seed", 1)},
        .in = {l}};
    CHECK_OK(nh_run(&mn, &r));
    int cnt[2][3] = {{0}};
    for (int row = 0; r.out[0] && row < 2; row++)
        for (int s = 0; s < N; s++) cnt[row][((const int64_t *)r.out[0]->data)[row * N + s]]++;
    double want[3] = {1.0 / 8, 2.0 / 8, 5.0 / 8};
    for (int c = 0; c < 3; c++)
        CHECKF(fabs((double)cnt[0][c] / N - want[c]) < 6 * sqrt(want[c] * (1 - want[c]) / N),
               "multinomial class %d: %d of %d", c, cnt[0][c], N);
    CHECK(cnt[1][0] == 0 && abs(cnt[1][1] - cnt[1][2]) < 6 * (int)sqrt(N / 4.0));
    nh_release(&r);
    nh_free_tensors((og_tensor *[]){pt, bad, l}, 3);
}

/* The draws follow the run's key (og_session_options.seed, run by run) and the node's stream
 * (its name and seed attribute): the same seed repeats them in a new session or after
 * og_session_set_rng, every run draws anew, another seed, seed attribute or node name draws
 * others. */
static void test_seeds(void)
{
    nh_node seeded = {
        .op = "RandomUniform", .opset = 17, .attrs = {NH_INTS("shape", 8), NH_FLOAT("seed", 7)}};
    nh_node other = {
        .op = "RandomUniform", .opset = 17, .attrs = {NH_INTS("shape", 8), NH_FLOAT("seed", 8)}};
    nh_node renamed = {.op = "RandomUniform",
                       .opset = 17,
                       .name = "other",
                       .attrs = {NH_INTS("shape", 8), NH_FLOAT("seed", 7)}};
    og_tensor *a1 = NULL, *a2 = NULL, *a0 = NULL, *b1 = NULL, *b2 = NULL;
    nh_result r;
    CHECK_OK(nh_load(&seeded, &r));
    CHECK_OK(run_twice(&r, 5, &a1, &a2, &a0));
    CHECK(!og_value_equal(a1, a2) && og_value_equal(a1, a0)); /* anew each run; set_rng repeats */
    CHECK_OK(run_twice(&r, 5, &b1, &b2, NULL));
    CHECK(og_value_equal(a1, b1) && og_value_equal(a2, b2)); /* a new session, the same seed */
    nh_free_tensors((og_tensor *[]){b1, b2}, 2);
    CHECK_OK(run_twice(&r, 6, &b1, &b2, NULL));
    CHECK(!og_value_equal(a1, b1)); /* another session seed */
    nh_release(&r);
    nh_free_tensors((og_tensor *[]){b1, b2}, 2);
    nh_node *alt[] = {&other, &renamed};
    for (int i = 0; i < 2; i++) { /* another seed attribute, another node name */
        CHECK_OK(nh_load(alt[i], &r));
        CHECK_OK(run_twice(&r, 5, &b1, &b2, NULL));
        CHECK(!og_value_equal(a1, b1));
        nh_release(&r);
        nh_free_tensors((og_tensor *[]){b1, b2}, 2);
    }
    nh_free_tensors((og_tensor *[]){a1, a2, a0}, 3);
}

int main(void)
{
    test_distributions();
    test_bernoulli_multinomial();
    test_seeds();
    NH_DONE();
}
