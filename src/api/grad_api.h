/* grad_api.h: the struct behind og_grad, shared by grad.c and instance.c.  Internal. */
#ifndef OG_GRAD_API_H
#define OG_GRAD_API_H

#include <stdatomic.h>
#include <stdbool.h>

#include "api/api.h"
#include "exec/exec.h"
#include "grad/grad.h"

struct og_grad {
    const og_model *model;
    og_model *owned_model; /* set when g was loaded from saved bytes: g owns its model */
    og_model *lowered;     /* the model with its ai.onnx.ml linear models lowered (grad.h:
                              og_grad_lower_ml), which `model` then points to; or NULL */
    og_model *training;    /* the training graph, wrapped as a model */
    og_model *eval;        /* the forward graph with the weights as inputs */
    og_session *session;   /* runs the training graph */
    og_session *forward;   /* runs the model, to learn output shapes for default seeds */
    og_session_options sopts;
    const og_allocator *alloc;
    int n_outputs, n_inputs, n_weights;
    const char **names; /* outputs, inputs, weights (names owned by the training graph) */
    const char **seed_names;
    const char **run_names; /* scratch: names bound in og_grad_run */
    const og_tensor **run_tensors;
    og_tensor **ones;
    /* the two halves of the training graph, for instances */
    bool *backward; /* per training node: in the backward half (a gradient seed reaches it, or
                     * a Transpose only such nodes read: og_grad_split) */
    int *saved;     /* values the backward half reads that the forward half makes */
    int n_saved;
    int *out_values;  /* training-graph value ids: selected outputs, then results */
    int *seed_values; /* per selected output: its seed input, or -1 */
    /* Calls in flight: > 0 while og_grad_run or instances' forward/backward calls use g
     * (shared), -1 while og_grad_set_weight writes the weights (exclusive).  A call that
     * cannot enter fails with OG_ERR_BUSY. */
    atomic_int users;
    atomic_int run_busy; /* og_grad_run's scratch: one call at a time */
};

/* og_grad_run with hooks on the training graph's run (exec.h): ready's j indexes the
 * outputs, then the input gradients, then the weight gradients (og_grad_run's order). */
og_status og_grad_run_hooked(og_grad *g, const char *const *input_names,
                             const og_tensor *const *inputs, int n_inputs,
                             const og_tensor *const *grad_outputs, og_tensor **outputs,
                             og_tensor **grads, const og_exec_hooks *hooks);

static inline bool og_grad_enter_shared(og_grad *g)
{
    int u = atomic_load(&g->users);
    while (u >= 0)
        if (atomic_compare_exchange_weak(&g->users, &u, u + 1)) return true;
    return false;
}

static inline void og_grad_leave_shared(og_grad *g) { atomic_fetch_sub(&g->users, 1); }

/* og_grad_run that also hands back the values of the training graph named in extra
 * (n_extra of them, into extra_out: new tensors), from the same run. */
og_status og_grad_run_with(og_grad *g, const char *const *input_names,
                           const og_tensor *const *inputs, int n_inputs,
                           const og_tensor *const *grad_outputs, og_tensor **outputs,
                           og_tensor **grads, const char *const *extra, int n_extra,
                           og_tensor **extra_out);
/* The initializer `name` of the training graph (eval false) or of the eval graph, NULL if
 * none: for state a trainer updates besides the weights (running statistics). */
og_tensor *og_grad_state_tensor(og_grad *g, const char *name, bool eval);
/* Both: extra values and hooks (either may be absent). */
og_status og_grad_run_full(og_grad *g, const char *const *input_names,
                           const og_tensor *const *inputs, int n_inputs,
                           const og_tensor *const *grad_outputs, og_tensor **outputs,
                           og_tensor **grads, const char *const *extra, int n_extra,
                           og_tensor **extra_out, const og_exec_hooks *hooks);

/* Split the training graph into its forward and backward halves (fills the fields above). */
og_status og_grad_split(og_grad *g);

#endif
