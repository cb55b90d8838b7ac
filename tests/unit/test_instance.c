/* Gradient instances: training forward + backward equals the one-shot og_grad_run,
 * several forwards may be pending (LIFO), bad calls fail clearly, inference goes through
 * the eval graph, and instances of one gradient object run in parallel threads. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
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

/* An allocator that counts the bytes requested and the blocks alive. */
typedef struct counting {
    size_t bytes;
    long live;
} counting;

static void *count_malloc(void *user, size_t size)
{
    counting *c = user;
    c->bytes += size;
    c->live++;
    return malloc(size);
}

static void count_free(void *user, void *p)
{
    counting *c = user;
    if (p) c->live--;
    free(p);
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

    /* bound calls: tensors bound once per slot; a training forward keeps views of what its
     * backward reads, so rebinding a slot before the backward does not change its result */
    {
        CHECK_OK(og_grad_new_instance(g, &inst));
        CHECK(og_instance_slot_count(inst) == 5);
        CHECK(strcmp(og_instance_slot_name(inst, 0), "x") == 0);
        CHECK(strcmp(og_instance_slot_name(inst, 3), "W2") == 0);
        CHECK(og_instance_slot_name(inst, 5) == NULL);
        og_tensor *extra = NULL;
        CHECK_OK(og_tensor_create(OG_FLOAT, 2, sd, NULL, &extra));
        CHECK(og_instance_bind(inst, 0, 5, extra) == OG_ERR_INVALID_ARG); /* freed: no leak */
        CHECK(strstr(og_last_error(), "slot") != NULL);
        /* the caller's memory, wrapped: x, x2, and W2 overridden with its own value */
        size_t nx = og_tensor_nbytes(x);
        float *mx = malloc(nx), *mx2 = malloc(nx);
        const og_tensor *w2now = NULL;
        CHECK_OK(og_grad_get_weight(g, "W2", &w2now));
        size_t nw = og_tensor_nbytes(w2now);
        float *mw = malloc(nw);
        memcpy(mx, og_tensor_cdata(x), nx);
        memcpy(mx2, og_tensor_cdata(x2), nx);
        memcpy(mw, og_tensor_cdata(w2now), nw);
        og_tensor *bx = NULL, *bx2 = NULL, *bw = NULL, *bs = NULL;
        CHECK_OK(og_tensor_wrap(OG_FLOAT, og_tensor_rank(x), og_tensor_dims(x), mx, nx, NULL, &bx));
        CHECK_OK(
            og_tensor_wrap(OG_FLOAT, og_tensor_rank(x), og_tensor_dims(x), mx2, nx, NULL, &bx2));
        CHECK_OK(og_tensor_wrap(OG_FLOAT, og_tensor_rank(w2now), og_tensor_dims(w2now), mw, nw,
                                NULL, &bw));
        CHECK_OK(og_tensor_from_data(OG_FLOAT, 2, sd, og_tensor_cdata(seed), og_tensor_nbytes(seed),
                                     NULL, &bs));
        CHECK_OK(og_instance_bind(inst, 0, 0, bx));
        CHECK_OK(og_instance_bind(inst, 0, 3, bw));
        CHECK_OK(og_instance_bind(inst, 1, 0, bs));
        og_tensor *yb1 = NULL, *yb2 = NULL, *gb[8] = {0};
        int64_t info[8 * OG_TENSOR_INFO_SIZE];
        CHECK_OK(og_instance_forward_bound(inst, 1, &yb1, info, NULL, 0));
        CHECK(max_diff(yb1, y_ref) == 0.0f);
        CHECK(info[0] == (int64_t)(intptr_t)og_tensor_cdata(yb1) && info[1] == OG_FLOAT &&
              info[2] == 2 && info[3] == 4 && info[4] == 3 && info[5] == 0);
        /* the same forward by name copies the overriding weight into the state: count the
         * bytes the instance allocates (a counting allocator on a second gradient object) */
        {
            counting ca = {0};
            og_allocator al = {count_malloc, count_free, &ca};
            og_grad_options co = {0};
            co.threads = 1;
            co.allocator = &al;
            og_grad *gc = NULL;
            og_instance *ic = NULL;
            CHECK_OK(og_grad_create(m, &co, &gc));
            CHECK_OK(og_grad_new_instance(gc, &ic));
            og_tensor *cx = NULL, *cw = NULL, *yc = NULL, *gc5[8] = {0};
            CHECK_OK(
                og_tensor_wrap(OG_FLOAT, og_tensor_rank(x), og_tensor_dims(x), mx, nx, NULL, &cx));
            CHECK_OK(og_tensor_wrap(OG_FLOAT, og_tensor_rank(w2now), og_tensor_dims(w2now), mw, nw,
                                    NULL, &cw));
            const char *nw2[] = {"x", "W2"};
            const og_tensor *byname[] = {cx, cw};
            size_t b0 = ca.bytes;
            CHECK_OK(og_instance_forward(ic, nw2, byname, 2, 1, &yc));
            size_t by_name = ca.bytes - b0;
            og_tensor_free(yc);
            CHECK_OK(og_instance_backward(ic, NULL, gc5));
            for (int k = 0; k < 8; k++) og_tensor_free(gc5[k]);
            CHECK_OK(og_instance_bind(ic, 0, 0, cx));
            CHECK_OK(og_instance_bind(ic, 0, 3, cw));
            b0 = ca.bytes;
            CHECK_OK(og_instance_forward_bound(ic, 1, &yc, NULL, NULL, 0));
            size_t bound = ca.bytes - b0;
            printf("training forward allocations: %zu bytes by name with W2 given, %zu bound\n",
                   by_name, bound);
            CHECK(by_name >= bound + nw + nx); /* W2 and x copied by name, viewed when bound */
            og_tensor_free(yc);
            og_instance_free(ic);
            og_grad_free(gc);
            CHECK(ca.live == 0);
        }
        /* rebind x (the old tensor is freed by the instance; the pending state keeps a view
         * of its memory), forward again: two pending, popped newest first */
        CHECK_OK(og_instance_bind(inst, 0, 0, bx2));
        CHECK_OK(og_instance_forward_bound(inst, 1, &yb2, NULL, NULL, 0));
        CHECK(og_instance_pending(inst) == 2);
        CHECK_OK(og_instance_backward_bound(inst, gb, info, NULL, 0));
        for (int k = 0; k < nr; k++) CHECK(max_diff(gb[k], ref2[k]) == 0.0f);
        CHECK(info[OG_TENSOR_INFO_SIZE + 1] == OG_FLOAT);
        for (int k = 0; k < 8; k++) og_tensor_free(gb[k]);
        /* the small results into the caller's block: NULL results, info pointing there */
        _Alignas(64) float blk[256];
        CHECK_OK(og_instance_backward_bound(inst, gb, info, blk, sizeof blk));
        for (int k = 0; k < nr; k++) {
            const og_tensor *r = ref1[k];
            const float *at = (const float *)(intptr_t)info[k * OG_TENSOR_INFO_SIZE];
            bool in_block = gb[k] == NULL && at >= blk && at < blk + 256;
            CHECK(in_block || (k >= 1 && gb[k] != NULL)); /* W1 (8x16) may not fit */
            const float *v = gb[k] ? og_tensor_cdata(gb[k]) : at;
            float d = 0;
            for (int64_t i = 0; i < og_tensor_numel(r); i++)
                d = fmaxf(d, fabsf(v[i] - ((const float *)og_tensor_cdata(r))[i]));
            CHECK(d == 0.0f && info[k * OG_TENSOR_INFO_SIZE + 2] == og_tensor_rank(r));
        }
        CHECK(gb[0] == NULL); /* x's gradient (4x8 floats) comes first and fits */
        for (int k = 0; k < 8; k++) og_tensor_free(gb[k]);
        CHECK(og_instance_backward_bound(inst, gb, NULL, NULL, 0) == OG_ERR_INVALID_ARG);
        /* unbound seed: ones; unbound weight: its current value; inference */
        CHECK_OK(og_instance_bind(inst, 1, 0, NULL));
        CHECK_OK(og_instance_bind(inst, 0, 3, NULL));
        og_tensor *yb3 = NULL;
        CHECK_OK(og_instance_forward_bound(inst, 0, &yb3, NULL, NULL, 0));
        CHECK(max_diff(yb3, y2) == 0.0f);
        og_tensor_free(yb3);
        /* a pending bound forward is freed with the instance */
        CHECK_OK(og_instance_forward_bound(inst, 1, &yb3, NULL, NULL, 0));
        og_tensor_free(yb3);
        og_instance_free(inst);
        inst = NULL;
        og_tensor_free(yb1);
        og_tensor_free(yb2);
        free(mx);
        free(mx2);
        free(mw);
        /* og_tensor_info: NULL entries give zeros */
        const og_tensor *two[] = {NULL, x};
        int64_t ti[2 * OG_TENSOR_INFO_SIZE];
        memset(ti, 0xff, sizeof ti);
        og_tensor_info(two, 2, ti);
        CHECK(ti[0] == 0 && ti[1] == 0 && ti[2] == 0 && ti[OG_TENSOR_INFO_SIZE + 2] == 2);
    }

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
    {
        /* the gradient object's own session, which ran with the old W2 above, too: nothing
         * a kernel derived from the old weights (og_kcache) may stay */
        og_tensor *yg = NULL, *rg[8] = {0};
        CHECK_OK(og_grad_run(g, names, (const og_tensor *const *)&x, 1, seeds, &yg, rg));
        if (yg) {
            const float *p = og_tensor_cdata(yg);
            CHECK(p[0] == p[3] && p[1] == p[4] && p[2] == p[8]);
        }
        og_tensor_free(yg);
        for (int k = 0; k < 8; k++) og_tensor_free(rg[k]);
    }
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
