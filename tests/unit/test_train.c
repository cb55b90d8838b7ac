/* test_train.c: losses, optimizers, the trainer, checkpoints and export. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define LINREG "tests/data/train/linreg.onnx"
#define MLP3   "tests/data/train/mlp3.onnx"

static og_model *load(const char *path)
{
    og_model *m = NULL;
    CHECK_OK(og_model_load_file(path, NULL, &m));
    return m;
}

static og_tensor *tensor2(og_dtype dt, int64_t r, int64_t c, const void *data)
{
    int64_t dims[2] = {r, c};
    og_tensor *t = NULL;
    CHECK_OK(og_tensor_from_data(dt, c ? 2 : 1, dims, data,
                                 (size_t)(r * (c ? c : 1)) * og_dtype_size(dt), NULL, &t));
    return t;
}

static double rel(double a, double b) { return fabs(a - b) / fmax(1e-12, fmax(fabs(a), fabs(b))); }

/* A loss model of linreg.onnx, evaluated at W = (1, 2, 3), B = 0.5 on 4 samples. */
static double linreg_loss(const og_loss_options *o, const float *x, const float *t, const float *w)
{
    og_model *m = load(LINREG), *lm = NULL;
    double loss = NAN;
    if (og_model_add_loss(m, o, &lm) != OG_OK) {
        og_model_free(m);
        return NAN;
    }
    /* the loss adds no initializer: a trainer's default weights stay the model's */
    CHECK(og_model_initializer_count(lm) == og_model_initializer_count(m));
    og_trainer *tr = NULL;
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, OG_OPTIMIZER_SGD);
    CHECK(og_model_output_count(lm) == 2);
    CHECK(strcmp(og_model_output_name(lm, 0), "loss") == 0);
    CHECK_OK(og_trainer_create(lm, &oo, NULL, &tr));
    float wv[3] = {1, 2, 3}, bv[1] = {0.5f};
    og_tensor *wt = tensor2(OG_FLOAT, 3, 1, wv), *bt = tensor2(OG_FLOAT, 1, 0, bv);
    CHECK_OK(og_trainer_set_weight(tr, "W", wt));
    CHECK_OK(og_trainer_set_weight(tr, "B", bt));
    og_tensor *in[3] = {tensor2(OG_FLOAT, 4, 3, x), tensor2(OG_FLOAT, 4, 1, t),
                        w ? tensor2(OG_FLOAT, 4, 0, w) : NULL};
    const char *names[3] = {"X", "label", "sw"};
    CHECK_OK(og_trainer_evaluate(tr, names, (const og_tensor *const *)in, w ? 3 : 2, &loss));
    for (int i = 0; i < 3; i++) og_tensor_free(in[i]);
    og_tensor_free(wt);
    og_tensor_free(bt);
    og_trainer_free(tr);
    og_model_free(lm);
    og_model_free(m);
    return loss;
}

