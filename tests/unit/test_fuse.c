/* test_fuse.c: activations fused into the convolution before them in inference sessions
 * (src/exec/fuse.c).  Each graph is Conv -> activation pattern -> Y; the fused run
 * (og_session_run) must give the bytes of the unfused one (og_session_run_named asking
 * also for the Conv's own output, which the plan leaves out, so the run goes node by
 * node), and the session's log must say how many nodes were fused: patterns that must not
 * fuse (a second reader, a graph output, bounds an input may override) say 0.  Also: what
 * a kernel keeps from run to run of its constant inputs (og_kcache: a Winograd Conv's
 * transformed weights) is used only while those inputs are the model's own. */
#include "unit/fuse_graph.h"
#include "kernels/cpu/conv_dw.h"

static int fused_count, pre_count, pool_count, res_count;
static void on_log(void *user, og_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    log_count(msg, " activation nodes fused", &fused_count);
    log_count(msg, " pointwise Convs run in", &pre_count);
    log_count(msg, " MaxPools run in", &pool_count);
    log_count(msg, " Adds run in", &res_count);
}

enum pattern {
    P_RELU,
    P_CLIP_CONST,
    P_CLIP_INIT,
    P_CLIP6,
    P_HARDSWISH,
    P_HARDSIGMOID,
    P_SIGMOID,
    P_SILU,
    P_SILU_SWAPPED,
    P_TWO_READERS,
    P_CONV_OUTPUT,
    P_CLIP_OVERRIDABLE,
    P_DEPTHWISE_RELU6,
    P_COUNT
};
static const char *const pattern_names[P_COUNT] = {
    "relu",           "clip_constant", "clip_initializer", "clip_attrs_opset6",
    "hardswish",      "hardsigmoid",   "sigmoid",          "silu",
    "silu_swapped",   "two_readers",   "conv_output",      "clip_overridable",
    "depthwise_relu6"};

/* Graph g (input X, outputs Y and maybe V) in an inference session on `threads` threads:
 * the log must say `expect` nodes fused, the fused run (og_session_run; Y its output yo)
 * must give the bytes of the node-by-node one (og_session_run_named asking also for V, the
 * producer's own output, which the plan leaves out), and the activation must have run (Y
 * differs from V). */
static void fused_vs_plain(og_graph *g, const og_tensor *xin, int threads, int expect, int yo,
                           const char *label)
{
    og_session *s = NULL;
    og_tensor *fused[2] = {0}, *plain[2] = {0};
    og_session_options so = {.threads = threads, .log = on_log};
    fused_count = -1;
    og_status st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (!st) st = og_exec_create(g, NULL, og_default_allocator(), &so, true, &s);
    CHECKF(st == OG_OK, "%s: %s", label, og_last_error());
    if (!st) {
        CHECKF(fused_count == expect, "%s: %d nodes fused, expected %d", label, fused_count,
               expect);
        const char *in_names[1] = {"X"};
        const og_tensor *ins[1] = {xin};
        CHECK_OK(og_session_run(s, in_names, ins, 1, fused));
        const char *want[2] = {"Y", "V"};
        CHECK_OK(og_session_run_named(s, in_names, ins, 1, want, 2, plain));
        CHECKF(fused[yo] && plain[0] && og_value_equal(fused[yo], plain[0]),
               "%s: the fused output differs from the node-by-node one", label);
        /* and the activation really ran: clipped, positive, ... outputs differ from V */
        CHECKF(plain[1] && !og_value_equal(plain[0], plain[1]), "%s: Y == V", label);
    }
    for (int j = 0; j < 2; j++) {
        og_tensor_free(fused[j]);
        og_tensor_free(plain[j]);
    }
    og_session_free(s);
}

/* big_dw's plane: 20x18 (its activation in the stores), or 30x28 (at least
 * DWP_POST_ACT_MIN outputs: SiLU, Sigmoid and HardSwish in a pass after the plane) */
static int64_t big_dw_hw[2] = {20, 18};

/* Build, run fused and unfused, compare.  pw: the Conv is pointwise (1x1, no pads) on
 * 12x12 planes, which float runs through conv_pw.c's kernel with the activation in its
 * store (Relu, Clip) or after a few tile columns (the others); with tiny, on 4x4 planes of
 * 5 images, which that kernel takes 3 images a tile.  big_dw: the Conv is a 3x3
 * depthwise one on big_dw_hw planes, which conv_dw.c computes a plane at a time (padded
 * planes, not 16 channels at a time), the activation after each plane.  cols: the Conv
 * is a 3x3 one of 3 channels on 40x36 planes, whose short sums (27) float runs through
 * the pointwise kernel on im2col's chunks (conv.c's pwcols).  m16: the Conv is a 3x3 one of
 * 6 to 12 channels without pads on 12x14 planes, which float runs through conv_m16.c's
 * rows of channel vectors, the activation in their stores (clamps, SiLU, Sigmoid,
 * HardSwish) or after each row (the others). */
static void run_pattern(int p, og_dtype dt, int threads, bool pw, bool big_dw, bool cols, bool tiny,
                        bool s2, bool m16)
{
    fg f = {og_graph_new(NULL), dt};
    og_graph *g = f.g;
    /* tiny without pw: a 3x3 depthwise Conv of 20 channels on 7x6 planes: with s2, of
     * stride 2 (conv_dw.c's blocks of 16 channels, the activation in their transposes
     * back), else of stride 1 (conv_dw_reg.h's planes in registers, the activation in
     * their stores); the depthwise pattern too */
    bool dw = p == P_DEPTHWISE_RELU6 || big_dw || (tiny && !pw);
    int64_t c = tiny && !pw ? 20
                : dw        ? 6
                : pw        ? 20
                : m16       ? 6
                            : 3,
            m = tiny && !pw ? 20
                : dw        ? 6
                : pw        ? 12
                : m16       ? 12
                            : 4;
    int x = start_graph(&f, p == P_CLIP6 ? 6 : 14);
    int64_t xd[4] = {tiny ? 5 : 2, c,
                     big_dw       ? big_dw_hw[0]
                     : tiny && pw ? 4
                     : pw || m16  ? 12
                     : cols       ? 40
                                  : 7,
                     big_dw       ? big_dw_hw[1]
                     : tiny && pw ? 4
                     : pw         ? 12
                     : m16        ? 14
                     : cols       ? 36
                                  : 6},
            bd[1] = {m}, sd[1] = {0};
    int64_t wd[4] = {m, dw ? 1 : c, pw ? 1 : 3, pw ? 1 : 3};
    g->values[x].dtype = dt;
    g->values[x].rank = 4;
    memcpy(g->values[x].dims, xd, sizeof xd);
    init(&f, "W", 4, wd, 0.5, 0, false);
    init(&f, "B", 1, bd, 0.3, 0.1, false);
    int conv = node(&f, "Conv", 3, (const char *[]){"X", "W", "B"}, 1, (const char *[]){"V"});
    const int64_t pad = pw || m16 ? 0 : 1;
    nh_attr pads = NH_INTS_N("pads", 4, ((int64_t[]){pad, pad, pad, pad}));
    og_attr at = {
        .name = (char *)"pads", .type = OG_ATTR_INTS, .n = 4, .ints = (int64_t *)pads.ints};
    og_node_add_attr(g, conv, &at);
    if (s2) {
        nh_attr st = NH_INTS_N("strides", 2, ((int64_t[]){2, 2}));
        og_attr sa = {
            .name = (char *)"strides", .type = OG_ATTR_INTS, .n = 2, .ints = (int64_t *)st.ints};
        og_node_add_attr(g, conv, &sa);
    }
    if (dw) {
        og_attr grp = {.name = (char *)"group", .type = OG_ATTR_INT, .i = c};
        og_node_add_attr(g, conv, &grp);
    }
    const char *y = "Y";
    int expect = 1;
    switch (p) {
    case P_RELU: node(&f, "Relu", 1, (const char *[]){"V"}, 1, &y); break;
    case P_CLIP_CONST: {
        og_tensor *lo = NULL;
        og_tensor_alloc(dt, 0, sd, NULL, &lo);
        set(lo, 0, -0.2);
        int k = node(&f, "Constant", 0, NULL, 1, (const char *[]){"LO"});
        og_attr va = {.name = (char *)"value", .type = OG_ATTR_TENSOR, .t = lo};
        og_node_add_attr(g, k, &va);
        og_tensor_free(lo);
        node(&f, "Clip", 2, (const char *[]){"V", "LO"}, 1, &y);
        break;
    }
    case P_CLIP_INIT:
    case P_CLIP_OVERRIDABLE:
    case P_DEPTHWISE_RELU6:
        init(&f, "LO", 0, sd, 0, p == P_DEPTHWISE_RELU6 ? 0 : -0.1, p == P_CLIP_OVERRIDABLE);
        /* [0, 1] for the depthwise one: values above the bound, whose clamp is checked */
        init(&f, "HI", 0, sd, 0, p == P_DEPTHWISE_RELU6 ? 1 : 0.2, false);
        node(&f, "Clip", 3, (const char *[]){"V", "LO", "HI"}, 1, &y);
        expect = p == P_CLIP_OVERRIDABLE ? 0 : 1;
        break;
    case P_CLIP6: {
        int k = node(&f, "Clip", 1, (const char *[]){"V"}, 1, &y);
        og_attr lo = {.name = (char *)"min", .type = OG_ATTR_FLOAT, .f = -0.25f};
        og_attr hi = {.name = (char *)"max", .type = OG_ATTR_FLOAT, .f = 0.3f};
        og_node_add_attr(g, k, &lo);
        og_node_add_attr(g, k, &hi);
        break;
    }
    case P_HARDSWISH: node(&f, "HardSwish", 1, (const char *[]){"V"}, 1, &y); break;
    case P_HARDSIGMOID: {
        int k = node(&f, "HardSigmoid", 1, (const char *[]){"V"}, 1, &y);
        og_attr al = {.name = (char *)"alpha", .type = OG_ATTR_FLOAT, .f = 0.3f};
        og_node_add_attr(g, k, &al);
        break;
    }
    case P_SIGMOID: node(&f, "Sigmoid", 1, (const char *[]){"V"}, 1, &y); break;
    case P_SILU:
    case P_SILU_SWAPPED:
        node(&f, "Sigmoid", 1, (const char *[]){"V"}, 1, (const char *[]){"S"});
        node(&f, "Mul", 2, p == P_SILU ? (const char *[]){"V", "S"} : (const char *[]){"S", "V"}, 1,
             &y);
        expect = 2;
        break;
    case P_TWO_READERS: /* Relu(V) + V: V is needed after the Relu */
        node(&f, "Relu", 1, (const char *[]){"V"}, 1, (const char *[]){"R"});
        node(&f, "Add", 2, (const char *[]){"R", "V"}, 1, &y);
        expect = 0;
        break;
    case P_CONV_OUTPUT: /* V is a graph output as well */
        node(&f, "Relu", 1, (const char *[]){"V"}, 1, &y);
        g->values[value(&f, "V")].is_graph_output = true;
        g->outputs[g->n_outputs++] = value(&f, "V");
        expect = 0;
        break;
    }
    g->values[value(&f, "Y")].is_graph_output = true;
    g->outputs[g->n_outputs++] = value(&f, "Y");

    char label[64];
    snprintf(label, sizeof label, "%s%s_%s_t%d", pattern_names[p],
             m16          ? "_channel_vectors"
             : tiny && pw ? "_pointwise_images"
             : tiny       ? (s2 ? "_depthwise_blocks" : "_depthwise_registers")
             : pw         ? "_pointwise"
             : big_dw     ? "_depthwise_plane"
             : cols       ? "_columns"
                          : "",
             og_dtype_name(dt), threads);
    og_tensor *xin = NULL;
    og_tensor_alloc(dt, 4, xd, NULL, &xin);
    for (int64_t i = 0; i < xin->numel; i++) set(xin, i, 3.0 * sin(1.3 * (double)i));
    fused_vs_plain(g, xin, threads, expect, p == P_CONV_OUTPUT ? 1 : 0, label);
    og_tensor_free(xin);
    og_graph_free(g);
}

