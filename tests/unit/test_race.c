/* Handles shared between threads the way the header allows, with 2 and then 8 threads, for
 * ThreadSanitizer (`make tsan` runs this test under it) and as a plain test elsewhere:
 *  - one session called from every thread at once: each call either runs (and gives the
 *    single-threaded result) or is refused with OG_ERR_BUSY, and at least one runs;
 *  - one session per thread over one shared model;
 *  - one gradient object, one instance per thread: training forward + backward give the
 *    reference gradients; og_grad_run from every thread at once (runs or OG_ERR_BUSY);
 *  - trainers side by side over one loss model, each equal to the same steps run alone.
 * Sessions run single-threaded inside (threads = 1): the OpenMP runtime is not built with
 * ThreadSanitizer, and onnxgrad's own synchronisation is what this test checks. */
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "test.h"
#include "test_thread.h"

enum { ROUNDS = 100, MAX_THREADS = 8 };

static og_model *model, *loss_model;
static og_tensor *x, *label, *want, *want_grads[8];
static og_session *shared;
static og_grad *grad;
static int n_res;
static atomic_int ran, busy, bad, waiting;

/* every thread starts its calls at once */
static void start_together(void)
{
    atomic_fetch_sub(&waiting, 1);
    while (atomic_load(&waiting) > 0) test_thread_yield();
}
static const char *x_name[] = {"x"};

static bool same(const og_tensor *a, const og_tensor *b)
{
    return a && b && og_tensor_nbytes(a) == og_tensor_nbytes(b) &&
           memcmp(og_tensor_cdata(a), og_tensor_cdata(b), og_tensor_nbytes(a)) == 0;
}

static int shared_session(void *arg)
{
    (void)arg;
    start_together();
    for (int r = 0; r < ROUNDS; r++) {
        og_tensor *y = NULL;
        og_status st = og_session_run(shared, x_name, (const og_tensor *const *)&x, 1, &y);
        if (st == OG_OK && same(y, want))
            atomic_fetch_add(&ran, 1);
        else if (st == OG_ERR_BUSY && !y)
            atomic_fetch_add(&busy, 1);
        else
            atomic_fetch_add(&bad, 1);
        og_tensor_free(y);
    }
    return 0;
}

static int own_session(void *arg)
{
    (void)arg;
    start_together();
    og_session_options so = {0};
    so.threads = 1;
    og_session *s = NULL;
    if (og_session_create(model, &so, &s)) {
        atomic_fetch_add(&bad, 1);
        return 0;
    }
    for (int r = 0; r < ROUNDS; r++) {
        og_tensor *y = NULL;
        if (og_session_run(s, x_name, (const og_tensor *const *)&x, 1, &y) || !same(y, want))
            atomic_fetch_add(&bad, 1);
        og_tensor_free(y);
    }
    og_session_free(s);
    return 0;
}

static int instance(void *arg)
{
    (void)arg;
    start_together();
    og_instance *inst = NULL;
    if (og_grad_new_instance(grad, &inst)) {
        atomic_fetch_add(&bad, 1);
        return 0;
    }
    for (int r = 0; r < ROUNDS / 4; r++) {
        og_tensor *out[1] = {0}, *g[8] = {0};
        if (og_instance_forward(inst, x_name, (const og_tensor *const *)&x, 1, 1, out) ||
            og_instance_backward(inst, NULL, g)) {
            atomic_fetch_add(&bad, 1);
        } else {
            for (int k = 0; k < n_res; k++)
                if (!same(g[k], want_grads[k])) atomic_fetch_add(&bad, 1);
        }
        og_tensor_free(out[0]);
        for (int k = 0; k < n_res; k++) og_tensor_free(g[k]);
    }
    og_instance_free(inst);
    return 0;
}

static int grad_run(void *arg)
{
    (void)arg;
    start_together();
    for (int r = 0; r < ROUNDS / 4; r++) {
        og_tensor *out[1] = {0}, *g[8] = {0};
        og_status st = og_grad_run(grad, x_name, (const og_tensor *const *)&x, 1, NULL, out, g);
        bool right = st == OG_OK;
        for (int k = 0; right && k < n_res; k++) right = same(g[k], want_grads[k]);
        if (right)
            atomic_fetch_add(&ran, 1);
        else if (st == OG_ERR_BUSY && !out[0] && !g[0])
            atomic_fetch_add(&busy, 1);
        else
            atomic_fetch_add(&bad, 1);
        og_tensor_free(out[0]);
        for (int k = 0; k < n_res; k++) og_tensor_free(g[k]);
    }
    return 0;
}

