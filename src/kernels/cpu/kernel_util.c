/* kernel_util.c: helpers shared by the CPU kernels. */
#include <string.h>

#include "kernels/cpu/kernel.h"

void og_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

void og_broadcast_strides(int in_rank, const int64_t *in_dims, int out_rank,
                          const int64_t *out_dims, int64_t *strides)
{
    int64_t s = 1;
    int off = out_rank - in_rank;
    for (int i = out_rank - 1; i >= 0; i--) {
        if (i < off) {
            strides[i] = 0;
            continue;
        }
        int64_t d = in_dims[i - off];
        strides[i] = (d == 1 && out_dims[i] != 1) ? 0 : s;
        s *= d;
    }
}

void og_index_init(og_index_iter *it, int rank, const int64_t *dims)
{
    it->rank = rank;
    memcpy(it->dims, dims, (size_t)rank * sizeof *dims);
    memset(it->idx, 0, sizeof it->idx);
}

bool og_index_next(og_index_iter *it)
{
    for (int i = it->rank - 1; i >= 0; i--) {
        if (++it->idx[i] < it->dims[i]) return true;
        it->idx[i] = 0;
    }
    return false;
}
