/* test_training_info.c: ONNX's TrainingInfoProto: kept through load and save, written by
 * og_trainer_export_training_model, and run by a trainer in algorithm mode.
 *
 * The exported models, a batch and the values one algorithm step gives are written to
 * $OG_TRAINING_INFO_DIR (default build/training_info) for tests/train/training_info_check.py,
 * which checks them with onnx's checker and its reference evaluator. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api.h"
#include "test.h"

#define LINREG     "tests/data/train/linreg.onnx"
#define MLP3       "tests/data/train/mlp3.onnx"
#define HAND       "tests/data/train/linreg_momentum_ti.onnx"
#define BAD_KEY    "tests/data/train/linreg_ti_bad_key.onnx"
#define BAD_OUTPUT "tests/data/train/linreg_ti_bad_output.onnx"
#define N          16

static char out_dir[512];

static og_model *load(const char *path)
{
    og_model *m = NULL;
    CHECK_OK(og_model_load_file(path, NULL, &m));
    return m;
}

/* A model through its bytes: save, load. */
static og_model *reload(const og_model *m)
{
    void *bytes = NULL;
    size_t size = 0;
    og_model *r = NULL;
    CHECK_OK(og_model_save_buffer(m, &bytes, &size));
    if (bytes) CHECK_OK(og_model_load_buffer(bytes, size, NULL, &r));
    og_model_buffer_free(m, bytes);
    return r;
}

static double urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* Batch `step` of the linear problem (features 3, float targets) or the 3-class one
 * (features 4, int64 labels). */
static void batch(bool mlp, int step, og_tensor **x, og_tensor **y)
{
    uint64_t s = 1000003u * (uint64_t)(step + 1);
    int nf = mlp ? 4 : 3;
    float xv[N * 4], yv[N];
    int64_t lv[N];
    for (int i = 0; i < N * nf; i++) xv[i] = (float)(urand(&s) * 4.0 - 2.0);
    for (int i = 0; i < N; i++) {
        const float *r = xv + i * nf;
        if (mlp) {
            double a = r[0] - r[1], b = r[2] + 0.5 * r[3];
            lv[i] = a > 0.5 ? 0 : (b > 0 ? 1 : 2);
        } else {
            yv[i] = (float)(1.5 * r[0] - 2.0 * r[1] + 0.5 * r[2] + 0.75 + (urand(&s) - 0.5) * 0.2);
        }
    }
    int64_t xd[2] = {N, nf}, yd[2] = {N, 1};
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 2, xd, xv, sizeof(float) * N * (size_t)nf, NULL, x));
    if (mlp)
        CHECK_OK(og_tensor_from_data(OG_INT64, 1, yd, lv, sizeof lv, NULL, y));
    else
        CHECK_OK(og_tensor_from_data(OG_FLOAT, 2, yd, yv, sizeof yv, NULL, y));
}

static const char *const data_names[2] = {"X", "label"};

static og_status step_on(og_trainer *t, bool mlp, int k, double *loss)
{
    og_tensor *x = NULL, *y = NULL;
    batch(mlp, k, &x, &y);
    const og_tensor *in[2] = {x, y};
    og_status st = og_trainer_step(t, data_names, in, 2, loss);
    og_tensor_free(x);
    og_tensor_free(y);
    return st;
}

/* Largest |a - b| over the tensor, relative to its largest |a|. */
static double rel_diff(const og_tensor *a, const og_tensor *b)
{
    if (og_tensor_dtype(a) != og_tensor_dtype(b) || og_tensor_numel(a) != og_tensor_numel(b))
        return INFINITY;
    double d = 0, m = 1e-12;
    for (int64_t i = 0; i < og_tensor_numel(a); i++) {
        double x, y;
        if (og_tensor_dtype(a) == OG_INT64) {
            x = (double)((const int64_t *)og_tensor_cdata(a))[i];
            y = (double)((const int64_t *)og_tensor_cdata(b))[i];
        } else if (og_tensor_dtype(a) == OG_DOUBLE) {
            x = ((const double *)og_tensor_cdata(a))[i];
            y = ((const double *)og_tensor_cdata(b))[i];
        } else {
            x = ((const float *)og_tensor_cdata(a))[i];
            y = ((const float *)og_tensor_cdata(b))[i];
        }
        d = fmax(d, fabs(x - y));
        m = fmax(m, fabs(x));
    }
    return d / m;
}

static const og_tensor *initializer(const og_model *m, const char *name)
{
    for (int i = 0; i < og_model_initializer_count(m); i++)
        if (strcmp(og_model_initializer_name(m, i), name) == 0) return og_model_initializer(m, i);
    return NULL;
}