static void test_losses(void)
{
    const float x[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
    const float t[4] = {2, 1, 4, 5};
    const float sw[4] = {1, 2, 0.5f, 1};
    /* predictions: 1.5, 2.5, 3.5, 6.5; errors y - t: -0.5, 1.5, -0.5, 1.5 */
    const double e[4] = {-0.5, 1.5, -0.5, 1.5};
    og_loss_options o;
    for (int kind = OG_LOSS_SQUARED; kind <= OG_LOSS_HUBER; kind++) {
        for (int red = 0; red < 2; red++) {
            for (int weighted = 0; weighted < 2; weighted++) {
                og_loss_options_init(&o, (og_loss_kind)kind);
                o.reduction = (og_reduction)red;
                o.l1_ratio = 0.25;
                o.delta = 1.0;
                if (weighted) o.sample_weight_name = "sw";
                double num = 0, den = 0;
                for (int i = 0; i < 4; i++) {
                    double a = fabs(e[i]), l;
                    switch (kind) {
                    case OG_LOSS_SQUARED: l = e[i] * e[i]; break;
                    case OG_LOSS_ABSOLUTE: l = a; break;
                    case OG_LOSS_ELASTIC: l = 0.25 * a + 0.75 * e[i] * e[i]; break;
                    default: l = a <= 1 ? 0.5 * e[i] * e[i] : a - 0.5; break;
                    }
                    double wi = weighted ? sw[i] : 1.0;
                    num += wi * l;
                    den += wi;
                }
                double want = red == OG_REDUCTION_SUM ? num : num / den;
                double got = linreg_loss(&o, x, t, weighted ? sw : NULL);
                CHECK(rel(got, want) < 1e-6);
                if (rel(got, want) >= 1e-6)
                    fprintf(stderr, "loss %d red %d weighted %d: %g, want %g\n", kind, red,
                            weighted, got, want);
            }
        }
    }
    /* binary log loss on logits with targets in {0, 1} */
    const float tb[4] = {1, 0, 1, 1};
    const double z[4] = {1.5, 2.5, 3.5, 6.5};
    og_loss_options_init(&o, OG_LOSS_LOG);
    double want = 0;
    for (int i = 0; i < 4; i++) want += log1p(exp(z[i])) - tb[i] * z[i];
    CHECK(rel(linreg_loss(&o, x, tb, NULL), want / 4) < 1e-6);
    /* a batch whose sample weights are all zero: loss 0, not NaN */
    const float zw[4] = {0, 0, 0, 0};
    for (int kind = OG_LOSS_SQUARED; kind <= OG_LOSS_HUBER; kind++) {
        og_loss_options_init(&o, (og_loss_kind)kind);
        o.sample_weight_name = "sw";
        CHECK(linreg_loss(&o, x, t, zw) == 0.0);
    }
    /* penalties on W = (1, 2, 3): l1 6, l2 14 */
    og_loss_options_init(&o, OG_LOSS_SQUARED);
    o.l1 = 0.1;
    o.l2 = 0.01;
    const char *pw[1] = {"W"};
    o.penalty_weights = pw;
    o.n_penalty_weights = 1;
    CHECK(rel(linreg_loss(&o, x, t, NULL), (0.25 + 2.25 + 0.25 + 2.25) / 4 + 0.6 + 0.14) < 1e-6);
}

static void test_loss_errors(void)
{
    og_model *m = load(LINREG), *lm = NULL;
    og_loss_options o;
    og_loss_options_init(&o, OG_LOSS_SQUARED);
    o.output = "nope";
    CHECK(og_model_add_loss(m, &o, &lm) == OG_ERR_INVALID_ARG && !lm);
    CHECK(strstr(og_last_error(), "'Y'") != NULL);
    og_loss_options_init(&o, OG_LOSS_SQUARED);
    o.target_name = "X";
    CHECK(og_model_add_loss(m, &o, &lm) == OG_ERR_INVALID_ARG);
    CHECK(strstr(og_last_error(), "'X'") != NULL);
    og_loss_options_init(&o, OG_LOSS_ELASTIC);
    o.l1_ratio = 1.5;
    CHECK(og_model_add_loss(m, &o, &lm) == OG_ERR_INVALID_ARG);
    og_loss_options_init(&o, OG_LOSS_HUBER);
    o.delta = 0;
    CHECK(og_model_add_loss(m, &o, &lm) == OG_ERR_INVALID_ARG);
    og_loss_options_init(&o, OG_LOSS_SQUARED);
    o.l2 = 1;
    const char *pw[1] = {"X"};
    o.penalty_weights = pw;
    o.n_penalty_weights = 1;
    CHECK(og_model_add_loss(m, &o, &lm) == OG_ERR_INVALID_ARG);
    CHECK(strstr(og_last_error(), "'X'") != NULL);
    og_loss_options_init(&o, OG_LOSS_CROSS_ENTROPY);
    CHECK(og_model_add_loss(m, &o, &lm) == OG_OK); /* [N, 1] scores: one class, legal */
    og_model_free(lm);
    og_model_free(m);
}

/* Classification losses on mlp3: cross-entropy against log-softmax computed here. */
static void test_class_losses(void)
{
    og_model *m = load(MLP3), *lm = NULL, *lm2 = NULL;
    og_loss_options o;
    og_loss_options_init(&o, OG_LOSS_CROSS_ENTROPY);
    o.sample_weight_name = "w";
    CHECK_OK(og_model_add_loss(m, &o, &lm));
    og_loss_options_init(&o, OG_LOSS_NLL);
    o.reduction = OG_REDUCTION_SUM;
    CHECK_OK(og_model_add_loss(m, &o, &lm2));
    float x[8] = {0.5f, -1, 2, 0.1f, -0.3f, 0.8f, 0.2f, -1.5f};
    int64_t y[2] = {2, 0};
    float w[2] = {1.5f, 0.5f};
    og_tensor *xt = tensor2(OG_FLOAT, 2, 4, x), *yt = tensor2(OG_INT64, 2, 0, y),
              *wt = tensor2(OG_FLOAT, 2, 0, w);
    og_session *s = NULL, *s2 = NULL;
    CHECK_OK(og_session_create(lm, NULL, &s));
    CHECK_OK(og_session_create(lm2, NULL, &s2));
    const char *names[3] = {"X", "label", "w"};
    const og_tensor *in[3] = {xt, yt, wt};
    og_tensor *out[2] = {NULL, NULL}, *out2[2] = {NULL, NULL};
    CHECK_OK(og_session_run(s, names, in, 3, out));
    CHECK_OK(og_session_run(s2, names, in, 2, out2));
    if (out[1]) {
        const float *z = og_tensor_cdata(out[1]);
        double num = 0, nll_sum = 0;
        for (int i = 0; i < 2; i++) {
            double mx = fmax(z[3 * i], fmax(z[3 * i + 1], z[3 * i + 2])), se = 0;
            for (int c = 0; c < 3; c++) se += exp(z[3 * i + c] - mx);
            double l = -(z[3 * i + y[i]] - mx - log(se));
            num += w[i] * l;
            nll_sum += -z[3 * i + y[i]]; /* NLL reads the scores as log-probabilities */
        }
        CHECK(rel(*(const float *)og_tensor_cdata(out[0]), num / 2.0) < 1e-5);
        CHECK(rel(*(const float *)og_tensor_cdata(out2[0]), nll_sum) < 1e-5);
    }
    for (int i = 0; i < 2; i++) {
        og_tensor_free(out[i]);
        og_tensor_free(out2[i]);
    }
    og_tensor_free(xt);
    og_tensor_free(yt);
    og_tensor_free(wt);
    og_session_free(s);
    og_session_free(s2);
    og_model_free(lm);
    og_model_free(lm2);
    og_model_free(m);
}

/* y = X w* + b* + noise; the least-squares solution computed by normal equations. */
#define NS 200
static void make_linear(float *x, float *y, double *ls)
{
    uint64_t s = 12345;
    for (int i = 0; i < NS * 3; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 4.0 - 2.0);
    }
    for (int i = 0; i < NS; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double noise = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.2;
        y[i] = (float)(1.5 * x[3 * i] - 2.0 * x[3 * i + 1] + 0.5 * x[3 * i + 2] + 0.75 + noise);
    }
    /* normal equations for [x, 1] (4 unknowns), Gaussian elimination in double */
    double a[4][5] = {{0}};
    for (int i = 0; i < NS; i++) {
        double r[4] = {x[3 * i], x[3 * i + 1], x[3 * i + 2], 1.0};
        for (int p = 0; p < 4; p++) {
            for (int q = 0; q < 4; q++) a[p][q] += r[p] * r[q];
            a[p][4] += r[p] * y[i];
        }
    }
    for (int p = 0; p < 4; p++)
        for (int q = p + 1; q < 4; q++) {
            double f = a[q][p] / a[p][p];
            for (int k = p; k < 5; k++) a[q][k] -= f * a[p][k];
        }
    for (int p = 3; p >= 0; p--) {
        double v = a[p][4];
        for (int k = p + 1; k < 4; k++) v -= a[p][k] * ls[k];
        ls[p] = v / a[p][p];
    }
}