/* A 3x3 Conv of 16 channels on 20x20 planes (Winograd on CPUs with AVX-512, by chunks of
 * tiles), one of 40 to 64 channels on 10x10 planes on two threads (Winograd by bands of
 * output channels, U packed in panels), or a Gemm with transB of a 40x300 X by a 256x300
 * W (W kept transposed), whose W is an overridable initializer: the second run reuses what
 * the kernel derived from W and gives the first run's bytes; a run given another W
 * computes with it (both are linear in W: the result is k (Y - B) + B for k W), also when
 * the caller changed that W's values in place since the run before (2 W, then 3 W in the
 * same memory), and the next run without it is the first one again.  The band Conv's batch
 * is symbolic: a run of 3 images (75 tiles: the chunks, whose U has another layout of the
 * same size) gives each image's values, and the run of one image after it its first
 * bytes again.  A Gemm of 8 rows by a 400x700 W (W packed: gemm_small.c), or a
 * squeeze-excite's 1x1 Conv of 8 images of 144 channels to 576 (the same), of symbolic rows
 * or images: a run of the first 3 gives their bytes, one of 16 (Gemm: W kept transposed,
 * the same node's cache; Conv: a GEMM) their values, and the 8 again their first bytes. */
enum { WC_CONV, WC_BAND, WC_GEMM, WC_GEMM_FEW, WC_SE };
static void test_weight_cache(int kind)
{
    const bool se = kind == WC_SE, few = kind == WC_GEMM_FEW || se;
    const bool gemm = kind == WC_GEMM || kind == WC_GEMM_FEW, band = kind == WC_BAND;
    fg f = {og_graph_new(NULL), OG_FLOAT};
    og_graph *g = f.g;
    int x = start_graph(&f, 14);
    const int rank = gemm ? 2 : 4;
    const int64_t *xd = se     ? (const int64_t[]){8, 144, 1, 1}
                        : few  ? (const int64_t[]){8, 700}
                        : gemm ? (const int64_t[]){40, 300}
                        : band ? (const int64_t[]){1, 40, 10, 10}
                               : (const int64_t[]){1, 16, 20, 20};
    const int64_t *wd = se     ? (const int64_t[]){576, 144, 1, 1}
                        : few  ? (const int64_t[]){400, 700}
                        : gemm ? (const int64_t[]){256, 300}
                        : band ? (const int64_t[]){64, 40, 3, 3}
                               : (const int64_t[]){16, 16, 3, 3};
    const int64_t bd[1] = {wd[0]}, per_b = gemm ? 1 : xd[2] * xd[3]; /* Y values per bias */
    g->values[x].dtype = OG_FLOAT;
    g->values[x].rank = rank;
    memcpy(g->values[x].dims, xd, (size_t)rank * sizeof *xd);
    if (band || few) g->values[x].dims[0] = OG_DIM_UNKNOWN;
    init(&f, "W", rank, wd, 0.2, 0, true);
    init(&f, "B", 1, bd, 0.3, 0.1, false);
    int op = node(&f, gemm ? "Gemm" : "Conv", 3, (const char *[]){"X", "W", "B"}, 1,
                  (const char *[]){"Y"});
    int64_t ones[4] = {1, 1, 1, 1};
    og_attr at = {.name = (char *)"pads", .type = OG_ATTR_INTS, .n = 4, .ints = ones};
    og_attr tb = {.name = (char *)"transB", .type = OG_ATTR_INT, .i = 1};
    if (!se) og_node_add_attr(g, op, gemm ? &tb : &at);
    g->values[value(&f, "Y")].is_graph_output = true;
    g->outputs[g->n_outputs++] = value(&f, "Y");

    og_session *s = NULL;
    og_tensor *xin = NULL, *w2 = NULL, *y[5] = {0}, *x3 = NULL, *y3 = NULL, *y1 = NULL;
    og_tensor *x16 = NULL, *y16 = NULL;
    og_tensor_alloc(OG_FLOAT, rank, xd, NULL, &xin);
    og_tensor_alloc(OG_FLOAT, rank, wd, NULL, &w2);
    for (int64_t i = 0; i < xin->numel; i++) set(xin, i, 3.0 * sin(1.3 * (double)i));
    const og_tensor *w0 = g->values[value(&f, "W")].init;
    for (int64_t i = 0; i < w2->numel; i++)
        ((float *)w2->data)[i] = 2 * ((const float *)w0->data)[i];
    og_session_options so = {.threads = band ? 2 : 1};
    og_status st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (!st) st = og_exec_create(g, NULL, og_default_allocator(), &so, true, &s);
    CHECKF(st == OG_OK, "weight cache (%s): %s", gemm ? "Gemm" : "Conv", og_last_error());
    if (st) goto done;
    const char *names[2] = {"X", "W"};
    const og_tensor *ins[2] = {xin, w2};
    CHECK_OK(og_session_run(s, names, ins, 1, &y[0]));
    CHECK_OK(og_session_run(s, names, ins, 1, &y[1]));
    CHECK_OK(og_session_run(s, names, ins, 2, &y[2]));
    for (int64_t i = 0; i < w2->numel; i++) ((float *)w2->data)[i] *= 1.5f;
    CHECK_OK(og_session_run(s, names, ins, 2, &y[4]));
    CHECK_OK(og_session_run(s, names, ins, 1, &y[3]));
    if (!y[0] || !y[1] || !y[2] || !y[3] || !y[4]) goto done;
    CHECKF(og_value_equal(y[0], y[1]), "weight cache: the second run differs from the first");
    CHECKF(og_value_equal(y[0], y[3]), "weight cache: the run after an override differs");
    const float *bv = g->values[value(&f, "B")].init->data;
    for (int r = 2; r <= 4; r += 2) {
        int bad = 0;
        for (int64_t i = 0; i < y[0]->numel; i++) {
            const float b = bv[i / per_b % bd[0]], y0 = ((float *)y[0]->data)[i];
            const double want = (r == 2 ? 2.0 : 3.0) * ((double)y0 - b) + b;
            if (!(fabs(((float *)y[r]->data)[i] - want) <= 1e-4 * (1 + fabs(want)))) bad++;
        }
        CHECKF(!bad, "weight cache: %d values of the run given %d W are off", bad, r == 2 ? 2 : 3);
    }
    if (band) { /* 3 copies of the image: the chunks' U, then the bands' again */
        const int64_t d3[4] = {3, xd[1], xd[2], xd[3]};
        og_tensor_alloc(OG_FLOAT, 4, d3, NULL, &x3);
        for (int64_t i = 0; i < x3->numel; i++)
            ((float *)x3->data)[i] = ((const float *)xin->data)[i % xin->numel];
        CHECK_OK(og_session_run(s, names, (const og_tensor *[]){x3}, 1, &y3));
        CHECK_OK(og_session_run(s, names, ins, 1, &y1));
        if (!y3 || !y1) goto done;
        int bad = 0;
        for (int64_t i = 0; i < y3->numel; i++) {
            const double want = ((const float *)y[0]->data)[i % y[0]->numel];
            if (!(fabs(((const float *)y3->data)[i] - want) <= 1e-4 * (1 + fabs(want)))) bad++;
        }
        CHECKF(!bad, "weight cache: %d values of the 3-image run are off", bad);
        CHECKF(og_value_equal(y[0], y1), "weight cache: the bands after the chunks differ");
    }
    if (few) { /* the first 3 rows (packed W), 16 rows (Wᵀ), the 8 rows again (packed) */
        const int64_t d3[4] = {3, xd[1], 1, 1}, d16[4] = {16, xd[1], 1, 1};
        og_tensor_alloc(OG_FLOAT, rank, d3, NULL, &x3);
        og_tensor_alloc(OG_FLOAT, rank, d16, NULL, &x16);
        for (int64_t i = 0; i < x3->numel; i++)
            ((float *)x3->data)[i] = ((const float *)xin->data)[i];
        for (int64_t i = 0; i < x16->numel; i++)
            ((float *)x16->data)[i] = ((const float *)xin->data)[i % xin->numel];
        CHECK_OK(og_session_run(s, names, (const og_tensor *[]){x3}, 1, &y3));
        CHECK_OK(og_session_run(s, names, (const og_tensor *[]){x16}, 1, &y16));
        CHECK_OK(og_session_run(s, names, ins, 1, &y1));
        if (!y3 || !y16 || !y1) goto done;
        const float *f0 = y[0]->data;
        CHECKF(!memcmp(y3->data, f0, (size_t)y3->numel * sizeof(float)),
               "weight cache: the 3-row run differs from the 8-row run's rows");
        int bad = 0;
        for (int64_t i = 0; i < y16->numel; i++) {
            const double want = f0[i % y[0]->numel];
            if (!(fabs(((const float *)y16->data)[i] - want) <= 1e-4 * (1 + fabs(want)))) bad++;
        }
        CHECKF(!bad, "weight cache: %d values of the 16-row run are off", bad);
        CHECKF(og_value_equal(y[0], y1), "weight cache: the 8 rows after 16 differ");
    }
done:
    og_tensor_free(x16);
    og_tensor_free(y16);
    og_tensor_free(x3);
    og_tensor_free(y3);
    og_tensor_free(y1);
    for (int j = 0; j < 5; j++) og_tensor_free(y[j]);
    og_tensor_free(xin);
    og_tensor_free(w2);
    og_session_free(s);
    og_graph_free(g);
}

