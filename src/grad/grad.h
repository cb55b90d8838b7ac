/*
 * grad.h: reverse-mode differentiation of an og_graph.  Internal header.
 *
 * og_grad_build turns a forward graph into the training graph of DESIGN §4: one ordinary
 * graph whose inputs are the model inputs, then the trained weights, then one gradient
 * seed per selected output (`<output>_grad`), and whose outputs are the selected model
 * outputs, then `<input>_grad` for the inputs that need one, then `<weight>_grad`.
 *
 * Each op's gradient is a rule in src/grad/<family>.c, <family> being the op's family in
 * src/ops/ (the file src/ops/<family>.c that defines it: unary, binary, reduce, linalg, conv,
 * pool, norm, loss, tensor, resize, index, optim, ml; see registry.c): given the node and the
 * value ids of the gradients of its outputs (dy, -1 where no gradient flows), it emits
 * ordinary nodes into the training graph through the og_gb_* helpers below (and the shared
 * ones of rule_util.h) and returns the value ids of the gradients of its inputs (dx, -1 where
 * none).  Contributions reaching one value from several consumers are summed by the
 * builder; rules only compute local gradients.
 *
 * Helpers never fail loudly in the middle of a rule: on error they record it in the
 * builder, return -1, and every helper given a -1 returns -1 too, so a rule is written as
 * straight-line code and ends with `return og_gb_status(b);`.
 */
#ifndef OG_GRAD_H
#define OG_GRAD_H

#include "ops/op.h"

typedef struct og_gb og_gb;

typedef og_status (*og_grad_rule_fn)(og_gb *b, const og_node *n, const int *dy, int *dx);

typedef struct og_grad_rule {
    const char *name;
    const char *domain;
    og_grad_rule_fn fn;
} og_grad_rule;

/* NULL when the op has no rule. */
const og_grad_rule *og_grad_rule_find(const char *domain, const char *name);

/* What to differentiate. */
typedef struct og_grad_spec {
    const int *weights; /* forward value ids of the initializers to train */
    int n_weights;
    const int *inputs; /* forward value ids of graph inputs that need gradients */
    int n_inputs;
    const int *outputs; /* forward value ids of the outputs to differentiate */
    int n_outputs;
    og_log_fn log;
    void *log_user;
    /* Start of the names of the values the builder adds (NULL: "og_grad"): the gradients of
     * a subgraph, built as a graph of their own and copied into a subgraph of the training
     * graph, need names no enclosing graph uses. */
    const char *prefix;
    /* Seed the outputs that are sequences or optionals of float tensors too (a Loop's
     * carried sequence, an If's output, src/grad/control.c); else only float tensor outputs
     * get a seed. */
    bool seed_sequences;
} og_grad_spec;

/* Build the training graph (finalized and resolved), allocated with `alloc`.
 * Errors: OG_ERR_UNSUPPORTED for an op without a rule on a needed path (naming node and
 * op), or a shape the rules cannot handle; OG_ERR_NOMEM. */
og_status og_grad_build(const og_graph *fwd, const og_grad_spec *spec, const og_allocator *alloc,
                        og_graph **out);

/* Replace every ai.onnx.preview.training Gradient node by the nodes computing its outputs:
 * the gradients of its attribute y with respect to the values named in its attribute xs,
 * with ones as the gradient of y.  g must be finalized and resolved (unknown ops allowed);
 * it is finalized again after.  Errors: as og_grad_build. */
og_status og_grad_expand_gradient_ops(og_graph *g);

/* ---- ai.onnx.ml (src/grad/ml.c) ------------------------------------------------------ */

/* Lower every LinearRegressor and LinearClassifier of g to standard ops on initializers, so
 * that their coefficients and intercepts can be trained like any weight:
 *   S = Reshape(X, [-1, F]) · Transpose(W) + B,   W = "<node>_coefficients" [T, F],
 *                                                B = "<node>_intercepts" [T] (when used),
 * then the op's post transform and, for a classifier, its label (Gather of the class labels
 * at ArgMax(S), or at S > 0 for one column), each as the op computes them
 * (src/ops/ml_params.h).  The initializers take the scores' dtype (float64 in a float64
 * copy of the model), else X's, float for an integer X (X is cast to it).  A name already
 * taken gets "_1", "_2", ...; two linear nodes of one name "<name>_<index>_..."
 * (og_grad_ml_weight_names).  g must be
 * finalized and resolved; it is finalized and resolved again.  *n_lowered (may be NULL)
 * receives the count.  Errors: OG_ERR_UNSUPPORTED (a classifier whose class count cannot be
 * known before the run), OG_ERR_NOMEM. */
