/* Every malformed or invalid model of tests/data/bad gives its expected status and a
 * message, never a crash or a leak (run under make asan). */
#include <string.h>

#include "test.h"

static og_status status_from_name(const char *s)
{
    for (int st = OG_OK; st <= OG_ERR_INTERNAL; st++)
        if (strcmp(og_status_name((og_status)st), s) == 0) return (og_status)st;
    return (og_status)-1;
}

int main(void)
{
    FILE *f = fopen("tests/data/bad/expected.txt", "r");
    CHECK(f != NULL);
    if (!f) TEST_DONE();
    char file[256], status[64];
    int n = 0;
    while (fscanf(f, "%255s %63s", file, status) == 2) {
        char path[512];
        snprintf(path, sizeof path, "tests/data/bad/%s", file);
        og_model *m = (og_model *)1;
        og_status st = og_model_load_file(path, NULL, &m);
        og_status want = status_from_name(status);
        if (st != want)
            fprintf(stderr, "%s: got %s, expected %s: %s\n", file, og_status_name(st), status,
                    og_last_error());
        CHECK(st == want);
        CHECK(m == NULL);
        CHECK(strlen(og_last_error()) > 10);
        printf("%-32s %-20s %s\n", file, og_status_name(st), og_last_error());
        og_model_free(m);
        n++;
    }
    fclose(f);
    CHECK(n >= 20);
    /* the same bytes through the buffer API */
    og_model *m = NULL;
    CHECK(og_model_load_buffer("\x08", 1, NULL, &m) == OG_ERR_PARSE);
    CHECK(og_model_load_buffer(NULL, 0, NULL, &m) == OG_ERR_INVALID_ARG);
    CHECK(og_model_load_file("tests/data/no_such_file.onnx", NULL, &m) == OG_ERR_IO);
    /* external data inside the model's folder loads */
    CHECK_OK(og_model_load_file_any_op("tests/data/external/model.onnx", NULL, &m));
    if (m) {
        const og_tensor *w = og_model_initializer(m, 0);
        const float *d = og_tensor_cdata(w);
        CHECK(og_tensor_numel(w) == 4 && d[0] == 0.0f && d[3] == 3.0f);
    }
    og_model_free(m);
    TEST_DONE();
}