/* Convs of one image on planes of at most 64 outputs, pointwise ones on planes of at most
 * 256 whose channels fill the panels, and 2-D ones of several images on planes of 16 to 64,
 * with the model's W (conv_panel.c on CPUs with
 * AVX-512: W packed in panels of 32 output channels, the product of X or its column matrix
 * written back through 16 x 16 transposes): pointwise on 7x7 with 1 to 960 input channels
 * (one block of the sum or several, the last one partial), on 14x14 (96 -> 64 and 40 -> 48,
 * which fills its panels too little and goes another way) and 16x16, 3x3 stride 2 padded 14x14 ->
 * 7x7, 3x3 stride 1 of 8 channels (too few for Winograd) on 5x6, 2x2 dilated asymmetric pads, 1 to
 * 70 output channels (partial panels, partial 16-channel halves), with and without a bias, a fused
 * Relu or none, one and two threads (columns in parts where the panels are few); against a direct
 * double sum, and the second run (the packed W from the node's cache) bit for bit the first. */
typedef struct panel_case {
    int64_t c, m, h, w, k, s, d, pads[4], n; /* n: images */
    int threads;                             /* 0: 1 + (the case's index % 2) */
} panel_case;

static void test_conv_panel(void)
{
    static const panel_case cases[] = {
        {1, 1, 7, 7, 1, 1, 1, {0}, 1, 0},
        {17, 33, 7, 7, 1, 1, 1, {0}, 1, 0},
        {160, 70, 7, 7, 1, 1, 1, {0}, 1, 0},
        {512, 32, 7, 7, 1, 1, 1, {0}, 1, 0},
        {40, 64, 7, 7, 1, 1, 1, {0}, 1, 0},
        {24, 40, 14, 14, 3, 2, 1, {1, 1, 1, 1}, 1, 0},
        {8, 20, 5, 6, 3, 1, 1, {1, 1, 1, 1}, 1, 0},
        {6, 35, 8, 7, 2, 1, 2, {0, 1, 1, 0}, 1, 0},
        {960, 160, 7, 7, 1, 1, 1, {0}, 1, 0},
        {96, 64, 14, 14, 1, 1, 1, {0}, 1, 0},
        {40, 48, 14, 14, 1, 1, 1, {0}, 1, 0},
        {200, 96, 16, 16, 1, 1, 1, {0}, 1, 0},
        /* several images: 3x3 stride 2 on 8x8 and 4x4 outputs, 1x1 stride 2 (not pointwise),
         * 3x3 stride 1 of 8 channels on 5x6; 2x2 outputs of 2 images (8 columns) and
         * pointwise ones go other ways.
         * Their column matrices: stride 2 by rows permuted (output rows of 16, 8, 4 and 2
         * positions, an odd input width, 5x5 with asymmetric pads), others by gathers
         * (stride 1, dilation 2, stride 3) */
        {24, 40, 16, 16, 3, 2, 1, {1, 1, 1, 1}, 3, 0},
        {16, 33, 8, 8, 3, 2, 1, {1, 1, 1, 1}, 4, 0},
        {20, 48, 16, 16, 1, 2, 1, {0}, 2, 0},
        {8, 20, 5, 6, 3, 1, 1, {1, 1, 1, 1}, 3, 0},
        {6, 20, 8, 32, 3, 2, 1, {1, 1, 1, 1}, 2, 0},
        {10, 36, 16, 4, 3, 2, 1, {1, 1, 1, 1}, 2, 0},
        {12, 20, 7, 7, 3, 2, 1, {1, 1, 1, 1}, 2, 0},
        {8, 24, 9, 8, 5, 2, 1, {2, 1, 1, 2}, 2, 0},
        {6, 35, 8, 7, 2, 1, 2, {0, 1, 1, 0}, 3, 0},
        {8, 16, 12, 12, 3, 3, 1, {1, 1, 1, 1}, 2, 0},
        /* planes of fewer than 16 outputs, the images side by side in one product: 2x2
         * outputs of 5 images (stride 2 by rows permuted), of 8 (1x1 stride 2) and of 9
         * (3x3 stride 1, gathered: 36 columns), 3x3 outputs of 3 images */
        {24, 40, 4, 4, 3, 2, 1, {1, 1, 1, 1}, 5, 0},
        {20, 36, 4, 4, 1, 2, 1, {0}, 8, 0},
        {12, 20, 2, 2, 3, 1, 1, {1, 1, 1, 1}, 9, 0},
        {16, 24, 3, 3, 3, 1, 1, {1, 1, 1, 1}, 3, 0},
        {24, 40, 4, 4, 3, 2, 1, {1, 1, 1, 1}, 2, 0},
        {40, 32, 4, 4, 1, 1, 1, {0}, 3, 0},
        /* one image of fewer panels than 4 a thread, its columns in parts on two threads
         * (each case twice: one thread, then two): 384 -> 64 on 14x14 (parts of 48, the
         * last 52), 1024 -> 30 (one panel, the same parts), 2048 -> 96 (3 panels, parts
         * of 64, the last 68); a 3x3 stride 2 column matrix of 49 positions stays whole */
        {384, 64, 14, 14, 1, 1, 1, {0}, 1, 0},
        {384, 64, 14, 14, 1, 1, 1, {0}, 1, 0},
        {1024, 30, 14, 14, 1, 1, 1, {0}, 1, 0},
        {1024, 30, 14, 14, 1, 1, 1, {0}, 1, 0},
        {256, 64, 14, 14, 3, 2, 1, {1, 1, 1, 1}, 1, 0},
        {256, 64, 14, 14, 3, 2, 1, {1, 1, 1, 1}, 1, 0},
        {2048, 96, 14, 14, 1, 1, 1, {0}, 1, 0},
        {2048, 96, 14, 14, 1, 1, 1, {0}, 1, 0},
        /* pointwise images of at least twice as many input channels as output ones (those
         * above of 384, 1024, 2048 and 200 inputs, on two threads, too): the sums in shares
         * of the input channels, one a thread, added by (panel, 16 rows) (conv_pw_kshare.h):
         * 960 -> 160 on 7x7 on three threads (shares of 320), 1200 -> 70 (a partial last
         * panel whose second half is empty) on two and three, 2048 -> 96 on three; 96 -> 64
         * on 14x14 stays whole (its columns in parts); 480 -> 40 fills its panels too
         * little and goes the GEMM's way in shares (conv_pw_kshare.c) */
        {960, 160, 7, 7, 1, 1, 1, {0}, 1, 3},
        {1200, 70, 7, 7, 1, 1, 1, {0}, 1, 2},
        {1200, 70, 7, 7, 1, 1, 1, {0}, 1, 3},
        {2048, 96, 14, 14, 1, 1, 1, {0}, 1, 3},
        {96, 64, 14, 14, 1, 1, 1, {0}, 1, 2},
        {480, 40, 14, 14, 1, 1, 1, {0}, 1, 1},
        {480, 40, 14, 14, 1, 1, 1, {0}, 1, 2},
        /* pointwise ones of several images on planes of fewer than 16 positions, side by
         * side, with fewer than 4 input channels per output one: 2x2 planes of 8 images
         * (576 -> 160 on one and two threads, 160 -> 960 on three), 3x3 of 3 images (27
         * columns) with 70 outputs; 960 -> 160 goes another way.  On two threads the 5 and 3
         * panels are items with the images in two parts (4 + 4, 1 + 2) */
        {576, 160, 2, 2, 1, 1, 1, {0}, 8, 1},
        {576, 160, 2, 2, 1, 1, 1, {0}, 8, 2},
        {160, 960, 2, 2, 1, 1, 1, {0}, 8, 3},
        {100, 70, 3, 3, 1, 1, 1, {0}, 3, 2},
        {960, 160, 2, 2, 1, 1, 1, {0}, 8, 2},
        /* one image's 1x1 subsampling of up to 256 positions (14x15, 16x14), its column
         * matrix by bands of input channels on the threads (5 channels: bands left empty) */
        {40, 70, 27, 29, 1, 2, 1, {0}, 1, 2},
        {5, 33, 31, 28, 1, 2, 1, {0}, 1, 3},
    };
    for (size_t si = 0; si < sizeof cases / sizeof *cases; si++)
        for (int v = 0; v < 6; v++) {
            const panel_case *pc = &cases[si];
            const int64_t c = pc->c, m = pc->m, k = pc->k, nimg = pc->n;
            const int64_t oh =
                (pc->h + pc->pads[0] + pc->pads[2] - pc->d * (k - 1) - 1) / pc->s + 1;
            const int64_t ow =
                (pc->w + pc->pads[1] + pc->pads[3] - pc->d * (k - 1) - 1) / pc->s + 1;
            /* activation: none, Relu (a clamp in the stores), SiLU (vact.h in the stores) */
            const bool bias = !(v & 1), relu = v >> 1 == 1, silu = v >> 1 == 2;
            fg f = {og_graph_new(NULL), OG_FLOAT};
            og_graph *g = f.g;
            int x = start_graph(&f, 14);
            const int64_t xd[4] = {nimg, c, pc->h, pc->w}, wd[4] = {m, c, k, k}, bd[1] = {m};
            g->values[x].dtype = OG_FLOAT;
            g->values[x].rank = 4;
            memcpy(g->values[x].dims, xd, sizeof xd);
            init(&f, "W", 4, wd, 0.5, 0, false);
            if (bias) init(&f, "B", 1, bd, 0.3, 0.1, false);
            const char *y = relu || silu ? "V" : "Y";
            int cn = node(&f, "Conv", bias ? 3 : 2, (const char *[]){"X", "W", "B"}, 1, &y);
            const int64_t st[2] = {pc->s, pc->s}, dl[2] = {pc->d, pc->d};
            og_attr at[3] = {
                {.name = (char *)"pads", .type = OG_ATTR_INTS, .n = 4, .ints = (int64_t *)pc->pads},
                {.name = (char *)"strides", .type = OG_ATTR_INTS, .n = 2, .ints = (int64_t *)st},
                {.name = (char *)"dilations", .type = OG_ATTR_INTS, .n = 2, .ints = (int64_t *)dl}};
            for (int a = 0; a < 3; a++) og_node_add_attr(g, cn, &at[a]);
            if (relu) node(&f, "Relu", 1, (const char *[]){"V"}, 1, (const char *[]){"Y"});
            if (silu) {
                node(&f, "Sigmoid", 1, (const char *[]){"V"}, 1, (const char *[]){"S"});
                node(&f, "Mul", 2, (const char *[]){"V", "S"}, 1, (const char *[]){"Y"});
            }
            g->values[value(&f, "Y")].is_graph_output = true;
            g->outputs[g->n_outputs++] = value(&f, "Y");
            og_session *s = NULL;
            og_tensor *xin = NULL, *y0 = NULL, *y1 = NULL;
            og_tensor_alloc(OG_FLOAT, 4, xd, NULL, &xin);
            for (int64_t i = 0; i < xin->numel; i++) set(xin, i, 2.0 * sin(0.37 * (double)i));
            og_session_options so = {.threads = pc->threads ? pc->threads : 1 + (int)(si % 2)};
            og_status st2 = og_graph_finalize(g);
            if (!st2) st2 = og_graph_resolve(g, true);
            if (!st2) st2 = og_exec_create(g, NULL, og_default_allocator(), &so, true, &s);
            CHECKF(st2 == OG_OK, "conv panel: %s", og_last_error());
            const char *names[1] = {"X"};
            const og_tensor *ins[1] = {xin};
            if (!st2) {
                CHECK_OK(og_session_run(s, names, ins, 1, &y0));
                CHECK_OK(og_session_run(s, names, ins, 1, &y1));
            }
            if (y0 && y1) {
                const float *wv = g->values[value(&f, "W")].init->data;
                const float *bv = bias ? g->values[value(&f, "B")].init->data : NULL;
                const float *xv = xin->data, *yv = y0->data;
                int bad = 0;
                const int64_t ny = nimg * m * oh * ow;
                CHECKF(y0->numel == ny, "conv panel: %lld outputs", (long long)y0->numel);
                for (int64_t e = 0; e < ny && y0->numel == ny; e++) {
                    const int64_t im = e / (m * oh * ow), mm = e / (oh * ow) % m, o = e % (oh * ow);
                    double sum = bv ? bv[mm] : 0, mag = fabs(sum);
                    for (int64_t q = 0; q < c; q++)
                        for (int64_t i = 0; i < k; i++)
                            for (int64_t j = 0; j < k; j++) {
                                const int64_t ih = o / ow * pc->s - pc->pads[0] + i * pc->d;
                                const int64_t iw = o % ow * pc->s - pc->pads[1] + j * pc->d;
                                if (ih < 0 || ih >= pc->h || iw < 0 || iw >= pc->w) continue;
                                const double t =
                                    (double)wv[((mm * c + q) * k + i) * k + j] *
                                    (double)xv[((im * c + q) * pc->h + ih) * pc->w + iw];
                                sum += t;
                                mag += fabs(t);
                            }
                    if (relu && sum < 0) sum = 0;
                    if (silu) sum = sum / (1 + exp(-sum));
                    if (!(fabs(yv[e] - sum) <= 2e-6 * (mag + 1))) bad++;
                }
                CHECKF(!bad, "conv panel case %zu bias %d act %d: %d bad values", si, bias, v >> 1,
                       bad);
                CHECKF(og_value_equal(y0, y1), "conv panel: the second run differs");
            }
            og_tensor_free(xin);
            og_tensor_free(y0);
            og_tensor_free(y1);
            og_session_free(s);
            og_graph_free(g);
        }
}

