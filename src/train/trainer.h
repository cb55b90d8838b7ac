/* trainer.h: the struct behind og_trainer, shared by trainer.c, checkpoint.c, fit.c,
 * export.c and training_info.c.  Internal header.
 *
 * A trainer runs in one of two modes.  Normally it differentiates the loss model (grad) and
 * applies its optimizer (opt, slots).  In algorithm mode (algo != NULL: og_trainer_create
 * without optimizer options on a model carrying a TrainingInfoProto) the model's own
 * algorithm graph makes each step; grad, slots, grads and seed are then unused, and the
 * "weights" (w, n_weights) are the initializers the TrainingInfoProto binds. */
#ifndef OG_TRAIN_TRAINER_H
#define OG_TRAIN_TRAINER_H

#include "api/grad_api.h"
#include "core/rng.h"
#include "train/optim.h"

typedef struct og_algo og_algo; /* algorithm mode's state, in training_info.c */

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
    og_algo *algo; /* non-NULL: algorithm mode */
};

/* A float64 copy of a scalar tensor's single value. */
double og_trainer_scalar(const og_tensor *t);

/* Run the forward graph (eval) for output `output` with the trained weights bound. */
og_status og_trainer_run_eval(og_trainer *t, const char *const *input_names,
                              const og_tensor *const *inputs, int n_inputs, const char *output,
                              og_tensor **out);

/* Algorithm mode (training_info.c).  og_trainer_create calls og_algo_create when it gets no
 * optimizer options; the og_trainer_* functions below hand over to their og_algo_*
 * namesakes when t->algo is set. */
og_status og_algo_create(const og_model *m, const og_trainer_options *opts, og_trainer **out);
/* Frees what algorithm mode owns, the bound initializers' tensors (t->w[i]) among them. */
void og_algo_free(og_trainer *t);
og_status og_algo_step(og_trainer *t, const char *const *input_names,
                       const og_tensor *const *inputs, int n_inputs, double *loss);
og_status og_algo_run_eval(og_trainer *t, const char *const *input_names,
                           const og_tensor *const *inputs, int n_inputs, const char *output,
                           og_tensor **out);
const char *og_algo_weight_name(const og_trainer *t, int i);
/* The model whose inputs og_trainer_step binds: t->model, or in algorithm mode the main and
 * algorithm graphs combined (an algorithm graph may add inputs, the targets say; the bound
 * initializers are inputs there too, after the data inputs). */
const og_model *og_trainer_step_model(const og_trainer *t);
og_status og_algo_get_weight(const og_trainer *t, const char *name, const og_tensor **value);
og_status og_algo_set_weight(og_trainer *t, const char *name, const og_tensor *value);

#endif
