/* test_conv.c: Conv and ConvTranspose through parse, static and run-time inference and the
 * CPU kernel, against a direct (no im2col) reference, plus error cases. */
#include "unit/node_harness.h"

typedef struct tcase {
    const char *op;
    int opset;
    int nsp;
    int64_t n, c, m; /* batch, input channels, output channels */
    int64_t in[3], k[3];
    int64_t group;
    int64_t strides[3], dil[3], pads[6];
    const char *auto_pad;
    int64_t outpad[3];
    int64_t oshape[3];
    bool has_oshape, bias, kernel_attr;
    og_dtype dt;
    int threads;
    int64_t w1, b_len; /* nonzero: override W's dim 1 / B's length (error cases) */
    bool sym_batch;    /* declare X's batch dim symbolic in the graph */
} tcase;

static uint32_t rng = 12345;
static double rnd(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (double)(rng >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

static double get(const og_tensor *t, int64_t i)
{
    return t->dtype == OG_FLOAT ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
}
static void set(og_tensor *t, int64_t i, double v)
{
    if (t->dtype == OG_FLOAT)
        ((float *)t->data)[i] = (float)v;
    else
        ((double *)t->data)[i] = v;
}

/* Pads and output sizes written out independently of the library, from the spec text. */
static void ref_geometry(const tcase *tc, int64_t *pb, int64_t *pe, int64_t *out)
{
    bool tr = strcmp(tc->op, "ConvTranspose") == 0;
    const char *ap = tc->auto_pad ? tc->auto_pad : "NOTSET";
    for (int i = 0; i < tc->nsp; i++) {
        int64_t in = tc->in[i], ek = (tc->k[i] - 1) * tc->dil[i] + 1, s = tc->strides[i];
        pb[i] = tc->pads[i];
        pe[i] = tc->pads[tc->nsp + i];
        if (strcmp(ap, "VALID") == 0) pb[i] = pe[i] = 0;
        bool same = strncmp(ap, "SAME", 4) == 0;
        if (!tr) {
            if (same) {
                out[i] = (in + s - 1) / s;
                int64_t total = (out[i] - 1) * s + ek - in;
                if (total < 0) total = 0;
                pb[i] = strcmp(ap, "SAME_UPPER") == 0 ? total / 2 : (total + 1) / 2;
                pe[i] = total - pb[i];
            } else {
                out[i] = (in + pb[i] + pe[i] - ek) / s + 1;
            }
        } else {
            if (tc->has_oshape || same) {
                out[i] = tc->has_oshape ? tc->oshape[i] : in * s;
                int64_t total = s * (in - 1) + tc->outpad[i] + ek - out[i];
                int64_t half = (int64_t)floor((double)total / 2.0);
                bool upper = strcmp(ap, "SAME_UPPER") == 0;
                if (tc->opset >= 11)
                    pb[i] = upper ? half : total - half;
                else
                    pb[i] = upper ? total - half : half;
                pe[i] = total - pb[i];
            } else {
                out[i] = s * (in - 1) + tc->outpad[i] + ek - pb[i] - pe[i];
            }
        }
    }
}

/* Direct convolution: every output (Conv) or input (ConvTranspose) position, every tap. */
static void reference(const tcase *tc, const og_tensor *x, const og_tensor *w, const og_tensor *b,
                      double *y, const int64_t *pb, const int64_t *out)
{
    bool tr = strcmp(tc->op, "ConvTranspose") == 0;
    int nsp = tc->nsp;
    int64_t cg = tc->c / tc->group, mg = tc->m / tc->group, is = 1, os = 1, ks = 1;
    for (int i = 0; i < nsp; i++) {
        is *= tc->in[i];
        os *= out[i];
        ks *= tc->k[i];
    }
    for (int64_t n = 0; n < tc->n; n++)
        for (int64_t m = 0; m < tc->m; m++)
            for (int64_t o = 0; o < os; o++) y[(n * tc->m + m) * os + o] = b ? get(b, m) : 0.0;
    /* walk (n, g, ci, mi, position p in the "small" side, tap) and pair positions */
    int64_t np = tr ? is : os;
    for (int64_t n = 0; n < tc->n; n++)
        for (int64_t g = 0; g < tc->group; g++)
            for (int64_t ci = 0; ci < cg; ci++)
                for (int64_t mi = 0; mi < mg; mi++)
                    for (int64_t p = 0; p < np; p++)
                        for (int64_t t = 0; t < ks; t++) {
                            int64_t pi[3], ti[3], r = p, rt = t, other = 0;
                            bool ok = true;
                            for (int j = nsp - 1; j >= 0; j--) {
                                pi[j] = r % (tr ? tc->in[j] : out[j]);
                                r /= tr ? tc->in[j] : out[j];
                                ti[j] = rt % tc->k[j];
                                rt /= tc->k[j];
                            }
                            for (int j = 0; j < nsp; j++) {
                                int64_t q = pi[j] * tc->strides[j] + ti[j] * tc->dil[j] - pb[j];
                                int64_t lim = tr ? out[j] : tc->in[j];
                                if (q < 0 || q >= lim) ok = false;
                                other = other * lim + q;
                            }
                            if (!ok) continue;
                            int64_t c = g * cg + ci, m = g * mg + mi;
                            if (!tr) {
                                double wv = get(w, (m * cg + ci) * ks + t);
                                y[(n * tc->m + m) * os + p] +=
                                    wv * get(x, (n * tc->c + c) * is + other);
                            } else {
                                double wv = get(w, (c * mg + mi) * ks + t);
                                y[(n * tc->m + m) * os + other] +=
                                    wv * get(x, (n * tc->c + c) * is + p);
                            }
                        }
}

/* Build the node (named `label`), resolve it, run it; return the status of the first
 * failing step.  With check, compare the shapes, static and run-time, and the values
 * against the reference. */
static og_status run_case(const tcase *tc, bool check, const char *label)
{
    bool tr = strcmp(tc->op, "ConvTranspose") == 0;
    og_tensor *t[3] = {NULL, NULL, NULL};
    double *ref = NULL;
    og_status st;
    int nsp = tc->nsp, rank = nsp + 2;
    int64_t dims[3][OG_MAX_RANK];
    dims[0][0] = tc->n;
    dims[0][1] = tc->c;
    dims[1][0] = tr ? tc->c : tc->m;
    dims[1][1] = tr ? tc->m / tc->group : tc->c / tc->group;
    for (int i = 0; i < nsp; i++) {
        dims[0][2 + i] = tc->in[i];
        dims[1][2 + i] = tc->k[i];
    }
    dims[2][0] = tc->m;
    if (tc->w1) dims[1][1] = tc->w1;
    if (tc->b_len) dims[2][0] = tc->b_len;
    int nin = tc->bias ? 3 : 2;
    int ranks[3] = {rank, rank, 1};
    for (int i = 0; i < nin; i++) {
        og_tensor_alloc(tc->dt, ranks[i], dims[i], NULL, &t[i]);
        for (int64_t e = 0; e < t[i]->numel; e++) set(t[i], e, rnd());
    }
    nh_node n = {.op = tc->op,
                 .opset = tc->opset,
                 .name = label,
                 .in = {t[0], t[1], t[2]},
                 .threads = tc->threads ? tc->threads : 1};
    char decl[128];
    if (tc->sym_batch) { /* X's batch dim is the symbol N */
        int len = snprintf(decl, sizeof decl, "N");
        for (int i = 1; i < rank; i++)
            len += snprintf(decl + len, sizeof decl - (size_t)len, ",%lld", (long long)dims[0][i]);
        n.decl[0] = decl;
    }
    int na = 0;
    if (tc->group != 1) n.attrs[na++] = (nh_attr)NH_INT("group", tc->group);
    n.attrs[na++] = (nh_attr)NH_INTS_N("strides", nsp, tc->strides);
    n.attrs[na++] = (nh_attr)NH_INTS_N("dilations", nsp, tc->dil);
    if (tc->auto_pad)
        n.attrs[na++] = (nh_attr)NH_STRING("auto_pad", tc->auto_pad);
    else
        n.attrs[na++] = (nh_attr)NH_INTS_N("pads", 2 * nsp, tc->pads);
    if (tc->kernel_attr) n.attrs[na++] = (nh_attr)NH_INTS_N("kernel_shape", nsp, tc->k);
    if (tr) n.attrs[na++] = (nh_attr)NH_INTS_N("output_padding", nsp, tc->outpad);
    if (tc->has_oshape) n.attrs[na++] = (nh_attr)NH_INTS_N("output_shape", nsp, tc->oshape);

    nh_result r;
    if ((st = nh_run(&n, &r))) goto done;
    const og_tensor *y = r.out[0];
    const og_value *sy = nh_static_out(&r, 0);
    int64_t pb[3], pe[3], out[3];
    ref_geometry(tc, pb, pe, out);
    CHECKF(y->rank == rank, "%s: rank %d", label, y->rank);
    CHECKF(y->dims[0] == tc->n && y->dims[1] == tc->m, "%s: N, M", label);
    for (int i = 0; i < nsp; i++)
        CHECKF(y->dims[2 + i] == out[i], "%s: out dim %d is %lld, expected %lld", label, i,
               (long long)y->dims[2 + i], (long long)out[i]);
    /* the static shape on the graph agrees */
    CHECKF(sy->rank == rank, "%s: static rank", label);
    for (int i = 0; i < nsp && sy->rank == rank; i++)
        CHECKF(sy->dims[2 + i] == out[i], "%s: static dim %d", label, i);
    if (tc->sym_batch) {
        const og_value *sx = &r.g->values[r.node->in[0]];
        CHECKF(sy->dims[0] == sx->dims[0] && sy->dims[0] < 0, "%s: symbolic batch not kept", label);
    }
    if (check) {
        ref = malloc((size_t)(y->numel ? y->numel : 1) * sizeof *ref);
        reference(tc, t[0], t[1], tc->bias ? t[2] : NULL, ref, pb, out);
        double tol = tc->dt == OG_FLOAT ? 1e-4 : 1e-10;
        int bad = 0;
        for (int64_t e = 0; e < y->numel && bad < 3; e++) {
            double a = get(y, e), v = ref[e];
            if (!(fabs(a - v) <= tol * (1 + fabs(v)))) {
                bad++;
                CHECKF(0, "%s: element %lld is %g, expected %g", label, (long long)e, a, v);
            }
        }
    }
done:
    if (st && check) CHECKF(0, "%s: status %d: %s", label, (int)st, og_last_error());
    free(ref);
    nh_release(&r);
    for (int i = 0; i < 3; i++) og_tensor_free(t[i]);
    return st;
}

static tcase base(const char *op, int nsp)
{
    tcase tc;
    memset(&tc, 0, sizeof tc);
    tc.op = op;
    tc.opset = 13;
    tc.nsp = nsp;
    tc.n = 1;
    tc.c = 3;
    tc.m = 4;
    tc.group = 1;
    tc.dt = OG_FLOAT;
    for (int i = 0; i < 3; i++) {
        tc.in[i] = 6 + i;
        tc.k[i] = 3;
        tc.strides[i] = tc.dil[i] = 1;
    }
    tc.bias = true;
    return tc;
}

static void test_random(void)
{
    const char *ops[2] = {"Conv", "ConvTranspose"};
    const char *aps[5] = {NULL, NULL, "SAME_UPPER", "SAME_LOWER", "VALID"};
    char label[128];
    int ran = 0;
    for (int iter = 0; iter < 400; iter++) {
        tcase tc = base(ops[iter % 2], 1 + (iter / 2) % 3);
        tc.group = 1 + (int64_t)((rnd() + 1) * 1.5);
        tc.c = tc.group * (1 + (int64_t)((rnd() + 1) * 1.5));
        tc.m = tc.group * (1 + (int64_t)((rnd() + 1) * 1.5));
        tc.n = 1 + (int64_t)((rnd() + 1) * 1.5);
        tc.bias = rnd() > -0.3;
        tc.dt = rnd() > 0 ? OG_FLOAT : OG_DOUBLE;
        tc.auto_pad = aps[(int)((rnd() + 1) * 2.5) % 5];
        tc.kernel_attr = rnd() > 0;
        tc.threads = rnd() > 0 ? 2 : 1;
        tc.opset = rnd() > 0 ? 11 : 7;
        for (int i = 0; i < tc.nsp; i++) {
            tc.in[i] = 1 + (int64_t)((rnd() + 1) * 4);
            tc.k[i] = 1 + (int64_t)((rnd() + 1) * 1.5);
            tc.strides[i] = 1 + (int64_t)((rnd() + 1) * 1.2);
            tc.dil[i] = 1 + (int64_t)((rnd() + 1) * 0.8);
            tc.pads[i] = (int64_t)((rnd() + 1) * 1.2);
            tc.pads[tc.nsp + i] = (int64_t)((rnd() + 1) * 1.2);
            tc.outpad[i] = (int64_t)((rnd() + 1) * 0.5 * (double)tc.strides[i]) % tc.strides[i];
        }
        if (tc.op[4] == 'T' && rnd() > 0.5) {
            tc.has_oshape = true;
            tc.auto_pad = rnd() > 0 ? "SAME_UPPER" : NULL;
            for (int i = 0; i < tc.nsp; i++)
                tc.oshape[i] = tc.strides[i] * (tc.in[i] - 1) + (tc.k[i] - 1) * tc.dil[i] + 1 +
                               (int64_t)(rnd() * 2);
        }
        /* skip configurations that are invalid (kernel larger than the padded input) */
        int64_t pb[3], pe[3], out[3];
        ref_geometry(&tc, pb, pe, out);
        bool ok = true;
        for (int i = 0; i < tc.nsp; i++)
            if (out[i] <= 0) ok = false;
        if (tc.op[4] != 'T' && (!tc.auto_pad || strcmp(tc.auto_pad, "VALID") == 0))
            for (int i = 0; i < tc.nsp; i++)
                if (tc.in[i] + pb[i] + pe[i] < (tc.k[i] - 1) * tc.dil[i] + 1) ok = false;
        if (!ok) continue;
        snprintf(label, sizeof label, "random%d_%s_%dd", iter, tc.op, tc.nsp);
        run_case(&tc, true, label);
        ran++;
    }
    printf("random: %d cases run\n", ran);
}

/* A fixed case as the changes it makes to base(op, nsp): a scalar left 0 and an array left
 * out keep base's value; an array given is taken as written (all nsp entries). */
typedef struct conv_case {
    const char *label;
    const char *op;
    int nsp;
    int64_t n, c, m, group;
    int64_t in[3], k[3], strides[3], dil[3], pads[6], outpad[3];
    const char *auto_pad;
    bool f64, no_bias, mt, sym_batch;
    int threads; /* nonzero: this many threads (mt: 2, else 1) */
    int64_t w1, b_len;
    og_status want; /* expected status of an error case */
} conv_case;

static bool given(const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i]) return true;
    return false;
}