/* Every allocation request of a session's creation and two runs of graph g (input X = xin,
 * resolved) on `threads` threads fails once: the session is refused, or its runs fail with
 * OG_ERR_NOMEM naming the node once (and the session's next run, whose requests all
 * succeed, gives the values: nothing half-computed is kept, such as a node cache whose
 * kernel failed after filling it), or they give the values of a session with no failure
 * (a node cache refused: the kernel packs into scratch; `recovers`: some must); nothing
 * leaks.  At least 10 requests must end in NOMEM. */
static void alloc_fail_runs(og_graph *g, og_tensor *xin, int threads, bool recovers,
                            const char *label)
{
    const char *names[1] = {"X"};
    const og_tensor *ins[1] = {xin};
    og_session_options so = {.threads = threads};
    og_session *s = NULL;
    og_tensor *want = NULL;
    og_status st = og_exec_create(g, NULL, og_default_allocator(), &so, true, &s);
    if (!st) st = og_session_run(s, names, ins, 1, &want);
    og_session_free(s);
    CHECKF(st == OG_OK && want, "%s, the reference run: %s", label, og_last_error());
    int failed = 0, other = 0, recovered = 0;
    long total = 0;
    for (long n = -1; !st && n < total; n++) {
        og_test_counting c = {0, n, 0};
        og_allocator a = {og_test_malloc, og_test_free, &c};
        og_tensor *y = NULL;
        s = NULL;
        og_status rs = og_exec_create(g, NULL, &a, &so, true, &s);
        for (int run = 0; run < 2 && !rs; run++) {
            og_tensor_free(y);
            y = NULL;
            rs = og_session_run(s, names, ins, 1, &y);
        }
        if (s && rs == OG_ERR_NOMEM) { /* the same session, its one failure past */
            og_tensor *again = NULL;
            CHECKF(og_session_run(s, names, ins, 1, &again) == OG_OK && again &&
                       og_value_equal(again, want),
                   "%s: N = %ld, the run after the failed one gives other values: %s", label, n,
                   og_last_error());
            og_tensor_free(again);
        }
        og_session_free(s);
        if (n < 0) total = c.calls; /* the requests of an attempt where none fails */
        if (rs == OG_OK) {
            CHECKF(y && og_value_equal(y, want), "%s: N = %ld gives other values", label, n);
            recovered += n >= 0;
        } else if (rs == OG_ERR_NOMEM) {
            /* the node named once, whoever wrote the message */
            const char *msg = og_last_error(), *at = strstr(msg, "node '");
            CHECKF(!at || !strstr(at + 1, "node '"), "%s: %s", label, msg);
            failed++;
        } else {
            other++;
        }
        og_tensor_free(y);
        CHECKF(c.live == 0, "%s: N = %ld leaves %ld blocks", label, n, c.live);
    }
    CHECKF(failed > 10 && other == 0 && (!recovers || recovered > 0),
           "%s: %d NOMEM, %d recovered, %d other statuses of %ld", label, failed, recovered, other,
           total);
    og_tensor_free(want);
}

/* Allocation failures on purpose through the kernels that keep packed weights: a pointwise
 * Conv on the panels (40 -> 33 channels on 7x7), a stride-2 one through its column matrix
 * (33 -> 20, 7x7 -> 4x4) and a Winograd one by bands (20 -> 40), on two threads: for each
 * N below the requests of a session's creation and two runs, a session whose allocator
 * fails its N-th request is refused, or its runs fail with OG_ERR_NOMEM, or they give the
 * values of a session with no failure (a node cache refused: the kernel packs into
 * scratch), nothing leaked (the node caches, the scratch, the pool's blocks). */
static void test_panel_alloc_fail(void)
{
    fg f = {og_graph_new(NULL), OG_FLOAT};
    og_graph *g = f.g;
    int x = start_graph(&f, 14);
    /* scratch grows from one kernel to the next: each one's request reaches the allocator */
    const int64_t xd[4] = {1, 40, 7, 7}, w1[4] = {33, 40, 1, 1}, w2[4] = {20, 33, 3, 3};
    const int64_t w3[4] = {40, 20, 3, 3}, b1[1] = {33};
    g->values[x].dtype = OG_FLOAT;
    g->values[x].rank = 4;
    memcpy(g->values[x].dims, xd, sizeof xd);
    init(&f, "W1", 4, w1, 0.3, 0, false);
    init(&f, "B1", 1, b1, 0.3, 0.1, false);
    init(&f, "W2", 4, w2, 0.3, 0, false);
    init(&f, "W3", 4, w3, 0.3, 0, false);
    const int64_t ones[4] = {1, 1, 1, 1}, twos[2] = {2, 2};
    og_attr pads = {.name = (char *)"pads", .type = OG_ATTR_INTS, .n = 4, .ints = (int64_t *)ones};
    og_attr st2 = {
        .name = (char *)"strides", .type = OG_ATTR_INTS, .n = 2, .ints = (int64_t *)twos};
    node(&f, "Conv", 3, (const char *[]){"X", "W1", "B1"}, 1, (const char *[]){"A"});
    node(&f, "Relu", 1, (const char *[]){"A"}, 1, (const char *[]){"R"});
    int c2 = node(&f, "Conv", 2, (const char *[]){"R", "W2"}, 1, (const char *[]){"P"});
    og_node_add_attr(g, c2, &pads);
    og_node_add_attr(g, c2, &st2);
    int c3 = node(&f, "Conv", 2, (const char *[]){"P", "W3"}, 1, (const char *[]){"Y"});
    og_node_add_attr(g, c3, &pads);
    g->values[value(&f, "Y")].is_graph_output = true;
    g->outputs[g->n_outputs++] = value(&f, "Y");
    og_tensor *xin = NULL;
    og_tensor_alloc(OG_FLOAT, 4, xd, NULL, &xin);
    for (int64_t i = 0; i < xin->numel; i++) set(xin, i, 1.5 * sin(0.41 * (double)i));
    og_status st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    CHECKF(st == OG_OK, "panel alloc fail: %s", og_last_error());
    if (!st) alloc_fail_runs(g, xin, 2, true, "panel alloc fail");
    og_tensor_free(xin);
    og_graph_free(g);
}

