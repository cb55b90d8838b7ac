/* trainer.h: the struct behind og_trainer, shared by trainer.c, checkpoint.c, fit.c and
 * export.c.  Internal header. */
#ifndef OG_TRAIN_TRAINER_H
#define OG_TRAIN_TRAINER_H

#include "api/grad_api.h"
#include "core/rng.h"
#include "train/optim.h"

struct og_trainer {
    const og_allocator *a;
    const og_model *model; /* the loss model (the caller's) */
    og_grad *grad;         /* outputs: the loss; no input gradients; the trained weights */
    og_optimizer_options opt;
    og_session *eval; /* the eval graph, for og_trainer_evaluate (made on first use) */
    int threads;
    og_log_fn log;
    void *log_user;
    char *loss_name;
    int n_weights, n_slots;
    og_tensor **w;      /* the trained weights: the training graph's tensors, updated in place */
    og_tensor **slots;  /* optimizer state, slot k of weight i at [i * n_slots + k] */
    og_tensor **grads;  /* scratch for og_grad_run's results */
    og_tensor *seed;    /* ones of the loss's shape */
    int64_t step;       /* steps taken */
    int epoch;          /* epochs og_trainer_fit finished */
    og_rng rng;         /* shuffles of og_trainer_fit */
    const char **names; /* scratch: input names + weight names */
    const og_tensor **values; /* scratch: their tensors */
    int scratch_cap;
};

/* A float64 copy of a scalar tensor's single value. */
double og_trainer_scalar(const og_tensor *t);

/* Run the forward graph (eval) for output `output` with the trained weights bound. */
og_status og_trainer_run_eval(og_trainer *t, const char *const *input_names,
                              const og_tensor *const *inputs, int n_inputs, const char *output,
                              og_tensor **out);

#endif