static tcase from_case(const conv_case *cc)
{
    tcase tc = base(cc->op, cc->nsp);
    int nsp = cc->nsp;
    if (cc->n) tc.n = cc->n;
    if (cc->c) tc.c = cc->c;
    if (cc->m) tc.m = cc->m;
    if (cc->group) tc.group = cc->group;
    if (given(cc->in, nsp)) memcpy(tc.in, cc->in, sizeof tc.in);
    if (given(cc->k, nsp)) memcpy(tc.k, cc->k, sizeof tc.k);
    if (given(cc->strides, nsp)) memcpy(tc.strides, cc->strides, sizeof tc.strides);
    if (given(cc->dil, nsp)) memcpy(tc.dil, cc->dil, sizeof tc.dil);
    memcpy(tc.pads, cc->pads, sizeof tc.pads);
    memcpy(tc.outpad, cc->outpad, sizeof tc.outpad);
    tc.auto_pad = cc->auto_pad;
    if (cc->f64) tc.dt = OG_DOUBLE;
    tc.bias = !cc->no_bias;
    tc.threads = cc->threads ? cc->threads : cc->mt ? 2 : 1;
    tc.sym_batch = cc->sym_batch;
    tc.w1 = cc->w1;
    tc.b_len = cc->b_len;
    return tc;
}

/* Run every case against the reference, or (want set) expect its error. */
static void run_cases(const conv_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tcase tc = from_case(&cases[i]);
        if (!cases[i].want) {
            run_case(&tc, true, cases[i].label);
            continue;
        }
        og_status st = run_case(&tc, false, cases[i].label);
        CHECKF(st == cases[i].want, "%s: status %d, expected %d (%s)", cases[i].label, (int)st,
               (int)cases[i].want, og_last_error());
        if (st) printf("  ok %s: %s\n", cases[i].label, og_last_error());
    }
}

#define PADS1 .pads = {1, 1, 1, 1}

static const conv_case fixed_cases[] = {
    /* ResNet-like: 1x1 pointwise, 3x3 padded, 7x7 stride 2, batch > 1 */
    {"pointwise", "Conv", 2, .c = 8, .m = 16, .k = {1, 1}, .in = {9, 9}, .mt = true},
    {"pointwise_batch", "Conv", 2, .n = 3, .c = 8, .m = 16, .k = {1, 1}, .in = {9, 9}, .mt = true},
    {"3x3", "Conv", 2, .n = 2, .c = 16, .m = 8, .in = {14, 14}, PADS1, .mt = true},
    {"7x7s2", "Conv", 2, .k = {7, 7}, .strides = {2, 2}, .pads = {3, 3, 3, 3}, .in = {32, 32},
     .m = 8, .mt = true},
    {"symbolic_batch", "Conv", 2, .sym_batch = true, .auto_pad = "SAME_UPPER", .strides = {1, 2}},
    /* stems of 3 channels, stride 2 (conv_s2.c on CPUs with AVX-512: the split planes in
     * bands of rows, 2 · threads a plane; odd sub-plane rows) */
    {"stem3x3s2_two", "Conv", 2, .c = 3, .m = 32, .in = {64, 66}, .strides = {2, 2}, PADS1,
     .mt = true},
    {"stem3x3s2_three", "Conv", 2, .c = 3, .m = 16, .in = {45, 40}, .strides = {2, 2}, PADS1,
     .threads = 3},
    {"stem7x7s2_two", "Conv", 2, .n = 2, .c = 3, .m = 8, .k = {7, 7}, .in = {64, 64},
     .strides = {2, 2}, .pads = {3, 3, 3, 3}, .mt = true},
    /* depthwise */
    {"depthwise", "Conv", 2, .c = 6, .m = 6, .group = 6, PADS1, .mt = true},
    /* big enough for several column chunks, 2-D and 3-D, one and two threads */
    {"chunked2d", "Conv", 2, .c = 64, .m = 8, .in = {40, 40}, PADS1},
    {"chunked2d_mt", "Conv", 2, .c = 64, .m = 8, .in = {40, 40}, PADS1, .mt = true},
    {"pointwise_mt", "Conv", 2, .c = 64, .m = 8, .in = {40, 40}, .k = {1, 1}, .mt = true},
    /* pointwise with Y over several chunks (each [128, >= 1024] chunk gets its bias after
     * the GEMM): 2 chunks in float, 3 in double */
    {"pointwise_ychunks", "Conv", 2, .c = 32, .m = 128, .in = {48, 48}, .k = {1, 1}},
    {"pointwise_ychunks_f64_mt", "Conv", 2, .n = 2, .c = 32, .m = 128, .in = {48, 48}, .k = {1, 1},
     .f64 = true, .mt = true},
    {"chunked3d", "Conv", 3, .c = 16, .m = 4, .in = {14, 14, 14}, .f64 = true},
    {"chunked3d_mt", "Conv", 3, .c = 16, .m = 4, .in = {14, 14, 14}, .f64 = true, .mt = true},
    /* one image, many output channels, few columns: the GEMM split by output channel
     * (40 channels: bands rounded to 16), padded 3x3 and 1x1 stride 2 */
    {"msplit_3x3", "Conv", 2, .c = 8, .m = 40, .in = {4, 5}, PADS1, .mt = true},
    {"msplit_3x3_f64", "Conv", 2, .c = 8, .m = 40, .in = {4, 5}, PADS1, .mt = true, .f64 = true,
     .no_bias = true},
    {"msplit_1x1s2", "Conv", 2, .c = 8, .m = 40, .in = {4, 5}, .k = {1, 1}, .strides = {2, 2},
     .mt = true, .f64 = true, .no_bias = true},
    /* LeNet-like: few channels, 5x5, the wide column path padded and not, batch 5 */
    {"wide_padded", "Conv", 2, .n = 5, .c = 1, .m = 6, .k = {5, 5}, .in = {12, 12},
     .pads = {2, 2, 2, 2}},
    {"wide_padded_asym_mt", "Conv", 2, .n = 5, .c = 1, .m = 6, .k = {5, 5}, .in = {12, 12},
     .pads = {1, 2, 2, 0}, .mt = true},
    {"wide_dilated_mt", "Conv", 2, .n = 5, .c = 6, .m = 16, .k = {5, 5}, .in = {12, 12},
     .dil = {2, 1}, .mt = true},
    {"wide_dilated_f64", "Conv", 2, .n = 5, .c = 6, .m = 16, .k = {5, 5}, .in = {12, 12},
     .dil = {2, 1}, .f64 = true},
    /* short float sums read in place from the wide rows (conv.c: job.taps, conv_pw.c:
     * og_conv_pw_taps): 16 channels by 3x3 = 144 column rows, over 4 chunks of output rows,
     * padded and not, one and two threads, dilated */
    {"taps_chunked", "Conv", 2, .c = 16, .m = 8, .in = {300, 20}, PADS1},
    {"taps_chunked_mt_nopad", "Conv", 2, .n = 2, .c = 16, .m = 9, .in = {300, 21}, .mt = true},
    {"taps_dilated", "Conv", 2, .c = 5, .m = 7, .in = {40, 30}, .dil = {2, 2},
     .pads = {2, 2, 2, 2}},
    /* the wide path over several chunks of output rows (tall and narrow) */
    {"wide_chunked", "Conv", 2, .c = 64, .m = 8, .in = {70, 20}, PADS1},
    {"wide_chunked_mt", "Conv", 2, .c = 64, .m = 8, .in = {70, 20}, .pads = {1, 1, 0, 1},
     .mt = true},
    /* a kernel covering the whole input (a 1x1 Conv's weight gradient): one GEMM over the
     * batch, with and without bias, 1-D to 3-D, dilations that do not matter */
    {"covers_input", "Conv", 2, .n = 5, .c = 6, .m = 7, .in = {4, 5}, .k = {4, 5}},
    {"covers_input_nobias_mt", "Conv", 2, .n = 3, .c = 2, .m = 9, .in = {8, 8}, .k = {8, 8},
     .no_bias = true, .mt = true},
    {"covers_input_1d_f64", "Conv", 1, .n = 4, .c = 3, .m = 2, .in = {7}, .k = {7}, .f64 = true},
    {"covers_input_3d", "Conv", 3, .n = 2, .c = 2, .m = 3, .in = {2, 3, 4}, .k = {2, 3, 4},
     .dil = {1, 1, 1}},
    {"covers_input_k1_dil", "Conv", 2, .n = 2, .c = 3, .m = 4, .in = {1, 1}, .k = {1, 1},
     .dil = {3, 2}},
    /* ConvTranspose of a few input positions per image: images side by side in one GEMM
     * (blocks of 5, or of 3 and 2 over two threads), groups, strides, 2-D and 3-D */
    {"tr_batched", "ConvTranspose", 2, .n = 5, .c = 4, .m = 6, .group = 2, .in = {4, 5},
     .strides = {2, 1}, .pads = {1, 0, 0, 1}},
    {"tr_batched_mt", "ConvTranspose", 2, .n = 5, .c = 4, .m = 6, .group = 2, .in = {4, 5},
     .strides = {2, 1}, .pads = {1, 0, 0, 1}, .mt = true, .f64 = true, .outpad = {1, 0}},
    {"tr_batched_3d", "ConvTranspose", 3, .n = 3, .in = {2, 3, 4}, .dil = {1, 1, 2}},
    /* more output channels than 4x the columns of every image, on threads (above
     * CONV_PAR_MIN_MADDS): all images in one block, the threads in bands of output
     * channels (uneven bands: 301 in 2, 3 images of 201 in 3) */
    {"tr_wide_w_mt", "ConvTranspose", 2, .n = 2, .c = 256, .m = 301, .in = {2, 2}, PADS1,
     .mt = true},
    {"tr_wide_w_s2_3t", "ConvTranspose", 2, .n = 3, .c = 256, .m = 201, .in = {2, 3},
     .strides = {2, 2}, .pads = {1, 0, 0, 1}, .outpad = {1, 0}, .threads = 3},
    {"tr_wide_w_groups_f64", "ConvTranspose", 2, .n = 3, .c = 128, .m = 512, .group = 2,
     .in = {2, 3}, .no_bias = true, .f64 = true, .threads = 3},
    /* ConvTranspose pointwise and plain */
    {"tr_pointwise", "ConvTranspose", 2, .k = {1, 1}},
    {"tr_pointwise_stride", "ConvTranspose", 2, .k = {1, 1}, .strides = {2, 1}, .outpad = {1, 0}},
};

