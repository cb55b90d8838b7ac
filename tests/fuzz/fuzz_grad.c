/* libFuzzer target: gradients.  Input: ONNX model bytes (the
 * corpus the load, save and run targets share); the inputs' seed is a hash of them.  What loads
 * gets a gradient object (every float weight and input, every output) and one og_grad_run
 * on inputs made from the seed, then an instance's training forward and backward, all
 * under a 64 MiB budget per session. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seed = fuzz_seed(data, size);
    og_model *m = NULL;
    og_grad *g = NULL;
    og_instance *inst = NULL;
    og_tensor *in[FUZZ_MAX_IO] = {0}, *out[FUZZ_MAX_IO] = {0}, *grads[2 * FUZZ_MAX_IO] = {0};
    const char *names[FUZZ_MAX_IO];
    og_load_options lo = {0};
    lo.allocator = &fuzz_alloc;
    if (og_model_load_buffer(data, size, &lo, &m)) return 0;
    if (og_model_initializer_count(m) > FUZZ_MAX_IO) goto done;
    og_grad_options go = {0};
    go.threads = 1;
    go.max_memory = FUZZ_MEMORY;
    if (og_grad_create(m, &go, &g)) goto done;
    if (og_grad_output_count(g) > FUZZ_MAX_IO ||
        og_grad_input_count(g) + og_grad_weight_count(g) > 2 * FUZZ_MAX_IO)
        goto done;
    int n_in = fuzz_inputs(m, seed, names, in);
    if (n_in < 0) goto done;
    og_grad_run(g, names, (const og_tensor *const *)in, n_in, NULL, out, grads);
    for (int i = 0; i < FUZZ_MAX_IO; i++) og_tensor_free(out[i]), out[i] = NULL;
    for (int i = 0; i < 2 * FUZZ_MAX_IO; i++) og_tensor_free(grads[i]), grads[i] = NULL;
    if (og_grad_new_instance(g, &inst) == OG_OK &&
        og_instance_forward(inst, names, (const og_tensor *const *)in, n_in, 1, out) == OG_OK)
        og_instance_backward(inst, NULL, grads);
done:
    for (int i = 0; i < FUZZ_MAX_IO; i++) {
        og_tensor_free(in[i]);
        og_tensor_free(out[i]);
    }
    for (int i = 0; i < 2 * FUZZ_MAX_IO; i++) og_tensor_free(grads[i]);
    og_instance_free(inst);
    og_grad_free(g);
    og_model_free(m);
    return 0;
}
