/* libFuzzer target: the checkpoint reader.  A trainer of tests/data/train/linreg.onnx with a
 * mean squared loss and Adam (weights and two slots each) is made once; every input is
 * written to an in-memory file and loaded as its checkpoint.  After a load that succeeds a
 * step must still run (the state it loaded is usable). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h"

#ifndef OG_SOURCE_DIR
#define OG_SOURCE_DIR "."
#endif

static og_trainer *trainer;
static og_model *model, *loss_model;
static int fd = -1;
static char path[64];

static void setup(void)
{
    og_loss_options lo;
    og_optimizer_options oo;
    og_loss_options_init(&lo, OG_LOSS_SQUARED);
    og_optimizer_options_init(&oo, OG_OPTIMIZER_ADAM);
    if (og_model_load_file(OG_SOURCE_DIR "/tests/data/train/linreg.onnx", NULL, &model) ||
        og_model_add_loss(model, &lo, &loss_model) ||
        og_trainer_create(loss_model, &oo, NULL, &trainer)) {
        fprintf(stderr, "fuzz_ckpt: cannot make the trainer: %s\n", og_last_error());
        abort();
    }
    fd = memfd_create("ckpt", 0);
    if (fd < 0) abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!trainer) setup();
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();
    if (og_trainer_load_checkpoint(trainer, path) == OG_OK) {
        og_tensor *x = NULL, *y = NULL;
        int64_t xd[2] = {2, 3}, yd[2] = {2, 1};
        const char *names[2] = {og_model_input_name(loss_model, 0), "label"};
        if (og_tensor_create(OG_FLOAT, 2, xd, NULL, &x) == OG_OK &&
            og_tensor_create(OG_FLOAT, 2, yd, NULL, &y) == OG_OK) {
            const og_tensor *in[2] = {x, y};
            double loss;
            og_trainer_step(trainer, names, in, 2, &loss);
        }
        og_tensor_free(x);
        og_tensor_free(y);
    }
    return 0;
}
