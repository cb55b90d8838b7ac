/* libFuzzer target: save and reload.  A model that loads is saved, the bytes load again, and
 * saving that copy gives the same bytes: a save that writes what the loader refuses, or
 * that does not round-trip, aborts (a finding), as do crashes on the way. */
#include <stdio.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    og_model *m = NULL, *m2 = NULL;
    void *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    og_load_options lo = {0};
    lo.allocator = &fuzz_alloc;
    if (og_model_load_buffer(data, size, &lo, &m)) return 0;
    if (og_model_save_buffer(m, &b1, &n1)) goto done;
    if (og_model_load_buffer(b1, n1, &lo, &m2)) {
        fprintf(stderr, "a saved model does not load again: %s\n", og_last_error());
        abort();
    }
    if (og_model_save_buffer(m2, &b2, &n2)) goto done;
    if (n1 != n2 || memcmp(b1, b2, n1) != 0) {
        fprintf(stderr, "save(load(save(m))) differs from save(m): %zu and %zu bytes\n", n1, n2);
        abort();
    }
done:
    og_model_buffer_free(m, b1);
    og_model_buffer_free(m2, b2);
    og_model_free(m2);
    og_model_free(m);
    return 0;
}