static void test_fixed(void) { run_cases(fixed_cases, sizeof fixed_cases / sizeof *fixed_cases); }

/* Kernels wider than the output (the weight-gradient Conv: X by dY, output the kernel's
 * size): the transposed-column path, with padding, strides, dilations (1, 2 and 3 apart),
 * groups, batch 1 and 3, K split over several chunks (mid-channel), 1-D to 3-D. */
static const conv_case tcol_cases[] = {
    /* LeNet conv1's weight gradient: 64 "channels" (the batch), 28x28 kernel, pads 2; K is
     * 50176 long, in chunks that split channels */
    {"tcol_lenet1", "Conv", 2, .c = 64, .m = 6, .in = {28, 28}, .k = {28, 28}, .pads = {2, 2, 2, 2},
     .no_bias = true},
    {"tcol_lenet1_mt", "Conv", 2, .c = 64, .m = 6, .in = {28, 28}, .k = {28, 28},
     .pads = {2, 2, 2, 2}, .no_bias = true, .mt = true},
    /* LeNet conv2's: batch (input channels) 6, no padding, several images per thread */
    {"tcol_lenet2_mt", "Conv", 2, .n = 6, .c = 64, .m = 16, .in = {14, 14}, .k = {10, 10},
     .mt = true, .no_bias = true},
    {"tcol_lenet2_f64", "Conv", 2, .n = 6, .c = 64, .m = 16, .in = {14, 14}, .k = {10, 10},
     .f64 = true, .no_bias = true},
    /* a stride-2 conv's weight gradient: dY dilated by 2, asymmetric pads, batch 3, bias */
    {"tcol_dil2", "Conv", 2, .n = 3, .c = 5, .m = 7, .in = {11, 12}, .k = {5, 6}, .dil = {2, 2},
     .pads = {1, 2, 0, 1}},
    /* the general strided copy */
    {"tcol_dil3_mt", "Conv", 2, .n = 3, .c = 5, .m = 7, .in = {11, 12}, .k = {5, 4}, .dil = {2, 3},
     .pads = {1, 2, 0, 1}, .mt = true},
    /* strides, groups, batch 1 and 3 */
    {"tcol_groups_strides", "Conv", 2, .c = 4, .m = 6, .group = 2, .in = {11, 13}, .k = {8, 9},
     .strides = {2, 2}, .pads = {0, 1, 0, 1}},
    {"tcol_groups_strides_b3_mt", "Conv", 2, .n = 3, .c = 4, .m = 6, .group = 2, .in = {11, 13},
     .k = {8, 9}, .strides = {2, 2}, .pads = {0, 1, 0, 1}, .mt = true, .f64 = true},
    /* one image and two threads: K split between them, the parts summed onto the bias */
    {"tcol_ksplit_bias", "Conv", 2, .c = 16, .m = 8, .in = {20, 20}, .k = {17, 17}, .mt = true},
    {"tcol_ksplit_bias_f64", "Conv", 2, .c = 16, .m = 8, .in = {20, 20}, .k = {17, 17}, .mt = true,
     .f64 = true, .pads = {1, 0, 0, 1}},
    /* one image, many output channels, 4 positions */
    {"tcol_msplit", "Conv", 2, .c = 3, .m = 40, .in = {10, 10}, .k = {9, 9}, .mt = true},
    /* kernel rows entirely in the padding (pads as large as the kernel allows) */
    {"tcol_big_pads", "Conv", 2, .c = 2, .m = 3, .in = {4, 5}, .k = {6, 7}, .pads = {3, 4, 3, 4}},
    /* 1-D, and 3-D (the general kernel-row walk) over several K chunks split mid-channel */
    {"tcol_1d", "Conv", 1, .n = 3, .c = 6, .in = {20}, .k = {15}, .pads = {1, 2}},
    {"tcol_3d_chunks", "Conv", 3, .c = 16, .m = 16, .no_bias = true, .in = {10, 10, 10},
     .k = {9, 9, 9}},
    {"tcol_3d_pads_mt", "Conv", 3, .n = 3, .c = 16, .m = 16, .no_bias = true, .in = {10, 10, 10},
     .k = {9, 9, 4}, .pads = {1, 0, 0, 0, 1, 0}, .strides = {1, 2, 1}, .dil = {1, 1, 2},
     .mt = true},
    /* several images in one GEMM (conv_job.tbatch): a ResNet 3x3 layer's weight gradient
     * (64 input channels as images, batch 8 as channels, 3x3 output), one block or one per
     * thread; groups with K in several chunks and uneven blocks; f64 with bias and strides;
     * 1-D; at least CONV_TBATCH_MIN_M (32) output channels per group, as the path needs */
    {"tbatch_resnet", "Conv", 2, .n = 64, .c = 8, .m = 32, .in = {16, 16}, .k = {16, 16},
     .pads = {1, 1, 1, 1}, .no_bias = true},
    {"tbatch_resnet_mt", "Conv", 2, .n = 64, .c = 8, .m = 32, .in = {16, 16}, .k = {16, 16},
     .pads = {1, 1, 1, 1}, .no_bias = true, .mt = true},
    {"tbatch_groups_kchunks_mt", "Conv", 2, .n = 7, .c = 64, .m = 64, .group = 2, .in = {20, 20},
     .k = {18, 18}, .pads = {1, 1, 1, 1}, .mt = true},
    {"tbatch_f64_bias_strides", "Conv", 2, .n = 5, .c = 3, .m = 32, .in = {9, 10}, .k = {5, 6},
     .strides = {2, 1}, .f64 = true},
    {"tbatch_1d", "Conv", 1, .n = 4, .c = 3, .m = 33, .in = {30}, .k = {28}},
};

static void test_tcol(void)
{
    run_cases(tcol_cases, sizeof tcol_cases / sizeof *tcol_cases);

    /* random shapes with the kernel a little smaller than the padded input */
    char label[64];
    int ran = 0;
    for (int iter = 0; iter < 120; iter++) {
        tcase tc = base("Conv", 1 + iter % 3);
        tc.group = 1 + (int64_t)((rnd() + 1) * 1.0);
        tc.c = tc.group * (1 + (int64_t)((rnd() + 1) * 2));
        tc.m = tc.group * (1 + (int64_t)((rnd() + 1) * 2));
        tc.n = 1 + (int64_t)((rnd() + 1) * 1.5);
        tc.bias = rnd() > 0;
        tc.dt = rnd() > 0 ? OG_FLOAT : OG_DOUBLE;
        tc.threads = rnd() > 0 ? 2 : 1;
        bool ok = true;
        for (int i = 0; i < tc.nsp; i++) {
            tc.in[i] = 3 + (int64_t)((rnd() + 1) * 5);
            tc.strides[i] = 1 + (int64_t)((rnd() + 1) * 0.7);
            tc.dil[i] = 1 + (int64_t)((rnd() + 1) * 0.7);
            tc.pads[i] = (int64_t)((rnd() + 1) * 1.2);
            tc.pads[tc.nsp + i] = (int64_t)((rnd() + 1) * 1.2);
            int64_t span = tc.in[i] + tc.pads[i] + tc.pads[tc.nsp + i] - 1 -
                           (int64_t)((rnd() + 1) * 1.5); /* extent (k - 1) * dil */
            tc.k[i] = span / tc.dil[i] + 1;
            if (tc.k[i] < 1 ||
                (tc.k[i] - 1) * tc.dil[i] + 1 > tc.in[i] + tc.pads[i] + tc.pads[tc.nsp + i])
                ok = false;
        }
        if (!ok) continue;
        snprintf(label, sizeof label, "tcol_random%d_%dd", iter, tc.nsp);
        run_case(&tc, true, label);
        ran++;
    }
    printf("tcol random: %d cases run\n", ran);
}

/* The direct kernels (src/kernels/cpu/conv_dw.c): 1-D and 2-D convolutions with groups of
 * at most 4 input channels (Conv) or 4 input and 4 output channels (ConvTranspose): 3x3
 * and 5x5 taps written out, strides 1 (the wide rows), 2 and 3, dilations, pads asymmetric
 * or none (the input read in place), multipliers > 1, kernels of other sizes (one pass per
 * tap), odd sizes, float and double, one and two threads. */
