/* Gradient instances: training forward + backward equals the one-shot og_grad_run,
 * several forwards may be pending (LIFO), bad calls fail clearly, inference goes through
 * the eval graph, and instances of one gradient object run in parallel threads. */
#include <math.h>
#include <string.h>

#include "test.h"
#include "test_thread.h"

static float max_diff(const og_tensor *a, const og_tensor *b)
{
    if (!a || !b || og_tensor_numel(a) != og_tensor_numel(b)) return INFINITY;
    const float *x = og_tensor_cdata(a), *y = og_tensor_cdata(b);
    float m = 0;
    for (int64_t i = 0; i < og_tensor_numel(a); i++) m = fmaxf(m, fabsf(x[i] - y[i]));
    return m;
}

static og_tensor *scaled(const og_tensor *x, float s)
{
    og_tensor *t = NULL;
    og_tensor_from_data(og_tensor_dtype(x), og_tensor_rank(x), og_tensor_dims(x),
                        og_tensor_cdata(x), og_tensor_nbytes(x), NULL, &t);
    float *d = og_tensor_data(t);
    for (int64_t i = 0; i < og_tensor_numel(t); i++) d[i] *= s;
    return t;
}

typedef struct job {
    og_grad *g;
    const og_tensor *x, *seed;
    og_tensor *const *want; /* reference gradients */
    int n_res, bad;
} job;

static int worker(void *arg)
{
    job *j = arg;
    og_instance *inst = NULL;
    const char *names[] = {"x"};
    if (og_grad_new_instance(j->g, &inst)) return j->bad = 1000, 0;
    for (int r = 0; r < 50; r++) {
        og_tensor *y = NULL, *gr[8] = {0};
        if (og_instance_forward(inst, names, &j->x, 1, 1, &y) ||
            og_instance_backward(inst, &j->seed, gr))
            j->bad++;
        for (int k = 0; k < j->n_res; k++)
            if (max_diff(gr[k], j->want[k]) != 0.0f) j->bad++;
        og_tensor_free(y);
        for (int k = 0; k < 8; k++) og_tensor_free(gr[k]);
    }
    og_instance_free(inst);
    return 0;
}

