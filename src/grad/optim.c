/* optim.c: the optimizer ops of src/ops/optim.c (ai.onnx.preview.training Momentum,
 * Adagrad, Adam) have no gradient rules: they update weights from gradients that have
 * already been computed, and a gradient never flows back through an update.  A graph
 * whose differentiated outputs depend on one fails with "op ... has no gradient rule". */
#include "grad/grad.h"

const og_grad_rule og_grad_optim[] = {{0}};