static const conv_case direct_cases[] = {
    {"dw3x3", "Conv", 2, .n = 2, .c = 8, .m = 8, .group = 8, .in = {9, 11}, PADS1},
    {"dw3x3_s2", "Conv", 2, .n = 2, .c = 8, .m = 8, .group = 8, .in = {9, 11}, PADS1,
     .strides = {2, 2}, .mt = true},
    {"dw3x3_s2_f64", "Conv", 2, .c = 5, .m = 5, .group = 5, .in = {8, 7}, .pads = {0, 1, 1, 0},
     .strides = {2, 2}, .f64 = true},
    {"dw3x3_nopad", "Conv", 2, .c = 4, .m = 4, .group = 4, .in = {7, 6}},
    {"dw3x3_nopad_s2_rows_unused", "Conv", 2, .c = 4, .m = 4, .group = 4, .in = {8, 8},
     .strides = {2, 2}, .no_bias = true},
    {"dw5x5", "Conv", 2, .c = 6, .m = 6, .group = 6, .k = {5, 5}, .in = {13, 12},
     .pads = {2, 2, 2, 2}, .mt = true},
    {"dw5x5_s2_f64", "Conv", 2, .c = 6, .m = 6, .group = 6, .k = {5, 5}, .in = {13, 12},
     .pads = {1, 2, 2, 1}, .strides = {2, 2}, .f64 = true},
    {"dw3x3_dil2", "Conv", 2, .c = 3, .m = 3, .group = 3, .in = {10, 9}, .dil = {2, 2},
     .pads = {2, 2, 2, 2}},
    {"dw3x3_s3_dil_mixed", "Conv", 2, .c = 3, .m = 3, .group = 3, .in = {13, 11}, .dil = {1, 2},
     .strides = {3, 1}, .pads = {0, 2, 1, 1}},
    {"dw_multiplier3", "Conv", 2, .n = 2, .c = 4, .m = 12, .group = 4, .in = {7, 8}, PADS1,
     .mt = true},
    {"dw_7x7_generic", "Conv", 2, .c = 3, .m = 3, .group = 3, .k = {7, 7}, .in = {9, 10},
     .pads = {3, 3, 3, 3}},
    {"dw_4x3_generic_s2", "Conv", 2, .c = 3, .m = 6, .group = 3, .k = {4, 3}, .in = {9, 10},
     .pads = {1, 1, 2, 1}, .strides = {2, 3}, .f64 = true},
    {"grouped_cg2", "Conv", 2, .n = 2, .c = 8, .m = 12, .group = 4, .in = {6, 7}, PADS1},
    {"grouped_cg4_s2", "Conv", 2, .c = 8, .m = 4, .group = 2, .in = {9, 9}, PADS1,
     .strides = {2, 2}, .mt = true},
    {"dw_1d", "Conv", 1, .n = 2, .c = 5, .m = 5, .group = 5, .k = {3}, .in = {17}, .pads = {1, 1}},
    {"dw_1d_s2_k5", "Conv", 1, .c = 4, .m = 8, .group = 4, .k = {5}, .in = {16}, .pads = {2, 1},
     .strides = {2}, .f64 = true},
    {"dw_1x1", "Conv", 2, .c = 4, .m = 4, .group = 4, .k = {1, 1}, .in = {5, 5}},
    {"dw_tiny_plane", "Conv", 2, .c = 16, .m = 16, .group = 16, .in = {1, 1}, PADS1, .mt = true},
    /* depthwise planes of more than 256 outputs: a plane at a time (smaller ones go 16
     * channels at a time, channels-last: every case above with one input channel per
     * group), and a channel count that is not a multiple of 16 */
    {"dw_plane_s1", "Conv", 2, .n = 2, .c = 3, .m = 3, .group = 3, .in = {24, 20}, PADS1,
     .mt = true},
    {"dw_plane_5x5_f64", "Conv", 2, .c = 2, .m = 4, .group = 2, .k = {5, 5}, .in = {18, 17},
     .pads = {2, 1, 2, 2}, .f64 = true},
    {"dw_plane_s2", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {41, 36}, PADS1,
     .strides = {2, 2}},
    {"dw_plane_1d_dil", "Conv", 1, .c = 3, .m = 3, .group = 3, .in = {300}, .k = {3}, .dil = {2},
     .pads = {2, 2}},
    /* ... with border rows (a part of the kernel rows in range, none where the pads
     * exceed the kernel), strides 1-3, dilations, asymmetric pads, kernels of 9, 25 and
     * other tap counts, multipliers, planes narrower than the kernel's reach */
    {"dw_plane_s2_asym_mult2", "Conv", 2, .n = 2, .c = 3, .m = 6, .group = 3, .in = {35, 33},
     .pads = {0, 1, 1, 0}, .strides = {2, 2}, .mt = true},
    {"dw_plane_5x5_s2_odd_f64", "Conv", 2, .c = 2, .m = 2, .group = 2, .k = {5, 5}, .in = {37, 31},
     .pads = {2, 1, 1, 2}, .strides = {2, 2}, .f64 = true},
    {"dw_plane_dil2_mult3", "Conv", 2, .c = 2, .m = 6, .group = 2, .in = {19, 21}, .dil = {2, 2},
     .pads = {2, 2, 2, 2}, .no_bias = true},
    {"dw_plane_big_pads", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {17, 16},
     .pads = {4, 3, 5, 4}},
    {"dw_plane_s3_dil_mixed_f64", "Conv", 2, .c = 3, .m = 3, .group = 3, .in = {61, 40},
     .dil = {1, 3}, .strides = {3, 1}, .pads = {0, 2, 1, 1}, .f64 = true},
    {"dw_plane_4x3_generic", "Conv", 2, .c = 2, .m = 4, .group = 2, .k = {4, 3}, .in = {23, 19},
     .pads = {1, 1, 2, 1}},
    {"dw_plane_narrow", "Conv", 2, .c = 2, .m = 2, .group = 2, .k = {5, 5}, .in = {80, 4},
     .pads = {2, 2, 2, 2}},
    {"dw_plane_tall_kernel_nopad", "Conv", 2, .c = 2, .m = 2, .group = 2, .k = {7, 1},
     .in = {40, 12}, .mt = true},
    {"dw_plane_1d_s2_k5_f64", "Conv", 1, .c = 2, .m = 4, .group = 2, .in = {601}, .k = {5},
     .strides = {2}, .pads = {2, 1}, .f64 = true},
    /* ... the float AVX-512 plane loops (conv_dw_plane.h): 3x3 and 5x5, strides 1 and 2,
     * rows wider than 32 (whole vectors and a tail; stride 2's rows read in place, three
     * vectors a 16-output column, odd and even widths), asymmetric pads, output row counts
     * that leave 1-3 rows after the blocks of 4, a multiplier */
    {"dw_plane_5x5_s1_f32", "Conv", 2, .c = 3, .m = 3, .group = 3, .k = {5, 5}, .in = {23, 37},
     .pads = {2, 1, 1, 2}, .mt = true},
    {"dw_plane_5x5_s2_f32_mult2", "Conv", 2, .c = 2, .m = 4, .group = 2, .k = {5, 5},
     .in = {41, 70}, .pads = {2, 2, 1, 2}, .strides = {2, 2}},
    /* ... stride 2 with 23 output rows: blocks of 4, one of 2, one of 1 */
    {"dw_plane_5x5_s2_f32_rows23", "Conv", 2, .c = 3, .m = 3, .group = 3, .k = {5, 5},
     .in = {45, 40}, .pads = {2, 2, 2, 2}, .strides = {2, 2}, .mt = true},
    {"dw_plane_3x3_s2_wide", "Conv", 2, .n = 2, .c = 3, .m = 3, .group = 3, .in = {30, 99},
     .pads = {1, 0, 0, 1}, .strides = {2, 2}, .mt = true},
    {"dw_plane_3x3_s1_odd", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {19, 47}, PADS1,
     .no_bias = true},
    /* ... stride 1 on planes whose padded copy would exceed 32 KB, read in place (dwp_np):
     * interior vectors of every tap in range, the edge ones masked, a tail of 13 or 10 */
    {"dw_plane_3x3_s1_in_place", "Conv", 2, .n = 2, .c = 3, .m = 3, .group = 3, .in = {94, 93},
     .pads = {1, 0, 1, 1}, .mt = true},
    {"dw_plane_5x5_s1_in_place_mult2", "Conv", 2, .c = 2, .m = 4, .group = 2, .k = {5, 5},
     .in = {91, 90}, .pads = {2, 1, 2, 2}, .no_bias = true},
    /* ... input rows that end one column before a 16- (stride 1) or 32-column (stride 2,
     * the second block)
     * boundary of the padded row: the right pad column shares that vector */
    /* ... stride 2 on planes of more than 4096 values, odd row counts (a last block of one
     * row) */
    {"dw_plane_s2_blocks", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {67, 71},
     .pads = {1, 1, 0, 1}, .strides = {2, 2}, .mt = true},
    {"dw_plane_5x5_s2_blocks_mult2", "Conv", 2, .c = 2, .m = 4, .group = 2, .k = {5, 5},
     .in = {66, 80}, .pads = {2, 2, 2, 2}, .strides = {2, 2}},
    /* ... rows of more than 512 padded columns, past the masks planned once per plane
     * (og_row_plan): computed per row instead */
    {"dw_plane_3x3_s1_past_plan", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {6, 530}, PADS1},
    {"dw_plane_3x3_s2_past_plan", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {7, 521},
     .pads = {1, 1, 1, 0}, .strides = {2, 2}},
    {"dw_plane_3x3_s1_edge15", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {20, 30}, PADS1},
    /* ... 3x3 stride 1 with a left pad of 1, read in place (dwp_np3: one load a row, taps 0
     * and 2 by valignd with the columns either side): rows of 93 (a last vector of 13),
     * 112 with no right pad (the output one narrower than the row: the lane past it loaded),
     * 17 with a right pad of 2 (output wider than the row), two threads */
    {"dw_plane_3x3_s1_np3_wide", "Conv", 2, .n = 2, .c = 3, .m = 3, .group = 3, .in = {94, 93},
     PADS1, .mt = true},
    {"dw_plane_3x3_s1_np3_asym", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {80, 112},
     .pads = {1, 1, 0, 0}},
    /* ... and through the padded copy (3x3 with another left pad, wider than 32) */
    {"dw_plane_3x3_s1_copy_pad0", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {21, 45},
     .pads = {1, 0, 1, 2}},
    {"dw_plane_3x3_s1_np3_w17_mult2", "Conv", 2, .c = 2, .m = 4, .group = 2, .in = {9, 17},
     .pads = {1, 1, 1, 2}, .no_bias = true},
    {"dw_plane_3x3_s2_edge63", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {21, 61},
     .pads = {1, 2, 1, 2}, .strides = {2, 2}},
    /* ... 3x3 stride 2 with an odd left pad (dwp_ws2's SH = 1: loads a column late, tap 0
     * from the odd columns and the column before them): a pad of 3 (the first vector's
     * column before the row, and the one before that, outside it), rows of 112 (MobileNet's
     * 112x112 -> 56x56, whole 32-column loads) and 113, pads of 1 */
    {"dw_plane_3x3_s2_pad3", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {29, 45},
     .pads = {2, 3, 1, 3}, .strides = {2, 2}, .mt = true},
    {"dw_plane_3x3_s2_w112", "Conv", 2, .c = 3, .m = 3, .group = 3, .in = {20, 112}, PADS1,
     .strides = {2, 2}},
    {"dw_plane_3x3_s2_w113_mult2", "Conv", 2, .c = 2, .m = 4, .group = 2, .in = {15, 113},
     .pads = {1, 1, 0, 0}, .strides = {2, 2}},
    /* ... stride 2 on planes 17 to 32 wide (at most 256 outputs: by the plane loops, not
     * the channels-last blocks): 32 wide (two whole vectors), 17 (one lane of the
     * second), pads of 0 left and 1 right, 5x5 with 2 and 1, output row counts of 4 blocks
     * and of 2 blocks and 3 single rows, a multiplier of 2; 4 images of 80 32x32 planes
     * (more than 1 MB), on threads */
    {"dw_ns2_32x32", "Conv", 2, .n = 2, .c = 3, .m = 3, .group = 3, .in = {32, 32}, PADS1,
     .strides = {2, 2}, .mt = true},
    {"dw_ns2_5x5_w17", "Conv", 2, .c = 2, .m = 2, .group = 2, .k = {5, 5}, .in = {23, 17},
     .pads = {2, 2, 1, 2}, .strides = {2, 2}},
    {"dw_ns2_pad0_w28", "Conv", 2, .c = 3, .m = 3, .group = 3, .in = {20, 28}, .pads = {0, 0, 1, 1},
     .strides = {2, 2}, .no_bias = true},
    {"dw_ns2_mult2_w31", "Conv", 2, .c = 2, .m = 4, .group = 2, .in = {18, 31}, PADS1,
     .strides = {2, 2}},
    {"dw_ns2_prefetch", "Conv", 2, .n = 4, .c = 80, .m = 80, .group = 80, .in = {32, 32}, PADS1,
     .strides = {2, 2}, .mt = true},
    /* ... stride 2 from rows of 9 to 16 values, two output rows a vector (conv_dw_s2.h):
     * 16x16 -> 8x8 (whole vectors), 14x14 -> 7x7 by 5x5, 13x9 -> 7x5 (a last single row,
     * rows of 5 packed), pads of 0 before and 1 after, pads of 2 around a 3x3 kernel (taps
     * wholly outside), 9 columns (the narrowest), no bias, several images, on threads;
     * 8 columns and a multiplier of 2 go the other ways */
    {"dw_s2r_16x16", "Conv", 2, .n = 2, .c = 5, .m = 5, .group = 5, .in = {16, 16}, PADS1,
     .strides = {2, 2}, .mt = true},
    {"dw_s2r_5x5_14x14", "Conv", 2, .c = 3, .m = 3, .group = 3, .k = {5, 5}, .in = {14, 14},
     .pads = {2, 2, 2, 2}, .strides = {2, 2}},
    {"dw_s2r_odd_rows", "Conv", 2, .n = 3, .c = 4, .m = 4, .group = 4, .in = {13, 9}, PADS1,
     .strides = {2, 2}, .no_bias = true, .mt = true},
    {"dw_s2r_pad_after", "Conv", 2, .c = 3, .m = 3, .group = 3, .in = {12, 10},
     .pads = {0, 0, 1, 1}, .strides = {2, 2}},
    {"dw_s2r_pads2", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {11, 13}, .pads = {2, 2, 2, 2},
     .strides = {2, 2}},
    {"dw_s2r_5x5_15x15_mt", "Conv", 2, .n = 2, .c = 7, .m = 7, .group = 7, .k = {5, 5},
     .in = {15, 15}, .pads = {2, 2, 2, 2}, .strides = {2, 2}, .threads = 3},
    {"dw_s2r_w8_blocks", "Conv", 2, .c = 3, .m = 3, .group = 3, .in = {8, 8}, PADS1,
     .strides = {2, 2}},
    {"dw_s2r_mult2", "Conv", 2, .c = 2, .m = 4, .group = 2, .in = {14, 14}, PADS1,
     .strides = {2, 2}},
    /* ... 3x3 stride-1 planes of at most 16 columns and 256 values padded by one all
     * around, held in registers (conv_dw_reg.h): 16x16 and 8x8 (whole vectors), 14x14 (13
     * vectors, 4 lanes in the last), 7x7 (one lane in the last), 11 rows of 16 (a row a
     * vector), 15x15, a column of 16, a row of 13, 4x4 and 3x3 (a plane a vector), 2x3
     * (2 planes a vector), 2x2 (4 planes a vector; 7 channels: a last group of 3) and 1x1
     * (the center tap only), without bias, several images, on threads */
    {"dw_np_16x16", "Conv", 2, .n = 2, .c = 5, .m = 5, .group = 5, .in = {16, 16}, PADS1,
     .mt = true},
    {"dw_reg_8x8_n3", "Conv", 2, .n = 3, .c = 6, .m = 6, .group = 6, .in = {8, 8}, PADS1},
    {"dw_reg_14x14", "Conv", 2, .n = 2, .c = 19, .m = 19, .group = 19, .in = {14, 14}, PADS1,
     .mt = true},
    {"dw_reg_7x7_nobias", "Conv", 2, .c = 5, .m = 5, .group = 5, .in = {7, 7}, PADS1,
     .no_bias = true},
    {"dw_reg_11x16", "Conv", 2, .c = 2, .m = 2, .group = 2, .in = {11, 16}, PADS1},
    {"dw_reg_15x15", "Conv", 2, .c = 3, .m = 3, .group = 3, .in = {15, 15}, PADS1},
    {"dw_reg_16x1", "Conv", 2, .c = 3, .m = 3, .group = 3, .in = {16, 1}, PADS1},
    {"dw_reg_1x13", "Conv", 2, .c = 3, .m = 3, .group = 3, .in = {1, 13}, PADS1},
    {"dw_reg_4x4", "Conv", 2, .n = 2, .c = 5, .m = 5, .group = 5, .in = {4, 4}, PADS1, .mt = true},
    {"dw_reg_3x3", "Conv", 2, .c = 4, .m = 4, .group = 4, .in = {3, 3}, PADS1},
    {"dw_reg_2x3_nobias", "Conv", 2, .c = 5, .m = 5, .group = 5, .in = {2, 3}, PADS1,
     .no_bias = true},
    {"dw_reg_2x2_7ch_n3", "Conv", 2, .n = 3, .c = 7, .m = 7, .group = 7, .in = {2, 2}, PADS1,
     .mt = true},
    {"dw_reg_1x1_n2", "Conv", 2, .n = 2, .c = 9, .m = 9, .group = 9, .in = {1, 1}, PADS1},
    /* ... and 5x5 ones padded by two: 6 columns (the rows two up and down at most one
     * vector away), 12 rows of 16 (two vectors away, whole vectors), 4x4 and 3x5 (a plane
     * a vector), 2x2 (4 planes a vector, with only 4 of the 25 taps in range:
     * dw_blk_tiny_5x5_n3 above), without bias, several images, on threads.  With the
     * AVX-512 float loops, 7x7, 8x8, 14x14 and 9x9 (rows of 7 or more outputs) are the
     * blocks' rows (blk_row, below), else these loops too. */
    {"dw_reg5_7x7_n2", "Conv", 2, .n = 2, .c = 6, .m = 6, .group = 6, .k = {5, 5}, .in = {7, 7},
     .pads = {2, 2, 2, 2}, .mt = true},
    {"dw_reg5_8x8_nobias", "Conv", 2, .c = 3, .m = 3, .group = 3, .k = {5, 5}, .in = {8, 8},
     .pads = {2, 2, 2, 2}, .no_bias = true},
    {"dw_reg5_14x14", "Conv", 2, .n = 2, .c = 5, .m = 5, .group = 5, .k = {5, 5}, .in = {14, 14},
     .pads = {2, 2, 2, 2}, .mt = true},
    {"dw_reg5_9x9", "Conv", 2, .c = 3, .m = 3, .group = 3, .k = {5, 5}, .in = {9, 9},
     .pads = {2, 2, 2, 2}},
    {"dw_reg5_16x6_n2", "Conv", 2, .n = 2, .c = 7, .m = 7, .group = 7, .k = {5, 5}, .in = {16, 6},
     .pads = {2, 2, 2, 2}, .mt = true},
    {"dw_reg5_4x4_n3", "Conv", 2, .n = 3, .c = 5, .m = 5, .group = 5, .k = {5, 5}, .in = {4, 4},
     .pads = {2, 2, 2, 2}},
    {"dw_reg5_3x5", "Conv", 2, .c = 4, .m = 4, .group = 4, .k = {5, 5}, .in = {3, 5},
     .pads = {2, 2, 2, 2}},
    {"dw_np_5x5_16x12", "Conv", 2, .c = 3, .m = 3, .group = 3, .k = {5, 5}, .in = {12, 16},
     .pads = {2, 2, 2, 2}},
    {"dw_blk_37ch_mult2", "Conv", 2, .n = 2, .c = 37, .m = 74, .group = 37, .in = {6, 5},
     .pads = {1, 0, 0, 1}, .mt = true},
    {"dw_blk_5x5_s2_f64", "Conv", 2, .c = 17, .m = 17, .group = 17, .k = {5, 5}, .in = {9, 11},
     .pads = {2, 2, 2, 2}, .strides = {2, 2}, .f64 = true},
    /* ... the float AVX-512 loops: input rows moved 16 columns at a time (35 + pads: two
     * whole blocks and a tail), output positions 8 at a time across rows, then 4, then
     * one (54 and 225: remainders of 6 and 1), output planes moved 16 positions at a time
     * (partial last blocks), 21 channels (a block of 5), a multiplier of 2 */
    {"dw_blk_wide_rows_s2", "Conv", 2, .n = 2, .c = 21, .m = 21, .group = 21, .in = {7, 35},
     .pads = {1, 2, 0, 1}, .strides = {2, 2}, .mt = true},
    {"dw_blk_ow_tail_mult2", "Conv", 2, .c = 16, .m = 32, .group = 16, .in = {15, 15}, PADS1},
    /* ... planes smaller than a group of 8 positions (2x2 by 5x5: the remainder loop only)
     * and of 2 groups and a remainder (5x4), three images per block (kernels packed once
     * per block and thread), 33 channels */
    {"dw_blk_tiny_5x5_n3", "Conv", 2, .n = 3, .c = 33, .m = 33, .group = 33, .k = {5, 5},
     .in = {2, 2}, .pads = {2, 2, 2, 2}, .mt = true},
    {"dw_blk_5x4_n3_mult2", "Conv", 2, .n = 3, .c = 18, .m = 36, .group = 18, .in = {5, 4}, PADS1,
     .mt = true},
    /* ... blk_row, a row's positions at once (5x5 kernels with rows of 7 or more outputs;
     * 3x3 where the register loops do not apply: multipliers): rows of 7 and 14, 8 at a time
     * (9 = 8 + 1 and 11 = 8 + 3: the sums past the row's end dropped), strides 1 and 2,
     * 37 channels (a last block of 5), without bias, several images, on threads */
    {"dw_row5_s2_7", "Conv", 2, .n = 2, .c = 37, .m = 37, .group = 37, .k = {5, 5}, .in = {14, 14},
     .pads = {2, 2, 2, 2}, .strides = {2, 2}, .mt = true},
    {"dw_row5_s2_14_nobias", "Conv", 2, .c = 5, .m = 5, .group = 5, .k = {5, 5}, .in = {28, 28},
     .pads = {2, 2, 2, 2}, .strides = {2, 2}, .no_bias = true},
    {"dw_row5_s2_9", "Conv", 2, .c = 20, .m = 20, .group = 20, .k = {5, 5}, .in = {19, 15},
     .pads = {2, 2, 2, 5}, .strides = {2, 2}, .mt = true},
    {"dw_row5_s1_11_mult2", "Conv", 2, .n = 2, .c = 6, .m = 12, .group = 6, .k = {5, 5},
     .in = {10, 11}, .pads = {2, 2, 2, 2}},
    {"dw_row3_7x7_mult2", "Conv", 2, .c = 16, .m = 32, .group = 16, .in = {7, 7}, PADS1,
     .mt = true},
    {"dw_row3_14x14_mult3", "Conv", 2, .n = 2, .c = 8, .m = 24, .group = 8, .in = {14, 14}, PADS1},
    {"dw_row3_s2_8_mult2", "Conv", 2, .c = 19, .m = 38, .group = 19, .in = {16, 15}, PADS1,
     .strides = {2, 2}},
    /* kernels larger than the output (a depthwise Conv's weight gradient: groups of N
     * input channels, dY as the kernel): dot products along kernel rows, dilations (the
     * forward's strides) 1, 2 and 3 */
    {"dot_dw_grad", "Conv", 2, .c = 24, .m = 8, .group = 8, .in = {10, 10}, .k = {8, 8}, PADS1,
     .no_bias = true, .mt = true},
    {"dot_dil2", "Conv", 2, .c = 20, .m = 4, .group = 4, .in = {11, 12}, .k = {5, 6}, .dil = {2, 2},
     PADS1},
    {"dot_dil3_mult2_f64", "Conv", 2, .c = 12, .m = 4, .group = 2, .in = {9, 14}, .k = {7, 4},
     .dil = {1, 3}, .pads = {0, 1, 1, 2}, .f64 = true, .mt = true},
    {"dot_strided_1d", "Conv", 1, .n = 2, .c = 10, .m = 2, .group = 2, .in = {30}, .k = {20},
     .strides = {3}, .pads = {1, 1}},
    /* ConvTranspose: the input gradient of a depthwise Conv (4 inputs per group, one
     * output), and the depthwise transposed convolution itself */
    {"tr_dw", "ConvTranspose", 2, .n = 2, .c = 6, .m = 6, .group = 6, .in = {5, 6}, PADS1},
    {"tr_dw_s2_outpad", "ConvTranspose", 2, .c = 6, .m = 6, .group = 6, .in = {5, 6}, PADS1,
     .strides = {2, 2}, .outpad = {1, 0}, .mt = true},
    {"tr_dw_s3_dil_f64", "ConvTranspose", 2, .c = 3, .m = 3, .group = 3, .in = {4, 5},
     .strides = {3, 2}, .dil = {2, 1}, .pads = {0, 1, 2, 0}, .f64 = true},
    {"tr_grad_of_multiplier4", "ConvTranspose", 2, .c = 16, .m = 4, .group = 4, .in = {6, 6}, PADS1,
     .no_bias = true},
    {"tr_multiplier3", "ConvTranspose", 2, .c = 4, .m = 12, .group = 4, .in = {5, 4}, .k = {5, 5},
     .pads = {2, 2, 2, 2}, .strides = {2, 2}},
    {"tr_dw_1d", "ConvTranspose", 1, .n = 3, .c = 4, .m = 4, .group = 4, .k = {3}, .in = {9},
     .pads = {1, 0}, .strides = {2}},
};