static void save_npy(const char *stem, const char *what, const og_tensor *t)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s.npy", out_dir, stem, what);
    CHECK_OK(og_npy_save(path, t));
}

/* ---- load -> save -> load keeps training_info --------------------------------------- */

static void test_roundtrip(void)
{
    og_model *m1 = load(HAND);
    if (!m1) return;
    CHECK(m1->graph->n_training_info == 1);
    og_model *m2 = reload(m1);
    if (!m2) {
        og_model_free(m1);
        return;
    }
    CHECK(m2->graph->n_training_info == 1);
    if (m2->graph->n_training_info == 1)
        CHECK(m1->graph->training_info[0].size == m2->graph->training_info[0].size &&
              memcmp(m1->graph->training_info[0].data, m2->graph->training_info[0].data,
                     m1->graph->training_info[0].size) == 0);
    void *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    CHECK_OK(og_model_save_buffer(m1, &b1, &n1));
    CHECK_OK(og_model_save_buffer(m2, &b2, &n2));
    CHECK(n1 == n2 && b1 && b2 && memcmp(b1, b2, n1) == 0);
    /* the Python check compares it with the file's TrainingInfoProto */
    char path[1024];
    snprintf(path, sizeof path, "%s/roundtrip_momentum_ti.onnx", out_dir);
    CHECK_OK(og_model_save_file(m2, path));
    og_model_buffer_free(m1, b1);
    og_model_buffer_free(m2, b2);
    og_model_free(m1);
    og_model_free(m2);
}

/* ---- export after k steps, continue in both modes ------------------------------------ */

typedef struct config {
    const char *name;
    og_optimizer_kind kind;
    double lr, momentum, weight_decay, lr_decay, clip;
    int nesterov;
    og_lr_schedule schedule;
    double tol; /* on the relative difference of weights, states and losses */
} config;

static const config configs[] = {
    {"sgd", OG_OPTIMIZER_SGD, 0.05, 0, 0.01, 0, 0, 0, OG_LR_CONSTANT, 1e-6},
    {"momentum", OG_OPTIMIZER_SGD, 0.05, 0.9, 0.01, 0, 0, 0, OG_LR_CONSTANT, 1e-6},
    {"nesterov", OG_OPTIMIZER_SGD, 0.05, 0.9, 0, 0, 0, 1, OG_LR_CONSTANT, 1e-6},
    {"adagrad", OG_OPTIMIZER_ADAGRAD, 0.1, 0, 0.01, 0.01, 0, 0, OG_LR_CONSTANT, 1e-6},
    /* Adam: ONNX's epsilon placement and float-rounded betas in the bias corrections */
    {"adam", OG_OPTIMIZER_ADAM, 0.01, 0, 0.01, 0, 0, 0, OG_LR_CONSTANT, 1e-4},
    {"adamw", OG_OPTIMIZER_ADAMW, 0.01, 0, 0.05, 0, 0, 0, OG_LR_CONSTANT, 1e-4},
    /* schedules from the step count, and clipping (a float64 norm in both) */
    {"momentum_cosine_clip", OG_OPTIMIZER_SGD, 0.05, 0.9, 0, 0, 0.5, 0, OG_LR_COSINE, 1e-6},
    {"sgd_invscaling", OG_OPTIMIZER_SGD, 0.05, 0, 0, 0, 0, 0, OG_LR_INVSCALING, 1e-6},
    {"adagrad_step", OG_OPTIMIZER_ADAGRAD, 0.1, 0, 0, 0, 0, 0, OG_LR_STEP, 1e-6},
    {"adam_linear_clip", OG_OPTIMIZER_ADAM, 0.02, 0, 0, 0, 1.0, 0, OG_LR_LINEAR, 1e-4},
};

static og_trainer *normal_trainer(const config *c, bool mlp, og_model **m, og_model **lm)
{
    og_loss_options lo;
    og_loss_options_init(&lo, mlp ? OG_LOSS_CROSS_ENTROPY : OG_LOSS_SQUARED);
    *m = load(mlp ? MLP3 : LINREG);
    *lm = NULL;
    if (*m) CHECK_OK(og_model_add_loss(*m, &lo, lm));
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, c->kind);
    oo.lr = c->lr;
    oo.momentum = c->momentum;
    oo.nesterov = c->nesterov;
    oo.weight_decay = c->weight_decay;
    oo.lr_decay = c->lr_decay;
    oo.clip_norm = c->clip;
    oo.schedule = c->schedule;
    oo.warmup_steps = 3;
    oo.total_steps = 20;
    oo.min_lr = 0.001;
    oo.power_t = 0.5;
    oo.step_size = 4;
    oo.gamma = 0.5;
    og_trainer_options to = {0};
    to.threads = 1;
    og_trainer *t = NULL;
    if (*lm) CHECK_OK(og_trainer_create(*lm, &oo, &to, &t));
    return t;
}