/* The linear-regression batch of make_linear, bound as the loss model's inputs. */
typedef struct linear_data {
    double ls[4];
    og_tensor *x, *y;
    const char *names[2];
    const og_tensor *in[2];
} linear_data;

static void linear_data_init(linear_data *d)
{
    float x[NS * 3], y[NS];
    make_linear(x, y, d->ls);
    d->x = tensor2(OG_FLOAT, NS, 3, x);
    d->y = tensor2(OG_FLOAT, NS, 1, y);
    d->names[0] = "X";
    d->names[1] = "label";
    d->in[0] = d->x;
    d->in[1] = d->y;
}

static void linear_data_free(linear_data *d)
{
    og_tensor_free(d->x);
    og_tensor_free(d->y);
}

static og_trainer *linreg_trainer(og_model **m, og_model **lm, const og_optimizer_options *oo)
{
    og_loss_options lo;
    og_loss_options_init(&lo, OG_LOSS_SQUARED);
    *m = load(LINREG);
    *lm = NULL;
    CHECK_OK(og_model_add_loss(*m, &lo, lm));
    og_trainer *t = NULL;
    og_trainer_options to = {0};
    to.threads = 1;
    CHECK_OK(og_trainer_create(*lm, oo, &to, &t));
    return t;
}

static double coef_error(const og_trainer *t, const double *ls)
{
    const og_tensor *w = NULL, *b = NULL;
    CHECK_OK(og_trainer_get_weight(t, "W", &w));
    CHECK_OK(og_trainer_get_weight(t, "B", &b));
    if (!w || !b) return INFINITY;
    const float *wv = og_tensor_cdata(w), *bv = og_tensor_cdata(b);
    double err = fabs(bv[0] - ls[3]);
    for (int k = 0; k < 3; k++) err = fmax(err, fabs(wv[k] - ls[k]));
    return err;
}

