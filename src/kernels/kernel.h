/*
 * kernel.h: the seam between the executor and the devices.  Internal header.
 *
 * A device is a backend: one folder src/kernels/<device>/ holding its kernels, one family
 * per file (the family names of src/ops/), and one og_backend that lists the family tables
 * and says where the device keeps tensor memory.  Nothing in ir/, ops/ or grad/ knows which
 * devices exist; the executor asks a backend for each node once, when a session is created
 * (og_backend_bind), so that an op or a dtype the device lacks is an error then, naming the
 * node, and never in the middle of a run.
 *
 * A kernel receives its inputs and its outputs already allocated with the shapes and dtypes
 * that the op's infer computed (omitted optional inputs and outputs are NULL) and writes
 * every element of every non-NULL output.
 *
 * Types: an entry states the dtypes it computes for one input (its type constraint), either
 * as a list (`types`) or through `select`, which returns the implementation for a dtype
 * (a function of the family's own type, e.g. a typed loop) or NULL.  With `select`, the
 * choice is made at bind time and reaches the kernel as k->impl, so the kernel does not
 * dispatch on dtype at every call; a kernel called without a binding (k->impl NULL, as unit
 * tests do) selects for itself.  A kernel whose loops depend on the dtypes of several inputs
 * (an op with two type variables: QuantizeLinear's x and zero point, GridSample's X and
 * grid, Pow's base and exponent) or on the dtype of an output (Cast's `to`, CastLike's
 * input 1, LayerNormalization's stash_type) uses `select_types` instead, which sees every
 * input's and every output's static dtype (the outputs' as the op's static inference
 * resolved them when the session was created).  An entry with none of these accepts every
 * dtype the op's inference admits and checks at run time.
 */
#ifndef OG_KERNELS_KERNEL_H
#define OG_KERNELS_KERNEL_H

#include "core/rng.h"
#include "ops/op.h"

/* An element-wise activation a kernel applies to its output 0 after computing it, while
 * it is still in cache: an inference session fuses Conv + Relu / Clip / HardSwish /
 * HardSigmoid / Sigmoid / SiLU (x * Sigmoid(x)) this way, and Add + the same (src/exec/fuse.c). The
 * values are those the activation's own kernel would compute from the same input, bit for bit. */
typedef enum og_act_kind {
    OG_FUSE_NONE = 0,
    OG_FUSE_RELU,
    OG_FUSE_CLIP,        /* min(max(x, lo), hi) */
    OG_FUSE_HARDSWISH,   /* x * clamp(x / 6 + 1/2, 0, 1) */
    OG_FUSE_HARDSIGMOID, /* clamp(alpha * x + beta, 0, 1) */
    OG_FUSE_SIGMOID,
    OG_FUSE_SILU /* x * Sigmoid(x), the product rounded as Mul rounds it */
} og_act_kind;

typedef struct og_act {
    og_act_kind kind;
    double lo, hi;      /* Clip */
    double alpha, beta; /* HardSigmoid */
} og_act;

/* Scratch memory a session keeps from call to call (the largest any kernel asked for),
 * so that big column buffers are not mapped and faulted in again at every call. */
typedef struct og_scratch {
    void *data;
    size_t size;
} og_scratch;

/* What a kernel derives from a node's constant inputs and keeps from run to run (the
 * Winograd transform of a Conv's weights): one per node of a session (og_kcache_get). */
typedef struct og_kcache {
    void *data;
    size_t size;
    const void *key; /* what data was derived from (NULL: nothing yet) */
} og_kcache;

/* A pointwise Conv run inside the Conv that reads its output (exec/fuse.h): that Conv's
 * node, weights, bias (NULL: none) and activation. */
typedef struct og_pre_conv {
    const og_node *node;
    const og_tensor *w, *b;
    og_act act;
} og_pre_conv;

