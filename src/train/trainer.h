/* trainer.h: the struct behind og_trainer, shared by the files of src/train/.  Internal.
 *
 * A trainer runs in one of two modes, each a table of functions (og_trainer_mode) that the
 * public og_trainer_* functions of trainer_core.c call through:
 *  - gradient mode (trainer.c): it differentiates the loss model (grad) and applies its
 *    optimizer (opt, slots);
 *  - algorithm mode (training_info.c: og_trainer_create without optimizer options on a
 *    model carrying a TrainingInfoProto): the model's own algorithm graph makes each step;
 *    grad, slots, grads and seed are unused, and the "weights" (w, n_weights) are the
 *    initializers the TrainingInfoProto binds (algo holds the rest).
 * Calls run one way: trainer.c (og_trainer_create) -> training_info.c -> trainer_core.c. */
#ifndef OG_TRAIN_TRAINER_H
#define OG_TRAIN_TRAINER_H

#include <stdatomic.h>
#include <stdint.h>

#include "api/grad_api.h"
#include "core/rng.h"
#include "train/optim.h"

typedef struct og_algo og_algo; /* algorithm mode's state, in training_info.c */
typedef struct og_dp og_dp;     /* data-parallel state, in parallel.c */

/* What differs between the modes. */
typedef struct og_trainer_mode {
    /* One step on a batch (arguments checked): the weights updated in place, *loss the
     * batch's loss; nothing is updated when the loss or an update is not finite. */
    og_status (*step)(og_trainer *t, const char *const *input_names, const og_tensor *const *inputs,
                      int n_inputs, double *loss);
    /* The eval graph's model (eval runs it with the weights bound), and the bindings. */
    const og_model *(*eval_model)(const og_trainer *t);
    og_status (*bind_eval)(og_trainer *t, const char *const *input_names,
                           const og_tensor *const *inputs, int n_inputs, const char *const **names,
                           const og_tensor *const **values, int *n_bound);
    const char *(*weight_name)(const og_trainer *t, int i); /* i checked */
    og_status (*get_weight)(const og_trainer *t, const char *name, const og_tensor **value);
    og_status (*set_weight)(og_trainer *t, const char *name, const og_tensor *value);
    void (*free)(og_trainer *t); /* what the mode owns (not the struct) */
} og_trainer_mode;

/* A BatchNormalization node in training mode whose running statistics the trainer keeps. */
typedef struct og_bn_stat {
    const char *mean, *var; /* the statistics' initializers (names owned by the model) */
    double momentum;        /* ONNX's: running = running * momentum + batch * (1 - momentum) */
    og_tensor *tm, *tv;     /* the training graph's tensors */
    og_tensor *em, *ev;     /* the eval graph's (NULL if absent) */
} og_bn_stat;

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
    og_tensor **w;     /* the trained weights: the training graph's tensors, updated in place */
    og_tensor **slots; /* optimizer state, slot k of weight i at [i * n_slots + k] */
    og_tensor **grads; /* scratch for og_grad_run's results */
    void **gptr;       /* scratch: the gradients og_trainer_update applies */
    og_tensor *seed;   /* ones of the loss's shape */
    int64_t step;      /* steps taken */
    int epoch;         /* epochs og_trainer_fit finished */
    og_rng rng;        /* shuffles of og_trainer_fit */
    /* BatchNormalization nodes in training mode whose running statistics are initializers
     * not trained: each step reads the node's new running mean and var (its outputs 1, 2)
     * and its input's shape, and sets the statistics as PyTorch does (trainer.c) */
    int n_bn;
    struct og_bn_stat *bn;
    const char **bn_extra; /* per node: out mean, out var, X (og_grad_run_with's extra) */
    og_tensor **bn_vals;   /* their values of the last step */
    /* Dropout's masks: step k runs the training session's generator at (dropout_seed, k),
     * so every step draws anew and a resumed run draws as an uninterrupted one */
    uint64_t dropout_seed;
    const char **names;       /* scratch: input names + weight names */
    const og_tensor **values; /* scratch: their tensors */
    int scratch_cap;
    const og_trainer_mode *mode;
    const og_model *step_model; /* whose inputs og_trainer_step binds */
    og_algo *algo;              /* non-NULL: algorithm mode */
    og_dp *dp;                  /* non-NULL: data-parallel steps (parallel.c) */
    int64_t max_memory;         /* og_trainer_options.max_memory, for every session */
    /* The thread inside a non-const call (0: none), named by the address of its error
     * buffer (og_last_error: one per thread), and how deep: calls nest in one thread (fit
     * calls step; a fit callback may predict), another thread gets OG_ERR_BUSY. */
    atomic_uintptr_t owner;
    int depth;
};

/* ---- trainer_core.c: what both modes share ----------------------------------------- */

/* A trainer with the fields every mode sets from the options (allocator, model, threads,
 * log, seed); NULL when out of memory (the error is set). */
og_trainer *og_trainer_new(const og_model *m, const og_trainer_options *opts,
                           const og_trainer_mode *mode);
/* Enter a non-const call on t from this thread (nested calls of one thread are allowed);
 * OG_ERR_BUSY naming fn when another thread is inside one.  Leave with og_trainer_leave. */
