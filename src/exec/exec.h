/* exec.h: sessions over a graph (the public og_session_* run functions are in session.c;
 * og_session_create, which unwraps a model, is in src/api/session.c), and partial runs for
 * the gradient instances.  Internal header. */
#ifndef OG_EXEC_H
#define OG_EXEC_H

#include "ir/ir.h"

/* A session over graph g, which must be finalized and resolved and outlive the session,
 * computing on `backend` (src/kernels/<device>/; NULL: the CPU).  host: the allocator for
 * outputs and scratch when opts names none.  Every node is bound to the device's kernel
 * here.  fuse: plan activations fused into their producers (exec/fuse.h), for inference
 * sessions.  Errors: OG_ERR_INVALID_ARG (bad options), OG_ERR_UNSUPPORTED
 * (an op or dtype the device has no kernel for, naming the node), OG_ERR_NOMEM. */
struct og_backend;
og_status og_exec_create(const og_graph *g, const struct og_backend *backend,
                         const og_allocator *host, const og_session_options *opts, bool fuse,
                         og_session **out);

/* Declare that the graph's initializers may change between runs of s (their data written
 * in place: a training graph's weights): from then on no kernel keeps what it derives from
 * them (og_kcache), and what kernels kept is dropped; the same for the sessions of its
 * subgraphs. */
void og_exec_set_init_mutable(og_session *s);

/* s's worker threads (core.h), NULL when it has none: for work beside its runs that should
 * share its threads (the trainer's optimizer updates). */
og_workers *og_exec_workers(const og_session *s);

/* Calls a run makes while it goes, for callers that act on results before the run ends (the
 * data-parallel trainer reduces each weight's gradient as soon as it is computed, while the
 * rest of the backward half still runs).  A non-OK status from either stops the run with
 * that status. */
typedef struct og_exec_hooks {
    void *user;
    /* The wanted value want[j] is computed: t is borrowed until the run ends and must not be
     * written.  Called once per j, as soon as the node producing it ran (before any node
     * for values bound at the start: inputs, initializers, earlier partial runs). */
    og_status (*ready)(void *user, int j, const og_tensor *t);
    /* After every node that ran (may be NULL). */
    og_status (*after_node)(void *user);
    /* Where to compute the wanted value want[j] (may be NULL): the caller's memory for its
     * dtype and shape, as the run found them just before the node producing it runs, or
     * NULL to let the session choose.  The node's kernel then writes there; the memory must
     * stay valid, and be left alone, until the run ends, and the tensors the run hands back
     * for j and for views of it are views of it.  When want[j] is made by an op that always
     * views its input 0 (Identity, Reshape, ...: OG_OP_ALIAS_INPUT0), the hook is asked for
     * the value it views instead, under j, with that value's shape (the same number of
     * elements).  Not asked for values bound at the start, values a control-flow node (If,
     * Loop, Scan) makes, outputs that turn out to be views at run time
     * (OG_OP_ALIAS_SAME_SIZE) or strings: ready gets those wherever they are. */
    void *(*place)(void *user, int j, og_dtype dtype, int rank, const int64_t *dims);
} og_exec_hooks;

typedef struct og_exec_req {
    /* graph inputs bound by name (checked against their declarations) */
    const char *const *input_names;
    const og_tensor *const *inputs;
    int n_inputs;
    /* values computed by an earlier partial run, bound by value id (borrowed) */
    const int *pre_values;
    const og_tensor *const *pre_tensors;
    int n_pre;
    /* per node: run it; NULL runs every node and requires every graph input */
    const bool *run;
    /* values to hand back (value ids) and where: new tensors owned by the caller */
    const int *want;
    int n_want;
    og_tensor **out;
    /* per wanted value (NULL: none): hand it back as a view sharing its buffer, never as a
     * copy, even when the buffer is not the session's (a caller's input, which the caller
     * then keeps alive as long as the view) */
    const bool *share;
    const og_exec_hooks *hooks; /* may be NULL */
    /* bound sequences and optionals: check their items' kinds and dtypes but not their
     * shapes (a Loop body's loop-carried containers, which ONNX's own models declare with
     * item shapes their values do not have; tensors are checked in full) */
    bool any_item_shape;
} og_exec_req;

og_status og_session_exec(og_session *s, const og_exec_req *r);
/* The random key kernels get (og_kernel_ctx.rng) in run `run` (0-based) of a session seeded
 * `seed` (og_session_options.seed). */
uint64_t og_exec_run_key(uint64_t seed, uint64_t run);
/* og_session_run_named with hooks (NULL: none); ready's j indexes output_names. */
og_status og_session_run_hooked(og_session *s, const char *const *input_names,
                                const og_tensor *const *inputs, int n_inputs,
                                const char *const *output_names, int n_outputs, og_tensor **outputs,
                                const og_exec_hooks *hooks);
/* The graph a session runs. */
const og_graph *og_session_graph(const og_session *s);

#endif