/* A pointwise Conv P (X [N, C, H, W] -> E, M channels) with an activation (none, Clip to
 * [0, 6], HardSwish, SiLU) giving V, then a depthwise Conv D of V (k x k, stride s, pads,
 * dilation dil) with or without Clip: inference sessions run P inside D (fuse.c:
 * og_fusion_plan_pwdw, kernels/cpu/conv_pwdw.c) where the expanded planes are large enough
 * (on CPUs with AVX-512), and the output must be the bytes of the node-by-node run (asking
 * for V as well).  The Conv kernel called directly with P in front (og_kernel_ctx.pre)
 * gives those bytes too, by conv_pwdw.c where it applies, else by its two Convs one after
 * the other (small planes, dilations: a run whose shapes the plan did not foresee). */
/* Graph g (input X, output Y, a fused node's own output V) in an inference session on
 * `threads` threads: *count (set by on_log) must be `expect`, and the fused run (Y into
 * fused[0]) the bytes of the node-by-node one (Y and V into plain).  Returns the session
 * (NULL when it could not be made: a check failed), which the caller frees. */
static og_session *fused_vs_named(og_graph *g, const og_tensor *xin, int threads, int *count,
                                  int expect, og_tensor **fused, og_tensor **plain,
                                  const char *label)
{
    og_session *s = NULL;
    og_session_options so = {.threads = threads, .log = on_log};
    *count = -1;
    og_status st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (!st) st = og_exec_create(g, NULL, og_default_allocator(), &so, true, &s);
    CHECKF(st == OG_OK, "%s: %s", label, og_last_error());
    if (st) return NULL;
    CHECKF(*count == expect, "%s: %d nodes fused, expected %d", label, *count, expect);
    const char *names[1] = {"X"};
    const og_tensor *ins[1] = {xin};
    CHECK_OK(og_session_run(s, names, ins, 1, fused));
    const char *want[2] = {"Y", "V"};
    CHECK_OK(og_session_run_named(s, names, ins, 1, want, 2, plain));
    CHECKF(fused[0] && plain[0] && og_value_equal(fused[0], plain[0]),
           "%s: the fused output differs from the node-by-node one", label);
    return s;
}

typedef struct pwdw_case {
    int64_t n, c, m, h, w, k, s, dil, pads[4];
    int pre_act, dw_act; /* pre: 0 none, 1 Clip [0, 6], 2 HardSwish, 3 SiLU; dw: 0, 1 Clip,
                          * 2 SiLU */
    bool b1, b2, v_output;
    int threads;
    bool fuses; /* on a CPU with AVX-512 */
} pwdw_case;

static void test_pwdw(void)
{
    static const pwdw_case cases[] = {
        {1, 16, 32, 128, 128, 3, 2, 1, {1, 1, 1, 1}, 1, 1, true, true, false, 1, true},
        {2, 16, 32, 128, 128, 3, 2, 1, {1, 1, 1, 1}, 1, 1, true, true, false, 2, true},
        {3, 24, 40, 115, 117, 5, 1, 1, {2, 1, 1, 2}, 2, 2, false, false, false, 2, true},
        {1, 8, 32, 128, 130, 3, 1, 1, {1, 1, 1, 1}, 3, 1, true, false, false, 1, true},
        {1, 20, 64, 100, 90, 3, 2, 1, {0, 0, 1, 1}, 0, 2, false, true, false, 2, true},
        {1, 5, 24, 151, 149, 5, 2, 1, {2, 2, 2, 2}, 1, 1, true, true, false, 1, true},
        {1, 16, 16, 20, 20, 3, 1, 1, {1, 1, 1, 1}, 2, 1, true, true, false, 1, false},
        {1, 16, 32, 128, 128, 3, 2, 1, {1, 1, 1, 1}, 1, 1, true, true, true, 1, false},
        {1, 16, 32, 128, 128, 3, 1, 2, {2, 2, 2, 2}, 3, 0, true, true, false, 1, false},
        /* one image on threads, in parts of equal rows: 112x112 -> 56x56 (four parts of
         * 14 rows on two threads), stride 1 on three (six parts of 20 rows, the last 12) */
        {1, 16, 96, 112, 112, 3, 2, 1, {1, 1, 1, 1}, 1, 1, true, true, false, 2, true},
        {1, 16, 48, 112, 112, 3, 1, 1, {1, 1, 1, 1}, 1, 0, true, true, false, 3, true},
    };
    og_kernel_fn conv = og_cpu_kernel_find("", "Conv");
    CHECKF(conv != NULL, "pwdw: no Conv kernel");
    for (size_t ci = 0; conv && ci < sizeof cases / sizeof *cases; ci++) {
        const pwdw_case *pc = &cases[ci];
        fg f = {og_graph_new(NULL), OG_FLOAT};
        og_graph *g = f.g;
        int x = start_graph(&f, 14);
        const int64_t xd[4] = {pc->n, pc->c, pc->h, pc->w}, w1[4] = {pc->m, pc->c, 1, 1};
        const int64_t w2[4] = {pc->m, 1, pc->k, pc->k}, bd[1] = {pc->m}, sd[1] = {0};
        g->values[x].dtype = OG_FLOAT;
        g->values[x].rank = 4;
        memcpy(g->values[x].dims, xd, sizeof xd);
        init(&f, "W1", 4, w1, 0.4, 0.05, false);
        init(&f, "W2", 4, w2, 0.5, 0, false);
        if (pc->b1) init(&f, "B1", 1, bd, 0.8, 0.1, false);
        if (pc->b2) init(&f, "B2", 1, bd, 0.3, 0.2, false);
        const char *e = pc->pre_act ? "E" : "V";
        int pn = node(&f, "Conv", pc->b1 ? 3 : 2, (const char *[]){"X", "W1", "B1"}, 1, &e);
        switch (pc->pre_act) {
        case 1:
            init(&f, "LO", 0, sd, 0, 0, false);
            init(&f, "HI", 0, sd, 0, 6, false);
            node(&f, "Clip", 3, (const char *[]){"E", "LO", "HI"}, 1, (const char *[]){"V"});
            break;
        case 2: node(&f, "HardSwish", 1, (const char *[]){"E"}, 1, (const char *[]){"V"}); break;
        case 3:
            node(&f, "Sigmoid", 1, (const char *[]){"E"}, 1, (const char *[]){"S"});
            node(&f, "Mul", 2, (const char *[]){"E", "S"}, 1, (const char *[]){"V"});
            break;
        }
        const char *u = pc->dw_act ? "U" : "Y";
        int dn = node(&f, "Conv", pc->b2 ? 3 : 2, (const char *[]){"V", "W2", "B2"}, 1, &u);
        const int64_t st[2] = {pc->s, pc->s}, dl[2] = {pc->dil, pc->dil};
        og_attr at[4] = {
            {.name = (char *)"pads", .type = OG_ATTR_INTS, .n = 4, .ints = (int64_t *)pc->pads},
            {.name = (char *)"strides", .type = OG_ATTR_INTS, .n = 2, .ints = (int64_t *)st},
            {.name = (char *)"dilations", .type = OG_ATTR_INTS, .n = 2, .ints = (int64_t *)dl},
            {.name = (char *)"group", .type = OG_ATTR_INT, .i = pc->m}};
        for (int a = 0; a < 4; a++) og_node_add_attr(g, dn, &at[a]);
        if (pc->dw_act == 1) {
            if (pc->pre_act != 1) {
                init(&f, "LO", 0, sd, 0, 0, false);
                init(&f, "HI", 0, sd, 0, 6, false);
            }
            node(&f, "Clip", 3, (const char *[]){"U", "LO", "HI"}, 1, (const char *[]){"Y"});
        } else if (pc->dw_act == 2) {
            node(&f, "Sigmoid", 1, (const char *[]){"U"}, 1, (const char *[]){"T"});
            node(&f, "Mul", 2, (const char *[]){"U", "T"}, 1, (const char *[]){"Y"});
        }
        g->values[value(&f, "Y")].is_graph_output = true;
        g->outputs[g->n_outputs++] = value(&f, "Y");
        if (pc->v_output) { /* a second reader of V */
            g->values[value(&f, "V")].is_graph_output = true;
            g->outputs[g->n_outputs++] = value(&f, "V");
        }
        og_tensor *xin = NULL, *fused[2] = {0}, *plain[2] = {0}, *direct = NULL;
        og_tensor_alloc(OG_FLOAT, 4, xd, NULL, &xin);
        for (int64_t i = 0; i < xin->numel; i++) set(xin, i, 2.5 * sin(0.61 * (double)i));
        char label[48];
        snprintf(label, sizeof label, "pwdw case %zu", ci);
        og_session *s = fused_vs_named(g, xin, pc->threads, &pre_count,
                                       pc->fuses && og_cpu_isa() >= 2, fused, plain, label);
        if (!s) goto next;
        /* the Conv kernel with P in front, called as the session calls it */
        const og_node *pnode = &g->nodes[pn], *dnode = &g->nodes[dn];
        og_pre_conv pre = {pnode,
                           g->values[value(&f, "W1")].init,
                           pc->b1 ? g->values[value(&f, "B1")].init : NULL,
                           {.kind = OG_FUSE_NONE}};
        pre.act.kind = pc->pre_act == 1   ? OG_FUSE_CLIP
                       : pc->pre_act == 2 ? OG_FUSE_HARDSWISH
                       : pc->pre_act == 3 ? OG_FUSE_SILU
                                          : OG_FUSE_NONE;
        pre.act.lo = 0;
        pre.act.hi = 6;
        og_kernel_ctx k = {.node = dnode,
                           .params = dnode->params,
                           .alloc = og_default_allocator(),
                           .threads = pc->threads,
                           .pre = &pre};
        if (pc->dw_act == 1) {
            k.act.kind = OG_FUSE_CLIP;
            k.act.hi = 6;
        } else if (pc->dw_act == 2) {
            k.act.kind = OG_FUSE_SILU;
        }
        if (plain[0]) og_tensor_alloc(OG_FLOAT, plain[0]->rank, plain[0]->dims, NULL, &direct);
        const og_tensor *kin[3] = {xin, g->values[value(&f, "W2")].init,
                                   pc->b2 ? g->values[value(&f, "B2")].init : NULL};
        if (direct) {
            CHECKF(conv(&k, kin, pc->b2 ? 3 : 2, &direct, 1) == OG_OK, "pwdw case %zu: %s", ci,
                   og_last_error());
            CHECKF(og_value_equal(direct, plain[0]),
                   "pwdw case %zu: the kernel with its pointwise Conv differs", ci);
        }
        if (ci == 1) alloc_fail_runs(g, xin, pc->threads, false, "pwdw alloc fail");
    next:
        for (int j = 0; j < 2; j++) {
            og_tensor_free(fused[j]);
            og_tensor_free(plain[j]);
        }
        og_tensor_free(direct);
        og_tensor_free(xin);
        og_session_free(s);
        og_graph_free(g);
    }
}

