/* test_place.c: the executor's place hook (og_exec_hooks.place, src/exec/exec.h), which
 * lets a caller have wanted values computed in its own memory (the data-parallel trainer
 * computes weight gradients in its reduction buckets).  On mlp3 (Gemm, Relu, Gemm):
 * placed values are written where the hook says, with the bytes of a plain run, and handed
 * back as views of that memory; values the hook declines (NULL) or does not get asked for
 * (bound inputs) come from the session; a value wanted twice is placed once; a run without
 * the hook is unchanged; the hook sees each value's dtype and shape.  Then mlp3's gradients
 * (og_grad_run_hooked): each weight's gradient is a graph output made by an Identity (of a
 * Gemm's output, or of a Reshape of a ReduceSum's): the kernel before the views writes into
 * the placed memory, and ready gets the view there. */
#include <stdio.h>
#include <string.h>

#include "api/grad_api.h"
#include "exec/exec.h"
#include "test.h"

#define MLP3 "tests/data/train/mlp3.onnx"
#define N    5

typedef struct place_log {
    float h[N * 8], logits[N * 3]; /* where H and logits go */
    int asked[8];                  /* per want index: times the hook was asked */
    int ready[8];                  /* per want index: times ready was called */
    bool shape_ok;
} place_log;

static void *place(void *user, int j, og_dtype dtype, int rank, const int64_t *dims)
{
    place_log *p = user;
    p->asked[j]++;
    if (dtype != OG_FLOAT || rank != 2 || dims[0] != N) p->shape_ok = false;
    if (j == 0) return dims[1] == 8 ? p->h : NULL;
    if (j == 2) return dims[1] == 3 ? p->logits : NULL;
    return NULL; /* R: the session's memory */
}

static og_status ready(void *user, int j, const og_tensor *t)
{
    (void)t;
    ((place_log *)user)->ready[j]++;
    return OG_OK;
}

static bool same(const og_tensor *a, const og_tensor *b)
{
    return a && b && og_tensor_nbytes(a) == og_tensor_nbytes(b) &&
           memcmp(og_tensor_cdata(a), og_tensor_cdata(b), og_tensor_nbytes(a)) == 0;
}

typedef struct grad_place {
    float mem[4][32]; /* per weight: W1 [4, 8], B1 [8], W2 [8, 3], B2 [3] */
    int64_t numel[4];
    int first; /* the hooks' index of weight 0's gradient (after the outputs and inputs) */
    int asked[4], at_mem[4];
} grad_place;

static void *gplace(void *user, int j, og_dtype dtype, int rank, const int64_t *dims)
{
    grad_place *p = user;
    int i = j - p->first;
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= dims[d];
    if (i < 0 || i >= 4) return NULL;
    p->asked[i]++;
    return dtype == OG_FLOAT && n == p->numel[i] ? p->mem[i] : NULL;
}

static og_status gready(void *user, int j, const og_tensor *t)
{
    grad_place *p = user;
    int i = j - p->first;
    if (i >= 0 && i < 4) p->at_mem[i] += og_tensor_cdata(t) == (const void *)p->mem[i];
    return OG_OK;
}

static void test_grad(const og_model *m, const og_tensor *x)
{
    og_grad *g = NULL;
    CHECK_OK(og_grad_create(m, NULL, &g));
    if (!g) return;
    CHECK(og_grad_weight_count(g) == 4);
    grad_place p;
    memset(&p, 0, sizeof p);
    const int gi = og_grad_input_count(g); /* weight 0's gradient in og_grad_run's grads */
    p.first = og_grad_output_count(g) + gi;
    const char *in_names[1] = {"X"};
    const og_tensor *ins[1] = {x};
    og_tensor *out[1] = {0}, *plain[5] = {0}, *got[5] = {0}, *pout[1] = {0};
    CHECK_OK(og_grad_run(g, in_names, ins, 1, NULL, pout, plain));
    for (int i = 0; i < 4 && plain[gi + i]; i++) p.numel[i] = og_tensor_numel(plain[gi + i]);
    og_exec_hooks hooks = {&p, gready, NULL, gplace};
    CHECK_OK(og_grad_run_hooked(g, in_names, ins, 1, NULL, out, got, &hooks));
    for (int i = 0; i < 4; i++) {
        const og_tensor *a = got[gi + i], *b = plain[gi + i];
        printf("weight %s: asked %d, computed in place %d\n", og_grad_weight_name(g, i), p.asked[i],
               p.at_mem[i]);
        CHECK(p.asked[i] == 1);
        CHECK(p.at_mem[i] == 1);
        CHECK(same(a, b));
        CHECK(a && og_tensor_cdata(a) == (const void *)p.mem[i]);
    }
    for (int j = 0; j < 5; j++) {
        og_tensor_free(plain[j]);
        og_tensor_free(got[j]);
    }
    og_tensor_free(out[0]);
    og_tensor_free(pout[0]);
    og_grad_free(g);
}

