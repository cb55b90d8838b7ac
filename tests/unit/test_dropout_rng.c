/* Dropout in training mode draws a new mask at every run, reproducibly from a seed: sessions
 * (og_session_options.seed, og_session_get_rng / og_session_set_rng), gradient objects (the
 * gradient uses the mask of the same run), and trainers (each step a new mask; a checkpoint
 * keeps the generator, so a resumed run ends with the same weights bit for bit).
 * tests/data/dropout_train.onnx: y = Dropout(x W, ratio 0.5, training_mode true), x [N, 16],
 * W [16, 4]. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "test.h"

#define MODEL "tests/data/dropout_train.onnx"

static og_tensor *input(int64_t n, float offset)
{
    int64_t dims[2] = {n, 16};
    og_tensor *t = NULL;
    if (og_tensor_create(OG_FLOAT, 2, dims, NULL, &t)) return NULL;
    float *d = og_tensor_data(t);
    for (int64_t i = 0; i < n * 16; i++) d[i] = 0.1f + (float)((i * 37) % 23) / 23.0f + offset;
    return t;
}

static bool same(const og_tensor *a, const og_tensor *b)
{
    return og_tensor_nbytes(a) == og_tensor_nbytes(b) &&
           memcmp(og_tensor_cdata(a), og_tensor_cdata(b), og_tensor_nbytes(a)) == 0;
}

/* the zero pattern of a dropout output: its mask */
static int64_t dropped(const og_tensor *y)
{
    const float *d = og_tensor_cdata(y);
    int64_t n = 0;
    for (int64_t i = 0; i < og_tensor_numel(y); i++) n += d[i] == 0.0f;
    return n;
}