static og_trainer *algo_trainer(const og_model *m)
{
    og_trainer_options to = {0};
    to.threads = 1;
    og_trainer *t = NULL;
    CHECK_OK(og_trainer_create(m, NULL, &to, &t));
    return t;
}

#define K_STEPS 5
#define N_STEPS 20

static void test_agreement(const config *c, bool mlp)
{
    og_model *m = NULL, *lm = NULL, *e = NULL, *e2 = NULL, *end = NULL;
    og_trainer *a = normal_trainer(c, mlp, &m, &lm), *b = NULL;
    char stem[128], path[1024];
    snprintf(stem, sizeof stem, "%s_%s", c->name, mlp ? "mlp3" : "linreg");
    if (!a) goto done;
    for (int k = 0; k < K_STEPS; k++) CHECK_OK(step_on(a, mlp, k, NULL));
    CHECK_OK(og_trainer_export_training_model(a, &e));
    if (!e) goto done;
    snprintf(path, sizeof path, "%s/%s.onnx", out_dir, stem);
    CHECK_OK(og_model_save_file(e, path));
    e2 = reload(e);
    if (!e2) goto done;
    b = algo_trainer(e2);
    if (!b) goto done;
    CHECK(og_trainer_step_count(b) == K_STEPS);
    /* every trained weight is bound, with the trainer's value */
    for (int i = 0; i < og_trainer_weight_count(a); i++) {
        const og_tensor *wa = NULL, *wb = NULL;
        const char *name = og_trainer_weight_name(a, i);
        CHECK_OK(og_trainer_get_weight(a, name, &wa));
        CHECK_OK(og_trainer_get_weight(b, name, &wb));
        CHECK(wa && wb && rel_diff(wa, wb) == 0);
    }
    /* the batch of the next step, and what algorithm mode makes of it */
    {
        og_tensor *x = NULL, *y = NULL;
        batch(mlp, K_STEPS, &x, &y);
        save_npy(stem, "X", x);
        save_npy(stem, "label", y);
        og_tensor_free(x);
        og_tensor_free(y);
    }
    double worst_loss = 0;
    for (int k = K_STEPS; k < K_STEPS + N_STEPS; k++) {
        double la = NAN, lb = NAN;
        CHECK_OK(step_on(a, mlp, k, &la));
        CHECK_OK(step_on(b, mlp, k, &lb));
        worst_loss = fmax(worst_loss, fabs(la - lb) / fmax(fabs(la), 1e-12));
        if (k == K_STEPS)
            for (int i = 0; i < og_trainer_weight_count(b); i++) {
                const og_tensor *w = NULL;
                CHECK_OK(og_trainer_get_weight(b, og_trainer_weight_name(b, i), &w));
                char what[300];
                snprintf(what, sizeof what, "after.%s", og_trainer_weight_name(b, i));
                if (w) save_npy(stem, what, w);
            }
    }
    CHECK(og_trainer_step_count(b) == K_STEPS + N_STEPS);
    /* weights and states: against a second export of the normal trainer */
    CHECK_OK(og_trainer_export_training_model(a, &end));
    double worst = 0;
    for (int i = 0; end && i < og_trainer_weight_count(b); i++) {
        const og_tensor *wb = NULL, *wa = initializer(end, og_trainer_weight_name(b, i));
        CHECK_OK(og_trainer_get_weight(b, og_trainer_weight_name(b, i), &wb));
        CHECK(wa != NULL);
        if (wa && wb) worst = fmax(worst, rel_diff(wa, wb));
    }
    printf("%-22s %-6s: %d bound initializers; after %d steps in each mode, largest relative "
           "difference %.2e (weights, states), %.2e (losses)\n",
           c->name, mlp ? "mlp3" : "linreg", og_trainer_weight_count(b), N_STEPS, worst,
           worst_loss);
    CHECK(worst <= c->tol);
    CHECK(worst_loss <= c->tol);
    /* evaluation agrees too */
    {
        og_tensor *x = NULL, *y = NULL;
        batch(mlp, 99, &x, &y);
        const og_tensor *in[2] = {x, y};
        double ea = NAN, eb = NAN;
        CHECK_OK(og_trainer_evaluate(a, data_names, in, 2, &ea));
        CHECK_OK(og_trainer_evaluate(b, data_names, in, 2, &eb));
        CHECK(fabs(ea - eb) <= c->tol * fmax(1.0, fabs(ea)));
        og_tensor_free(x);
        og_tensor_free(y);
    }
done:
    og_trainer_free(a);
    og_trainer_free(b);
    og_model_free(end);
    og_model_free(e2);
    og_model_free(e);
    og_model_free(lm);
    og_model_free(m);
}