typedef struct og_kernel_ctx {
    const og_node *node;
    const void *params;        /* == node->params */
    const og_allocator *alloc; /* for scratch memory */
    int threads;               /* the session's thread count */
    const void *impl;          /* what the entry's select chose at bind time, or NULL */
    uint64_t rng;              /* this run's random key (og_session_options.seed) */
    /* applied to output 0 when its kind is not OG_FUSE_NONE; only for entries with
     * og_kernel_def.act set */
    og_act act;
    og_scratch *scratch; /* the session's (NULL: og_scratch_get allocates) */
    /* The node's cache (NULL: none), and which inputs are the same tensor from run to run
     * (bit j for input j, j < 32): the model's initializers, not given by the caller in
     * this run, in a session whose initializers do not change (none are marked in training
     * sessions: exec.h, og_exec_set_init_mutable).  Their contents never change while the
     * session lives. */
    og_kcache *cache;
    uint32_t const_in;
    /* The session's worker threads (core.h: og_workers), NULL when it has none: CPU kernels
     * split their loops over them (kernels/cpu/kernel.h: og_par_range), else over OpenMP's. */
    og_workers *workers;
    /* Conv only, CPU inference sessions: the pointwise Conv in front of this one, NULL
     * when none.  Input 0 is then that Conv's input, and this Conv reads pre's output
     * (with pre->act), which the kernel computes and nobody stores. */
    const og_pre_conv *pre;
    /* Conv only, CPU inference sessions (exec/fuse.h: og_fusion.post): output 0 is the
     * MaxPool (3x3, strides 2, pads 1) of the convolution's output after act, which the
     * kernel computes and nobody stores. */
    bool max_pool;
    /* Conv only, CPU inference sessions (exec/fuse.h: og_fusion.res): a float tensor of
     * output 0's shape added to the convolution's output before act (output 0 = act(Conv +
     * res), the residual Add after the Conv and the Add's activation), NULL when none. */
    const og_tensor *res;
    /* Entries with og_kernel_def.perm_in only (MatMul), CPU sessions: where perm[j] is
     * set, input j is the input X of a Transpose with that perm (one entry per axis of X,
     * none reversed: exec/fuse.h), and the kernel reads Transpose(X, perm) where the node's
     * input j would be, without the copy. */
    const int64_t *perm[2];
} og_kernel_ctx;

/* The node's cache memory for what the kernel derives from `key`, a constant input's data
 * (an input with its bit in k->const_in): `bytes` of it, *fresh true when the kernel must
 * (re)compute its contents (first run, another key or size), false when it holds what the
 * previous call with this key computed, 64-byte aligned.  NULL when the kernel has no cache
 * or it is out of memory (the kernel computes into scratch instead).  A kernel that fails after a
 * fresh get calls og_kcache_drop(k). */
void *og_kcache_get(const og_kernel_ctx *k, const void *key, size_t bytes, bool *fresh);
void og_kcache_drop(const og_kernel_ctx *k);

/* `bytes` of scratch memory for kernel call k, 64-byte aligned: the session's buffer (grown
 * as needed) or a new block, NULL when out of memory; og_scratch_put(k, p) after use (frees a new
 * block). One call at a time per session: parallel loops of one call share the buffer. */
void *og_scratch_get(const og_kernel_ctx *k, size_t bytes);
void og_scratch_put(const og_kernel_ctx *k, void *p);

typedef og_status (*og_kernel_fn)(const og_kernel_ctx *k, const og_tensor *const *in, int n_in,
                                  og_tensor *const *out, int n_out);
/* The implementation of a kernel for node n when its type input has dtype t; NULL if the
 * device has none. */
typedef const void *(*og_kernel_select_fn)(const og_node *n, og_dtype t);
/* The same given the static dtypes of all of n's inputs and outputs: types[i] for input i,
 * out_types[j] for output j (at most OG_KERNEL_MAX_TYPED of each), OG_UNDEFINED where it is
 * not known before the run or the input or output is omitted; types[type_input] is always
 * known.  Returns NULL when the device has no implementation for these dtypes, or
 * OG_KERNEL_AT_RUN when a dtype it needs is not known before the run (no binding: the
 * kernel picks at run time). */
typedef const void *(*og_kernel_select_types_fn)(const og_node *n, const og_dtype *types,
                                                 const og_dtype *out_types);