int main(void)
{
    og_model *m = NULL;
    CHECK_OK(og_model_load_file(MODEL, NULL, &m));
    og_tensor *x = input(64, 0);
    if (!m || !x) TEST_DONE();
    const char *xn[] = {"x"};
    const og_tensor *xs[] = {x};

    /* sessions: each run a new mask; the same seed repeats the sequence */
    og_session_options so = {0};
    so.threads = 1;
    so.seed = 42;
    og_session *s1 = NULL, *s2 = NULL, *s3 = NULL;
    CHECK_OK(og_session_create(m, &so, &s1));
    CHECK_OK(og_session_create(m, &so, &s2));
    so.seed = 43;
    CHECK_OK(og_session_create(m, &so, &s3));
    og_tensor *a0 = NULL, *a1 = NULL, *b0 = NULL, *c0 = NULL, *a0again = NULL;
    CHECK_OK(og_session_run(s1, xn, xs, 1, &a0));
    CHECK_OK(og_session_run(s1, xn, xs, 1, &a1));
    CHECK_OK(og_session_run(s2, xn, xs, 1, &b0));
    CHECK_OK(og_session_run(s3, xn, xs, 1, &c0));
    if (a0 && a1 && b0 && c0) {
        int64_t n = og_tensor_numel(a0), d = dropped(a0);
        CHECK(d > n / 4 && d < 3 * n / 4); /* about half dropped */
        CHECK(!same(a0, a1));              /* a new mask at the second run */
        CHECK(same(a0, b0));               /* same seed, same first run */
        CHECK(!same(a0, c0));              /* another seed */
    }
    uint64_t seed = 0, runs = 0;
    CHECK_OK(og_session_get_rng(s1, &seed, &runs));
    CHECK(seed == 42 && runs == 2);
    CHECK_OK(og_session_set_rng(s1, 42, 0)); /* repeat run 0 */
    CHECK_OK(og_session_run(s1, xn, xs, 1, &a0again));
    if (a0 && a0again) CHECK(same(a0, a0again));
    CHECK(og_session_set_rng(NULL, 1, 1) == OG_ERR_INVALID_ARG);

    /* gradient objects: dW = x^T (dy * mask / (1 - ratio)) with the mask of that run */
    og_grad_options go = {0};
    const char *wn[] = {"W"};
    go.weights = wn;
    go.n_weights = 1;
    go.inputs = wn; /* no input gradients */
    go.n_inputs = 0;
    go.threads = 1;
    go.seed = 7;
    og_grad *g = NULL;
    CHECK_OK(og_grad_create(m, &go, &g));
    og_tensor *y[2] = {NULL, NULL}, *dw[2] = {NULL, NULL};
    for (int r = 0; g && r < 2; r++) {
        CHECK_OK(og_grad_run(g, xn, xs, 1, NULL, &y[r], &dw[r]));
        if (!y[r] || !dw[r]) continue;
        const float *yd = og_tensor_cdata(y[r]), *xd = og_tensor_cdata(x);
        const float *gd = og_tensor_cdata(dw[r]);
        double worst = 0;
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 4; j++) {
                double want = 0;
                for (int k = 0; k < 64; k++)
                    want += xd[k * 16 + i] * (yd[k * 4 + j] != 0 ? 2.0 : 0);
                worst = fmax(worst, fabs(want - gd[i * 4 + j]) / fmax(1.0, fabs(want)));
            }
        CHECK(worst < 1e-5);
    }
    if (y[0] && y[1]) CHECK(!same(y[0], y[1]) && !same(dw[0], dw[1]));

    /* trainers: a resumed run equals an uninterrupted one bit for bit */
    og_loss_options lo;
    og_loss_options_init(&lo, OG_LOSS_SQUARED);
    og_model *lm = NULL;
    CHECK_OK(og_model_add_loss(m, &lo, &lm));
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, OG_OPTIMIZER_SGD);
    oo.lr = 0.05;
    og_trainer_options to = {0};
    to.weights = wn;
    to.n_weights = 1;
    to.threads = 1;
    to.seed = 5;
    og_tensor *tgt = NULL;
    int64_t tdims[2] = {64, 4};
    CHECK_OK(og_tensor_create(OG_FLOAT, 2, tdims, NULL, &tgt));
    const char *bn[] = {"x", "label"};
    const og_tensor *bv[] = {x, tgt};
    og_trainer *t1 = NULL, *t2 = NULL;
    CHECK_OK(og_trainer_create(lm, &oo, &to, &t1));
    CHECK_OK(og_trainer_create(lm, &oo, &to, &t2));
    const char *ckpt = "test_dropout_rng.ckpt";
    double l[4] = {0};
    for (int k = 0; t1 && t2 && k < 4; k++) {
        CHECK_OK(og_trainer_step(t1, bn, bv, 2, &l[k]));
        if (k == 1) CHECK_OK(og_trainer_save_checkpoint(t1, ckpt));
    }
    if (t1) CHECK(l[0] != l[1] || l[1] != l[2]); /* new masks: the losses move */
    if (t2) {
        CHECK_OK(og_trainer_load_checkpoint(t2, ckpt));
        for (int k = 2; k < 4; k++) CHECK_OK(og_trainer_step(t2, bn, bv, 2, NULL));
        const og_tensor *w1 = NULL, *w2 = NULL;
        CHECK_OK(og_trainer_get_weight(t1, "W", &w1));
        CHECK_OK(og_trainer_get_weight(t2, "W", &w2));
        if (w1 && w2) CHECK(same(w1, w2));
    }
    remove(ckpt);

    og_trainer_free(t1);
    og_trainer_free(t2);
    og_tensor_free(tgt);
    og_model_free(lm);
    for (int r = 0; r < 2; r++) {
        og_tensor_free(y[r]);
        og_tensor_free(dw[r]);
    }
    og_grad_free(g);
    og_tensor_free(a0);
    og_tensor_free(a1);
    og_tensor_free(b0);
    og_tensor_free(c0);
    og_tensor_free(a0again);
    og_session_free(s1);
    og_session_free(s2);
    og_session_free(s3);
    og_tensor_free(x);
    og_model_free(m);
    TEST_DONE();
}
