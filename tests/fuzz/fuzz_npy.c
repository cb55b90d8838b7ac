/* libFuzzer target: the .npy reader (og_npy_load_buffer); what loads is read in full. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    og_tensor *t = NULL;
    if (og_npy_load_buffer(data, size, &fuzz_alloc, &t)) return 0;
    volatile unsigned char sink = 0;
    const unsigned char *p = og_tensor_cdata(t);
    for (size_t b = 0; p && b < og_tensor_nbytes(t); b++) sink ^= p[b];
    (void)sink;
    og_tensor_free(t);
    return 0;
}
