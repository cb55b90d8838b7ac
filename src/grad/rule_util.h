/* rule_util.h: node-building helpers that the rules of several op families share
 * (src/grad/<family>.c).  Internal header; emit.c's og_gb_* helpers are the base.
 *
 * Like the og_gb_* helpers, every function here returns -1 once the builder holds an error
 * (or when given a -1 value), so rules stay straight-line code. */
#ifndef OG_GRAD_RULE_UTIL_H
#define OG_GRAD_RULE_UTIL_H

#include "grad/grad.h"

/* Shorthands inside a rule, whose parameters are `b` and `n`: the value ids of input i and
 * output i of the node, and whether input i needs a gradient. */
#define IN(i)    (n->in[i])
#define OUT(i)   (n->out[i])
#define WANTS(i) og_gb_wants(b, n, i)

/* x·y, x + y, x − y, x / y (numpy broadcasting, as the ONNX ops) */
int og_rule_mul(og_gb *b, int x, int y);
int og_rule_add(og_gb *b, int x, int y);
int og_rule_sub(og_gb *b, int x, int y);
int og_rule_div(og_gb *b, int x, int y);

/* x cast to dt */
int og_rule_cast(og_gb *b, int x, og_dtype dt);
/* True for the 16-bit floats, whose gradients the rules that say so compute in float32 (as
 * their forward kernels do) and round back once: few ops of a gradient graph run on them. */
static inline bool og_rule_is_half(og_dtype t) { return t == OG_FLOAT16 || t == OG_BFLOAT16; }
/* x as float32 when the dtype of forward value `like` is a 16-bit float, else x (x may be
 * an emitted value, whose type is not known yet: a gradient of `like`) */
int og_rule_widen_as(og_gb *b, int x, int like);
#define og_rule_widen(b, x) og_rule_widen_as((b), (x), (x))
/* cond ? a : c.  Where from opset 9; before, a·m + c·(1 − m) with the cast mask m.  `like`
 * is a forward value of the result's dtype (emitted values have no static type yet). */
int og_rule_select(og_gb *b, int cond, int a, int c, int like);
/* cond ? v : 0, as og_rule_select */
int og_rule_where0(og_gb *b, int cond, int v, int like);
/* a + v, where a may be -1 (nothing accumulated yet) */
int og_rule_accumulate(og_gb *b, int a, int v);
/* Zeros of the runtime shape and the type of forward value v: Expand from opset 8, v·0
 * before. */
int og_rule_zeros_like(og_gb *b, int v);

/* x reshaped to a constant shape of k dims (0 copies a dim, -1 infers one) */
int og_rule_reshape_c(og_gb *b, int x, const int64_t *shape, int k);
/* x with its axes permuted by perm (rank entries) */
int og_rule_transpose(og_gb *b, int x, const int64_t *perm, int rank);
/* x with size-1 axes inserted at axes (k of them, sorted): input from opset 13, attribute
 * before; x itself when k is 0. */
int og_rule_unsqueeze(og_gb *b, int x, const int64_t *axes, int k);
/* x[starts:ends:steps] along axes (k of each), constant bounds: inputs from opset 10, the
 * attribute form before (steps NULL: 1; other steps need opset 10). */
int og_rule_slice(og_gb *b, int x, const int64_t *axes, const int64_t *starts, const int64_t *ends,
                  const int64_t *steps, int k);
/* x[starts[i] : ends[i]] along axes[i] (k constant axes), starts and ends 1-D int64 values
 * of k entries known at run time with 0 <= start <= end <= dim: Slice with inputs from
 * opset 10, before a Gather of start + og_rule_iota(end − start) per axis. */
int og_rule_slice_rt(og_gb *b, int x, int starts, int ends, const int64_t *axes, int k);
/* x (of dtype dt) padded with zeros by pb before and pe after each spatial axis 2 .. nsp + 1,
 * pb and pe 1-D int64 values of nsp entries known at run time (>= 0): Pad with a pads input
 * from opset 11; before (Pad-2 takes its pads as an attribute), per axis a Concat with zeros
 * gathered from a zero slab of x (Cast(t < t) of x's first position there: 0 for any value)
 * at pb or pe indices 0 (og_rule_iota · 0). */