static void test_direct(void)
{
    run_cases(direct_cases, sizeof direct_cases / sizeof *direct_cases);

    /* random: group == channels / 1..4, multipliers 1..4, kernels 1..6, strides 1..3,
     * dilations 1..2, pads 0..2, sizes 1..14 */
    char label[64];
    int ran = 0;
    for (int iter = 0; iter < 300; iter++) {
        bool tr = iter % 3 == 2;
        tcase tc = base(tr ? "ConvTranspose" : "Conv", 1 + (iter % 4 != 0));
        int64_t per = 1 + (int64_t)((rnd() + 1) * 2) % 4; /* input channels per group */
        tc.group = 2 + (int64_t)((rnd() + 1) * 2.5);
        tc.c = tc.group * (iter % 2 ? 1 : per);
        tc.m = tc.group * (1 + (int64_t)((rnd() + 1) * 2) % 4);
        tc.n = 1 + (int64_t)((rnd() + 1) * 1.2);
        tc.bias = rnd() > -0.3;
        tc.dt = rnd() > 0 ? OG_FLOAT : OG_DOUBLE;
        tc.threads = rnd() > 0 ? 2 : 1;
        tc.kernel_attr = rnd() > 0;
        bool ok = true;
        for (int i = 0; i < tc.nsp; i++) {
            tc.in[i] = 1 + (int64_t)((rnd() + 1) * 6.9);
            tc.k[i] = rnd() > 0 ? 3 : rnd() > 0 ? 5 : 1 + (int64_t)((rnd() + 1) * 3);
            tc.strides[i] = 1 + (int64_t)((rnd() + 1) * 1.4);
            tc.dil[i] = 1 + (int64_t)((rnd() + 1) * 0.6);
            tc.pads[i] = (int64_t)((rnd() + 1) * 1.4);
            tc.pads[tc.nsp + i] = (int64_t)((rnd() + 1) * 1.4);
            tc.outpad[i] = tr ? (int64_t)((rnd() + 1) * 4) % tc.strides[i] : 0;
        }
        int64_t pb[3], pe[3], out[3];
        ref_geometry(&tc, pb, pe, out);
        for (int i = 0; i < tc.nsp; i++) {
            if (out[i] <= 0) ok = false;
            if (!tr && tc.in[i] + pb[i] + pe[i] < (tc.k[i] - 1) * tc.dil[i] + 1) ok = false;
        }
        if (!ok) continue;
        snprintf(label, sizeof label, "direct_random%d_%s_%dd", iter, tc.op, tc.nsp);
        run_case(&tc, true, label);
        ran++;
    }
    printf("direct random: %d cases run\n", ran);

    /* random depthwise Convs on planes of more than 256 outputs (a plane at a time): sizes
     * 17..40, kernels 1..6, strides 1..3, dilations 1..2, pads 0..3, multipliers 1..3 */
    ran = 0;
    for (int iter = 0; iter < 50; iter++) {
        tcase tc = base("Conv", 2);
        tc.group = 2 + (int64_t)((rnd() + 1) * 0.9);
        tc.c = tc.group;
        tc.m = tc.group * (1 + (int64_t)((rnd() + 1) * 1.5));
        tc.bias = rnd() > -0.3;
        tc.dt = rnd() > 0 ? OG_FLOAT : OG_DOUBLE;
        tc.threads = rnd() > 0 ? 2 : 1;
        tc.kernel_attr = true;
        for (int i = 0; i < 2; i++) {
            tc.in[i] = 17 + (int64_t)((rnd() + 1) * 11.9);
            tc.k[i] = rnd() > 0 ? 3 : rnd() > 0 ? 5 : 1 + (int64_t)((rnd() + 1) * 2.9);
            tc.strides[i] = 1 + (int64_t)((rnd() + 1) * 1.4);
            tc.dil[i] = 1 + (int64_t)((rnd() + 1) * 0.6);
            tc.pads[i] = (int64_t)((rnd() + 1) * 1.9);
            tc.pads[2 + i] = (int64_t)((rnd() + 1) * 1.9);
        }
        int64_t pb[3], pe[3], out[3];
        ref_geometry(&tc, pb, pe, out);
        if (out[0] * out[1] <= 256) continue;
        snprintf(label, sizeof label, "direct_plane_random%d", iter);
        run_case(&tc, true, label);
        ran++;
    }
    printf("direct plane random: %d cases run\n", ran);
}