og_status og_grad_lower_ml(og_graph *g, int *n_lowered);
/* The names the lowering gives to node i's coefficients and intercepts, new strings
 * allocated with g's allocator (NULL both when node i is no LinearRegressor or
 * LinearClassifier).  Deterministic for one graph, so that weights trained on a lowered copy
 * can be written back.  Errors: OG_ERR_NOMEM. */
og_status og_grad_ml_weight_names(const og_graph *g, int i, char **coef, char **inter);
/* Write trained weight `name` (a coefficient or intercept tensor of a lowered copy of g)
 * back into the attributes of g's node it came from.  *found says whether one was.
 * Errors: OG_ERR_SHAPE (a tensor of another size), OG_ERR_NOMEM. */
og_status og_grad_ml_write_back(og_graph *g, const char *name, const og_tensor *value, bool *found);
/* The value standing for output v when differentiating: the float tensor a ZipMap turns
 * into its sequence of maps (the gradient of the probabilities, not of the maps), else v. */
int og_grad_output_source(const og_graph *g, int v);

/* An emitter over graph g outside differentiation (losses, optimizer steps): the og_gb_*
 * helpers below then add nodes and constants to g, named "<prefix>_N_..." and
 * "<prefix>/Op_N".  og_gb_wants is false for everything.  NULL when out of memory.
 * og_gb_close frees it and returns its sticky status (call og_graph_finalize after). */
og_gb *og_gb_open(og_graph *g, const char *prefix);
og_status og_gb_close(og_gb *b);

/* ---- for rules --------------------------------------------------------------------- */

/* A gradient of item `pos` (a position value: int32 or int64 scalar, negative from the back)
 * of forward sequence `seq`, when seq needs a gradient: SequenceAt's rule records it instead
 * of returning a dx, and og_gb_sequence_total adds it into the sequence's gradient. */
void og_gb_item_gradient(og_gb *b, int seq, int pos, int grad);
/* The rule running leaves the gradients of its sequence and optional outputs unused, and
 * rightly (they have no items): else the builder refuses a rule that does so, which would
 * drop them silently. */
void og_gb_gradient_unused(og_gb *b);

/* The total gradient of forward value v, a sequence or an optional, from its n contributions
 * (grads[i], for the whole value when pos[i] < 0, else for the item at pos[i]): one whole
 * contribution as it is; item contributions added into it (or into zeros of the sequence's
 * items, made from how v was built, else by a Loop over its items at run time) by
 * SequenceErase, SequenceAt, Add and SequenceInsert; several whole sequence contributions
 * stacked, summed and split again when their items have one shape (static, or
 * SplitToSequence's without a split), else summed item by item over the length the graph
 * fixes, or in a Loop over the items when only the run time knows it; optionals' elements
 * summed where the optional has one (from opset 16: an If on OptionalHasElement).  -1 after
 * recording an error. */
int og_gb_sequence_total(og_gb *b, int v, const int *grads, const int *pos, int n);

/* The Sum of the m whole gradients seqs of forward sequence v, item by item in a Loop over
 * v's items at run time (any length, 0 included: a Loop's accumulator, src/grad/control.c).
 * -1 after recording an error. */
int og_gb_sequence_sum_items(og_gb *b, int v, const int *seqs, int m);
/* A sequence of zeros like forward sequence v (or like v, a typed value of the emitter's
 * graph read from an enclosing one): made the way v was, else by a Loop over its items at
 * run time.  -1 after recording an error. */
int og_gb_sequence_zeros(og_gb *b, int v);
/* Zeros like forward optional v of a tensor (v, or a typed value of the emitter's graph read
 * from an enclosing one), and the sum of m optionals opts like v: an If on whether v has an
 * element (empty: v itself, through an Identity: opset 16 and later, else an error).  -1
 * after recording an error. */
int og_gb_optional_zeros(og_gb *b, int v);
int og_gb_optional_sum(og_gb *b, int v, const int *opts, int m);