static bool same_weights(const og_trainer *a, const og_trainer *b)
{
    if (og_trainer_weight_count(a) != og_trainer_weight_count(b)) return false;
    for (int i = 0; i < og_trainer_weight_count(a); i++) {
        const og_tensor *wa = NULL, *wb = NULL;
        if (og_trainer_get_weight(a, og_trainer_weight_name(a, i), &wa) ||
            og_trainer_get_weight(b, og_trainer_weight_name(a, i), &wb) ||
            og_tensor_nbytes(wa) != og_tensor_nbytes(wb) ||
            memcmp(og_tensor_cdata(wa), og_tensor_cdata(wb), og_tensor_nbytes(wa)) != 0)
            return false;
    }
    return true;
}

/* ---- the hand-built model (Gradient + Momentum, as the ONNX spec writes them) -------- */

static void test_hand_built(void)
{
    og_model *m = load(HAND);
    og_trainer *t = m ? algo_trainer(m) : NULL, *c = NULL, *d = NULL, *ref = NULL;
    og_model *e = NULL, *e2 = NULL, *base = NULL, *lm = NULL;
    char ckpt[600];
    snprintf(ckpt, sizeof ckpt, "%s/hand_built.ckpt", out_dir);
    if (!t) goto done;
    /* the initialization graph ran: W = [0.1, 0.2, 0.3], T = 0 (its initializer says 7) */
    CHECK(og_trainer_weight_count(t) == 5);
    const og_tensor *w = NULL, *tt = NULL;
    CHECK_OK(og_trainer_get_weight(t, "W", &w));
    CHECK_OK(og_trainer_get_weight(t, "T", &tt));
    if (w) CHECK(((const float *)og_tensor_cdata(w))[2] == 0.3f);
    if (tt) CHECK(*(const int64_t *)og_tensor_cdata(tt) == 0);
    CHECK(og_trainer_step_count(t) == 0);
    CHECK(isnan(og_trainer_lr(t)));
    /* the same problem for the normal trainer: SGD, momentum 0.9, lr 0.05, mean squares */
    og_loss_options lo;
    og_loss_options_init(&lo, OG_LOSS_SQUARED);
    base = load(LINREG);
    if (base) CHECK_OK(og_model_add_loss(base, &lo, &lm));
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, OG_OPTIMIZER_SGD);
    oo.lr = 0.05;
    oo.momentum = 0.9;
    og_trainer_options to = {0};
    to.threads = 1;
    if (lm) CHECK_OK(og_trainer_create(lm, &oo, &to, &ref));
    if (ref && w) CHECK_OK(og_trainer_set_weight(ref, "W", w));
    double first = NAN, last = NAN, worst = 0;
    for (int k = 0; k < 60; k++) {
        double l = NAN, lr_ = NAN;
        CHECK_OK(step_on(t, false, k, &l));
        if (ref) CHECK_OK(step_on(ref, false, k, &lr_));
        worst = fmax(worst, fabs(l - lr_) / fmax(fabs(lr_), 1e-12));
        if (k == 0) first = l;
        last = l;
        if (k == 29) CHECK_OK(og_trainer_save_checkpoint(t, ckpt));
    }
    printf("hand-built Gradient + Momentum model: loss %.4g -> %.4g over 60 steps; against the "
           "normal trainer: largest relative loss difference %.2e\n",
           first, last, worst);
    CHECK(last < 0.05 * first);
    CHECK(worst <= 1e-6);
    CHECK_OK(og_trainer_get_weight(t, "T", &tt));
    if (tt) CHECK(*(const int64_t *)og_tensor_cdata(tt) == 60);
    if (ref) {
        const og_tensor *wr = NULL, *wt = NULL;
        CHECK_OK(og_trainer_get_weight(ref, "W", &wr));
        CHECK_OK(og_trainer_get_weight(t, "W", &wt));
        if (wr && wt) CHECK(rel_diff(wr, wt) <= 1e-6);
    }
    /* a checkpoint holds every bound initializer and the step */
    c = algo_trainer(m);
    if (c) {
        CHECK_OK(og_trainer_load_checkpoint(c, ckpt));
        CHECK(og_trainer_step_count(c) == 30);
        for (int k = 30; k < 60; k++) CHECK_OK(step_on(c, false, k, NULL));
        CHECK(same_weights(t, c));
    }
    remove(ckpt);
    /* an export continues where the trainer is: the velocities live in the algorithm
     * graph's initializers */
    CHECK_OK(og_trainer_export_training_model(t, &e));
    e2 = e ? reload(e) : NULL;
    d = e2 ? algo_trainer(e2) : NULL;
    if (d) {
        /* the initialization graph resets W and T: put back the trained ones */
        CHECK_OK(og_trainer_get_weight(t, "W", &w));
        CHECK_OK(og_trainer_set_weight(d, "W", w));
        CHECK_OK(og_trainer_get_weight(t, "T", &tt));
        CHECK_OK(og_trainer_set_weight(d, "T", tt));
        CHECK(same_weights(t, d));
        for (int k = 60; k < 70; k++) {
            CHECK_OK(step_on(t, false, k, NULL));
            CHECK_OK(step_on(d, false, k, NULL));
        }
        CHECK(same_weights(t, d));
    }
    /* the inference export: no loss, so the caller passes the model */
    og_model *inf = NULL;
    CHECK(og_trainer_export(t, NULL, &inf) == OG_ERR_INVALID_ARG);
    CHECK_OK(og_trainer_export(t, m, &inf));
    if (inf) {
        const og_tensor *wi = initializer(inf, "W");
        CHECK_OK(og_trainer_get_weight(t, "W", &w));
        CHECK(wi && w && rel_diff(wi, w) == 0);
    }
    og_model_free(inf);
    /* set_weight refuses another shape */
    {
        int64_t dims[1] = {3};
        og_tensor *bad = NULL;
        CHECK_OK(og_tensor_create(OG_FLOAT, 1, dims, NULL, &bad));
        CHECK(og_trainer_set_weight(t, "W", bad) == OG_ERR_SHAPE);
        CHECK(og_trainer_set_weight(t, "nope", bad) == OG_ERR_INVALID_ARG);
        CHECK(strstr(og_last_error(), "'VW'") != NULL);
        og_tensor_free(bad);
    }