og_status og_trainer_enter(og_trainer *t, const char *fn);
void og_trainer_leave(og_trainer *t);
/* A float64 copy of a scalar tensor's single value (NaN if not a float scalar). */
double og_trainer_scalar(const og_tensor *t);
/* OG_ERR_RUNTIME naming the step when loss is not finite ("what" was not updated). */
og_status og_trainer_check_loss(const og_trainer *t, double loss, const char *what);
/* The scratch arrays t->names and t->values hold n entries. */
og_status og_trainer_scratch(og_trainer *t, int n);
/* Run the eval graph for output `output` with the trained weights bound. */
og_status og_trainer_run_eval(og_trainer *t, const char *const *input_names,
                              const og_tensor *const *inputs, int n_inputs, const char *output,
                              og_tensor **out);
/* The model whose inputs og_trainer_step binds: t->model, or in algorithm mode the main and
 * algorithm graphs combined (an algorithm graph may add inputs, the targets say; the bound
 * initializers are inputs there too, after the data inputs). */
const og_model *og_trainer_step_model(const og_trainer *t);

/* ---- trainer.c (gradient mode) -------------------------------------------------------- */

/* Apply gradient grads[i] (weight i's dtype and size) to every weight: the NaN/Inf check,
 * clipping, the learning rate of this step, the optimizer's update, the BatchNormalization
 * running statistics from bn_vals (the step's run must have filled them); step + 1.  loss only
 * goes into messages.  Nothing changes when a gradient is not finite (OG_ERR_RUNTIME). */
og_status og_trainer_update(og_trainer *t, void *const *grads, double loss);
/* Its parts, for an update made piecewise (parallel.c): clipping's gradient factor from the
 * gradients' sum of squares; the BatchNormalization statistics and step + 1 after the
 * weights are updated; the threads an update may use. */
double og_trainer_gscale(const og_trainer *t, double sumsq);
void og_trainer_end_update(og_trainer *t);
int og_trainer_update_threads(const og_trainer *t);

/* ---- checkpoint.c ------------------------------------------------------------------- */

/* The checkpoint's bytes (weights, optimizer state, step, epoch, generator), allocated with
 * t->a; and loading them (`what` names their source in messages). */
og_status og_trainer_state_bytes(const og_trainer *t, void **bytes, size_t *size);
og_status og_trainer_state_load(og_trainer *t, const void *bytes, size_t size, const char *what);

/* ---- parallel.c: data-parallel steps -------------------------------------------------- */

/* A collective step (og_trainer_step_shard) whose rank may have failed already: a non-OK
 * `local` (its message in og_last_error()) makes this rank join the reductions without
 * computing, and every rank return the agreed failure. */
og_status og_dp_step(og_trainer *t, const char *const *input_names, const og_tensor *const *inputs,
                     int n_inputs, double share, og_status local, double *loss);
void og_dp_free(og_trainer *t);
/* The Dropout seed of rank `rank` (steps draw at (it, step)): rank 0 keeps the trainer's,
 * so one rank draws as one process; other ranks draw other masks for their own samples. */
uint64_t og_dp_dropout_seed(uint64_t seed, int rank);
/* rank and size of t's communicator (0 and 1 without one) */
int og_dp_rank(const og_trainer *t);
int og_dp_size(const og_trainer *t);
/* Sum n doubles across ranks in place, and agree on `local` at the same time (one
 * reduction when every rank is fine).  Errors: the agreed failure, a communicator one. */
og_status og_dp_sum(og_trainer *t, double *v, int n, og_status local);
/* Collective: rank 0's state (og_trainer_state_bytes) and *flag go to every rank. */
og_status og_dp_sync_state(og_trainer *t, int64_t *flag);
/* Collective: the weights and optimizer state hash the same on every rank, else
 * OG_ERR_RUNTIME naming the ranks' hashes (`when` says when, for the message). */
og_status og_dp_check_hash(og_trainer *t, const char *when);
/* Inside og_trainer_fit (begin, and end with fit's status): steps shard the optimizer's
 * update when the communicator can (parallel.c).  Collective.  end gathers the optimizer
 * state (og_dp_gather_state) and returns st, or the gather's failure when st is OG_OK. */
void og_dp_fit_begin(og_trainer *t);
og_status og_dp_fit_end(og_trainer *t, og_status st);
/* Collective: after sharded steps, every rank gets the optimizer state of the other ranks'
 * parts, so that every rank holds all of it (nothing to do when it does already). */
og_status og_dp_gather_state(og_trainer *t);
/* og_comm_agree over t's communicator (local itself without one). */
og_status og_dp_agree(og_trainer *t, og_status local);
/* Collective: v[0..1] take rank 0's values. */
og_status og_dp_sync_sizes(og_trainer *t, int64_t *v);
/* Collective maximum of an int64 (the callback's stop requests). */
og_status og_dp_max(og_trainer *t, int64_t *v);

/* ---- training_info.c ---------------------------------------------------------------- */

/* A trainer in algorithm mode: og_trainer_create calls it when it gets no optimizer
 * options. */
og_status og_algo_create(const og_model *m, const og_trainer_options *opts, og_trainer **out);

#endif
