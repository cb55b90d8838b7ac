/* Several sessions of one model run at once in different threads and agree with a
 * single-threaded run: the model is shared read-only (initializer views included). */
#include <string.h>

#include "test.h"
#include "test_thread.h"

typedef struct job {
    const og_model *m;
    const og_tensor *x;
    const float *want;
    int runs, mismatches, errors;
} job;

static int worker(void *arg)
{
    job *j = arg;
    og_session *s = NULL;
    og_session_options o = {.threads = 1};
    if (og_session_create(j->m, &o, &s)) {
        j->errors++;
        return 0;
    }
    const char *names[] = {"x"};
    for (int r = 0; r < j->runs; r++) {
        og_tensor *y = NULL;
        if (og_session_run(s, names, &j->x, 1, &y)) {
            j->errors++;
            continue;
        }
        if (memcmp(og_tensor_cdata(y), j->want, og_tensor_nbytes(y)) != 0) j->mismatches++;
        og_tensor_free(y);
    }
    og_session_free(s);
    return 0;
}

int main(void)
{
    og_model *m = NULL;
    og_session *s = NULL;
    og_tensor *x = NULL, *y = NULL;
    CHECK_OK(og_model_load_file("models/mlp.onnx", NULL, &m));
    CHECK_OK(og_npy_load("models/mlp_x.npy", NULL, &x));
    if (!m || !x) TEST_DONE();
    const char *names[] = {"x"};
    CHECK_OK(og_session_create(m, NULL, &s));
    CHECK_OK(og_session_run(s, names, (const og_tensor *const *)&x, 1, &y));
    og_session_free(s);
    if (!y) TEST_DONE();
    enum { N = 4 };
    test_thread th[N];
    job jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (job){m, x, og_tensor_cdata(y), 200, 0, 0};
        CHECK(test_thread_start(&th[i], worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < N; i++) {
        test_thread_join(&th[i]);
        CHECK(jobs[i].errors == 0);
        CHECK(jobs[i].mismatches == 0);
    }
    og_tensor_free(y);
    og_tensor_free(x);
    og_model_free(m);
    TEST_DONE();
}