/* og_conv_dw_rows on a band shorter than the one its scratch was sized for
 * (og_conv_dw_rows_scratch): a part's last band.  Bands of 96 rows of 112-wide planes
 * read their input in place, bands of 8 copy it padded into the scratch: the scratch of
 * 96 rows must hold that copy (the test runs under AddressSanitizer in make asan), and the
 * rows must be og_conv_direct's bit for bit, for stride 1 and 2, with and without pads. */
static void test_dw_rows_short_band(void)
{
    if (og_cpu_isa() < 2) return;
    for (int v = 0; v < 3; v++) {
        const int64_t s = v == 2 ? 2 : 1, pad = v == 1 ? 0 : 1, h = 200, w = 112;
        og_conv_geom g = {.nsp = 2, .n = 1, .c = 3, .m = 3, .group = 3};
        for (int d = 0; d < 2; d++) {
            g.in[d] = d ? w : h;
            g.kernel[d] = 3;
            g.stride[d] = s;
            g.dil[d] = 1;
            g.pad_begin[d] = g.pad_end[d] = pad;
            g.out[d] = (g.in[d] + 2 * pad - 3) / s + 1;
        }
        if (!og_conv_dw_rows_applies(&g, OG_FLOAT)) continue;
        const int64_t oh = g.out[0], ow = g.out[1], os = oh * ow, big = 96 / s;
        float *x = malloc((size_t)(3 * h * w) * sizeof(float));
        float *wt = malloc(27 * sizeof(float)), *b = malloc(3 * sizeof(float));
        float *ref = malloc((size_t)(3 * os) * sizeof(float));
        float *got = malloc((size_t)(3 * os) * sizeof(float));
        const int64_t sf = og_conv_dw_rows_scratch(&g, big);
        float *scratch = malloc((size_t)sf * sizeof(float));
        CHECKF(x && wt && b && ref && got && scratch, "dw rows: out of memory");
        if (x && wt && b && ref && got && scratch) {
            for (int64_t i = 0; i < 3 * h * w; i++) x[i] = (float)sin(0.37 * (double)i);
            for (int i = 0; i < 27; i++) wt[i] = (float)(0.1 * (i % 7) - 0.3);
            for (int i = 0; i < 3; i++) b[i] = 0.25f * (float)i;
            og_kernel_ctx k = {.alloc = og_default_allocator(), .threads = 1};
            CHECK_OK(og_conv_direct(&k, &g, false, OG_FLOAT, x, wt, b, ref));
            memset(got, 0, (size_t)(3 * os) * sizeof(float));
            /* bands of `big` rows, then the rest in bands of 8 */
            for (int64_t r0 = 0, step = big; r0 < oh; r0 += step, step = 8) {
                const int64_t r1 = r0 + step < oh ? r0 + step : oh;
                int64_t lo, hi;
                og_conv_dw_rows_inputs(&g, r0, r1, &lo, &hi);
                og_conv_dw_rows(&k, &g, 0, 3, x + lo * w, h * w, lo, hi, r0, r1, wt, b,
                                got + r0 * ow, os, scratch);
            }
            CHECKF(memcmp(got, ref, (size_t)(3 * os) * sizeof(float)) == 0,
                   "dw rows variant %d: bands differ from og_conv_direct", v);
        }
        free(x), free(wt), free(b), free(ref), free(got), free(scratch);
    }
}

/* The residual plan (og_fusion_plan_res): X -> 1x1 Conv A -> Q; Q (or X, as wide) -> 1x1
 * Conv C -> V; Add(V, Q) [-> Relu] -> Y.  C adds Q in its stores (the pointwise tiles, the
 * packed panels, the sums by shares on two threads of weights that are not constant) or in
 * a pass after (images side by
 * side), and the fused run must give the node-by-node bytes (asking for V too).  Not fused:
 * a residual written after C (R = Relu(Relu(Q)), which the graph's order puts after C), a
 * broadcast residual, a C with its own activation, a 3x3 C. */
typedef struct res_case {
    int64_t n, c, m, h, w;
    int threads;
    int variant; /* 0 plain, 1 Relu after the Add, 2 residual after C, 3 broadcast residual,
                  * 4 C with a Relu of its own, 5 a 3x3 C, 6 C on X (residual Q beside it) */
    bool w_node; /* C's weights from a node (Identity: not constant, no packed panels) */
} res_case;

static void test_residual(void)
{
    static const res_case cases[] = {
        {1, 24, 16, 10, 12, 1, 0, false},
        {1, 24, 16, 10, 12, 2, 1, false},
        {1, 192, 32, 14, 14, 1, 6, false},
        {1, 192, 32, 14, 14, 2, 6, false},
        {1, 384, 64, 7, 7, 2, 6, false},
        {3, 16, 16, 4, 4, 1, 1, false},
        {2, 40, 24, 9, 11, 2, 6, false},
        {1, 24, 16, 10, 12, 1, 2, false},
        {1, 24, 16, 10, 12, 1, 3, false},
        {1, 24, 16, 10, 12, 1, 4, false},
        {1, 24, 16, 10, 12, 1, 5, false},
        {1, 192, 32, 14, 14, 2, 6, true},
        /* planes of more than 256 positions: longer sums into at most 48 channels by the
         * pointwise tiles (conv_pw.c), into more by the GEMM and the pass after it */
        {1, 192, 32, 28, 28, 1, 6, false},
        {1, 240, 40, 28, 28, 2, 6, false},
        {1, 256, 64, 20, 20, 1, 6, false},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const res_case *rc = &cases[ci];
        fg f = {og_graph_new(NULL), OG_FLOAT};
        og_graph *g = f.g;
        int x = start_graph(&f, 14);
        const int64_t xd[4] = {rc->n, rc->c, rc->h, rc->w}, wa[4] = {rc->m, rc->c, 1, 1};
        const int k = rc->variant == 5 ? 3 : 1;
        const int64_t wc[4] = {rc->m, rc->variant == 6 ? rc->c : rc->m, k, k}, bd[1] = {rc->m};
        const int64_t rd[4] = {1, rc->m, 1, 1};
        g->values[x].dtype = OG_FLOAT;
        g->values[x].rank = 4;
        memcpy(g->values[x].dims, xd, sizeof xd);
        init(&f, "WA", 4, wa, 0.3, 0.02, false);
        init(&f, rc->w_node ? "WC0" : "WC", 4, wc, 0.2, 0.01, false);
        if (rc->w_node) node(&f, "Identity", 1, (const char *[]){"WC0"}, 1, (const char *[]){"WC"});
        init(&f, "BA", 1, bd, 0.5, 0.1, false);
        init(&f, "BC", 1, bd, 0.4, -0.1, false);
        const char *q = "Q";
        node(&f, "Conv", 3, (const char *[]){"X", "WA", "BA"}, 1, &q);
        const char *cin = rc->variant == 6 ? "X" : "Q", *v = rc->variant == 4 ? "V0" : "V";
        const char *r = rc->variant == 2 ? "R" : rc->variant == 3 ? "RB" : "Q";
        const int cn = node(&f, "Conv", 3, (const char *[]){cin, "WC", "BC"}, 1, &v);
        if (k == 3) {
            const int64_t pads[4] = {1, 1, 1, 1};
            og_attr at = {
                .name = (char *)"pads", .type = OG_ATTR_INTS, .n = 4, .ints = (int64_t *)pads};
            og_node_add_attr(g, cn, &at);
        }
        if (rc->variant == 4) node(&f, "Relu", 1, (const char *[]){"V0"}, 1, (const char *[]){"V"});
        if (rc->variant == 2) { /* R = Relu(Relu(Q)): a node more than C from X, after it */
            node(&f, "Relu", 1, (const char *[]){"Q"}, 1, (const char *[]){"R0"});
            node(&f, "Relu", 1, (const char *[]){"R0"}, 1, (const char *[]){"R"});
        }
        if (rc->variant == 3) init(&f, "RB", 4, rd, 1.0, 0.0, false);
        const char *s = rc->variant == 1 ? "S" : "Y";
        node(&f, "Add", 2, (const char *[]){"V", r}, 1, &s);
        if (rc->variant == 1) node(&f, "Relu", 1, (const char *[]){"S"}, 1, (const char *[]){"Y"});
        g->values[value(&f, "Y")].is_graph_output = true;
        g->outputs[g->n_outputs++] = value(&f, "Y");
        og_tensor *xin = NULL, *fused[2] = {0}, *plain[2] = {0};
        og_tensor_alloc(OG_FLOAT, 4, xd, NULL, &xin);
        for (int64_t i = 0; i < xin->numel; i++) set(xin, i, 2.5 * sin(0.37 * (double)i));
        char label[48];
        snprintf(label, sizeof label, "residual case %zu", ci);
        const int expect = rc->variant == 0 || rc->variant == 1 || rc->variant == 6 ? 1 : 0;
        og_session *ss =
            fused_vs_named(g, xin, rc->threads, &res_count, expect, fused, plain, label);
        /* and the Add ran: Y is not V */
        CHECKF(!ss || (plain[1] && !og_value_equal(plain[0], plain[1])), "%s: Y == V", label);
        for (int j = 0; j < 2; j++) {
            og_tensor_free(fused[j]);
            og_tensor_free(plain[j]);
        }
        og_tensor_free(xin);
        og_session_free(ss);
        og_graph_free(g);
    }
}

/* The residual's shape is checked when it runs: X [batch, 8, 5, 6] -> 1x1 Conv -> V; Add(V,
 * R) with R [batch, 8, 5, 6] a second input, the same symbol.  R of another batch (1, which
 * the Add would broadcast) fails with OG_ERR_SHAPE naming R; R of X's batch gives the
 * node-by-node bytes. */