done:
    og_trainer_free(t);
    og_trainer_free(c);
    og_trainer_free(d);
    og_trainer_free(ref);
    og_model_free(e);
    og_model_free(e2);
    og_model_free(lm);
    og_model_free(base);
    og_model_free(m);
}

/* ---- export of an exported model's trainer, the inference export, NaN --------------- */

static void test_algo_mode_more(void)
{
    og_model *m = NULL, *lm = NULL, *e = NULL, *e2 = NULL, *e3 = NULL, *inf = NULL;
    og_trainer *a = normal_trainer(&configs[4], true, &m, &lm), *b = NULL, *c = NULL;
    if (!a) goto done;
    for (int k = 0; k < 3; k++) CHECK_OK(step_on(a, true, k, NULL));
    CHECK_OK(og_trainer_export_training_model(a, &e));
    b = e ? algo_trainer(e) : NULL;
    if (!b) goto done;
    for (int k = 3; k < 6; k++) CHECK_OK(step_on(b, true, k, NULL));
    /* algorithm mode's export: the model with the bound values, going on from there */
    CHECK_OK(og_trainer_export_training_model(b, &e2));
    e3 = e2 ? reload(e2) : NULL;
    c = e3 ? algo_trainer(e3) : NULL;
    if (c) {
        CHECK(og_trainer_step_count(c) == 6);
        CHECK(same_weights(b, c));
        for (int k = 6; k < 9; k++) {
            CHECK_OK(step_on(b, true, k, NULL));
            CHECK_OK(step_on(c, true, k, NULL));
        }
        CHECK(same_weights(b, c));
    }
    /* the inference model: the loss, the optimizer's initializers and training_info go */
    CHECK_OK(og_trainer_export(b, NULL, &inf));
    if (inf) {
        CHECK(og_model_output_count(inf) == 1 && og_model_input_count(inf) == 1);
        CHECK(inf->graph->n_training_info == 0);
        for (int i = 0; i < og_model_initializer_count(inf); i++)
            CHECK(strncmp(og_model_initializer_name(inf, i), "og_", 3) != 0);
        const og_tensor *wb = NULL;
        CHECK_OK(og_trainer_get_weight(b, "W2", &wb));
        CHECK(initializer(inf, "W2") && wb && rel_diff(initializer(inf, "W2"), wb) == 0);
    }
    /* prediction needs the features only, and agrees with the normal trainer's */
    {
        og_tensor *x = NULL, *y = NULL, *pb = NULL, *pa = NULL;
        batch(true, 30, &x, &y);
        const og_tensor *in[1] = {x};
        CHECK_OK(og_trainer_predict(b, data_names, in, 1, NULL, &pb));
        og_trainer *a2 = NULL;
        og_model *m2 = NULL, *lm2 = NULL;
        a2 = normal_trainer(&configs[4], true, &m2, &lm2);
        for (int i = 0; a2 && i < og_trainer_weight_count(a2); i++) {
            const og_tensor *w = NULL;
            CHECK_OK(og_trainer_get_weight(b, og_trainer_weight_name(a2, i), &w));
            if (w) CHECK_OK(og_trainer_set_weight(a2, og_trainer_weight_name(a2, i), w));
        }
        if (a2) CHECK_OK(og_trainer_predict(a2, data_names, in, 1, NULL, &pa));
        CHECK(pa && pb && og_tensor_numel(pb) == N * 3 && rel_diff(pa, pb) == 0);
        og_tensor_free(pa);
        og_tensor_free(pb);
        og_trainer_free(a2);
        og_model_free(lm2);
        og_model_free(m2);
        og_tensor_free(x);
        og_tensor_free(y);
    }
    /* og_trainer_fit drives algorithm mode like any trainer */
    {
        og_tensor *x = NULL, *y = NULL;
        og_dataset *ds = NULL;
        batch(true, 40, &x, &y);
        CHECK_OK(og_dataset_from_tensors(x, y, NULL, NULL, &ds));
        og_fit_options fo;
        memset(&fo, 0, sizeof fo);
        fo.epochs = 2;
        fo.batch_size = 8;
        int64_t before = og_trainer_step_count(b);
        if (ds) CHECK_OK(og_trainer_fit(b, ds, &fo));
        CHECK(og_trainer_step_count(b) == before + 4);
        og_dataset_free(ds);
        og_tensor_free(x);
        og_tensor_free(y);
    }
    /* a NaN in the batch: the step fails, nothing changes */
    {
        og_tensor *x = NULL, *y = NULL;
        batch(true, 50, &x, &y);
        ((float *)og_tensor_data(x))[3] = NAN;
        const og_tensor *in[2] = {x, y};
        const og_tensor *w = NULL;
        CHECK_OK(og_trainer_get_weight(b, "W1", &w));
        float before = w ? ((const float *)og_tensor_cdata(w))[0] : 0;
        int64_t steps = og_trainer_step_count(b);
        CHECK(og_trainer_step(b, data_names, in, 2, NULL) == OG_ERR_RUNTIME);
        CHECK(strstr(og_last_error(), "not updated") != NULL);
        CHECK(og_trainer_step_count(b) == steps);
        if (w) CHECK(((const float *)og_tensor_cdata(w))[0] == before);
        og_tensor_free(x);
        og_tensor_free(y);
    }
done:
    og_trainer_free(a);
    og_trainer_free(b);
    og_trainer_free(c);
    og_model_free(inf);
    og_model_free(e);
    og_model_free(e2);
    og_model_free(e3);
    og_model_free(lm);
    og_model_free(m);
}