static void test_least_squares(void)
{
    linear_data ld;
    linear_data_init(&ld);
    const char *const *names = ld.names;
    const og_tensor *const *in = ld.in;
    for (int kind = 0; kind < 4; kind++) {
        og_optimizer_options oo;
        og_optimizer_options_init(&oo, (og_optimizer_kind)kind);
        if (kind == OG_OPTIMIZER_SGD) {
            oo.lr = 0.05;
            oo.momentum = 0.9;
            oo.nesterov = 1;
        } else if (kind == OG_OPTIMIZER_ADAGRAD) {
            oo.lr = 0.5;
        } else {
            oo.lr = 0.05;
            oo.weight_decay = 0;
        }
        og_model *m, *lm;
        og_trainer *t = linreg_trainer(&m, &lm, &oo);
        double loss = NAN, first = NAN;
        for (int it = 0; t && it < 1500; it++) {
            CHECK_OK(og_trainer_step(t, names, in, 2, &loss));
            if (it == 0) first = loss;
        }
        double err = coef_error(t, ld.ls);
        printf("least squares, optimizer %d: loss %.3g -> %.6g, largest coefficient error %.2e\n",
               kind, first, loss, err);
        CHECK(err <= 1e-3);
        CHECK(og_trainer_step_count(t) == 1500);
        double ev = NAN;
        CHECK_OK(og_trainer_evaluate(t, names, in, 2, &ev));
        CHECK(rel(ev, loss) < 1e-3); /* the loss after the last update is a bit lower */
        og_trainer_free(t);
        og_model_free(lm);
        og_model_free(m);
    }
    linear_data_free(&ld);
}

static bool same_weights(const og_trainer *a, const og_trainer *b)
{
    for (int i = 0; i < og_trainer_weight_count(a); i++) {
        const og_tensor *wa = NULL, *wb = NULL;
        if (og_trainer_get_weight(a, og_trainer_weight_name(a, i), &wa) ||
            og_trainer_get_weight(b, og_trainer_weight_name(a, i), &wb) ||
            memcmp(og_tensor_cdata(wa), og_tensor_cdata(wb), og_tensor_nbytes(wa)) != 0)
            return false;
    }
    return true;
}

