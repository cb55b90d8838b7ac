/* nn.c: placeholder until the family's gradient rules land. */
#include "grad/grad.h"

const og_grad_rule og_grad_nn[] = {{0}};
