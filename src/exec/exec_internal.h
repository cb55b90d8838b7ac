/*
 * exec_internal.h: a session's state, shared by session.c (planning, running nodes) and
 * control.c (If, Loop, Scan, which run their subgraphs in sessions of their own).  Internal
 * to src/exec/.
 */
#ifndef OG_EXEC_INTERNAL_H
#define OG_EXEC_INTERNAL_H

#include <stdatomic.h>

#include "exec/exec.h"
#include "exec/fuse.h"
#include "exec/fuse_ew.h"
#include "kernels/cpu/kernel.h"

/* A subgraph's session, and where its outer values come from: outer_v[k] (a value of the
 * subgraph) is bound to input outer_in[k] of the node holding the subgraph (one of its
 * implicit inputs: the same name in the enclosing graph). */
typedef struct og_subexec {
    og_session *s;
    int n_outer;
    int *outer_v, *outer_in;
    const char **in_names; /* the subgraph's input names, in order */
    const og_tensor **pre; /* n_outer slots a run fills with the outer values */
} og_subexec;

struct og_session {
    const og_graph *g;
    const og_backend *backend;
    const og_allocator *alloc; /* the caller's: output tensors and scratch use it */
    int threads;
    og_log_fn log;
    void *log_user;
    int debug;
    og_kernel_binding *kernels;   /* per node */
    int *last_use;                /* per value: index of the last node reading it, -1 if none */
    og_tensor **slot;             /* per value, during a run */
    bool *owned;                  /* slot[v] is the session's to release */
    bool *keep;                   /* requested as an output of this run */
    int *want_at;                 /* per value: where this run's hooks place it (want index), -1 */
    bool *placed;                 /* slot[v] lies in memory the run's hooks placed */
    const og_exec_hooks *placing; /* this run's hooks when they place values, else NULL */
    int64_t *sym;                 /* per symbol: its value in this run, -1 unbound */
    int n_sym;                    /* symbols of the root graph when the session was made */
    og_vinfo *vin, *vout;
    const og_tensor **tin;
    og_tensor **tout;
    int max_in, max_out;
    og_pool *pool;
    og_workers *workers; /* threads - 1 workers (core.h), NULL for one thread */
    bool owns_workers;   /* false for a subgraph's session: its parent's workers */
    /* per node: its subgraphs' sessions (If: then, else; Loop, Scan: body), NULL for other
     * ops */
    og_subexec **subs;
    const og_graph *root;        /* symbols live there */
    uint64_t rng_seed, rng_runs; /* og_session_get_rng */
    uint64_t run_key;            /* this run's: from (rng_seed, rng_runs) */
    /* activations fused into their producers (fuse.h): per node, per value; n_fused == 0
     * when the session does not fuse */
    og_fusion *fusion;
    bool *internal;
    int n_fused;         /* nodes the plan leaves out: activations, then weight gradients' */
    int n_fused_act;     /* of which activations */
    int n_fused_pre;     /* and pointwise Convs run inside depthwise ones */
    int n_fused_pool;    /* and MaxPools run inside the Conv before them */
    int n_fused_res;     /* and Adds run inside the Conv of one of their inputs */
    int n_fused_tr;      /* and Transposes read in place by MatMuls */
    int *fused_last_use; /* per value: the last node reading it when the plan is used */
    bool fused_run;      /* this run uses the plan */
    /* chains of element-wise nodes run as one loop (fuse_ew.h; CPU sessions) */
    og_ew_plan ew;
    /* The graph's initializers may change between runs (training and eval graphs, whose
     * weights the optimizer and og_grad_set_weight write in place): kernels are told no
     * input is constant (og_kernel_ctx.const_in), so that they keep nothing derived from
     * one in their og_kcache. */
    bool init_mutable;
    og_scratch scratch; /* the kernels' (og_scratch_get) */
    og_kcache *kcache;  /* per node: what kernels derive from constant inputs */
    /* One run at a time: set by og_session_exec for its duration (a second thread's call
     * fails with OG_ERR_BUSY instead of sharing the per-run state above). */
    atomic_int busy;
};

/* The error of a failed allocation for node n's output j (-1: its kernel's scratch, or a
 * subgraph's run) of nbytes and shape vo: OG_ERR_LIMIT naming the budget when the
 * session's budget refused it (og_session_options.max_memory), else OG_ERR_NOMEM. */
og_status og_exec_budget_error(og_session *s, const og_node *n, int j, size_t nbytes,
                               const og_vinfo *vo);

/* Node ni of a chain (fuse_ew.h), about to run: at the chain's first node, the members
 * this run needs (run: per node, NULL for all) run as the chain when its shapes let them;
 * when they did, node ni's inputs whose last reader (lu) it is are released and *skip is
 * set (the node does not run). */
og_status og_ew_at(og_session *s, int ni, const bool *run, const int *lu, bool *skip);

/* Run control-flow node ni (OG_OP_CONTROL) of s: its inputs are in s->tin, its outputs go to
 * s->tout (new tensors) (control.c). */
og_status og_exec_control(og_session *s, int ni);
/* og_exec_create, with `shared` (not NULL) as the session's workers instead of its own: a
 * subgraph's session runs on its parent's threads, so that nesting does not multiply them. */
og_status og_exec_create_in(const og_graph *g, const og_backend *backend, const og_allocator *host,
                            const og_session_options *opts, bool fuse, og_workers *shared,
                            og_session **out);

/* The sessions of node ni's subgraphs (control.c); og_exec_free_subs releases them. */
og_status og_exec_create_subs(og_session *s, int ni, const og_session_options *opts);
void og_exec_free_subs(og_session *s);

#endif /* OG_EXEC_INTERNAL_H */
