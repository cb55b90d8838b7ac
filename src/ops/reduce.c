/* reduce.c: placeholder until the family's ops land. */
#include "ops/op.h"

const og_op_def og_ops_reduce[] = {{0}};
