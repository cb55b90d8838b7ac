/* ew_chain.c: a chain of float element-wise steps, block by block (see ew_chain.h). */
#include <math.h>
#include <string.h>

#include "kernels/cpu/ew_chain.h"

typedef void (*bin_loop)(const float *a, const float *b, float *o, int64_t n);
typedef void (*acc_loop)(float *o, const float *b, int64_t n);
typedef void (*one_loop)(const float *a, float *o, int64_t n);

/* The four binary loops and Sum's accumulation, once per instruction set: one IEEE
 * operation per element, so the same values at any vector width. */
#define EW_LOOPS(SFX, TARGET)                                                                      \
    TARGET static void add##SFX(const float *restrict a, const float *restrict b,                  \
                                float *restrict o, int64_t n)                                      \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i];                                        \
    }                                                                                              \
    TARGET static void sub##SFX(const float *restrict a, const float *restrict b,                  \
                                float *restrict o, int64_t n)                                      \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = a[i] - b[i];                                        \
    }                                                                                              \
    TARGET static void mul##SFX(const float *restrict a, const float *restrict b,                  \
                                float *restrict o, int64_t n)                                      \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = a[i] * b[i];                                        \
    }                                                                                              \
    TARGET static void div##SFX(const float *restrict a, const float *restrict b,                  \
                                float *restrict o, int64_t n)                                      \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = a[i] / b[i];                                        \
    }                                                                                              \
    TARGET static void acc##SFX(float *restrict o, const float *restrict b, int64_t n)             \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = o[i] + b[i];                                        \
    }                                                                                              \
    TARGET static void square##SFX(const float *restrict a, float *restrict o, int64_t n)          \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = a[i] * a[i];                                        \
    }                                                                                              \
    TARGET static void cube##SFX(const float *restrict a, float *restrict o, int64_t n)            \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = a[i] * a[i] * a[i];                                 \
    }                                                                                              \
    TARGET static void sqrt##SFX(const float *restrict a, float *restrict o, int64_t n)            \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) o[i] = sqrtf(a[i]);                                        \
    }

#define OG_NO_TARGET
EW_LOOPS(_base, OG_NO_TARGET)
#ifdef OG_CPU_X86
EW_LOOPS(_avx2, OG_TARGET_AVX2)
EW_LOOPS(_avx512, OG_TARGET_AVX512)
#endif

typedef struct ew_run {
    const og_ew_step *steps;
    int n_steps, n_ops;
    /* per operand: where block b's values start (FULL: data + b's start; SCALAR: a block
     * of the value; ROW: `tile` when rows fit in a block, else data + b's column; COL: the
     * values, one per row, which each block spreads over its rows) */
    const float *src[OG_EW_MAX_OPS];
    og_ew_spread spread[OG_EW_MAX_OPS];
    int64_t numel, row;
    int64_t len;     /* a block's elements when blocks hold whole rows (or no rows) */
    int64_t per_row; /* blocks per row when a row is longer than a block, else 0 */
    float *local;    /* per thread slot: n_local blocks (steps' results, spread columns) */
    int n_local;
    bin_loop bin[4]; /* by og_ew_op */
    acc_loop acc;
    one_loop pow[3]; /* OG_EW_SQUARE, OG_EW_CUBE, OG_EW_SQRT */
} ew_run;

static void run_blocks(void *ctx, int64_t b0, int64_t b1, int slot)
{
    const ew_run *r = ctx;
    float *const buf = r->local + (size_t)slot * (size_t)r->n_local * OG_EW_BLOCK;
    float *const cols = buf + (size_t)r->n_steps * OG_EW_BLOCK;
    const float *res[OG_EW_MAX_STEPS], *at[OG_EW_MAX_OPS];
    for (int64_t b = b0; b < b1; b++) {
        int64_t start, n, col = 0;
        if (r->per_row) {
            col = (b % r->per_row) * OG_EW_BLOCK;
            start = (b / r->per_row) * r->row + col;
            n = r->row - col < OG_EW_BLOCK ? r->row - col : OG_EW_BLOCK;
        } else {
            start = b * r->len;
            n = r->numel - start < r->len ? r->numel - start : r->len;
        }
        for (int x = 0, nc = 0; x < r->n_ops; x++) {
            switch (r->spread[x]) {
            case OG_EW_FULL: at[x] = r->src[x] ? r->src[x] + start : NULL; break;
            case OG_EW_SCALAR: at[x] = r->src[x]; break;
            case OG_EW_ROW: at[x] = r->per_row ? r->src[x] + col : r->src[x]; break;
            case OG_EW_COL: { /* each row's value over the block's part of that row */
                float *c = cols + (size_t)nc++ * OG_EW_BLOCK;
                const float *v = r->src[x] + start / r->row;
                for (int64_t i = 0, e = 0; i < n; v++) /* n ends a row (or is a row's part) */
                    for (e = i + r->row < n ? i + r->row : n; i < e; i++) c[i] = *v;
                at[x] = c;
                break;
            }
            }
        }
        for (int i = 0; i < r->n_steps; i++) {
            const og_ew_step *st = &r->steps[i];
            const float *a[OG_EW_MAX_ARGS];
            for (int j = 0; j < st->n_args; j++)
                a[j] = st->arg[j] >= 0 ? res[st->arg[j]] : at[-1 - st->arg[j]];
            float *o = st->out ? st->out + start : buf + (size_t)i * OG_EW_BLOCK;
            if (st->op == OG_EW_UNARY) {
                og_cpu_unary_f32(st->unary, a[0], o, n);
            } else if (st->op >= OG_EW_SQUARE) {
                r->pow[st->op - OG_EW_SQUARE](a[0], o, n);
            } else {
                r->bin[st->op](a[0], a[1], o, n);
                for (int j = 2; j < st->n_args; j++) r->acc(o, a[j], n);
            }
            res[i] = o;
        }
    }
}