/* a trainer of its own: 5 SGD steps, then its first weight */
static og_tensor *train_alone(void)
{
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, OG_OPTIMIZER_ADAM);
    og_trainer_options to = {0};
    to.threads = 1;
    og_trainer *t = NULL;
    og_tensor *w = NULL;
    if (og_trainer_create(loss_model, &oo, &to, &t)) return NULL;
    const char *names[2] = {"x", "label"};
    const og_tensor *in[2] = {x, label};
    double loss;
    bool ok = true;
    for (int s = 0; s < 5 && ok; s++) ok = og_trainer_step(t, names, in, 2, &loss) == OG_OK;
    const og_tensor *v = NULL;
    if (ok && og_trainer_get_weight(t, og_trainer_weight_name(t, 0), &v) == OG_OK)
        og_tensor_from_data(og_tensor_dtype(v), og_tensor_rank(v), og_tensor_dims(v),
                            og_tensor_cdata(v), og_tensor_nbytes(v), NULL, &w);
    og_trainer_free(t);
    return w;
}

static og_tensor *want_trained;

static int trainer(void *arg)
{
    (void)arg;
    start_together();
    og_tensor *w = train_alone();
    if (!same(w, want_trained)) atomic_fetch_add(&bad, 1);
    og_tensor_free(w);
    return 0;
}

static void together(int n, int (*fn)(void *), const char *what)
{
    test_thread th[MAX_THREADS];
    atomic_store(&ran, 0);
    atomic_store(&busy, 0);
    atomic_store(&bad, 0);
    atomic_store(&waiting, n);
    for (int i = 0; i < n; i++) CHECK(test_thread_start(&th[i], fn, NULL) == 0);
    for (int i = 0; i < n; i++) test_thread_join(&th[i]);
    printf("%d threads, %s: %d ran, %d refused (busy), %d wrong\n", n, what, atomic_load(&ran),
           atomic_load(&busy), atomic_load(&bad));
    CHECK(atomic_load(&bad) == 0);
}

int main(void)
{
    CHECK_OK(og_model_load_file("models/mlp.onnx", NULL, &model));
    og_tensor *x0 = NULL;
    CHECK_OK(og_npy_load("models/mlp_x.npy", NULL, &x0));
    if (!model || !x0) TEST_DONE();
    /* the sample rows repeated to 1,024: runs long enough for threads to meet */
    int64_t rows = og_tensor_dims(x0)[0], xd[2] = {1024, og_tensor_dims(x0)[1]};
    CHECK_OK(og_tensor_create(OG_FLOAT, 2, xd, NULL, &x));
    if (!x) TEST_DONE();
    size_t row_bytes = og_tensor_nbytes(x0) / (size_t)rows;
    for (int64_t r = 0; r < xd[0]; r++)
        memcpy((char *)og_tensor_data(x) + r * row_bytes,
               (const char *)og_tensor_cdata(x0) + (r % rows) * row_bytes, row_bytes);
    og_tensor_free(x0);
    og_session_options so = {0};
    so.threads = 1;
    CHECK_OK(og_session_create(model, &so, &shared));
    CHECK_OK(og_session_run(shared, x_name, (const og_tensor *const *)&x, 1, &want));
    og_grad_options go = {0};
    go.threads = 1;
    CHECK_OK(og_grad_create(model, &go, &grad));
    if (!shared || !want || !grad) TEST_DONE();
    n_res = og_grad_input_count(grad) + og_grad_weight_count(grad);
    CHECK(n_res <= 8);
    og_tensor *out[1] = {0};
    CHECK_OK(og_grad_run(grad, x_name, (const og_tensor *const *)&x, 1, NULL, out, want_grads));
    og_tensor_free(out[0]);
    og_loss_options lo;
    og_loss_options_init(&lo, OG_LOSS_SQUARED);
    CHECK_OK(og_model_add_loss(model, &lo, &loss_model));
    int64_t ld[2] = {og_tensor_dims(x)[0], 3};
    CHECK_OK(og_tensor_create(OG_FLOAT, 2, ld, NULL, &label));
    if (!loss_model || !label) TEST_DONE();
    want_trained = train_alone();
    CHECK(want_trained != NULL);

    int counts[2] = {2, 8};
    for (int k = 0; k < 2; k++) {
        int n = counts[k];
        together(n, shared_session, "one session");
        CHECK(atomic_load(&ran) >= 1 && atomic_load(&ran) + atomic_load(&busy) == n * ROUNDS);
        together(n, own_session, "a session each, one model");
        together(n, instance, "instances of one gradient object");
        together(n, grad_run, "og_grad_run on one gradient object");
        CHECK(atomic_load(&ran) >= 1);
        together(n, trainer, "trainers side by side");
    }

    og_tensor_free(want_trained);
    for (int k = 0; k < n_res; k++) og_tensor_free(want_grads[k]);
    og_tensor_free(label);
    og_tensor_free(want);
    og_tensor_free(x);
    og_grad_free(grad);
    og_session_free(shared);
    og_model_free(loss_model);
    og_model_free(model);
    TEST_DONE();
}