int main(void)
{
    og_model *m = NULL;
    og_grad *g = NULL;
    og_instance *inst = NULL;
    og_tensor *x = NULL;
    CHECK_OK(og_model_load_file("models/mlp.onnx", NULL, &m));
    CHECK_OK(og_npy_load("models/mlp_x.npy", NULL, &x));
    if (!m || !x) TEST_DONE();
    /* bad configurations: named clearly, nothing created */
    {
        og_grad *bad = NULL;
        og_grad_options ob = {0};
        const char *rep[] = {"W1", "W1"}, *unk[] = {"W9"}, *in_bad[] = {"W1"}, *out_bad[] = {"x"};
        ob.weights = rep;
        ob.n_weights = 2;
        CHECK(og_grad_create(m, &ob, &bad) == OG_ERR_INVALID_ARG && bad == NULL);
        CHECK(strstr(og_last_error(), "twice") != NULL);
        ob.weights = unk;
        ob.n_weights = 1;
        CHECK(og_grad_create(m, &ob, &bad) == OG_ERR_INVALID_ARG);
        CHECK(strstr(og_last_error(), "'W9'") && strstr(og_last_error(), "'b2'"));
        ob.weights = NULL;
        ob.inputs = in_bad;
        ob.n_inputs = 1;
        CHECK(og_grad_create(m, &ob, &bad) == OG_ERR_INVALID_ARG);
        ob.inputs = NULL;
        ob.outputs = out_bad;
        ob.n_outputs = 1;
        CHECK(og_grad_create(m, &ob, &bad) == OG_ERR_INVALID_ARG);
        CHECK(og_grad_create(NULL, &ob, &bad) == OG_ERR_INVALID_ARG);
        og_grad_options oc = {0};
        oc.device = OG_DEVICE_CUDA;
        CHECK(og_grad_create(m, &oc, &bad) == OG_ERR_UNSUPPORTED && bad == NULL);
    }
    og_grad_options o = {0};
    o.threads = 1;
    CHECK_OK(og_grad_create(m, &o, &g));
    if (!g) TEST_DONE();
    int nr = og_grad_input_count(g) + og_grad_weight_count(g);
    CHECK(nr == 5);
    const char *names[] = {"x"};
    og_tensor *x2 = scaled(x, -0.5f);
    int64_t sd[2] = {4, 3};
    og_tensor *seed = NULL;
    CHECK_OK(og_tensor_create(OG_FLOAT, 2, sd, NULL, &seed));
    for (int i = 0; i < 12; i++) ((float *)og_tensor_data(seed))[i] = (float)(i % 5) - 2.0f;

    /* references from the one-shot API */
    og_tensor *y_ref = NULL, *ref1[8] = {0}, *ref2[8] = {0}, *tmp = NULL;
    const og_tensor *seeds[] = {seed};
    CHECK_OK(og_grad_run(g, names, (const og_tensor *const *)&x, 1, seeds, &y_ref, ref1));
    CHECK_OK(og_grad_run(g, names, (const og_tensor *const *)&x2, 1, seeds, &tmp, ref2));
    og_tensor_free(tmp);

    CHECK_OK(og_grad_new_instance(g, &inst));
    og_tensor *y1 = NULL, *y2 = NULL, *g1[8] = {0}, *g2[8] = {0};
    /* two pending forwards; backward pops the newest first */
    CHECK_OK(og_instance_forward(inst, names, (const og_tensor *const *)&x, 1, 1, &y1));
    CHECK(og_instance_pending(inst) == 1 && og_instance_saved_bytes(inst) > 0);
    size_t one = og_instance_saved_bytes(inst);
    CHECK_OK(og_instance_forward(inst, names, (const og_tensor *const *)&x2, 1, 1, &y2));
    CHECK(og_instance_pending(inst) == 2 && og_instance_saved_bytes(inst) == 2 * one);
    printf("saved state: %zu bytes per training forward\n", one);
    CHECK(max_diff(y1, y_ref) == 0.0f);
    CHECK_OK(og_instance_backward(inst, seeds, g2));
    CHECK_OK(og_instance_backward(inst, seeds, g1));
    CHECK(og_instance_pending(inst) == 0 && og_instance_saved_bytes(inst) == 0);
    for (int k = 0; k < nr; k++) {
        CHECK(max_diff(g1[k], ref1[k]) == 0.0f);
        CHECK(max_diff(g2[k], ref2[k]) == 0.0f);
    }
    /* backward with nothing pending, and with a misshapen or mistyped gradient */
    og_tensor *gx[8] = {0};
    CHECK(og_instance_backward(inst, seeds, gx) == OG_ERR_INVALID_ARG);
    CHECK(strstr(og_last_error(), "pending") != NULL);
    og_tensor *y3 = NULL, *bad = NULL;
    int64_t bd[2] = {1, 3};
    CHECK_OK(og_instance_forward(inst, names, (const og_tensor *const *)&x, 1, 1, &y3));
    CHECK_OK(og_tensor_create(OG_FLOAT, 2, bd, NULL, &bad));
    const og_tensor *bads[] = {bad};
    CHECK(og_instance_backward(inst, bads, gx) == OG_ERR_SHAPE);
    CHECK(strstr(og_last_error(), "probs") != NULL);
    og_tensor_free(bad);
    CHECK_OK(og_tensor_create(OG_DOUBLE, 2, sd, NULL, &bad));
    bads[0] = bad;
    CHECK(og_instance_backward(inst, bads, gx) == OG_ERR_TYPE);
    CHECK(og_instance_pending(inst) == 1);          /* a failed backward keeps the state */
    CHECK_OK(og_instance_backward(inst, NULL, gx)); /* ones */
    for (int k = 0; k < 8; k++) og_tensor_free(gx[k]);
    og_tensor_free(bad);
    og_tensor_free(y3);
    /* inference */
    og_tensor *yi = NULL;
    CHECK_OK(og_instance_forward(inst, names, (const og_tensor *const *)&x, 1, 0, &yi));
    CHECK(max_diff(yi, y_ref) < 1e-6f && og_instance_pending(inst) == 0);
    og_tensor_free(yi);
    /* a missing input: a clear error naming it, in training and inference mode */
    for (int training = 0; training < 2; training++) {
        CHECK(og_instance_forward(inst, NULL, NULL, 0, training, &yi) == OG_ERR_INVALID_ARG);
        CHECK(strstr(og_last_error(), "missing") != NULL);
        CHECK(og_instance_pending(inst) == 0);
    }
    /* a forward left pending is freed with the instance (checked by the leak sanitizer) */
    CHECK_OK(og_instance_forward(inst, names, (const og_tensor *const *)&x, 1, 1, &yi));
    og_tensor_free(yi);
    og_instance_free(inst);

    /* instances of one gradient object in parallel threads */
    enum { N = 3 };
    test_thread th[N];
    job jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (job){g, x, seed, ref1, nr, 0};
        CHECK(test_thread_start(&th[i], worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < N; i++) {
        test_thread_join(&th[i]);
        CHECK(jobs[i].bad == 0);
    }

    /* save and reload without the model: the reloaded object gives the same gradients */
    {
        void *bytes = NULL;
        size_t n_bytes = 0;
        og_grad *gl = NULL;
        og_tensor *yy = NULL, *rr[8] = {0};
        CHECK_OK(og_grad_save_buffer(g, &bytes, &n_bytes));
        og_grad_options lo = {0};
        lo.threads = 1;
        CHECK_OK(og_grad_load_buffer(bytes, n_bytes, &lo, &gl));
        if (gl) {
            CHECK(og_grad_weight_count(gl) == og_grad_weight_count(g));
            CHECK(strcmp(og_grad_weight_name(gl, 0), og_grad_weight_name(g, 0)) == 0);
            CHECK_OK(og_grad_run(gl, names, (const og_tensor *const *)&x, 1, seeds, &yy, rr));
            for (int k = 0; k < nr; k++) CHECK(max_diff(rr[k], ref1[k]) == 0.0f);
        }
        og_tensor_free(yy);
        for (int k = 0; k < 8; k++) og_tensor_free(rr[k]);
        og_grad_free(gl);
        og_grad_buffer_free(g, bytes);
        /* a plain model is not a saved gradient object */
        void *plain = NULL;
        size_t n_plain = 0;
        CHECK_OK(og_model_save_buffer(m, &plain, &n_plain));
        CHECK(og_grad_load_buffer(plain, n_plain, NULL, &gl) == OG_ERR_MODEL && gl == NULL);
        og_model_buffer_free(m, plain);
    }

    /* weights by name: read, write (shape and type checked), and the next run uses them */
    const og_tensor *w2 = NULL;
    CHECK_OK(og_grad_get_weight(g, "W2", &w2));
    CHECK(w2 && og_tensor_rank(w2) == 2 && og_tensor_dims(w2)[1] == 3);
    const og_tensor *none = w2;
    CHECK(og_grad_get_weight(g, "nope", &none) == OG_ERR_INVALID_ARG && none == NULL);
    og_tensor *zero_w = NULL, *wrong_w = NULL, *yz = NULL;
    CHECK_OK(og_tensor_create(OG_FLOAT, og_tensor_rank(w2), og_tensor_dims(w2), NULL, &zero_w));
    CHECK_OK(og_tensor_create(OG_FLOAT, 1, sd, NULL, &wrong_w));
    CHECK(og_grad_set_weight(g, "W2", wrong_w) == OG_ERR_SHAPE);
    CHECK_OK(og_grad_set_weight(g, "W2", zero_w));
    CHECK_OK(og_grad_new_instance(g, &inst));
    CHECK_OK(og_instance_forward(inst, names, (const og_tensor *const *)&x, 1, 0, &yz));
    /* W2 = 0: the logits are b2 for every row, so every row of probs is the same */
    if (yz) {
        const float *p = og_tensor_cdata(yz);
        CHECK(p[0] == p[3] && p[1] == p[4] && p[2] == p[8]);
    }
    og_tensor_free(yz);
    og_instance_free(inst);
    og_tensor_free(zero_w);
    og_tensor_free(wrong_w);

    og_tensor_free(y1);
    og_tensor_free(y2);
    og_tensor_free(y_ref);
    for (int k = 0; k < 8; k++) {
        og_tensor_free(g1[k]);
        og_tensor_free(g2[k]);
        og_tensor_free(ref1[k]);
        og_tensor_free(ref2[k]);
    }
    og_tensor_free(seed);
    og_tensor_free(x2);
    og_tensor_free(x);
    og_grad_free(g);
    og_model_free(m);
    TEST_DONE();
}
