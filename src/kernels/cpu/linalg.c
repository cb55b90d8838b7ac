/* linalg.c: placeholder until the family's CPU kernels land. */
#include "kernels/cpu/kernel.h"

const og_kernel_def og_cpu_linalg[] = {{0}};