static void test_checkpoint(void)
{
    linear_data ld;
    linear_data_init(&ld);
    const char *const *names = ld.names;
    const og_tensor *const *in = ld.in;
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, OG_OPTIMIZER_ADAM);
    oo.lr = 0.01;
    og_model *m1, *lm1, *m2, *lm2;
    og_trainer *a = linreg_trainer(&m1, &lm1, &oo), *b = linreg_trainer(&m2, &lm2, &oo);
    char path[512];
    og_test_out(path, sizeof path, "test_train.ckpt");
    for (int i = 0; i < 10; i++) CHECK_OK(og_trainer_step(a, names, in, 2, NULL));
    CHECK_OK(og_trainer_save_checkpoint(a, path));
    for (int i = 0; i < 10; i++) CHECK_OK(og_trainer_step(a, names, in, 2, NULL));
    CHECK_OK(og_trainer_load_checkpoint(b, path));
    CHECK(og_trainer_step_count(b) == 10);
    for (int i = 0; i < 10; i++) CHECK_OK(og_trainer_step(b, names, in, 2, NULL));
    CHECK(same_weights(a, b));
    /* damaged: one flipped byte, then a truncated file */
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 60, SEEK_SET);
        int c = fgetc(f);
        fseek(f, 60, SEEK_SET);
        fputc(c ^ 1, f);
        fclose(f);
    }
    CHECK(og_trainer_load_checkpoint(b, path) == OG_ERR_PARSE);
    CHECK(strstr(og_last_error(), "damaged") != NULL);
    CHECK(og_trainer_step_count(b) == 20);
    CHECK_OK(og_trainer_save_checkpoint(a, path));
    f = fopen(path, "r+b");
    if (f) {
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fclose(f);
        CHECK(truncate(path, size - 20) == 0);
    }
    CHECK(og_trainer_load_checkpoint(b, path) == OG_ERR_PARSE);
    CHECK(og_trainer_load_checkpoint(b, "build/no/such.ckpt") == OG_ERR_IO);
    /* another optimizer */
    og_optimizer_options sgd;
    og_optimizer_options_init(&sgd, OG_OPTIMIZER_SGD);
    og_model *m3, *lm3;
    og_trainer *c = linreg_trainer(&m3, &lm3, &sgd);
    CHECK_OK(og_trainer_save_checkpoint(c, path));
    CHECK(og_trainer_load_checkpoint(b, path) == OG_ERR_INVALID_ARG);
    remove(path);
    og_trainer_free(a);
    og_trainer_free(b);
    og_trainer_free(c);
    og_model_free(lm1);
    og_model_free(m1);
    og_model_free(lm2);
    og_model_free(m2);
    og_model_free(lm3);
    og_model_free(m3);
    linear_data_free(&ld);
}

