/* libFuzzer target: arbitrary bytes through load, session creation (planning) and, for
 * models whose inputs have static shapes, one run on zero-filled inputs. */
#include <stdint.h>
#include <stdlib.h>

#include "onnxgrad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Requests above 256 MiB fail: onnxgrad must turn that into OG_ERR_NOMEM, while a model
 * asking for gigabytes (huge pads, say) does not exhaust the fuzzing machine. */
static void *capped_malloc(void *user, size_t size)
{
    (void)user;
    return size > ((size_t)256 << 20) ? NULL : malloc(size);
}

static void capped_free(void *user, void *p)
{
    (void)user;
    free(p);
}

static const og_allocator capped = {capped_malloc, capped_free, NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    og_model *m = NULL;
    og_session *s = NULL;
    og_tensor *in[8] = {0}, *out[8] = {0};
    const char *names[8];
    int n_in = 0;
    og_load_options lo = {.allocator = &capped};
    if (og_model_load_buffer(data, size, &lo, &m)) return 0;
    og_session_options o = {.threads = 1, .allocator = &capped, .max_memory = (int64_t)64 << 20};
    if (og_session_create(m, &o, &s)) goto done;
    if (og_model_input_count(m) > 8 || og_model_output_count(m) > 8) goto done;
    for (int i = 0; i < og_model_input_count(m); i++) {
        og_dtype dt;
        int rank;
        int64_t dims[OG_MAX_RANK];
        og_model_input_info(m, i, &dt, &rank, dims, NULL);
        if (rank < 0) goto done;
        int64_t numel = 1;
        for (int d = 0; d < rank; d++) {
            if (dims[d] < 0 || dims[d] > 64) goto done;
            numel *= dims[d];
        }
        if (numel > 4096) goto done;
        if (og_tensor_create(dt, rank, dims, &capped, &in[i])) goto done;
        names[i] = og_model_input_name(m, i);
        n_in++;
    }
    og_session_run(s, names, (const og_tensor *const *)in, n_in, out);
done:
    for (int i = 0; i < 8; i++) {
        og_tensor_free(in[i]);
        og_tensor_free(out[i]);
    }
    og_session_free(s);
    og_model_free(m);
    return 0;
}