/* Stride-2 float Convs of short sums by split sub-planes (src/kernels/cpu/conv_s2.c, kernels
 * of 9 taps or more on AVX-512; im2col elsewhere, against the same reference): 3x3, 4x4,
 * 5x5, 7x7 (stems) and 4x5 kernels on even and odd sizes, pads symmetric, asymmetric and none,
 * groups, no bias, several images, outputs of several chunks of rows, one and two threads,
 * rows computed straight into Y (16 x 16, 15 x 15, 75 and 32 wide) or through the wide
 * rows' copy (the 45x40 stem: 20 of 23); and a 1x1 subsampling, which keeps to im2col. */
static const conv_case s2_cases[] = {
    {"s2_4x4_even", "Conv", 2, .c = 3, .m = 8, .in = {32, 32}, .k = {4, 4}, .strides = {2, 2},
     PADS1},
    {"s2_5x5_odd_mt", "Conv", 2, .n = 3, .c = 3, .m = 9, .in = {33, 29}, .k = {5, 5},
     .strides = {2, 2}, .pads = {2, 2, 2, 2}, .mt = true},
    {"s2_asym_pads", "Conv", 2, .c = 2, .m = 5, .in = {20, 23}, .k = {4, 5}, .strides = {2, 2},
     .pads = {0, 1, 2, 0}},
    {"s2_nopad_no_bias", "Conv", 2, .c = 4, .m = 6, .in = {17, 18}, .k = {5, 5}, .strides = {2, 2},
     .no_bias = true},
    {"s2_7x7_stem_mt", "Conv", 2, .n = 2, .c = 3, .m = 16, .in = {45, 40}, .k = {7, 7},
     .strides = {2, 2}, .pads = {3, 3, 3, 3}, .mt = true},
    /* ResNet's stem at 64x64: output rows of 32 (two whole vectors), each computed straight
     * into Y, three images */
    {"s2_7x7_stem_rows_mt", "Conv", 2, .n = 3, .c = 3, .m = 24, .in = {64, 64}, .k = {7, 7},
     .strides = {2, 2}, .pads = {3, 3, 3, 3}, .mt = true},
    {"s2_5x5_groups", "Conv", 2, .c = 10, .m = 4, .group = 2, .in = {14, 15}, .k = {5, 5},
     .strides = {2, 2}, .pads = {1, 0, 0, 1}},
    /* 64 output channels by 120 rows: chunks of 14 output rows (and a last shorter one) */
    {"s2_chunks_mt", "Conv", 2, .c = 3, .m = 64, .in = {240, 150}, .k = {5, 5}, .strides = {2, 2},
     .pads = {2, 2, 2, 2}, .mt = true},
    {"s2_3x3_stem", "Conv", 2, .c = 3, .m = 8, .in = {33, 29}, .strides = {2, 2}, PADS1},
    {"s2_3x3_stem_rows_mt", "Conv", 2, .n = 2, .c = 3, .m = 32, .in = {40, 58}, .strides = {2, 2},
     PADS1, .mt = true},
    {"s2_3x3_same_pads", "Conv", 2, .c = 3, .m = 16, .in = {24, 30}, .strides = {2, 2},
     .pads = {0, 0, 1, 1}},
    {"s2_3x3_narrow_wide_rows", "Conv", 2, .c = 3, .m = 5, .in = {14, 14}, .strides = {2, 2},
     PADS1},
    {"s2_1x1", "Conv", 2, .c = 24, .m = 10, .in = {15, 16}, .k = {1, 1}, .strides = {2, 2}},
    /* 64 output channels or more go by panels of 32 (og_conv_s2_panel_applies): 3 panels,
     * the last of 8 channels, on odd planes of two images; 3 threads, no bias; a sum of 153
     * taps (17 channels by 3x3: the longest the split takes) on 96 channels */
    {"s2_panel_72_odd_mt", "Conv", 2, .n = 2, .c = 3, .m = 72, .in = {37, 41}, .k = {7, 7},
     .strides = {2, 2}, .pads = {3, 3, 3, 3}, .mt = true},
    {"s2_panel_three", "Conv", 2, .c = 4, .m = 64, .in = {50, 47}, .strides = {2, 2}, PADS1,
     .no_bias = true, .threads = 3},
    {"s2_panel_long_sum", "Conv", 2, .c = 17, .m = 96, .in = {20, 22}, .strides = {2, 2}, PADS1},
};