enum { OG_KERNEL_MAX_TYPED = 16 };
extern const char og_kernel_at_run;
#define OG_KERNEL_AT_RUN ((const void *)&og_kernel_at_run)

typedef struct og_kernel_def {
    const char *name;
    const char *domain; /* "" for ai.onnx */
    og_kernel_fn fn;
    const og_dtype *types;      /* dtypes of the type input, 0-terminated; NULL: see select */
    og_kernel_select_fn select; /* NULL: fn dispatches on dtype itself */
    /* Instead of select, for loops that depend on more than one input's dtype, or on an
     * output's; the binding then holds only while every input and output has the static
     * dtype it had (see the binding). */
    og_kernel_select_types_fn select_types;
    int type_input; /* which input's dtype the constraint reads (default 0) */
    /* The op's since-versions this entry computes, inclusive; 0 leaves that end open.  A
     * table may hold several entries for one op, one per range of versions. */
    int since_min, since_max;
    /* Nonzero: the kernel takes string tensors (OG_STRING) on any input.  Without it the
     * executor refuses a string input before the call, whatever the type constraint says:
     * a kernel moving elements by size would copy the strings' pointers. */
    int strings;
    /* Nonzero: the kernel applies k->act to its output 0 (an executor may then fuse a
     * following activation into the node, see og_act). */
    int act;
    /* Nonzero: the kernel reads inputs 0 and 1 through k->perm when set (an executor may
     * then give it a Transpose's input in place of the Transpose's output). */
    int perm_in;
} og_kernel_def;

/* A family's table is `const og_kernel_def og_<device>_<family>[] = {..., {0}};`. */

typedef struct og_backend {
    const char *name;                   /* "cpu": used in messages */
    const og_kernel_def *const *tables; /* the device's family tables, NULL-terminated */
    /* The allocator of the device's tensor memory, given the session's host allocator
     * (the CPU's is that allocator itself). */
    const og_allocator *(*allocator)(const og_allocator *host);
} og_backend;

/* What a node runs with on a device. */
typedef struct og_kernel_binding {
    og_kernel_fn fn;  /* NULL for an op whose output 0 is a view (OG_OP_ALIAS_INPUT0)
                         and that has no kernel of its own */
    const void *impl; /* passed to the kernel as k->impl while input type_input has dtype
                         `type` (the executor checks: a run that disagrees passes NULL) */
    /* impl came from select_types: it is passed only while, besides, every input and
     * output whose static dtype was known has the dtype it had then (types[], out_types[]) */
    int all_types;
    og_dtype types[OG_KERNEL_MAX_TYPED];     /* with all_types: the inputs' static dtypes */
    og_dtype out_types[OG_KERNEL_MAX_TYPED]; /* and the outputs' */
    int type_input;
    og_dtype type;
    int strings; /* the entry's `strings`: 1 when no kernel (a view of input 0) */
    int act;     /* the entry's `act` */
    int perm_in; /* the entry's `perm_in` */
} og_kernel_binding;

/* The entry of backend b for (domain, name) at since-version `since` (0: any version), NULL
 * if none. */
const og_kernel_def *og_backend_find(const og_backend *b, const char *domain, const char *name,
                                     int since);

/* Bind resolved node n (n->op set) to backend b.  in_types[0..n->n_in-1] are the static
 * dtypes of the node's inputs (OG_UNDEFINED where not known before the run, or omitted:
 * the kernel then checks the dtype itself); out_types[0..n->n_out-1] those of its outputs
 * as static inference resolved them, or NULL when none is known (a select_types entry
 * that needs one then binds nothing and its kernel picks at run time).
 * The entry is the one for the node's op at its since-version.
 * Errors: OG_ERR_UNSUPPORTED naming the node, the op, the device and, for a version or a
 * dtype it lacks, what it has. */
og_status og_backend_bind(const og_backend *b, const og_node *n, const og_dtype *in_types,
                          const og_dtype *out_types, og_kernel_binding *out);

/* og_error with the node label before the message. */
og_status og_kernel_error(const og_kernel_ctx *k, og_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* OG_KERNELS_KERNEL_H */