/* ---- errors ------------------------------------------------------------------------- */

static void test_errors(void)
{
    og_trainer *t = NULL;
    og_model *m = load(BAD_KEY);
    if (m) {
        CHECK(og_trainer_create(m, NULL, NULL, &t) == OG_ERR_MODEL && !t);
        CHECK(strstr(og_last_error(), "'XW'") && strstr(og_last_error(), "not an initializer"));
    }
    og_model_free(m);
    m = load(BAD_OUTPUT);
    if (m) {
        CHECK(og_trainer_create(m, NULL, NULL, &t) == OG_ERR_MODEL && !t);
        CHECK(strstr(og_last_error(), "no output 'W_missing'") != NULL);
    }
    og_model_free(m);
    /* no TrainingInfoProto and no optimizer */
    m = load(LINREG);
    if (m) {
        CHECK(og_trainer_create(m, NULL, NULL, &t) == OG_ERR_INVALID_ARG && !t);
        CHECK(strstr(og_last_error(), "TrainingInfoProto") != NULL);
    }
    og_model_free(m);
    /* a loss that is no scalar */
    m = load(HAND);
    if (m) {
        og_trainer_options to = {0};
        to.loss = "Y";
        CHECK(og_trainer_create(m, NULL, &to, &t) == OG_ERR_SHAPE && !t);
        to.loss = "nope";
        CHECK(og_trainer_create(m, NULL, &to, &t) == OG_ERR_INVALID_ARG && !t);
    }
    og_model_free(m);
    /* warm-ups and clipping need Where: refused below opset 9 */
    m = load(LINREG);
    if (m) {
        og_model *lm = NULL, *e = NULL;
        m->graph->opsets[0].version = 8; /* linreg's ops are the same at opset 8 */
        og_loss_options lo;
        og_loss_options_init(&lo, OG_LOSS_SQUARED);
        CHECK_OK(og_model_add_loss(m, &lo, &lm));
        for (int k = 0; lm && k < 3; k++) {
            og_optimizer_options oo;
            og_optimizer_options_init(&oo, OG_OPTIMIZER_SGD);
            oo.schedule = k == 0 ? OG_LR_COSINE : OG_LR_STEP;
            oo.warmup_steps = 2;
            oo.total_steps = 10;
            oo.clip_norm = k == 1 ? 1.0 : 0.0;
            CHECK_OK(og_trainer_create(lm, &oo, NULL, &t));
            og_status st = t ? og_trainer_export_training_model(t, &e) : OG_ERR_INTERNAL;
            if (k < 2) {
                CHECK(st == OG_ERR_UNSUPPORTED && !e);
                CHECK(strstr(og_last_error(), k == 0 ? "warm-up" : "clipping") != NULL);
                CHECK(strstr(og_last_error(), "opset 8") != NULL);
            } else {
                CHECK(st == OG_OK); /* the step schedule needs no Where */
            }
            og_model_free(e);
            e = NULL;
            og_trainer_free(t);
            t = NULL;
        }
        og_model_free(lm);
    }
    og_model_free(m);
    /* a missing data input names itself */
    m = load(HAND);
    t = m ? algo_trainer(m) : NULL;
    if (t) {
        og_tensor *x = NULL, *y = NULL;
        batch(false, 0, &x, &y);
        const og_tensor *in[1] = {x};
        CHECK(og_trainer_step(t, data_names, in, 1, NULL) == OG_ERR_INVALID_ARG);
        CHECK(strstr(og_last_error(), "label") != NULL);
        CHECK(og_trainer_step_count(t) == 0);
        og_tensor_free(x);
        og_tensor_free(y);
    }
    og_trainer_free(t);
    og_model_free(m);
}

