/* libFuzzer target: arbitrary bytes through the dataset readers (CSV, .npy, .npz), then a
 * split and a batch of what loaded.  The first byte picks the format and the options. */
#include <stdint.h>
#include <stdlib.h>

#include "onnxgrad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Requests above 256 MiB fail (a declared size of terabytes must become OG_ERR_NOMEM or a
 * parse error, not exhaust the fuzzing machine). */
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
    static const char *const names[4] = {"fuzz.csv", "fuzz.npy", "fuzz.npz", "fuzz.tsv"};
    static const char *const target[1] = {"1"};
    if (size < 1) return 0;
    uint8_t sel = data[0];
    og_data_options o = {0};
    o.no_header = (sel & 4) != 0;
    o.target_dtype = (sel & 8) ? OG_INT64 : OG_FLOAT;
    if (sel & 16) {
        o.targets = target;
        o.n_targets = 1;
    }
    if (sel & 32) o.weight = "0";
    og_dataset *d = NULL, *tr = NULL, *va = NULL;
    if (og_dataset_load_buffer(data + 1, size - 1, names[sel & 3], &o, &capped, &d)) return 0;
    int64_t n = og_dataset_size(d);
    if (n >= 2 && og_dataset_split(d, 0.5, sel, &tr, &va) == OG_OK) {
        og_dataset_free(tr);
        og_dataset_free(va);
    }
    int64_t idx[2] = {0, n - 1};
    og_tensor *x = NULL, *y = NULL, *w = NULL;
    if (og_dataset_batch(d, idx, 2, &x, &y, &w) == OG_OK) {
        og_tensor_free(x);
        og_tensor_free(y);
        og_tensor_free(w);
    }
    og_dataset_free(d);
    return 0;
}