static void test_residual_symbols(void)
{
    fg f = {og_graph_new(NULL), OG_FLOAT};
    og_graph *g = f.g;
    int x = start_graph(&f, 14);
    const int64_t batch = og_dim_symbol(og_graph_symbol(g, "batch"));
    const int64_t xd[4] = {batch, 8, 5, 6}, wd[4] = {8, 8, 1, 1};
    g->values[x].dtype = OG_FLOAT;
    g->values[x].rank = 4;
    memcpy(g->values[x].dims, xd, sizeof xd);
    int r = value(&f, "R");
    g->values[r].kind = OG_VALUE_INPUT;
    g->values[r].is_graph_input = true;
    g->values[r].dtype = OG_FLOAT;
    g->values[r].rank = 4;
    memcpy(g->values[r].dims, xd, sizeof xd);
    g->inputs[g->n_inputs++] = r;
    init(&f, "W", 4, wd, 0.3, 0.0, false);
    node(&f, "Conv", 2, (const char *[]){"X", "W"}, 1, (const char *[]){"V"});
    node(&f, "Add", 2, (const char *[]){"R", "V"}, 1, (const char *[]){"Y"});
    g->values[value(&f, "Y")].is_graph_output = true;
    g->outputs[g->n_outputs++] = value(&f, "Y");
    og_session *s = NULL;
    og_session_options so = {.threads = 1, .log = on_log};
    res_count = -1;
    og_status st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (!st) st = og_exec_create(g, NULL, og_default_allocator(), &so, true, &s);
    CHECKF(st == OG_OK, "residual symbols: %s", og_last_error());
    CHECKF(res_count == 1, "residual symbols: %d Adds fused, expected 1", res_count);
    og_tensor *xt = NULL, *r1 = NULL, *r2 = NULL, *y[2] = {0}, *plain[2] = {0};
    const int64_t d2[4] = {2, 8, 5, 6}, d1[4] = {1, 8, 5, 6};
    og_tensor_alloc(OG_FLOAT, 4, d2, NULL, &xt);
    og_tensor_alloc(OG_FLOAT, 4, d1, NULL, &r1);
    og_tensor_alloc(OG_FLOAT, 4, d2, NULL, &r2);
    for (int64_t i = 0; xt && i < xt->numel; i++) set(xt, i, sin(0.3 * (double)i));
    for (int64_t i = 0; r2 && i < r2->numel; i++) set(r2, i, cos(0.2 * (double)i));
    for (int64_t i = 0; r1 && i < r1->numel; i++) set(r1, i, 0.5);
    const char *names[2] = {"X", "R"};
    if (s && xt && r1 && r2) {
        const og_tensor *bad[2] = {xt, r1}, *good[2] = {xt, r2};
        st = og_session_run(s, names, bad, 2, y);
        CHECKF(st == OG_ERR_SHAPE && strstr(og_last_error(), "'R'"),
               "residual symbols: R of another batch gave %d (%s)", (int)st, og_last_error());
        og_tensor_free(y[0]);
        y[0] = NULL;
        CHECK_OK(og_session_run(s, names, good, 2, y));
        const char *want[2] = {"Y", "V"};
        CHECK_OK(og_session_run_named(s, names, good, 2, want, 2, plain));
        CHECKF(y[0] && plain[0] && og_value_equal(y[0], plain[0]),
               "residual symbols: the fused output differs from the node-by-node one");
    }
    for (int j = 0; j < 2; j++) {
        og_tensor_free(y[j]);
        og_tensor_free(plain[j]);
    }
    og_tensor_free(xt);
    og_tensor_free(r1);
    og_tensor_free(r2);
    og_session_free(s);
    og_graph_free(g);
}

/* A residual goes back to the pool once the Conv that adds it has run, as it would after
 * its Add: X [1, 16, 32, 32] -> A -> Q -> B -> P -> C -> V; S = Add(V, Q); S -> D -> T -> E
 * -> U -> F -> W; Y = Add(W, S) (1x1 Convs, both Adds run inside C and F).  Three tensors
 * of 64 KiB are live at most (Q, P and S at C; S, U and W at F), so the run fits a budget
 * of three; with Q held to the end of the run it needed four (it failed at F). */
static void test_residual_released(void)
{
    fg f = {og_graph_new(NULL), OG_FLOAT};
    og_graph *g = f.g;
    int x = start_graph(&f, 14);
    const int64_t xd[4] = {1, 16, 32, 32}, wd[4] = {16, 16, 1, 1};
    g->values[x].dtype = OG_FLOAT;
    g->values[x].rank = 4;
    memcpy(g->values[x].dims, xd, sizeof xd);
    static const char *const convs[6][3] = {{"X", "WA", "Q"}, {"Q", "WB", "P"}, {"P", "WC", "V"},
                                            {"S", "WD", "T"}, {"T", "WE", "U"}, {"U", "WF", "W"}};
    for (int i = 0; i < 6; i++) {
        init(&f, convs[i][1], 4, wd, 0.25, 0.01 * i, false);
        node(&f, "Conv", 2, (const char *[]){convs[i][0], convs[i][1]}, 1, &convs[i][2]);
        if (i == 2) node(&f, "Add", 2, (const char *[]){"V", "Q"}, 1, (const char *[]){"S"});
    }
    node(&f, "Add", 2, (const char *[]){"W", "S"}, 1, (const char *[]){"Y"});
    g->values[value(&f, "Y")].is_graph_output = true;
    g->outputs[g->n_outputs++] = value(&f, "Y");
    og_session *s = NULL;
    og_session_options so = {.threads = 1, .log = on_log, .max_memory = 3 * 65536};
    res_count = -1;
    og_status st = og_graph_finalize(g);
    if (!st) st = og_graph_resolve(g, true);
    if (!st) st = og_exec_create(g, NULL, og_default_allocator(), &so, true, &s);
    CHECKF(st == OG_OK, "residual released: %s", og_last_error());
    CHECKF(res_count == 2, "residual released: %d Adds fused, expected 2", res_count);
    og_tensor *xt = NULL, *y[1] = {0}, *plain[1] = {0};
    og_tensor_alloc(OG_FLOAT, 4, xd, NULL, &xt);
    for (int64_t i = 0; xt && i < xt->numel; i++) set(xt, i, sin(0.3 * (double)i));
    const char *names[1] = {"X"};
    const og_tensor *ins[1] = {xt};
    if (s && xt) {
        st = og_session_run(s, names, ins, 1, y);
        CHECKF(st == OG_OK, "residual released: a run within 3 tensors failed: %s",
               og_last_error());
        /* node by node (asking for Q too: nothing fused, more memory) */
        og_session *big = NULL;
        og_session_options so2 = {.threads = 1};
        const char *want[2] = {"Y", "Q"};
        og_tensor *pq[2] = {0};
        CHECK_OK(og_exec_create(g, NULL, og_default_allocator(), &so2, true, &big));
        if (big) CHECK_OK(og_session_run_named(big, names, ins, 1, want, 2, pq));
        plain[0] = pq[0];
        og_tensor_free(pq[1]);
        CHECKF(y[0] && plain[0] && og_value_equal(y[0], plain[0]),
               "residual released: the fused output differs from the node-by-node one");
        og_session_free(big);
    }
    og_tensor_free(y[0]);
    og_tensor_free(plain[0]);
    og_tensor_free(xt);
    og_session_free(s);
    og_graph_free(g);
}

/* The end of an activation-fusion case: V (the fusible node's output) through act (0 Relu,
 * 1 Clip to [0, 1] by initializer bounds, 2 Sigmoid, 3 HardSigmoid with alpha 0.3) into the
 * graph output Y, V also asked for with v_out (no fusion then); X [rank, xd] filled with
 * NaN, -0 and values on both sides of 0; the fused run against the node-by-node one
 * (fused_vs_plain: `expect` nodes fused), then g freed. */
static void act_case(fg *f, int act, bool v_out, int rank, const int64_t *xd, int threads,
                     int expect, const char *label)
{
    og_graph *g = f->g;
    const char *y[1] = {"Y"};
    if (act == 1) {
        const int64_t none[1] = {0};
        init(f, "L", 0, none, 0, 0, false);
        init(f, "H", 0, none, 0, 1, false);
        node(f, "Clip", 3, (const char *[]){"V", "L", "H"}, 1, y);
    } else if (act == 2) {
        node(f, "Sigmoid", 1, (const char *[]){"V"}, 1, y);
    } else if (act == 3) {
        int k = node(f, "HardSigmoid", 1, (const char *[]){"V"}, 1, y);
        og_attr al = {.name = (char *)"alpha", .type = OG_ATTR_FLOAT, .f = 0.3f};
        og_node_add_attr(g, k, &al);
    } else {
        node(f, "Relu", 1, (const char *[]){"V"}, 1, y);
    }
    g->values[value(f, "Y")].is_graph_output = true;
    g->outputs[g->n_outputs++] = value(f, "Y");
    if (v_out) {
        g->values[value(f, "V")].is_graph_output = true;
        g->outputs[g->n_outputs++] = value(f, "V");
    }
    og_tensor *xin = NULL;
    og_tensor_alloc(f->dt, rank, xd, NULL, &xin);
    for (int64_t i = 0; i < xin->numel; i++)
        set(xin, i, i % 97 == 0 ? NAN : i % 89 == 0 ? -0.0 : 2.0 * sin(0.31 * (double)i));
    fused_vs_plain(g, xin, threads, v_out ? 0 : expect, 0, label);
    og_tensor_free(xin);
    og_graph_free(g);
}

/* A residual Add and the Relu (or Clip) after it (binary.c's Add applies the activation to
 * each chunk it computes): X [4, 24, 20, 20] (on two threads [4, 24, 110, 100]) + R (an
 * initializer of [24, 1, 1], broadcast), float and double, one and two threads (the chunks
 * split over them); the fused run equals the node-by-node one bit for bit, and the log
 * says one node fused.  Not fused: the Add's output also a graph output (variant 2); an
 * int32 Add (which has no activation loop). */
static void test_add_act(og_dtype dt, int threads, int variant)
{
    fg f = {og_graph_new(NULL), dt};
    int x = start_graph(&f, 14);
    /* on two threads more than 2^20 values, which the Add splits into a chunk a thread */
    const int64_t xd[4] = {4, 24, threads > 1 ? 110 : 20, threads > 1 ? 100 : 20},
                  rd[3] = {24, 1, 1};
    f.g->values[x].dtype = dt;
    f.g->values[x].rank = 4;
    memcpy(f.g->values[x].dims, xd, sizeof xd);
    init(&f, "R", 3, rd, 0.5, 0, false);
    node(&f, "Add", 2, (const char *[]){"X", "R"}, 1, (const char *[]){"V"});
    char label[64];
    snprintf(label, sizeof label, "add_act variant %d %s %d threads", variant, og_dtype_name(dt),
             threads);
    act_case(&f, variant == 1, variant == 2, 4, xd, threads, dt == OG_INT32 ? 0 : 1, label);
}

