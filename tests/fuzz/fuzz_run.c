/* libFuzzer target: the stages after loading.  Input: ONNX model bytes (the
 * corpus the load, save and grad targets share); the inputs' seed is a hash of them.
 * What loads gets a session under a 64 MiB budget and two runs on inputs made from the seed
 * (symbolic dims small and different from run to run, values mostly ordinary, sometimes
 * extreme), so that shape inference, the buffer pool and every kernel meet hostile shapes,
 * attributes and data.  Every output is read back in full (ASan sees a short buffer). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seed = fuzz_seed(data, size);
    og_model *m = NULL;
    og_session *s = NULL;
    og_load_options lo = {0};
    lo.allocator = &fuzz_alloc;
    if (og_model_load_buffer(data, size, &lo, &m)) return 0;
    og_session_options so = {0};
    so.threads = 1;
    so.max_memory = FUZZ_MEMORY;
    if (og_session_create(m, &so, &s) || og_model_output_count(m) > FUZZ_MAX_IO) goto done;
    for (int r = 0; r < 2; r++) {
        og_tensor *in[FUZZ_MAX_IO] = {0}, *out[FUZZ_MAX_IO] = {0};
        const char *names[FUZZ_MAX_IO];
        int n_in = fuzz_inputs(m, seed + (uint64_t)r, names, in);
        if (n_in >= 0 &&
            og_session_run(s, names, (const og_tensor *const *)in, n_in, out) == OG_OK) {
            volatile unsigned char sink = 0;
            for (int j = 0; j < og_model_output_count(m); j++) {
                const unsigned char *p = og_tensor_cdata(out[j]);
                for (size_t b = 0; p && b < og_tensor_nbytes(out[j]); b++) sink ^= p[b];
            }
            (void)sink;
        }
        for (int i = 0; i < FUZZ_MAX_IO; i++) {
            og_tensor_free(in[i]);
            og_tensor_free(out[i]);
        }
    }
done:
    og_session_free(s);
    og_model_free(m);
    return 0;
}