static void test_export_and_nan(void)
{
    linear_data ld;
    linear_data_init(&ld);
    const char *const *names = ld.names;
    const og_tensor *const *in = ld.in;
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, OG_OPTIMIZER_SGD);
    oo.lr = 0.1;
    og_model *m, *lm, *e1 = NULL, *e2 = NULL;
    og_trainer *t = linreg_trainer(&m, &lm, &oo);
    for (int i = 0; i < 5; i++) CHECK_OK(og_trainer_step(t, names, in, 2, NULL));
    CHECK_OK(og_trainer_export(t, NULL, &e1));
    CHECK_OK(og_trainer_export(t, m, &e2));
    const og_tensor *w = NULL;
    CHECK_OK(og_trainer_get_weight(t, "W", &w));
    for (int k = 0; k < 2; k++) {
        og_model *e = k ? e2 : e1;
        if (!e || !w) continue;
        CHECK(og_model_input_count(e) == 1 && og_model_output_count(e) == 1);
        CHECK(strcmp(og_model_output_name(e, 0), "Y") == 0);
        for (int i = 0; i < og_model_initializer_count(e); i++) {
            CHECK(strncmp(og_model_initializer_name(e, i), "og_loss", 7) != 0);
            if (strcmp(og_model_initializer_name(e, i), "W") == 0)
                CHECK(memcmp(og_tensor_cdata(og_model_initializer(e, i)), og_tensor_cdata(w), 12) ==
                      0);
        }
    }
    /* a NaN in the batch: the step fails and names itself, weights unchanged */
    float wbefore[3];
    memcpy(wbefore, og_tensor_cdata(w), sizeof wbefore);
    ((float *)og_tensor_data(ld.x))[4] = NAN;
    CHECK(og_trainer_step(t, names, in, 2, NULL) == OG_ERR_RUNTIME);
    CHECK(strstr(og_last_error(), "step 6") != NULL);
    CHECK(memcmp(wbefore, og_tensor_cdata(w), sizeof wbefore) == 0);
    CHECK(og_trainer_step_count(t) == 5);
    /* bad optimizer options */
    og_trainer *bad = NULL;
    oo.lr = -1;
    CHECK(og_trainer_create(lm, &oo, NULL, &bad) == OG_ERR_INVALID_ARG && !bad);
    og_optimizer_options_init(&oo, OG_OPTIMIZER_ADAM);
    oo.beta1 = 1.0;
    CHECK(og_trainer_create(lm, &oo, NULL, &bad) == OG_ERR_INVALID_ARG);
    og_optimizer_options_init(&oo, OG_OPTIMIZER_SGD);
    og_trainer_options to = {0};
    to.loss = "Y"; /* not a scalar */
    CHECK(og_trainer_create(lm, &oo, &to, &bad) == OG_ERR_SHAPE);
    og_model_free(e1);
    og_model_free(e2);
    og_trainer_free(t);
    og_model_free(lm);
    og_model_free(m);
    linear_data_free(&ld);
}

static void test_schedules(void)
{
    og_optimizer_options o;
    og_optimizer_options_init(&o, OG_OPTIMIZER_SGD);
    o.lr = 0.1;
    CHECK(og_optimizer_lr(&o, 1000) == 0.1);
    o.schedule = OG_LR_INVSCALING;
    o.power_t = 0.5;
    CHECK(rel(og_optimizer_lr(&o, 3), 0.1 / 2.0) < 1e-12);
    o.schedule = OG_LR_STEP;
    o.step_size = 10;
    o.gamma = 0.5;
    CHECK(rel(og_optimizer_lr(&o, 25), 0.025) < 1e-12);
    o.schedule = OG_LR_LINEAR;
    o.warmup_steps = 10;
    o.total_steps = 110;
    o.min_lr = 0.0;
    CHECK(rel(og_optimizer_lr(&o, 0), 0.01) < 1e-12);
    CHECK(rel(og_optimizer_lr(&o, 9), 0.1) < 1e-12);
    CHECK(rel(og_optimizer_lr(&o, 60), 0.05) < 1e-12);
    CHECK(og_optimizer_lr(&o, 500) == 0.0);
    o.schedule = OG_LR_COSINE;
    CHECK(rel(og_optimizer_lr(&o, 60), 0.05) < 1e-12);
    CHECK(rel(og_optimizer_lr(&o, 10), 0.1) < 1e-12);
    o.schedule = OG_LR_OPTIMAL;
    o.alpha = 1e-4;
    /* scikit-learn: eta = 1 / (alpha (t0 + t)), t0 = 1 / (alpha sqrt(1 / sqrt(alpha))) */
    double t0 = 1.0 / (1e-4 * 10.0);
    CHECK(rel(og_optimizer_lr(&o, 5), 1.0 / (1e-4 * (t0 + 5))) < 1e-12);
}

int main(void)
{
    test_schedules();
    test_losses();
    test_loss_errors();
    test_class_losses();
    test_least_squares();
    test_checkpoint();
    test_export_and_nan();
    TEST_DONE();
}