int main(void)
{
    og_model *m = NULL;
    og_session *s = NULL;
    og_tensor *x = NULL;
    CHECK_OK(og_model_load_file(MLP3, NULL, &m));
    CHECK_OK(og_session_create(m, NULL, &s));
    float xv[N * 4];
    for (int i = 0; i < N * 4; i++) xv[i] = (float)((i * 7) % 11) * 0.25f - 1.0f;
    int64_t xd[2] = {N, 4};
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 2, xd, xv, sizeof xv, NULL, &x));
    const char *in_names[1] = {"X"};
    const og_tensor *ins[1] = {x};
    /* H, R, logits, logits again, X (a bound input) */
    const char *want[5] = {"H", "R", "logits", "logits", "X"};
    og_tensor *plain[5] = {0}, *got[5] = {0};
    CHECK_OK(og_session_run_hooked(s, in_names, ins, 1, want, 5, plain, NULL));
    place_log p;
    memset(&p, 0, sizeof p);
    p.shape_ok = true;
    og_exec_hooks hooks = {&p, ready, NULL, place};
    for (int run = 0; run < 2; run++) { /* twice: the second reuses the session's state */
        memset(&p.asked, 0, sizeof p.asked);
        memset(&p.ready, 0, sizeof p.ready);
        memset(p.h, 0, sizeof p.h);
        memset(p.logits, 0, sizeof p.logits);
        CHECK_OK(og_session_run_hooked(s, in_names, ins, 1, want, 5, got, &hooks));
        for (int j = 0; j < 5; j++) {
            CHECK(same(got[j], plain[j]));
            CHECK(p.ready[j] == 1);
        }
        /* asked once per computed value, at its first want index; never for the input */
        CHECK(p.asked[0] == 1 && p.asked[1] == 1 && p.asked[2] == 1);
        CHECK(p.asked[3] == 0 && p.asked[4] == 0);
        CHECK(p.shape_ok);
        /* placed: in the caller's memory, handed back as views of it */
        CHECK(og_tensor_cdata(got[0]) == (const void *)p.h);
        CHECK(og_tensor_cdata(got[2]) == (const void *)p.logits);
        CHECK(memcmp(p.h, og_tensor_cdata(plain[0]), sizeof p.h) == 0);
        CHECK(memcmp(p.logits, og_tensor_cdata(plain[2]), sizeof p.logits) == 0);
        /* declined, or wanted a second time: elsewhere */
        CHECK(og_tensor_cdata(got[1]) != og_tensor_cdata(plain[1]));
        CHECK(og_tensor_cdata(got[3]) != (const void *)p.logits);
        for (int j = 0; j < 5; j++) {
            og_tensor_free(got[j]);
            got[j] = NULL;
        }
    }
    /* the next run without the hook: nothing placed, the same values */
    memset(p.h, 0, sizeof p.h);
    CHECK_OK(og_session_run_hooked(s, in_names, ins, 1, want, 5, got, NULL));
    for (int j = 0; j < 5; j++) CHECK(same(got[j], plain[j]));
    CHECK(og_tensor_cdata(got[0]) != (const void *)p.h);
    CHECK(p.h[0] == 0.0f && p.h[N * 8 - 1] == 0.0f);
    for (int j = 0; j < 5; j++) {
        og_tensor_free(got[j]);
        og_tensor_free(plain[j]);
    }
    test_grad(m, x);
    og_tensor_free(x);
    og_session_free(s);
    og_model_free(m);
    TEST_DONE();
}
