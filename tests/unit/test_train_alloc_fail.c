/* Allocation failures on purpose through the training path: for every N, an allocator that
 * fails its N-th request makes loss building, trainer creation, fit (with a checkpoint),
 * checkpoint loading and export fail cleanly with OG_ERR_NOMEM and leak nothing, until N
 * is large enough for everything to succeed. */
#include <stdio.h>
#include <string.h>

#include "test.h"

#define CKPT ckpt_path /* og_test_out, set in main */
static char ckpt_path[512];

static og_status attempt(og_test_counting *c, const og_tensor *x, const og_tensor *y)
{
    og_allocator a = {og_test_malloc, og_test_free, c};
    og_load_options lo = {.allocator = &a};
    og_model *m = NULL, *lm = NULL, *out = NULL;
    og_dataset *d = NULL, *tr = NULL, *va = NULL;
    og_trainer *t = NULL;
    og_loss_options lopt;
    og_loss_options_init(&lopt, OG_LOSS_SQUARED);
    og_optimizer_options oo;
    og_optimizer_options_init(&oo, OG_OPTIMIZER_ADAM);
    og_trainer_options to = {0};
    to.threads = 1;
    to.allocator = &a;
    og_fit_options fo = {0};
    fo.epochs = 2;
    fo.batch_size = 8;
    fo.checkpoint = CKPT;
    og_status st = og_model_load_file("tests/data/train/linreg.onnx", &lo, &m);
    if (!st) st = og_model_add_loss(m, &lopt, &lm);
    if (!st) st = og_dataset_from_tensors(x, y, NULL, &a, &d);
    if (!st) st = og_dataset_split(d, 0.25, 1, &tr, &va);
    if (!st) st = og_trainer_create(lm, &oo, &to, &t);
    fo.validation = va;
    if (!st) st = og_trainer_fit(t, tr, &fo);
    if (!st) st = og_trainer_load_checkpoint(t, CKPT);
    if (!st) st = og_trainer_export(t, NULL, &out);
    og_model_free(out);
    og_trainer_free(t);
    og_dataset_free(va);
    og_dataset_free(tr);
    og_dataset_free(d);
    og_model_free(lm);
    og_model_free(m);
    return st;
}

int main(void)
{
    og_test_out(ckpt_path, sizeof ckpt_path, "test_train_alloc_fail.ckpt");
    float xv[32 * 3], yv[32];
    for (int i = 0; i < 32; i++) {
        for (int j = 0; j < 3; j++) xv[3 * i + j] = (float)((i * 7 + j * 3) % 11) / 5.0f - 1.0f;
        yv[i] = xv[3 * i] - 2 * xv[3 * i + 1] + 0.5f;
    }
    int64_t xd[2] = {32, 3}, yd[2] = {32, 1};
    og_tensor *x = NULL, *y = NULL;
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 2, xd, xv, sizeof xv, NULL, &x));
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 2, yd, yv, sizeof yv, NULL, &y));
    int failures_seen = 0, other = 0;
    long n;
    for (n = 0; n < 200000; n++) {
        og_test_counting c = {0, n, 0};
        og_status st = attempt(&c, x, y);
        CHECK(c.live == 0);
        if (c.live != 0) fprintf(stderr, "fail_at=%ld leaked %ld blocks\n", n, c.live);
        if (st == OG_OK) break;
        if (st == OG_ERR_NOMEM) {
            failures_seen++;
        } else {
            other++;
            fprintf(stderr, "fail_at=%ld: %s: %s\n", n, og_status_name(st), og_last_error());
        }
    }
    printf("training succeeded once %ld allocations were allowed; %d clean OG_ERR_NOMEM "
           "failures\n",
           n, failures_seen);
    CHECK(n < 200000);
    CHECK(failures_seen > 100);
    CHECK(other == 0);
    remove(CKPT);
    og_tensor_free(x);
    og_tensor_free(y);
    TEST_DONE();
}
