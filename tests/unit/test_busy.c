/* A handle used from two threads at once: the second call fails at once with OG_ERR_BUSY,
 * and the first one finishes with the right result.  The overlap is made certain, not
 * hoped for: the handle's allocator stops the first call inside its run (at an allocation
 * the run makes) until the main thread has made its call.  Covers sessions, og_grad_run,
 * instances (and og_grad_set_weight while one runs) and trainers. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "test.h"
#include "test_thread.h"

/* An allocator that, once armed, holds the next allocation until released. */
typedef struct gate {
    atomic_int armed;
    pthread_mutex_t m;
    pthread_cond_t c;
    int inside, released;
} gate;

static void *gate_malloc(void *user, size_t size)
{
    gate *g = user;
    if (atomic_exchange(&g->armed, 0)) {
        pthread_mutex_lock(&g->m);
        g->inside = 1;
        pthread_cond_broadcast(&g->c);
        while (!g->released) pthread_cond_wait(&g->c, &g->m);
        pthread_mutex_unlock(&g->m);
    }
    return malloc(size);
}

static void gate_free(void *user, void *p)
{
    (void)user;
    free(p);
}

static gate G;
static const og_allocator gate_alloc = {gate_malloc, gate_free, &G};

static void gate_arm(void)
{
    pthread_mutex_lock(&G.m);
    G.inside = G.released = 0;
    pthread_mutex_unlock(&G.m);
    atomic_store(&G.armed, 1);
}

static void gate_wait_inside(void)
{
    pthread_mutex_lock(&G.m);
    while (!G.inside) pthread_cond_wait(&G.c, &G.m);
    pthread_mutex_unlock(&G.m);
}

static void gate_release(void)
{
    pthread_mutex_lock(&G.m);
    G.released = 1;
    pthread_cond_broadcast(&G.c);
    pthread_mutex_unlock(&G.m);
}

/* ---- the calls the first thread makes ------------------------------------------------- */

typedef struct call {
    int kind; /* 0 session run, 1 og_grad_run, 2 instance forward, 3 trainer step */
    og_session *s;
    og_grad *g;
    og_instance *inst;
    og_trainer *t;
    const og_tensor *x, *label;
    og_status st;
    og_tensor *out[8];
} call;

static const char *x_name[] = {"x"};
static const char *xl_names[] = {"x", "label"};

static int first(void *arg)
{
    call *c = arg;
    og_tensor *grads[8] = {0};
    const og_tensor *xl[2] = {c->x, c->label};
    double loss;
    switch (c->kind) {
    case 0: c->st = og_session_run(c->s, x_name, &c->x, 1, c->out); break;
    case 1: c->st = og_grad_run(c->g, x_name, &c->x, 1, NULL, c->out, grads); break;
    case 2: c->st = og_instance_forward(c->inst, x_name, &c->x, 1, 1, c->out); break;
    case 3: c->st = og_trainer_step(c->t, xl_names, xl, 2, &loss); break;
    }
    for (int i = 0; i < 8; i++) og_tensor_free(grads[i]);
    return 0;
}

/* Start c in a thread, wait until it is inside its run, call `second`, let c finish. */
static og_status overlap(call *c, og_status (*second)(call *), og_status *second_st)
{
    test_thread th;
    gate_arm();
    if (test_thread_start(&th, first, c) != 0) return OG_ERR_INTERNAL;
    gate_wait_inside();
    *second_st = second(c);
    const char *msg = og_last_error();
    CHECK(strstr(msg, "another thread") != NULL);
    gate_release();
    test_thread_join(&th);
    return c->st;
}

static og_status second_run(call *c)
{
    og_tensor *y = NULL;
    og_status st = og_session_run(c->s, x_name, &c->x, 1, &y);
    CHECK(y == NULL);
    return st;
}

static og_status second_grad_run(call *c)
{
    og_tensor *outs[4] = {0}, *grads[8] = {0};
    og_status st = og_grad_run(c->g, x_name, &c->x, 1, NULL, outs, grads);
    CHECK(outs[0] == NULL && grads[0] == NULL);
    return st;
}

static og_status second_forward(call *c)
{
    og_tensor *outs[4] = {0};
    return og_instance_forward(c->inst, x_name, &c->x, 1, 1, outs);
}

static og_status second_bind(call *c) { return og_instance_bind(c->inst, 0, 0, NULL); }

static og_status second_forward_bound(call *c)
{
    og_tensor *outs[4] = {0};
    og_status st = og_instance_forward_bound(c->inst, 1, outs, NULL, NULL, 0);
    CHECK(outs[0] == NULL);
    return st;
}

static og_status second_backward_bound(call *c)
{
    og_tensor *grads[8] = {0};
    og_status st = og_instance_backward_bound(c->inst, grads, NULL, NULL, 0);
    CHECK(grads[0] == NULL);
    return st;
}

static og_status second_set_weight(call *c)
{
    const og_tensor *w = NULL;
    og_grad_get_weight(c->g, og_grad_weight_name(c->g, 0), &w);
    return og_grad_set_weight(c->g, og_grad_weight_name(c->g, 0), w);
}

static og_status second_step(call *c)
{
    const og_tensor *xl[2] = {c->x, c->label};
    double loss;
    return og_trainer_step(c->t, xl_names, xl, 2, &loss);
}

static og_status second_predict(call *c)
{
    og_tensor *y = NULL;
    return og_trainer_predict(c->t, x_name, &c->x, 1, NULL, &y);
}