/* ---- float64 weights: the learning rate and the clipping scale are cast ------------- */

static og_tensor *to_f64(const og_tensor *t)
{
    og_tensor *d = NULL;
    CHECK_OK(og_tensor_create(OG_DOUBLE, og_tensor_rank(t), og_tensor_dims(t), NULL, &d));
    for (int64_t i = 0; d && i < og_tensor_numel(t); i++)
        ((double *)og_tensor_data(d))[i] = ((const float *)og_tensor_cdata(t))[i];
    return d;
}

static void test_float64(void)
{
    static const og_optimizer_kind kinds[3] = {OG_OPTIMIZER_SGD, OG_OPTIMIZER_SGD,
                                               OG_OPTIMIZER_ADAMW};
    for (int c = 0; c < 3; c++) {
        og_model *m = load(LINREG), *lm = NULL, *lm64 = NULL, *e = NULL, *end = NULL;
        og_trainer *a = NULL, *b = NULL;
        og_loss_options lo;
        og_loss_options_init(&lo, OG_LOSS_SQUARED);
        if (m) CHECK_OK(og_model_add_loss(m, &lo, &lm));
        if (lm) CHECK_OK(og_model_convert_float64(lm, &lm64));
        og_optimizer_options oo;
        og_optimizer_options_init(&oo, kinds[c]);
        oo.lr = 0.05;
        oo.momentum = c == 1 ? 0.9 : 0;
        oo.clip_norm = 2.0;
        oo.weight_decay = 0.01;
        og_trainer_options to = {0};
        to.threads = 1;
        if (lm64) CHECK_OK(og_trainer_create(lm64, &oo, &to, &a));
        double worst = INFINITY;
        for (int k = 0; a && k < 25; k++) {
            og_tensor *x = NULL, *y = NULL;
            batch(false, k, &x, &y);
            og_tensor *in64[2] = {to_f64(x), to_f64(y)};
            const og_tensor *in[2] = {in64[0], in64[1]};
            if (k == 5) {
                CHECK_OK(og_trainer_export_training_model(a, &e));
                if (e) b = algo_trainer(e);
            }
            CHECK_OK(og_trainer_step(a, data_names, in, 2, NULL));
            if (b) CHECK_OK(og_trainer_step(b, data_names, in, 2, NULL));
            og_tensor_free(in64[0]);
            og_tensor_free(in64[1]);
            og_tensor_free(x);
            og_tensor_free(y);
        }
        if (a && b) CHECK_OK(og_trainer_export_training_model(a, &end));
        if (end) {
            worst = 0;
            for (int i = 0; i < og_trainer_weight_count(b); i++) {
                const og_tensor *wb = NULL, *wa = initializer(end, og_trainer_weight_name(b, i));
                CHECK_OK(og_trainer_get_weight(b, og_trainer_weight_name(b, i), &wb));
                if (wa && wb) worst = fmax(worst, rel_diff(wa, wb));
            }
        }
        printf("float64 %-8s: largest relative difference after 20 steps in each mode %.2e\n",
               c == 0 ? "sgd" : (c == 1 ? "momentum" : "adamw"), worst);
        /* plain SGD is exact; Momentum's alpha and Adam's betas and epsilon are float
         * attributes, so float64 training sees them rounded to float32 */
        CHECK(worst <= (c == 0 ? 1e-6 : 1e-4));
        og_trainer_free(a);
        og_trainer_free(b);
        og_model_free(end);
        og_model_free(e);
        og_model_free(lm64);
        og_model_free(lm);
        og_model_free(m);
    }
}

