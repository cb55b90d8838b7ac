/* exec.h: partial runs of a session, for the gradient instances.  Internal header. */
#ifndef OG_EXEC_H
#define OG_EXEC_H

#include "ir/ir.h"

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
} og_exec_req;

og_status og_session_exec(og_session *s, const og_exec_req *r);
/* The graph a session runs. */
const og_graph *og_session_graph(const og_session *s);

#endif