og_status og_cpu_ew_chain(const og_kernel_ctx *k, const og_ew_step *steps, int n_steps,
                          const og_ew_operand *ops, int n_ops, int64_t numel, int64_t row)
{
    if (n_steps < 1 || n_steps > OG_EW_MAX_STEPS || n_ops > OG_EW_MAX_OPS || numel < 0)
        return og_kernel_error(k, OG_ERR_INTERNAL, "element-wise chain of %d steps, %d operands",
                               n_steps, n_ops);
    if (numel == 0) return OG_OK;
    ew_run r = {.steps = steps, .n_steps = n_steps, .n_ops = n_ops, .numel = numel, .row = row};
    bool rows = false;
    int n_copies = 0, n_cols = 0;
    for (int x = 0; x < n_ops; x++) {
        rows = rows || ops[x].spread == OG_EW_ROW || ops[x].spread == OG_EW_COL;
        n_cols += ops[x].spread == OG_EW_COL;
    }
    if (rows && (row < 1 || numel % row))
        return og_kernel_error(k, OG_ERR_INTERNAL, "element-wise chain: rows of %lld in %lld",
                               (long long)row, (long long)numel);
    r.len = OG_EW_BLOCK;
    if (rows && row <= OG_EW_BLOCK) r.len = OG_EW_BLOCK / row * row;
    if (rows && row > OG_EW_BLOCK) r.per_row = (row + OG_EW_BLOCK - 1) / OG_EW_BLOCK;
    for (int x = 0; x < n_ops; x++)
        n_copies += ops[x].spread == OG_EW_SCALAR || (ops[x].spread == OG_EW_ROW && !r.per_row);
    const int64_t blocks = r.per_row ? numel / row * r.per_row : (numel + r.len - 1) / r.len;
    /* memory-bound like the nodes it replaces: threads only for a large pass, as for any
     * memory-bound loop (og_par_min_stream: far shorter ones where the session's workers
     * poll).  A transformer block's training step on two threads: its LayerNorm chains of
     * 128 Ki values 0.10 -> 0.055 ms, the step 0.93 of its time (7 alternating runs) */
    int threads = (double)numel * n_steps > og_par_min_stream(k) ? k->threads : 1;
    if (threads < 1) threads = 1;
    /* the scalars as blocks of their value and the rows repeated over a block, then each
     * thread's blocks */
    r.n_local = n_steps + n_cols;
    const size_t n_blocks = (size_t)n_copies + (size_t)threads * (size_t)r.n_local;
    float *scratch = og_scratch_get(k, n_blocks * OG_EW_BLOCK * sizeof *scratch);
    if (!scratch) return og_kernel_error(k, OG_ERR_NOMEM, "out of memory");
    float *next = scratch;
    for (int x = 0; x < n_ops; x++) {
        r.spread[x] = ops[x].spread;
        r.src[x] = ops[x].data;
        if (ops[x].spread == OG_EW_SCALAR) {
            for (int i = 0; i < OG_EW_BLOCK; i++) next[i] = ops[x].data[0];
        } else if (ops[x].spread == OG_EW_ROW && !r.per_row) {
            for (int64_t i = 0; i < r.len; i++) next[i] = ops[x].data[i % row];
        } else {
            continue;
        }
        r.src[x] = next;
        next += OG_EW_BLOCK;
    }
    r.local = next;
    int isa = og_cpu_isa();
    (void)isa;
    bin_loop base[4] = {add_base, sub_base, mul_base, div_base};
    one_loop base1[3] = {square_base, cube_base, sqrt_base};
    memcpy(r.bin, base, sizeof base);
    memcpy(r.pow, base1, sizeof base1);
    r.acc = acc_base;
#ifdef OG_CPU_X86
    if (isa >= 2) {
        bin_loop v[4] = {add_avx512, sub_avx512, mul_avx512, div_avx512};
        one_loop v1[3] = {square_avx512, cube_avx512, sqrt_avx512};
        memcpy(r.bin, v, sizeof v);
        memcpy(r.pow, v1, sizeof v1);
        r.acc = acc_avx512;
    } else if (isa >= 1) {
        bin_loop v[4] = {add_avx2, sub_avx2, mul_avx2, div_avx2};
        one_loop v1[3] = {square_avx2, cube_avx2, sqrt_avx2};
        memcpy(r.bin, v, sizeof v);
        memcpy(r.pow, v1, sizeof v1);
        r.acc = acc_avx2;
    }
#endif
    for (int i = 0; i < n_steps; i++)
        if (steps[i].op == OG_EW_POW || (steps[i].op == OG_EW_UNARY && !steps[i].unary))
            return og_kernel_error(k, OG_ERR_INTERNAL, "element-wise chain: step %d unresolved", i);
    og_par_range(k, threads, blocks, 16, run_blocks, &r);
    og_scratch_put(k, scratch);
    return OG_OK;
}
