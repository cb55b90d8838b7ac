/*
 * optim.h: optimizer updates, shared by the trainer (trainer.c), its checkpoints
 * (checkpoint.c) and the fit loop (fit.c).  Internal header.
 */
#ifndef OG_TRAIN_OPTIM_H
#define OG_TRAIN_OPTIM_H

#include "core/core.h"

/* OG_OK, or OG_ERR_INVALID_ARG naming the bad field. */
og_status og_optim_check(const og_optimizer_options *o);

/* State tensors per weight (each of the weight's shape and dtype) and their names:
 * SGD with momentum: "momentum"; Adam/AdamW: "m", "v"; Adagrad: "h"; plain SGD: none. */
int og_optim_slot_count(const og_optimizer_options *o);
const char *og_optim_slot_name(const og_optimizer_options *o, int i);
/* The starting value of slot i (Adagrad's initial_accumulator, else 0). */
double og_optim_slot_init(const og_optimizer_options *o, int i);

/* One update of weight w (n elements of dtype float or double) in place, or of any part of
 * it (w, g and the slots offset alike: the update is element-wise), with gradient g
 * scaled by gscale (gradient clipping), for step t (0-based) at learning rate lr; slots
 * as og_optim_slot_count.  Runs with up to `threads` threads when n is large: on `workers`
 * (a session's, core.h) when not NULL, else on OpenMP's. */
void og_optim_update(const og_optimizer_options *o, int64_t t, double lr, double gscale,
                     og_dtype dtype, void *w, const void *g, void *const *slots, int64_t n,
                     int threads, og_workers *workers);

/* Sum of squares of n elements (float or double), accumulated in double: the same value
 * for any thread count and instruction set (a fixed order of partial sums). */
double og_optim_sumsq(og_dtype dtype, const void *x, int64_t n, int threads, og_workers *workers);
/* Whether the n elements (float or double; other dtypes: true) are all finite. */
bool og_optim_finite(og_dtype dtype, const void *x, int64_t n);

#endif