/* Winograd F(2x2, 3x3) (src/kernels/cpu/conv_wino.c, float on CPUs with AVX-512; the
 * im2col path elsewhere, against the same reference): outputs of odd and even sizes
 * (partial tiles at the right and the bottom), tile rows of more than 16 tiles (a whole
 * vector and a partial one), pads symmetric, asymmetric and none, channel counts that are
 * not multiples of 16 (the weights' transform gathers 16 at a time), several images and
 * chunks, several images per chunk, one and two threads, with and without a bias. */
static const conv_case winograd_cases[] = {
    {"wino_odd_2img", "Conv", 2, .n = 2, .c = 16, .m = 17, .in = {15, 13}, PADS1, .mt = true},
    {"wino_asym_wide", "Conv", 2, .c = 19, .m = 16, .in = {22, 35}, .pads = {0, 2, 1, 0}},
    {"wino_nopad", "Conv", 2, .c = 33, .m = 20, .in = {24, 24}, .no_bias = true},
    {"wino_big_mt", "Conv", 2, .n = 3, .c = 24, .m = 40, .in = {40, 37}, PADS1, .mt = true},
    {"wino_pads2", "Conv", 2, .c = 16, .m = 16, .in = {18, 20}, .pads = {2, 2, 2, 1}},
    /* small images, several per chunk (their tiles side by side in the GEMMs): 30 images
     * of 4x5 tiles (600 tiles: more than the bands take), in one chunk (one thread) or 15
     * + 15 (two threads); 5 such images (100 tiles of 16 channels) go by bands */
    {"wino_batch30", "Conv", 2, .n = 30, .c = 16, .m = 18, .in = {8, 9}, PADS1},
    {"wino_batch30_mt", "Conv", 2, .n = 30, .c = 17, .m = 16, .in = {8, 9}, PADS1, .mt = true},
    {"wino_band_batch5_mt", "Conv", 2, .n = 5, .c = 17, .m = 16, .in = {8, 9}, PADS1, .mt = true},
    /* one image in chunks of tile rows, as many per thread (4 chunks of 13, 13, 13, 11) */
    {"wino_chunks_mt", "Conv", 2, .c = 16, .m = 16, .in = {100, 100}, PADS1, .mt = true},
    /* rows of more than 512 padded columns (split without planned masks) */
    {"wino_past_plan", "Conv", 2, .c = 16, .m = 16, .in = {4, 515}, PADS1},
    /* input rows that end one column before the second 32-column block of the split */
    {"wino_edge63", "Conv", 2, .c = 16, .m = 16, .in = {16, 62}, PADS1},
    /* few tiles (n · tiles < 64, or more on few channels: bands of 32 output channels, U
     * packed in panels, each tile's outputs scattered to their channels' planes): 7x7
     * planes of 70 channels (3 panels, the last of 6: a partial vector) on 1 and 2
     * threads, 2 odd images with partial tiles at both edges and no bias, asymmetric pads,
     * sums of more than one block */
    {"wino_band_7x7", "Conv", 2, .c = 40, .m = 70, .in = {7, 7}, PADS1},
    {"wino_band_7x7_mt", "Conv", 2, .c = 40, .m = 70, .in = {7, 7}, PADS1, .mt = true},
    {"wino_band_odd_2img_mt", "Conv", 2, .n = 2, .c = 16, .m = 33, .in = {9, 11}, .no_bias = true,
     .mt = true},
    {"wino_band_pads", "Conv", 2, .c = 17, .m = 48, .in = {12, 14}, .pads = {2, 1, 0, 2}},
    /* 3 images of 4x4 (4 tiles each, fewer than 16: bands only) */
    {"wino_band_4x4_3img_mt", "Conv", 2, .n = 3, .c = 20, .m = 36, .in = {4, 4}, PADS1, .mt = true},
    /* 2 images of 16x16 (128 tiles of 24 channels: more than 64, a transform that stays
     * in cache: bands where L2 is under 2 MB, tile chunks elsewhere) */
    {"wino_band_many_tiles_mt", "Conv", 2, .n = 2, .c = 24, .m = 40, .in = {16, 16}, PADS1,
     .mt = true},
    /* 150 input channels: the products' sums in blocks of 128 and 22 */
    {"wino_band_deep_mt", "Conv", 2, .c = 150, .m = 32, .in = {8, 8}, PADS1, .mt = true},
    /* W transformed and packed on two threads (7 panels, the last one of 8 rows) */
    {"wino_band_pack_mt", "Conv", 2, .n = 2, .c = 192, .m = 200, .in = {4, 4}, PADS1, .mt = true},
    /* the input's transform shared by the threads in parts of an image's 32 channels: 3
     * images of 70 channels (9 parts, the last of each image 6 channels) for 4 panels */
    {"wino_band_shared_v_mt", "Conv", 2, .n = 3, .c = 70, .m = 100, .in = {6, 6}, PADS1,
     .mt = true},
    /* ConvTranspose of stride 1 and 3x3 kernels (a 3x3 Conv's input gradient): the Conv of
     * its weights turned, pads 2 − pads, channels swapped (og_conv_wino_transposed).  Tile
     * chunks (625 tiles) and bands, pads 1, 0 (outputs 2 larger), 2, asymmetric; the
     * weights' transform over more channels than a vector (M = 200: 7 panels); pads of 3
     * are no such Conv and take the GEMM + col2im path */
    {"wino_tr_chunks_mt", "ConvTranspose", 2, .c = 24, .m = 40, .in = {50, 49}, PADS1, .mt = true},
    {"wino_tr_2img_mt", "ConvTranspose", 2, .n = 2, .c = 16, .m = 17, .in = {15, 13}, PADS1,
     .mt = true},
    {"wino_tr_nopad", "ConvTranspose", 2, .c = 33, .m = 20, .in = {24, 24}, .no_bias = true},
    {"wino_tr_pads2", "ConvTranspose", 2, .c = 16, .m = 16, .in = {18, 20}, .pads = {2, 2, 2, 2}},
    {"wino_tr_asym", "ConvTranspose", 2, .c = 19, .m = 16, .in = {22, 35}, .pads = {0, 2, 1, 0}},
    {"wino_tr_band_4x4_3img_mt", "ConvTranspose", 2, .n = 3, .c = 20, .m = 36, .in = {4, 4}, PADS1,
     .mt = true},
    {"wino_tr_band_pack_mt", "ConvTranspose", 2, .n = 2, .c = 192, .m = 200, .in = {4, 4}, PADS1,
     .mt = true},
    {"wino_tr_pads3", "ConvTranspose", 2, .c = 16, .m = 16, .in = {10, 10}, .pads = {3, 3, 3, 3}},
};

static void test_winograd(void)
{
    run_cases(winograd_cases, sizeof winograd_cases / sizeof *winograd_cases);
    run_cases(s2_cases, sizeof s2_cases / sizeof *s2_cases);
}

/* The pointwise float kernel (src/kernels/cpu/conv_pw.c, on CPUs with AVX-512; elsewhere
 * these run the GEMM path against the same reference): tiles of 8 output channels by 48
 * positions, so channel counts that leave 1-7 rows in the last tile, planes that end in a
 * tile of 1, 2 or 3 vectors with a partial last one, 160 inputs (the most it takes into
 * more than 48 output channels), up to 1024 into at most 48, groups of more than 4
 * channels, 1-D and 3-D, no bias, batches, and two threads (a plane cut in column chunks, a
 * single tile column cut in channel bands), and planes of at most 16 positions of several
 * images (3 images a tile).  Planes that fill their vectors less than 90 % (7x7) and longer
 * sums into more channels go the GEMM way: cases check those too. */
static const conv_case pw_cases[] = {
    {"pw_full_tiles", "Conv", 2, .c = 24, .m = 40, .k = {1, 1}, .in = {12, 12}},
    {"pw_row_and_lane_tails", "Conv", 2, .n = 2, .c = 19, .m = 13, .k = {1, 1}, .in = {17, 15}},
    {"pw_two_vector_tail", "Conv", 2, .c = 5, .m = 7, .k = {1, 1}, .in = {6, 13}, .no_bias = true},
    {"pw_one_row", "Conv", 2, .c = 3, .m = 1, .k = {1, 1}, .in = {4, 4}},
    {"pw_160_inputs", "Conv", 2, .n = 2, .c = 160, .m = 17, .k = {1, 1}, .in = {8, 9}, .mt = true},
    {"pw_long_sum_gemm", "Conv", 2, .c = 600, .m = 9, .k = {1, 1}, .in = {4, 8}, .no_bias = true,
     .mt = true},
    {"pw_long_sum_gemm_tails", "Conv", 2, .n = 2, .c = 300, .m = 21, .k = {1, 1}, .in = {9, 11}},
    /* one image, more than 160 inputs into at most 48 output channels (MobileNet-v2's
     * 192 -> 32 at 28x28), tails of rows and lanes, 1024 inputs; 49 outputs go the GEMM
     * way */
    {"pw_long_one_image", "Conv", 2, .c = 192, .m = 32, .k = {1, 1}, .in = {28, 28}, .mt = true},
    {"pw_long_tails", "Conv", 2, .c = 250, .m = 45, .k = {1, 1}, .in = {17, 15}, .no_bias = true,
     .mt = true},
    {"pw_long_1024", "Conv", 2, .c = 1024, .m = 48, .k = {1, 1}, .in = {12, 12}},
    {"pw_long_49_gemm", "Conv", 2, .c = 200, .m = 49, .k = {1, 1}, .in = {12, 12}, .mt = true},
    {"pw_groups", "Conv", 2, .n = 3, .c = 12, .m = 10, .group = 2, .k = {1, 1}, .in = {8, 8},
     .mt = true},
    {"pw_1d", "Conv", 1, .c = 7, .m = 17, .k = {1}, .in = {160}},
    {"pw_3d", "Conv", 3, .n = 2, .c = 5, .m = 8, .k = {1, 1, 1}, .in = {4, 4, 4}, .mt = true},
    {"pw_channel_bands", "Conv", 2, .c = 32, .m = 64, .k = {1, 1}, .in = {8, 6}, .mt = true},
    {"pw_column_chunks", "Conv", 2, .c = 16, .m = 24, .k = {1, 1}, .in = {40, 30}, .mt = true},
    /* 4 tiles of channels a thread or more: one image's channels in bands (8 bands of 2-3
     * tiles on two threads; 12 bands of 1-2 tiles, the last with 4 rows, on three) */
    {"pw_bands_two", "Conv", 2, .c = 24, .m = 144, .k = {1, 1}, .in = {28, 28}, .mt = true},
    {"pw_bands_three", "Conv", 2, .c = 20, .m = 100, .k = {1, 1}, .in = {17, 15}, .threads = 3},
    {"pw_batch_threads", "Conv", 2, .n = 5, .c = 9, .m = 11, .k = {1, 1}, .in = {16, 16},
     .mt = true},
    {"pw_7x7_gemm", "Conv", 2, .c = 40, .m = 24, .k = {1, 1}, .in = {7, 7}, .mt = true},
    {"pw_f64", "Conv", 2, .n = 2, .c = 19, .m = 13, .k = {1, 1}, .in = {17, 15}, .f64 = true},
    /* planes of at most 16 positions, several images: a tile's vectors are 3 images' planes
     * (3 + 3 + 1 images; 12 positions, a partial vector each) */
    {"pw_images", "Conv", 2, .n = 3, .c = 24, .m = 13, .k = {1, 1}, .in = {4, 4}, .mt = true},
    {"pw_images_tails", "Conv", 2, .n = 7, .c = 160, .m = 20, .k = {1, 1}, .in = {3, 4},
     .no_bias = true, .mt = true},
    {"pw_images_two", "Conv", 2, .n = 2, .c = 5, .m = 8, .k = {1, 1}, .in = {4, 4}},
    /* enough work for two threads: the channel tiles in bands as well (3 groups of images
     * x 3 bands of 65 tiles, the last one partial) */
    {"pw_images_bands", "Conv", 2, .n = 8, .c = 160, .m = 515, .k = {1, 1}, .in = {4, 4},
     .mt = true},
    /* several images of more than 160 input channels (up to 1024): 8x8 planes (a tile of 48
     * positions and one of 16), 4x4 ones three images a tile, 1024 inputs, and 1025 (the
     * GEMM's way) */
    {"pw_images_long_8x8", "Conv", 2, .n = 3, .c = 400, .m = 40, .k = {1, 1}, .in = {8, 8},
     .mt = true},
    {"pw_images_long_4x4", "Conv", 2, .n = 5, .c = 600, .m = 30, .k = {1, 1}, .in = {4, 4},
     .no_bias = true, .mt = true},
    {"pw_images_1024", "Conv", 2, .n = 2, .c = 1024, .m = 17, .k = {1, 1}, .in = {8, 8}},
    {"pw_images_1025", "Conv", 2, .n = 2, .c = 1025, .m = 17, .k = {1, 1}, .in = {8, 8}},
    /* one image of more than 160 input channels, at least twice as many as output ones
     * (more than 48), on threads (conv_pw_kshare.c): the sum in shares of the input channels,
     * one a thread, then the shares added by bands of output channels.  Two threads (shares
     * of 240), three (500 channels: shares of 160, 160 and 180; 53 output channels), 1-D, no
     * bias; the harness's unbound run (OpenMP's threads, not the workers) gives the same
     * bits.  Below 2^20 multiply-adds (pw_long_sum_gemm) or on one thread the sum stays
     * whole. */
    {"pw_kshare_two", "Conv", 2, .c = 480, .m = 56, .k = {1, 1}, .in = {14, 14}, .mt = true},
    {"pw_kshare_three", "Conv", 2, .c = 500, .m = 53, .k = {1, 1}, .in = {9, 11}, .no_bias = true,
     .threads = 3},
    {"pw_kshare_1d", "Conv", 1, .c = 300, .m = 100, .k = {1}, .in = {128}, .mt = true},
    {"pw_kshare_one_thread", "Conv", 2, .c = 480, .m = 56, .k = {1, 1}, .in = {14, 14}},
    /* partial sums of more than 2 MiB (100 x 6400 floats): the sum stays whole */
    {"pw_kshare_large_plane", "Conv", 2, .c = 300, .m = 100, .k = {1, 1}, .in = {80, 80},
     .mt = true},
};