/* Gemm (transB, with C) then Relu, Clip [0, 1], Sigmoid or HardSigmoid, fused (the
 * activation applied to Y after the product) against node by node, the same bits, float
 * and double, 1 and 2 threads; variant 4: Y asked for, no fusion. */
static void test_gemm_act(og_dtype dt, int threads, int variant)
{
    fg f = {og_graph_new(NULL), dt};
    int x = start_graph(&f, 14);
    const int64_t xd[2] = {64, 40}, wd[2] = {30, 40}, bd[1] = {30};
    f.g->values[x].dtype = dt;
    f.g->values[x].rank = 2;
    memcpy(f.g->values[x].dims, xd, sizeof xd);
    init(&f, "W", 2, wd, 0.5, 0, false);
    init(&f, "B", 1, bd, 0.3, 0.1, false);
    int gm = node(&f, "Gemm", 3, (const char *[]){"X", "W", "B"}, 1, (const char *[]){"V"});
    og_attr tb = {.name = (char *)"transB", .type = OG_ATTR_INT, .i = 1};
    og_node_add_attr(f.g, gm, &tb);
    char label[64];
    snprintf(label, sizeof label, "gemm_act variant %d %s %d threads", variant, og_dtype_name(dt),
             threads);
    act_case(&f, variant == 4 ? 0 : variant, variant == 4, 2, xd, threads, 1, label);
}

/* A stride-2 Conv (k x k, pads k / 2, C -> M channels, with or without a bias) whose
 * output goes through an activation (0 none, 1 Relu, 2 Clip [0, 6], 3 HardSwish) into a
 * MaxPool 3x3 / 2, pads 1: inference sessions run the MaxPool inside the Conv (fuse.c:
 * og_fusion_plan_pool, kernels/cpu/conv_s2.c) where the Conv goes by panels (64 channels
 * or more, on CPUs with AVX-512) and the activation keeps the largest value the largest;
 * the pooled output must be the bytes of the node-by-node run.  Not fused: HardSwish, 32
 * channels, a second reader of the Conv's output, a MaxPool of other pads. */
typedef struct pool_case {
    int64_t n, c, m, h, w, k;
    int act;
    bool bias, second_reader, pads0;
    int threads;
    bool fuses; /* on a CPU with AVX-512 */
} pool_case;

static void test_pool(void)
{
    static const pool_case cases[] = {
        /* ResNet's stem at 64x64 (pooled 16x16), one and two threads */
        {1, 3, 64, 64, 64, 7, 1, false, false, false, 1, true},
        {2, 3, 64, 64, 64, 7, 1, false, false, false, 2, true},
        /* odd planes (conv 19x21, pooled 10x11: windows cut at both ends), 3 panels of
         * which the last has 8 channels, a bias, Clip, three images on three threads */
        {3, 3, 72, 37, 41, 5, 2, true, false, false, 3, true},
        {1, 4, 64, 30, 30, 3, 0, true, false, false, 2, true},
        /* a plane of many chunks: 112x112 -> 56x56 pooled rows, the rows a thread carries
         * from one chunk to the next */
        {1, 3, 64, 224, 224, 7, 1, true, false, false, 2, true},
        {1, 3, 64, 64, 64, 7, 3, false, false, false, 1, false},
        {1, 3, 32, 64, 64, 7, 1, false, false, false, 1, false},
        {1, 3, 64, 64, 64, 7, 1, false, true, false, 1, false},
        {1, 3, 64, 64, 64, 7, 1, false, false, true, 1, false},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const pool_case *pc = &cases[ci];
        fg f = {og_graph_new(NULL), OG_FLOAT};
        og_graph *g = f.g;
        int x = start_graph(&f, 14);
        const int64_t xd[4] = {pc->n, pc->c, pc->h, pc->w}, wd[4] = {pc->m, pc->c, pc->k, pc->k};
        const int64_t bd[1] = {pc->m}, sd[1] = {0};
        g->values[x].dtype = OG_FLOAT;
        g->values[x].rank = 4;
        memcpy(g->values[x].dims, xd, sizeof xd);
        init(&f, "W", 4, wd, 0.3, 0, false);
        if (pc->bias) init(&f, "B", 1, bd, 0.5, 0.1, false);
        const char *a = pc->act ? "A" : "V";
        int cn = node(&f, "Conv", pc->bias ? 3 : 2, (const char *[]){"X", "W", "B"}, 1, &a);
        const int64_t two[2] = {2, 2}, three[2] = {3, 3}, h = pc->k / 2;
        const int64_t cpads[4] = {h, h, h, h}, ppads[4] = {1, 1, 1, 1}, nopads[4] = {0, 0, 0, 0};
        og_attr ca[2] = {
            {.name = (char *)"pads", .type = OG_ATTR_INTS, .n = 4, .ints = (int64_t *)cpads},
            {.name = (char *)"strides", .type = OG_ATTR_INTS, .n = 2, .ints = (int64_t *)two}};
        for (int i = 0; i < 2; i++) og_node_add_attr(g, cn, &ca[i]);
        if (pc->act == 1) node(&f, "Relu", 1, (const char *[]){"A"}, 1, (const char *[]){"V"});
        if (pc->act == 2) {
            init(&f, "LO", 0, sd, 0, 0, false);
            init(&f, "HI", 0, sd, 0, 6, false);
            node(&f, "Clip", 3, (const char *[]){"A", "LO", "HI"}, 1, (const char *[]){"V"});
        }
        if (pc->act == 3) node(&f, "HardSwish", 1, (const char *[]){"A"}, 1, (const char *[]){"V"});
        int pn = node(&f, "MaxPool", 1, (const char *[]){"V"}, 1, (const char *[]){"Y"});
        og_attr pa[3] = {
            {.name = (char *)"kernel_shape",
             .type = OG_ATTR_INTS,
             .n = 2,
             .ints = (int64_t *)three},
            {.name = (char *)"strides", .type = OG_ATTR_INTS, .n = 2, .ints = (int64_t *)two},
            {.name = (char *)"pads",
             .type = OG_ATTR_INTS,
             .n = 4,
             .ints = (int64_t *)(pc->pads0 ? nopads : ppads)}};
        for (int i = 0; i < 3; i++) og_node_add_attr(g, pn, &pa[i]);
        g->values[value(&f, "Y")].is_graph_output = true;
        g->outputs[g->n_outputs++] = value(&f, "Y");
        if (pc->second_reader) {
            node(&f, "Neg", 1, (const char *[]){"V"}, 1, (const char *[]){"Z"});
            g->values[value(&f, "Z")].is_graph_output = true;
            g->outputs[g->n_outputs++] = value(&f, "Z");
        }
        og_tensor *xin = NULL, *fused[2] = {0}, *plain[2] = {0};
        og_tensor_alloc(OG_FLOAT, 4, xd, NULL, &xin);
        for (int64_t i = 0; i < xin->numel; i++) set(xin, i, 2.5 * sin(0.61 * (double)i));
        char label[48];
        snprintf(label, sizeof label, "pool case %zu", ci);
        og_session *s = fused_vs_named(g, xin, pc->threads, &pool_count,
                                       pc->fuses && og_cpu_isa() >= 2, fused, plain, label);
        if (s) {
            const int64_t co = (pc->h - 1) / 2 + 1,
                          po = pc->pads0 ? (co - 3) / 2 + 1 : (co - 1) / 2 + 1;
            CHECKF(fused[0] && fused[0]->dims[2] == po,
                   "pool case %zu: the pooled output has %lld rows", ci,
                   fused[0] ? (long long)fused[0]->dims[2] : -1LL);
            if (ci == 2) alloc_fail_runs(g, xin, pc->threads, false, "pool alloc fail");
        }
        for (int j = 0; j < 2; j++) {
            og_tensor_free(fused[j]);
            og_tensor_free(plain[j]);
        }
        og_tensor_free(xin);
        og_session_free(s);
        og_graph_free(g);
    }
}

int main(void)
{
    test_pool();
    test_pwdw();
    test_dw_rows_short_band();
    test_residual();
    test_residual_symbols();
    test_residual_released();
    test_weight_cache(WC_CONV);
    test_weight_cache(WC_BAND);
    test_weight_cache(WC_GEMM);
    test_weight_cache(WC_GEMM_FEW);
    test_weight_cache(WC_SE);
    test_conv_panel();
    test_panel_alloc_fail();
    for (int v = 0; v < 3; v++) {
        test_add_act(OG_FLOAT, 1, v);
        test_add_act(OG_FLOAT, 2, v);
        test_add_act(OG_DOUBLE, 2, v);
    }
    test_add_act(OG_INT32, 1, 0);
    for (int v = 0; v < 5; v++) {
        test_gemm_act(OG_FLOAT, 1, v);
        test_gemm_act(OG_FLOAT, 2, v);
        test_gemm_act(OG_DOUBLE, 1, v);
    }
    for (int p = 0; p < P_COUNT; p++) {
        run_pattern(p, OG_FLOAT, 1, false, false, false, false, false, false);
        run_pattern(p, OG_FLOAT, 1, false, false, true, false, false, false);
        run_pattern(p, OG_FLOAT, 2, false, false, true, false, false, false);
        run_pattern(p, OG_DOUBLE, 2, false, false, false, false, false, false);
        run_pattern(p, OG_FLOAT, 2, false, true, false, false, false, false);
        run_pattern(p, OG_DOUBLE, 1, false, true, false, false, false, false);
        if (p != P_DEPTHWISE_RELU6) {
            run_pattern(p, OG_FLOAT, 1, false, false, false, false, false, true);
            run_pattern(p, OG_FLOAT, 2, false, false, false, false, false, true);
            run_pattern(p, OG_FLOAT, 1, true, false, false, false, false, false);
            run_pattern(p, OG_FLOAT, 2, true, false, false, false, false, false);
            run_pattern(p, OG_FLOAT, 1, true, false, false, true, false, false);
            run_pattern(p, OG_FLOAT, 2, false, false, false, true, false, false);
            run_pattern(p, OG_FLOAT, 1, false, false, false, true, true, false);
        }
    }
    big_dw_hw[0] = 30;
    big_dw_hw[1] = 28;
    for (int p = 0; p < P_COUNT; p++) {
        run_pattern(p, OG_FLOAT, 1, false, true, false, false, false, false);
        run_pattern(p, OG_FLOAT, 2, false, true, false, false, false, false);
    }
    NH_DONE();
}
