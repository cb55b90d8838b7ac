/* The public API's checks: bad arguments, tensors, and run-time input validation. */
#include <string.h>

#include "test.h"

int main(void)
{
    og_tensor *t = (og_tensor *)1;
    int64_t dims[2] = {2, 3}, neg[1] = {-1};
    float buf[6] = {1, 2, 3, 4, 5, 6};

    /* tensors */
    CHECK(og_tensor_create(OG_FLOAT, 1, neg, NULL, &t) == OG_ERR_INVALID_ARG && t == NULL);
    CHECK(og_tensor_create(OG_FLOAT, OG_MAX_RANK + 1, dims, NULL, &t) == OG_ERR_INVALID_ARG);
    CHECK(og_tensor_create(OG_UNDEFINED, 1, dims, NULL, &t) == OG_ERR_INVALID_ARG);
    CHECK(og_tensor_create((og_dtype)14, 1, dims, NULL, &t) == OG_ERR_INVALID_ARG); /* complex */
    CHECK_OK(
        og_tensor_create(OG_STRING, 1, dims, NULL, &t)); /* strings: tests/unit/test_values.c */
    og_tensor_free(t);
    CHECK(og_tensor_from_data(OG_FLOAT, 2, dims, buf, 20, NULL, &t) == OG_ERR_INVALID_ARG);
    CHECK(strstr(og_last_error(), "24") != NULL);
    CHECK_OK(og_tensor_wrap(OG_FLOAT, 2, dims, buf, sizeof buf, NULL, &t));
    CHECK(og_tensor_data(t) == buf && og_tensor_numel(t) == 6 && og_tensor_nbytes(t) == 24);
    og_tensor_free(t);
    CHECK(buf[5] == 6); /* wrapped memory is untouched by free */
    og_tensor_free(NULL);
    og_model_free(NULL);
    og_session_free(NULL);
    CHECK(strcmp(og_dtype_name(OG_DOUBLE), "float64") == 0 && og_dtype_size(OG_INT64) == 8);
    CHECK(strcmp(og_status_name(OG_ERR_SHAPE), "OG_ERR_SHAPE") == 0);

    /* sessions: argument and input checks */
    og_model *m = NULL;
    og_session *s = NULL;
    CHECK(og_session_create(NULL, NULL, &s) == OG_ERR_INVALID_ARG);
    CHECK_OK(og_model_load_file("models/mlp.onnx", NULL, &m));
    if (!m) TEST_DONE();
    CHECK(og_model_input_count(m) == 1 && strcmp(og_model_input_name(m, 0), "x") == 0);
    og_dtype dt;
    int rank;
    int64_t d[OG_MAX_RANK];
    const char *dn[OG_MAX_RANK];
    CHECK_OK(og_model_input_info(m, 0, &dt, &rank, d, dn));
    CHECK(dt == OG_FLOAT && rank == 2 && d[0] == -1 && strcmp(dn[0], "batch") == 0 && d[1] == 8);
    CHECK(og_model_input_info(m, 5, &dt, &rank, d, dn) == OG_ERR_INVALID_ARG);
    og_session_options o = {0};
    o.threads = -1;
    CHECK(og_session_create(m, &o, &s) == OG_ERR_INVALID_ARG);
    o.threads = 2;
    CHECK_OK(og_session_create(m, &o, &s));
    og_tensor *x = NULL, *y = NULL, *wrong = NULL;
    int64_t xd[2] = {4, 8}, bad_d[2] = {4, 7};
    CHECK_OK(og_tensor_create(OG_FLOAT, 2, xd, NULL, &x));
    const char *names[] = {"x"}, *other[] = {"nope"};
    CHECK(og_session_run(s, other, (const og_tensor *const *)&x, 1, &y) == OG_ERR_INVALID_ARG);
    CHECK(strstr(og_last_error(), "'nope'") && strstr(og_last_error(), "'x'"));
    CHECK(og_session_run(s, names, NULL, 0, &y) == OG_ERR_INVALID_ARG);
    CHECK(strstr(og_last_error(), "missing") != NULL);
    CHECK_OK(og_tensor_create(OG_FLOAT, 2, bad_d, NULL, &wrong));
    CHECK(og_session_run(s, names, (const og_tensor *const *)&wrong, 1, &y) == OG_ERR_SHAPE);
    CHECK(y == NULL);
    og_tensor_free(wrong);
    CHECK_OK(og_tensor_create(OG_DOUBLE, 2, xd, NULL, &wrong));
    CHECK(og_session_run(s, names, (const og_tensor *const *)&wrong, 1, &y) == OG_ERR_TYPE);
    CHECK(strstr(og_last_error(), "float32") != NULL);
    og_tensor_free(wrong);
    /* a good run; outputs outlive the session */
    CHECK_OK(og_session_run(s, names, (const og_tensor *const *)&x, 1, &y));
    og_session_free(s);
    if (y) {
        const float *p = og_tensor_cdata(y);
        CHECK(og_tensor_rank(y) == 2 && og_tensor_dims(y)[0] == 4 && og_tensor_dims(y)[1] == 3);
        for (int r = 0; r < 4; r++) {
            float sum = p[3 * r] + p[3 * r + 1] + p[3 * r + 2];
            CHECK(sum > 0.9999f && sum < 1.0001f);
        }
    }
    og_tensor_free(y);
    /* named outputs: an intermediate value, asked twice */
    CHECK_OK(og_session_create(m, NULL, &s));
    og_tensor *outs[2] = {0};
    const char *onames[] = {"h2", "h2"};
    CHECK_OK(og_session_run_named(s, names, (const og_tensor *const *)&x, 1, onames, 2, outs));
    CHECK(outs[0] && outs[1] && outs[0] != outs[1] && og_tensor_dims(outs[0])[1] == 16);
    const char *bogus[] = {"no_such_value"};
    og_tensor *o1 = NULL;
    CHECK(og_session_run_named(s, names, (const og_tensor *const *)&x, 1, bogus, 1, &o1) ==
          OG_ERR_INVALID_ARG);
    og_tensor_free(outs[0]);
    og_tensor_free(outs[1]);
    og_tensor_free(x);
    og_session_free(s);
    og_model_free(m);
    TEST_DONE();
}