/* Convs of 9 to 16 output channels without pads on rows of at most 24 outputs
 * (src/kernels/cpu/conv_m16.c on CPUs with AVX-512: a vector of channels per position):
 * LeNet's second layer on 4 images and two threads (rows over them), 9 and 13 channels
 * (lanes past M unused), rows of 24 (two transposes, the second of 8), 16 (one whole)
 * and 4 outputs, strides 2 and 3, dilation 2; not taken (im2col): rows of 3 outputs, 1-D
 * and 3-D, sums of 1025 values (1024 are), double; no bias. */
static const conv_case m16_cases[] = {
    {"m16_lenet2_mt", "Conv", 2, .n = 4, .c = 6, .m = 16, .k = {5, 5}, .in = {14, 14}, .mt = true},
    {"m16_m9_row24", "Conv", 2, .c = 3, .m = 9, .in = {7, 26}},
    {"m16_m13_row16_no_bias", "Conv", 2, .n = 2, .c = 5, .m = 13, .in = {9, 18}, .no_bias = true},
    {"m16_row4", "Conv", 2, .c = 4, .m = 12, .in = {5, 6}},
    {"m16_row3", "Conv", 2, .c = 4, .m = 12, .in = {5, 5}},
    {"m16_strides_dil", "Conv", 2, .n = 3, .c = 7, .m = 15, .in = {20, 21}, .strides = {2, 3},
     .dil = {2, 1}, .mt = true},
    {"m16_1d", "Conv", 1, .n = 2, .c = 4, .m = 10, .k = {3}, .in = {20}},
    {"m16_3d", "Conv", 3, .c = 2, .m = 11, .k = {2, 2, 2}, .in = {4, 5, 6}},
    {"m16_k1024", "Conv", 2, .c = 64, .m = 16, .k = {4, 4}, .in = {6, 9}},
    {"m16_k1025", "Conv", 2, .c = 41, .m = 16, .k = {5, 5}, .in = {6, 9}},
    {"m16_f64", "Conv", 2, .c = 6, .m = 16, .k = {5, 5}, .in = {14, 14}, .f64 = true},
};

static void test_pointwise(void)
{
    run_cases(m16_cases, sizeof m16_cases / sizeof *m16_cases);
    run_cases(pw_cases, sizeof pw_cases / sizeof *pw_cases);
    /* random: channels 1..70 in 1..3 groups, planes of 16 to 400 positions, 1 or 2 threads */
    char label[64];
    int ran = 0;
    for (int iter = 0; iter < 60; iter++) {
        tcase tc = base("Conv", 2);
        tc.group = 1 + (int64_t)((rnd() + 1) * 1.5);
        tc.c = tc.group * (1 + (int64_t)((rnd() + 1) * 12));
        tc.m = tc.group * (1 + (int64_t)((rnd() + 1) * 11));
        tc.n = 1 + (int64_t)((rnd() + 1) * 1.5);
        tc.bias = rnd() > -0.5;
        tc.threads = rnd() > 0 ? 2 : 1;
        for (int i = 0; i < 2; i++) {
            tc.k[i] = 1;
            tc.in[i] = 4 + (int64_t)((rnd() + 1) * 8);
        }
        snprintf(label, sizeof label, "pw_random%d", iter);
        run_case(&tc, true, label);
        ran++;
    }
    printf("pointwise random: %d cases run\n", ran);
}

/* The ONNX test case convtranspose_autopad_same (opset 11) puts the odd pad at the end. */
static void test_onnx_expected(void)
{
    tcase tc = base("ConvTranspose", 2);
    tc.opset = 11;
    tc.c = 1;
    tc.m = 2;
    tc.in[0] = tc.in[1] = 3;
    tc.strides[0] = tc.strides[1] = 2;
    tc.auto_pad = "SAME_UPPER";
    tc.bias = false;
    int64_t pb[3], pe[3], out[3];
    ref_geometry(&tc, pb, pe, out);
    CHECKF(out[0] == 6 && pb[0] == 0 && pe[0] == 1, "autopad_same geometry");
    run_case(&tc, true, "onnx_autopad_same");
    /* output_shape larger than the full result: extra zeros at the end */
    tc.auto_pad = NULL;
    tc.strides[0] = 3;
    tc.has_oshape = true;
    tc.oshape[0] = 10;
    tc.oshape[1] = 8;
    ref_geometry(&tc, pb, pe, out);
    CHECKF(pb[0] == 0 && pe[0] == -1 && pb[1] == 0 && pe[1] == -1, "output_shape geometry");
    run_case(&tc, true, "onnx_output_shape");
}

static const conv_case error_cases[] = {
    /* a kernel larger than the 6-wide input */
    {"kernel_too_big", "Conv", 2, .k = {9, 3}, .want = OG_ERR_SHAPE},
    {"channels_not_divisible", "Conv", 2, .group = 2, .c = 3, .want = OG_ERR_SHAPE},
    {"negative_output", "ConvTranspose", 1, .pads = {9, 9}, .want = OG_ERR_SHAPE},
    {"zero_stride", "Conv", 2, .strides = {0, 1}, .want = OG_ERR_MODEL},
    /* X has 3 channels */
    {"w_channels", "Conv", 2, .w1 = 2, .want = OG_ERR_SHAPE},
    /* 4 output channels */
    {"bias_length", "ConvTranspose", 2, .b_len = 3, .want = OG_ERR_SHAPE},
};

static void test_errors(void) { run_cases(error_cases, sizeof error_cases / sizeof *error_cases); }

/* ---- Col2Im (issue 12) ---- */

/* Run n and compare output 0 with want (count values); release everything. */
static void c12_case(const nh_node *n, const char *what, int64_t count, const double *want,
                     double tol, og_tensor **in, int n_in)
{
    nh_result r;
    CHECK_OK(nh_run(n, &r));
    if (r.status == OG_OK) nh_expect(what, r.out[0], count, want, tol);
    nh_release(&r);
    nh_free_tensors(in, n_in);
}

static void test_col2im(void)
{
    /* taps t (rows) by block positions l: y[l + t] += x[t, l] */
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 2, 2}, (double[]){1, 2, 3, 4}),
                       nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){3}),
                       nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){2})};
    nh_node n = {.op = "Col2Im", .opset = 18, .in = {in[0], in[1], in[2]}};
    c12_case(&n, "col2im 1-D", 3, (double[]){1, 5, 4}, 0, in, 3);
    og_tensor *b[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 2, 3}, NULL),
                      nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){3}),
                      nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){2})};
    nh_node bad = {.op = "Col2Im", .opset = 18, .in = {b[0], b[1], b[2]}};
    nh_expect_fail(&bad, 0, OG_ERR_SHAPE, "block positions");
    nh_free_tensors(b, 3);
}

/* Col2Im of x (dtype t, [1, 2, 2]) into an image of 3 with blocks of 2: want */
static void col2im_int_case(const char *what, og_dtype t, const double *x, const double *want)
{
    og_tensor *in[] = {nh_tensor(t, 3, (int64_t[]){1, 2, 2}, x),
                       nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){3}),
                       nh_tensor(OG_INT64, 1, (int64_t[]){1}, (double[]){2})};
    nh_node n = {.op = "Col2Im", .opset = 18, .in = {in[0], in[1], in[2]}};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    if (r.status == OG_OK) {
        CHECK(r.out[0]->dtype == t);
        nh_expect(what, r.out[0], 3, want, 0);
    }
    nh_release(&r);
    nh_free_tensors(in, 3);
}

/* The integers sum in their type, wrapping as the reference evaluator's numpy sums; bool
 * ors.  y = (x[0, 0], x[0, 1] + x[1, 0], x[1, 1]). */
static void test_col2im_integers(void)
{
    col2im_int_case("col2im int8", OG_INT8, (double[]){100, 100, 100, 7}, (double[]){100, -56, 7});
    col2im_int_case("col2im uint8", OG_UINT8, (double[]){100, 200, 100, 7}, (double[]){100, 44, 7});
    col2im_int_case("col2im int32", OG_INT32, (double[]){5, 2147483647, 1, 7},
                    (double[]){5, -2147483648.0, 7});
    col2im_int_case("col2im int64", OG_INT64, (double[]){5, -9, 4, 7}, (double[]){5, -5, 7});
    col2im_int_case("col2im bool", OG_BOOL, (double[]){1, 0, 1, 0}, (double[]){1, 1, 0});
}

int main(void)
{
    test_fixed();
    test_onnx_expected();
    test_tcol();
    test_direct();
    test_winograd();
    test_pointwise();
    test_random();
    test_errors();
    test_col2im();
    test_col2im_integers();
    NH_DONE();
}
