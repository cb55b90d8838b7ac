/* fuzz_util.h: what the libFuzzer targets share: an allocator that refuses huge requests,
 * and inputs for a model made from a seed (small shapes for symbolic dims, values that
 * are mostly ordinary and sometimes extreme), so that every kernel meets hostile shapes,
 * attributes and data, within a small memory budget. */
#ifndef OG_FUZZ_UTIL_H
#define OG_FUZZ_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnxgrad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Requests above 256 MiB fail: onnxgrad must turn that into OG_ERR_NOMEM or OG_ERR_LIMIT,
 * and a model asking for gigabytes does not exhaust the fuzzing machine. */
static void *fuzz_malloc(void *user, size_t size)
{
    (void)user;
    return size > ((size_t)256 << 20) ? NULL : malloc(size);
}

static void fuzz_free(void *user, void *p)
{
    (void)user;
    free(p);
}

static const og_allocator fuzz_alloc = {fuzz_malloc, fuzz_free, NULL};

/* Every session's budget: 64 MiB. */
#define FUZZ_MEMORY ((int64_t)64 << 20)
#define FUZZ_MAX_IO 16

static uint64_t fuzz_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double fuzz_float(uint64_t *s)
{
    uint64_t r = fuzz_next(s);
    switch (r % 32) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return 0.0;
    case 4: return -0.0;
    case 5: return 1e30;
    case 6: return -1e-30;
    default: return ((double)(r >> 11) / 9007199254740992.0) * 6.0 - 3.0;
    }
}

static int64_t fuzz_int(uint64_t *s)
{
    uint64_t r = fuzz_next(s);
    switch (r % 32) {
    case 0: return INT64_MIN;
    case 1: return INT64_MAX;
    case 2: return -1;
    case 3: return INT32_MAX;
    default: return (int64_t)(r >> 40) % 5 - 1; /* -1..3: valid indices, axes, counts */
    }
}

static void fuzz_fill(og_tensor *t, uint64_t *s)
{
    void *d = og_tensor_data(t);
    for (int64_t i = 0; i < og_tensor_numel(t); i++) {
        switch (og_tensor_dtype(t)) {
        case OG_FLOAT: ((float *)d)[i] = (float)fuzz_float(s); break;
        case OG_DOUBLE: ((double *)d)[i] = fuzz_float(s); break;
        case OG_FLOAT16:
        case OG_BFLOAT16: ((uint16_t *)d)[i] = (uint16_t)fuzz_next(s); break;
        case OG_INT64: ((int64_t *)d)[i] = fuzz_int(s); break;
        case OG_INT32: ((int32_t *)d)[i] = (int32_t)fuzz_int(s); break;
        case OG_UINT64: ((uint64_t *)d)[i] = (uint64_t)fuzz_int(s); break;
        case OG_UINT32: ((uint32_t *)d)[i] = (uint32_t)fuzz_int(s); break;
        case OG_INT16:
        case OG_UINT16: ((uint16_t *)d)[i] = (uint16_t)fuzz_int(s); break;
        case OG_INT8:
        case OG_UINT8: ((uint8_t *)d)[i] = (uint8_t)fuzz_int(s); break;
        case OG_BOOL: ((uint8_t *)d)[i] = (uint8_t)(fuzz_next(s) & 1); break;
        default: break;
        }
    }
}

/* Inputs for every graph input of m: declared dims where fixed (at most 16, 4096 elements in
 * all), 1..3 for symbolic or unknown ones, a rank of 0..3 when unknown; the dtype declared,
 * float32 when unknown.  Returns the count, or -1 when m's inputs cannot be made small. */
static int fuzz_inputs(const og_model *m, uint64_t seed, const char **names, og_tensor **in)
{
    int n = og_model_input_count(m);
    if (n > FUZZ_MAX_IO) return -1;
    for (int i = 0; i < n; i++) {
        og_dtype dt;
        int rank;
        int64_t dims[OG_MAX_RANK];
        if (og_model_input_info(m, i, &dt, &rank, dims, NULL)) return -1;
        if (rank < 0) rank = (int)(fuzz_next(&seed) % 4);
        if (dt == OG_UNDEFINED) dt = OG_FLOAT;
        if (og_dtype_size(dt) == 0) return -1;
        int64_t numel = 1;
        for (int d = 0; d < rank; d++) {
            if (dims[d] < 0) dims[d] = 1 + (int64_t)(fuzz_next(&seed) % 3);
            if (dims[d] > 16) return -1;
            numel *= dims[d];
        }
        if (numel > 4096) return -1;
        if (og_tensor_create(dt, rank, dims, &fuzz_alloc, &in[i])) return -1;
        fuzz_fill(in[i], &seed);
        names[i] = og_model_input_name(m, i);
    }
    return n;
}

/* The seed of an input's generated tensors: FNV-1a of its bytes, so that the model and its
 * inputs mutate together and one corpus of models serves every target. */
static uint64_t fuzz_seed(const uint8_t *data, size_t size)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 0x100000001b3ull;
    return h;
}

#endif