int og_rule_pad_spatial_rt(og_gb *b, int x, int pb, int pe, int nsp, og_dtype dt);
/* Shape(v)[from:] as a 1-D int64 value, at any opset */
int og_rule_shape_tail(og_gb *b, int v, int64_t from);
/* max(v, 0) of an int64 value: Where and Less from opset 9, before a Relu in double
 * (exact for |v| < 2^53) */
int og_rule_relu_i64(og_gb *b, int v);
/* Reduce* op `op` of x over axes with keepdims `keep`, in the form of the graph's opset
 * (axes as an input from 13 for ReduceSum, from 18 for the others).  No axes: x itself. */
int og_rule_reduce(og_gb *b, const char *op, int x, const int64_t *axes, int k, bool keep);
/* The count of the elements a reduction of x over axes sums, as a scalar of dtype dt: a
 * constant when x's dims there are known, else Size(x) / Size(reduced). */
int og_rule_reduced_count(og_gb *b, int x, const int64_t *axes, int k, int reduced, og_dtype dt);
/* 0 .. n − 1 as a 1-D int64 value, n a rank-0 int64 value known at run time: Range from
 * opset 11, the indices of NonZero over n ones at opsets 9 and 10, before a Loop (opset 1)
 * of n trips whose body gives its iteration number as a scan output. */
int og_rule_iota(og_gb *b, int n);
/* 0 .. d − 1 for d dim `axis` of value v: a constant when d is static, else og_rule_iota. */
int og_rule_iota_dim(og_gb *b, int v, int axis);
/* Dim `axis` of value v as a rank-0 int64 value: a constant when static, else gathered from
 * Shape(v). */
int og_rule_dim(og_gb *b, int v, int axis);
/* OneHot(idx, depth, [0, 1]) along axis `axis`, of dtype dt; bfloat16, which OneHot's values
 * do not list (up to opset 21), made as float and cast. */
int og_rule_one_hot(og_gb *b, int idx, int depth, og_dtype dt, int64_t axis);
/* x (rank r) ·_axis m: axis `axis` of x contracted with the first axis of the matrix m */
int og_rule_matmul_axis(og_gb *b, int x, int m, int r, int axis);
/* ScatterElements(data, idx, upd) along axis (Scatter before opset 11), with reduction red
 * (NULL: none) */
int og_rule_scatter_elements(og_gb *b, int data, int idx, int upd, int axis, const char *red);

/* dX of a Conv-like op over nsp spatial axes (kernel k, strides s, dilations d, begin pads
 * pb) that maps input sizes `in` to output sizes `out`: ConvTranspose(dy, w) with the same
 * strides, dilations, begin pads and group, and the end pad pe that gives `in` back,
 *   s·(out − 1) + op + ek − pb − pe = in,  ek = (k − 1)·d + 1,
 * where a negative pe becomes output_padding op = −pe. */
int og_rule_conv_back(og_gb *b, int dy, int w, int nsp, const int64_t *in, const int64_t *out,
                      const int64_t *k, const int64_t *s, const int64_t *d, const int64_t *pb,
                      int64_t group);
/* The strides, dilations, pads (2·nsp) and group (when not 1) of a Conv, ConvTranspose or
 * pooling node being emitted. */
void og_rule_conv_attrs(og_gb *b, int node, int nsp, const int64_t *strides, const int64_t *dil,
                        const int64_t *pads, int64_t group);

/* A positive value far below any that matters in dtype dt, to keep a 0/0 of a rule at 0:
 * 1e-30 (float, double), 1e-7 (float16 and bfloat16, whose 1e-30 is 0). */
double og_rule_tiny(og_dtype dt);

/* The static rank of value v; -1 (an error naming `what`) when it is not known. */
int og_rule_rank_of(og_gb *b, const og_node *n, int v, const char *what);
/* axis normalized into 0..rank-1; -1 (an error) when out of range. */
int og_rule_axis(og_gb *b, const og_node *n, int64_t axis, int rank);

#endif /* OG_GRAD_RULE_UTIL_H */
