/* Indices out of range fail the same way everywhere: a status getter returns
 * OG_ERR_INVALID_ARG with its outputs cleared, a pointer getter returns NULL, and either
 * way the message names the function, the index and the valid range.  Also: saving one
 * gradient object from several threads at once gives the same bytes (the save only reads
 * it).  Public API only: this test links the shared library. */
#include <string.h>
#include <threads.h>

#include "test.h"

/* The last message mentions every one of the given fragments. */
static int says(const char *a, const char *b, const char *c)
{
    const char *m = og_last_error();
    return strstr(m, a) && strstr(m, b) && (!c || strstr(m, c));
}

static void model_getters(const og_model *m)
{
    /* mlp.onnx: input x, output probs, initializers W1 b1 W2 b2, one opset, 5 nodes */
    CHECK(og_model_input_name(m, 0) != NULL);
    CHECK(og_model_input_name(m, 1) == NULL && says("og_model_input_name", "1", "0..0"));
    CHECK(og_model_input_name(m, -1) == NULL && says("og_model_input_name", "-1", "0..0"));
    CHECK(og_model_output_name(m, 1) == NULL && says("og_model_output_name", "1", "0..0"));
    CHECK(og_model_initializer_name(m, 4) == NULL &&
          says("og_model_initializer_name", "4", "0..3"));
    CHECK(og_model_initializer(m, 4) == NULL && says("og_model_initializer", "4", "0..3"));
    CHECK(og_model_node_name(m, 5) == NULL && says("og_model_node_name", "5", "0..4"));
    CHECK(og_model_input_name(NULL, 0) == NULL && says("og_model_input_name", "none", NULL));

    const char *dom = "stale", *op = "stale";
    int64_t ver = 99;
    CHECK_OK(og_model_opset(m, 0, &dom, &ver));
    CHECK(dom && ver > 0);
    dom = "stale";
    CHECK(og_model_opset(m, 1, &dom, &ver) == OG_ERR_INVALID_ARG);
    CHECK(dom == NULL && ver == 0 && says("og_model_opset", "1", "0..0"));
    CHECK_OK(og_model_node_op(m, 4, &op, &dom));
    CHECK(op && dom);
    CHECK(og_model_node_op(m, 5, &op, &dom) == OG_ERR_INVALID_ARG);
    CHECK(op == NULL && dom == NULL && says("og_model_node_op", "5", "0..4"));

    og_dtype dt = OG_FLOAT;
    int rank = 3;
    int64_t dims[OG_MAX_RANK];
    const char *names[OG_MAX_RANK];
    for (int d = 0; d < OG_MAX_RANK; d++) {
        dims[d] = 7;
        names[d] = "stale";
    }
    CHECK(og_model_input_info(m, 1, &dt, &rank, dims, names) == OG_ERR_INVALID_ARG);
    CHECK(dt == OG_UNDEFINED && rank == 0 && dims[0] == 0 && names[0] == NULL &&
          dims[OG_MAX_RANK - 1] == 0 && says("og_model_input_info", "1", "0..0"));
    rank = 3;
    CHECK(og_model_output_info(m, -2, &dt, &rank, dims, NULL) == OG_ERR_INVALID_ARG);
    CHECK(rank == 0 && says("og_model_output_info", "-2", "0..0"));
    CHECK(og_model_output_info(NULL, 0, &dt, &rank, dims, NULL) == OG_ERR_INVALID_ARG);
}

static void grad_getters(const og_grad *g)
{
    int no = og_grad_output_count(g), ni = og_grad_input_count(g), nw = og_grad_weight_count(g);
    CHECK(no == 1 && ni == 1 && nw == 4);
    CHECK(og_grad_output_name(g, 0) && og_grad_input_name(g, 0) && og_grad_weight_name(g, 3));
    CHECK(og_grad_output_name(g, 1) == NULL && says("og_grad_output_name", "1", "0..0"));
    CHECK(og_grad_input_name(g, 1) == NULL && says("og_grad_input_name", "1", "0..0"));
    CHECK(og_grad_weight_name(g, 4) == NULL && says("og_grad_weight_name", "4", "0..3"));
    CHECK(og_grad_weight_name(NULL, 0) == NULL && says("og_grad_weight_name", "none", NULL));
}

typedef struct saver {
    const og_grad *g;
    void *data;
    size_t size;
    og_status st;
} saver;

static int save(void *arg)
{
    saver *s = arg;
    for (int r = 0; r < 20 && !s->st; r++) {
        og_grad_buffer_free(s->g, s->data);
        s->st = og_grad_save_buffer(s->g, &s->data, &s->size);
    }
    return 0;
}

static void parallel_saves(const og_grad *g)
{
    enum { N = 4 };
    saver jobs[N];
    thrd_t th[N];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < N; i++) {
        jobs[i].g = g;
        CHECK(thrd_create(&th[i], save, &jobs[i]) == thrd_success);
    }
    for (int i = 0; i < N; i++) thrd_join(th[i], NULL);
    for (int i = 0; i < N; i++) {
        CHECK_OK(jobs[i].st);
        CHECK(jobs[i].size == jobs[0].size && jobs[i].data && jobs[0].data &&
              memcmp(jobs[i].data, jobs[0].data, jobs[0].size) == 0);
    }
    /* the eval graph itself did not gain the configuration's metadata */
    void *eval = NULL;
    size_t eval_size = 0;
    CHECK_OK(og_model_save_buffer(og_grad_eval_model(g), &eval, &eval_size));
    CHECK(eval_size < jobs[0].size);
    og_model_buffer_free(og_grad_eval_model(g), eval);
    /* a failed save leaves nothing behind */
    void *data = &data;
    size_t size = 1;
    CHECK(og_grad_save_buffer(NULL, &data, &size) == OG_ERR_INVALID_ARG && !data && !size);
    for (int i = 0; i < N; i++) og_grad_buffer_free(g, jobs[i].data);
}

int main(void)
{
    og_model *m = NULL;
    og_grad *g = NULL;
    CHECK_OK(og_model_load_file("models/mlp.onnx", NULL, &m));
    if (m) {
        model_getters(m);
        CHECK_OK(og_grad_create(m, NULL, &g));
    }
    if (g) {
        grad_getters(g);
        parallel_saves(g);
    }
    og_grad_free(g);
    og_model_free(m);
    TEST_DONE();
}