int main(void)
{
    pthread_mutex_init(&G.m, NULL);
    pthread_cond_init(&G.c, NULL);
    og_model *m = NULL, *lm = NULL;
    og_tensor *x = NULL, *want = NULL, *label = NULL;
    og_load_options lo = {0};
    lo.allocator = &gate_alloc;
    CHECK_OK(og_model_load_file("models/mlp.onnx", &lo, &m));
    CHECK_OK(og_npy_load("models/mlp_x.npy", NULL, &x));
    if (!m || !x) TEST_DONE();
    og_session_options so = {0};
    so.threads = 1;
    og_session *s = NULL;
    CHECK_OK(og_session_create(m, &so, &s));
    CHECK_OK(og_session_run(s, x_name, (const og_tensor *const *)&x, 1, &want));

    /* a session: the second run is refused, the first one's result is right */
    call c = {0};
    c.kind = 0;
    c.s = s;
    c.x = x;
    og_status second = OG_OK;
    CHECK_OK(overlap(&c, second_run, &second));
    CHECK(second == OG_ERR_BUSY);
    CHECK(c.out[0] &&
          memcmp(og_tensor_cdata(c.out[0]), og_tensor_cdata(want), og_tensor_nbytes(want)) == 0);
    og_tensor_free(c.out[0]);
    /* and the session works normally afterwards */
    og_tensor *y = NULL;
    CHECK_OK(og_session_run(s, x_name, (const og_tensor *const *)&x, 1, &y));
    og_tensor_free(y);
    og_session_free(s);

    /* a gradient object: og_grad_run twice, set_weight during a run, set_weight during an
     * instance's forward, a second forward on the same instance */
    og_grad_options go = {0};
    go.threads = 1;
    og_grad *g = NULL;
    CHECK_OK(og_grad_create(m, &go, &g));
    og_instance *inst = NULL;
    if (g) CHECK_OK(og_grad_new_instance(g, &inst));
    if (g && inst) {
        c = (call){0};
        c.kind = 1;
        c.g = g;
        c.x = x;
        CHECK_OK(overlap(&c, second_grad_run, &second));
        CHECK(second == OG_ERR_BUSY);
        CHECK(c.out[0] != NULL);
        og_tensor_free(c.out[0]);
        c.out[0] = NULL;
        CHECK_OK(overlap(&c, second_set_weight, &second));
        CHECK(second == OG_ERR_BUSY);
        og_tensor_free(c.out[0]);
        c = (call){0};
        c.kind = 2;
        c.g = g;
        c.inst = inst;
        c.x = x;
        CHECK_OK(overlap(&c, second_forward, &second));
        CHECK(second == OG_ERR_BUSY);
        CHECK(og_instance_pending(inst) == 1); /* the refused forward pushed nothing */
        og_tensor_free(c.out[0]);
        c.out[0] = NULL;
        /* the bound calls (one slot table and scratch per instance) are refused the same */
        og_status (*bound[3])(call *) = {second_bind, second_forward_bound, second_backward_bound};
        for (int k = 0; k < 3; k++) {
            CHECK_OK(overlap(&c, bound[k], &second));
            CHECK(second == OG_ERR_BUSY);
            og_tensor_free(c.out[0]);
            c.out[0] = NULL;
        }
        CHECK(og_instance_pending(inst) == 4); /* nor did the bound ones pop or push */
        CHECK_OK(overlap(&c, second_set_weight, &second));
        CHECK(second == OG_ERR_BUSY);
        og_tensor_free(c.out[0]);
        CHECK(og_instance_pending(inst) == 5);
        /* with nothing running, set_weight goes through */
        const og_tensor *w = NULL;
        CHECK_OK(og_grad_get_weight(g, og_grad_weight_name(g, 0), &w));
        CHECK_OK(og_grad_set_weight(g, og_grad_weight_name(g, 0), w));
    }
    og_instance_free(inst);
    og_grad_free(g);

    /* a trainer: a step while a step runs, a predict while a step runs */
    og_loss_options loss;
    og_loss_options_init(&loss, OG_LOSS_SQUARED);
    CHECK_OK(og_model_add_loss(m, &loss, &lm));
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, OG_OPTIMIZER_SGD);
    og_trainer_options to = {0};
    to.threads = 1;
    to.allocator = &gate_alloc;
    og_trainer *t = NULL;
    if (lm) CHECK_OK(og_trainer_create(lm, &oo, &to, &t));
    const int64_t *xd = og_tensor_dims(x);
    int64_t ld[2] = {xd[0], 3};
    CHECK_OK(og_tensor_create(OG_FLOAT, 2, ld, NULL, &label));
    if (t && label) {
        c = (call){0};
        c.kind = 3;
        c.t = t;
        c.x = x;
        c.label = label;
        CHECK_OK(overlap(&c, second_step, &second));
        CHECK(second == OG_ERR_BUSY);
        CHECK(og_trainer_step_count(t) == 1);
        CHECK_OK(overlap(&c, second_predict, &second));
        CHECK(second == OG_ERR_BUSY);
        CHECK(og_trainer_step_count(t) == 2);
    }
    og_trainer_free(t);
    og_tensor_free(label);
    og_model_free(lm);
    og_tensor_free(want);
    og_tensor_free(x);
    og_model_free(m);
    TEST_DONE();
}
