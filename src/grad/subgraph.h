/* subgraph.h: building a subgraph (a body or branch) of the graph a gradient emitter writes,
 * shared by the control-flow rules (src/grad/control.c) and the sequence rules
 * (src/grad/sequence.c).  Internal header.  Errors are set on the emitters: og_gb_status. */
#ifndef OG_GRAD_SUBGRAPH_H
#define OG_GRAD_SUBGRAPH_H

#include "grad/grad.h"

/* A new subgraph of the training graph holding T's values and nodes, T's inputs left to
 * define (by the caller) or, when nothing defines them, read from the enclosing graph by
 * name; with an emitter on it.  NULL after an error. */
og_graph *og_sub_open(og_gb *b, const og_graph *T, const char *prefix, og_gb **eb);

/* Value `name` of the enclosing graph, read in subgraph B. */
int og_sub_outer(og_gb *eb, og_graph *B, const char *name);

/* Make value v of B its next graph input (-1 after an error). */
int og_sub_make_input(og_gb *eb, og_graph *B, int v);

/* A graph input of B named name (allocated, freed here; NULL: an error is set) of type dt
 * (rank: -1 unknown, 0 scalar). */
int og_sub_input(og_gb *eb, og_graph *B, char *name, og_dtype dt, int rank);

/* Make v the next graph output of B, of type dt (an Identity when v is already one, or an
 * input, or read from the enclosing graph). */
void og_sub_output(og_gb *eb, og_graph *B, int v, og_dtype dt);

/* Close B's emitter and prune B (false after an error, set on b). */
bool og_sub_finish(og_gb *b, og_gb *eb, og_graph *B);

/* Close B's emitter, prune B, put a copy as attribute `name` of node; free B. */
void og_sub_attach(og_gb *b, og_gb *eb, og_graph *B, int node, const char *name);

#endif /* OG_GRAD_SUBGRAPH_H */