og_status og_gb_status(const og_gb *b);
/* Record an error for node n (the first one wins) and return -1. */
int og_gb_fail(og_gb *b, const og_node *n, og_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Does input i of n need a gradient (it lies on a path from a trained weight or an input
 * needing a gradient)? */
bool og_gb_wants(const og_gb *b, const og_node *n, int i);
/* Static type and shape of a value of the training graph (forward values are known).  The
 * pointer stays valid until the rule returns (the builder reserves room before each rule
 * for up to 4096 new values), not longer. */
const og_value *og_gb_value(const og_gb *b, int v);
/* The node computing forward value v (NULL for a graph input or an initializer), for rules
 * that read how a parameter input is computed.  Valid until the next node is emitted. */
const og_node *og_gb_producer(const og_gb *b, int v);
/* The value id of output j of the training graph's copy of forward node n (the node the
 * rule runs for), for a rule that reads what the forward op computes anyway instead of
 * computing it again.  Where n omits output j, the copy gets a fresh value as that output
 * (the training forward then computes and keeps it); n itself is updated with it, so read
 * n->n_out and the dy of the outputs the rule was given before the call.  -1 after an
 * error. */
int og_gb_forward_output(og_gb *b, const og_node *n, int j);
/* The allocator of the training graph (for a rule's scratch memory). */
const og_allocator *og_gb_alloc(const og_gb *b);
/* The default-domain opset of the graph. */
int64_t og_gb_opset(const og_gb *b);

/* Emit a node of the default domain with n_in inputs (a -1 input is passed as omitted only
 * after the last present one; any -1 among `in` that is required makes the node fail) and
 * one output; returns the output's value id.  Use og_gb_attr_* on og_gb_last(b) for
 * attributes. */
int og_gb_op(og_gb *b, const char *op, int n_in, const int *in);
/* og_gb_op with a chosen output name (the caller makes sure it is free). */
int og_gb_op_named(og_gb *b, const char *op, int n_in, const int *in, const char *out_name);
int og_gb_op1(og_gb *b, const char *op, int x);
int og_gb_op2(og_gb *b, const char *op, int x, int y);
int og_gb_op3(og_gb *b, const char *op, int x, int y, int z);
/* A node with several outputs: out[0..n_out-1] receive the new value ids; returns the
 * node index (-1 after an error). */
int og_gb_op_multi(og_gb *b, const char *op, int n_in, const int *in, int n_out, int *out);
/* A node of any domain: in as og_gb_op (-1: omitted), n_out outputs of which those with
 * want[j] false are omitted (want NULL: all present); out[j] gets each output's value id (-1
 * where omitted).  Returns the node index (-1 after an error).  The graph must import the
 * domain (og_gb_import). */
int og_gb_op_ext(og_gb *b, const char *domain, const char *op, int n_in, const int *in, int n_out,
                 const bool *want, int *out);
/* og_gb_op writing into existing value out_value (which must have no producer yet);
 * returns it. */
int og_gb_op_into(og_gb *b, const char *op, int n_in, const int *in, int out_value);
/* Make the training graph's copy of forward node n parse its attributes again when the
 * graph is resolved (a rule that changed its attributes or subgraphs); n->params must not
 * be read after this. */
void og_gb_forward_reparse(og_gb *b, const og_node *n);
/* The graph being built (for a rule that makes subgraphs: og_graph_new_sub of it). */
og_graph *og_gb_graph(og_gb *b);
/* Give node a GRAPH attribute `name` holding a copy of sub (sub stays the caller's). */
void og_gb_attr_graph(og_gb *b, int node, const char *name, const og_graph *sub);
/* Make the graph import opset `version` of `domain` (nothing if it imports one). */
void og_gb_import(og_gb *b, const char *domain, int64_t version);
/* Set the overload (NodeProto.overload) of node: which model-local function it calls. */
void og_gb_set_overload(og_gb *b, int node, const char *overload);
/* Add a model-local function (a packed FunctionProto, copied) unless one of that identity
 * exists; the graph's IR version becomes at least 10 (overloads). */
void og_gb_add_function(og_gb *b, const char *domain, const char *name, const char *overload,
                        const og_blob *proto);
/* Whether the graph has the function (domain, name, overload). */
bool og_gb_has_function(const og_gb *b, const char *domain, const char *name, const char *overload);
/* Make the training graph's copy of forward node n (the node whose rule runs) an op of
 * another domain and name, with the same inputs, outputs and attributes (the training form
 * of an op, computing more outputs), calling function overload `overload` (NULL: none).
 * Its attributes are parsed again when the training graph is resolved, so n->params must
 * not be read after this: call it last. */
void og_gb_forward_retype(og_gb *b, const og_node *n, const char *domain, const char *op,
                          const char *overload);

/* Copy every attribute of src onto node, except the one named `skip` (may be NULL). */
void og_gb_copy_attrs(og_gb *b, int node, const og_node *src, const char *skip);
/* Node index of the last node emitted (-1 after an error). */
int og_gb_last(const og_gb *b);
void og_gb_attr_int(og_gb *b, int node, const char *name, int64_t v);
void og_gb_attr_float(og_gb *b, int node, const char *name, float v);
void og_gb_attr_ints(og_gb *b, int node, const char *name, const int64_t *v, int n);
void og_gb_attr_floats(og_gb *b, int node, const char *name, const float *v, int n);
void og_gb_attr_string(og_gb *b, int node, const char *name, const char *v);

/* Constants (initializers of the training graph). */
int og_gb_const_i64(og_gb *b, const int64_t *v, int n); /* 1-D int64 */
/* Rank-0 constant of dtype (float, float64, float16, bfloat16: rounded; int64, int32); an
 * integer dtype takes only an integral v inside its range (else the builder fails: a double
 * is exact for integers up to 2^53 only, so integers from the model go through
 * og_gb_scalar_i64). */
int og_gb_scalar(og_gb *b, double v, og_dtype dtype);
/* Rank-0 int64 or int32 constant holding v exactly (int32: v must fit, else the builder
 * fails naming the value). */
int og_gb_scalar_i64(og_gb *b, int64_t v, og_dtype dtype);
/* 1-D constant of n floats, stored as dtype (float, float64, float16 or bfloat16: rounded) */
int og_gb_const_floats(og_gb *b, const float *v, int n, og_dtype dtype);
/* A constant holding a copy of t (any dtype, strings included) */
int og_gb_const_tensor(og_gb *b, const og_tensor *t);
/* A scalar constant of the dtype of value `like`, which must be a forward value (values
 * emitted by rules have no static type until the graph is resolved). */
int og_gb_scalar_like(og_gb *b, double v, int like);

/* ReduceSum over `axes` in the form the graph's opset wants (attribute or input). */
int og_gb_reduce_sum(og_gb *b, int x, const int64_t *axes, int n_axes, bool keepdims);
/* Sum a gradient whose static shape is (from_rank, from_dims) back to the shape of
 * forward value `target` (numpy broadcasting undone): leading axes and axes where target
 * has dim 1 are summed, then the result takes target's shape.  Needs ranks to be known. */
int og_gb_sum_to_shape(og_gb *b, int grad, int from_rank, const int64_t *from_dims, int target);
/* Same, with the static shape of value `from` (usually the node's output). */
int og_gb_sum_to(og_gb *b, int grad, int from, int target);
/* The gradient of output 0 of n summed back to the shape of its input i, for an op whose
 * output shape is the broadcast of its inputs (Add, Mul, Where, PRelu, ...; with `tail`
 * trailing axes of every input left out of the broadcast: 2 for MatMul's matrices, whose
 * gradient has the input's own dims there): an axis whose dims are known only at run time
 * needs no sum when no other input can broadcast along it, so fewer axes are left to run
 * time than og_gb_sum_to leaves. */
int og_gb_sum_to_input(og_gb *b, int grad, const og_node *n, int i, int tail);
/* The reduced axes of a Reduce* node (attribute or constant input), normalized and sorted,
 * into axes[]; returns their count (every axis for reduce-all; 0 when empty axes mean no
 * reduction), or -1 after recording an error. */
int og_gb_reduce_axes(og_gb *b, const og_node *n, int rank, int64_t *axes);
/* Reshape x to the (runtime) shape of forward value `like`. */
int og_gb_reshape_like(og_gb *b, int x, int like);

#endif /* OG_GRAD_H */