/* ---- allocation failures -------------------------------------------------------------- */

/* Export from a normal trainer, then train the export in algorithm mode (hand == false), or
 * train the hand-built model in algorithm mode and export it (hand == true), everything
 * through an allocator that fails its fail_at-th request. */
static og_status alloc_attempt(og_test_counting *c, bool hand, const og_tensor *const *in)
{
    og_allocator a = {og_test_malloc, og_test_free, c};
    og_load_options lo = {.allocator = &a};
    og_trainer_options to = {0};
    to.threads = 1;
    to.allocator = &a;
    og_model *m = NULL, *lm = NULL, *e = NULL;
    og_trainer *t = NULL, *u = NULL;
    og_status st = og_model_load_file(hand ? HAND : LINREG, &lo, &m);
    if (!st && hand) {
        st = og_trainer_create(m, NULL, &to, &t);
    } else if (!st) {
        og_loss_options o;
        og_loss_options_init(&o, OG_LOSS_SQUARED);
        og_optimizer_options oo;
        og_optimizer_options_init(&oo, OG_OPTIMIZER_ADAM);
        oo.clip_norm = 1.0;
        st = og_model_add_loss(m, &o, &lm);
        if (!st) st = og_trainer_create(lm, &oo, &to, &t);
    }
    if (!st) st = og_trainer_step(t, data_names, in, 2, NULL);
    if (!st) st = og_trainer_export_training_model(t, &e);
    if (!st && !hand) st = og_trainer_create(e, NULL, &to, &u);
    if (!st && !hand) st = og_trainer_step(u, data_names, in, 2, NULL);
    og_trainer_free(u);
    og_trainer_free(t);
    og_model_free(e);
    og_model_free(lm);
    og_model_free(m);
    return st;
}

static void test_alloc_failures(void)
{
    og_tensor *x = NULL, *y = NULL;
    batch(false, 0, &x, &y);
    const og_tensor *in[2] = {x, y};
    for (int hand = 0; hand < 2; hand++) {
        og_test_counting c = {0, -1, 0};
        CHECK_OK(alloc_attempt(&c, hand, in));
        long total = c.calls, tried = 0, nomem = 0;
        /* every request among the first 400, then a sample of the rest */
        for (long n = 0; n < total; n += n < 400 ? 1 : 13) {
            og_test_counting f = {0, n, 0};
            og_status st = alloc_attempt(&f, hand, in);
            tried++;
            nomem += st == OG_ERR_NOMEM;
            CHECK(f.live == 0);
            /* OK: a cache that does without (the session's buffer pool); UNSUPPORTED: the
             * gradient emitter's og_gb_scalar reports a failed tensor as "cannot make" */
            CHECK(st == OG_OK || st == OG_ERR_NOMEM || st == OG_ERR_UNSUPPORTED);
            if (getenv("OG_DEBUG_ALLOC") && st != OG_ERR_NOMEM)
                fprintf(stderr, "request %ld: %s: %s\n", n, og_status_name(st), og_last_error());
            if (f.live != 0)
                fprintf(stderr, "failing request %ld: %s, %ld blocks leaked\n", n,
                        og_status_name(st), f.live);
        }
        printf("allocation failures (%s): %ld requests in all, %ld failed on purpose, "
               "%ld reported as OG_ERR_NOMEM, none leaked\n",
               hand ? "hand-built model" : "export and algorithm mode", total, tried, nomem);
    }
    og_tensor_free(x);
    og_tensor_free(y);
}

int main(void)
{
    const char *dir = getenv("OG_TRAINING_INFO_DIR");
    if (dir && dir[0])
        snprintf(out_dir, sizeof out_dir, "%s", dir);
    else
        og_test_out(out_dir, sizeof out_dir, "training_info");
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot create %s\n", out_dir);
        return 1;
    }
    test_roundtrip();
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        test_agreement(&configs[i], false);
        test_agreement(&configs[i], true);
    }
    test_hand_built();
    test_algo_mode_more();
    test_errors();
    test_float64();
    test_alloc_failures();
    TEST_DONE();
}
