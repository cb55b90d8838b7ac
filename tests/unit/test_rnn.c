/* test_rnn.c: RNN, GRU and LSTM on hand-computed steps, layout 1 against layout 0, the
 * training form's saved state against its outputs, and the errors of bad attributes, shapes
 * and sequence lengths (the ops against onnxruntime are in tests/opset, their gradients in
 * tests/grad). */
#include "unit/node_harness.h"

/* RNN, T 2, N 1, I 1, H 1: h1 = tanh(0.5·1 + 0.3), h2 = tanh(0.5·2 − 0.3·h1 + 0.3) */
static void test_rnn_steps(void)
{
    og_tensor *in[] = {nh_tensor(OG_DOUBLE, 3, (int64_t[]){2, 1, 1}, (double[]){1, 2}),
                       nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 1, 1}, (double[]){0.5}),
                       nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 1, 1}, (double[]){-0.3}),
                       nh_tensor(OG_DOUBLE, 2, (int64_t[]){1, 2}, (double[]){0.1, 0.2})};
    nh_node n = {.op = "RNN",
                 .opset = 14,
                 .attrs = {NH_INT("hidden_size", 1)},
                 .in = {in[0], in[1], in[2], in[3]},
                 .n_out = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double h1 = tanh(0.8), h2 = tanh(1.0 - 0.3 * h1 + 0.3);
    nh_expect("rnn Y", r.out[0], 2, (double[]){h1, h2}, 1e-12);
    nh_expect("rnn Y_h", r.out[1], 1, (double[]){h2}, 1e-12);
    nh_release(&r);
    nh_free_tensors(in, 4);
}

/* LSTM, one step, H 1, peepholes and an initial cell, input_forget:
 *   i = σ(x·Wi + Pi·c0), f = 1 − i, c~ = tanh(x·Wc), C = f·c0 + i·c~,
 *   o = σ(x·Wo + Po·C), h = o·tanh(C) */
static void test_lstm_step(void)
{
    /* the forget peephole (9) has no effect with input_forget */
    og_tensor *in[] = {
        nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 1, 1}, (double[]){2}),
        nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 4, 1}, (double[]){0.1, 0.2, 0.3, 0.4}),
        nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 4, 1}, NULL),
        nh_tensor(OG_DOUBLE, 3, (int64_t[]){1, 1, 1}, (double[]){0.5}),
        nh_tensor(OG_DOUBLE, 2, (int64_t[]){1, 3}, (double[]){0.7, -0.6, 9})};
    nh_node n = {.op = "LSTM",
                 .opset = 14,
                 .attrs = {NH_INT("input_forget", 1)},
                 .in = {in[0], in[1], in[2], NULL, NULL, NULL, in[3], in[4]},
                 .n_out = 3};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    double i = 1 / (1 + exp(-(0.2 + 0.35))), f = 1 - i, cc = tanh(0.8);
    double C = f * 0.5 + i * cc, o = 1 / (1 + exp(-(0.4 - 0.6 * C))), h = o * tanh(C);
    nh_expect("lstm Y", r.out[0], 1, (double[]){h}, 1e-12);
    nh_expect("lstm Y_h", r.out[1], 1, (double[]){h}, 1e-12);
    nh_expect("lstm Y_c", r.out[2], 1, (double[]){C}, 1e-12);
    nh_release(&r);

    /* the training form: the same outputs, and saved = [i, o, f, c~ pre-activations, C, h] */
    n.op = "LSTMTrain";
    n.domain = "com.onnxgrad";
    n.opset = 1;
    n.n_out = 4;
    CHECK_OK(nh_run(&n, &r));
    nh_expect("LSTMTrain Y_h", r.out[1], 1, (double[]){h}, 1e-12);
    double pre_o = 0.4 - 0.6 * C;
    nh_expect("LSTMTrain saved", r.out[3], 6, (double[]){0.55, pre_o, 0.6 + 4.5, 0.8, C, h}, 1e-12);
    nh_release(&r);
    nh_free_tensors(in, 5);
}

/* A bidirectional GRU with lengths, in layout 0 and 1 on the same data. */
static void test_gru_layouts(void)
{
    enum { T = 3, N = 2, I = 2, H = 2, D = 2 };
    double x0[T * N * I], x1[T * N * I], w[D * 3 * H * I], rw[D * 3 * H * H], b[D * 6 * H];
    double h00[D * N * H], h01[D * N * H];
    for (int k = 0; k < T * N * I; k++) x0[k] = sin(k + 1.0);
    for (int t = 0; t < T; t++) /* x1[n, t, :] = x0[t, n, :] */
        for (int nn = 0; nn < N; nn++)
            for (int j = 0; j < I; j++) x1[(nn * T + t) * I + j] = x0[(t * N + nn) * I + j];
    for (int k = 0; k < D * 3 * H * I; k++) w[k] = cos(k * 0.7);
    for (int k = 0; k < D * 3 * H * H; k++) rw[k] = sin(k * 1.3) * 0.5;
    for (int k = 0; k < D * 6 * H; k++) b[k] = cos(k * 0.3) * 0.2;
    for (int d = 0; d < D; d++)
        for (int nn = 0; nn < N; nn++)
            for (int j = 0; j < H; j++) {
                h00[(d * N + nn) * H + j] = 0.1 * (d + 1) - 0.2 * nn + 0.05 * j;
                h01[(nn * D + d) * H + j] = h00[(d * N + nn) * H + j];
            }
    og_tensor *res[2][2] = {{NULL, NULL}, {NULL, NULL}};
    for (int layout = 0; layout < 2; layout++) {
        og_tensor *in[] = {layout ? nh_tensor(OG_FLOAT, 3, (int64_t[]){N, T, I}, x1)
                                  : nh_tensor(OG_FLOAT, 3, (int64_t[]){T, N, I}, x0),
                           nh_tensor(OG_FLOAT, 3, (int64_t[]){D, 3 * H, I}, w),
                           nh_tensor(OG_FLOAT, 3, (int64_t[]){D, 3 * H, H}, rw),
                           nh_tensor(OG_FLOAT, 2, (int64_t[]){D, 6 * H}, b),
                           nh_tensor(OG_INT32, 1, (int64_t[]){N}, (double[]){3, 1}),
                           layout ? nh_tensor(OG_FLOAT, 3, (int64_t[]){N, D, H}, h01)
                                  : nh_tensor(OG_FLOAT, 3, (int64_t[]){D, N, H}, h00)};
        nh_node n = {.op = "GRU",
                     .opset = 14,
                     .attrs = {NH_STRING("direction", "bidirectional"),
                               NH_INT("linear_before_reset", 1), NH_INT("layout", layout)},
                     .in = {in[0], in[1], in[2], in[3], in[4], in[5]},
                     .n_out = 2};
        nh_result r;
        CHECK_OK(nh_run(&n, &r));
        res[layout][0] = nh_take(&r, 0);
        res[layout][1] = nh_take(&r, 1);
        nh_release(&r);
        nh_free_tensors(in, 6);
    }
    if (!res[0][0] || !res[1][0] || !res[0][1] || !res[1][1]) return;
    /* Y: [T, D, N, H] against [N, T, D, H]; Y_h: [D, N, H] against [N, D, H] */
    int same = 1, zeros = 1;
    for (int t = 0; t < T; t++)
        for (int d = 0; d < D; d++)
            for (int nn = 0; nn < N; nn++)
                for (int j = 0; j < H; j++) {
                    float a = ((float *)res[0][0]->data)[((t * D + d) * N + nn) * H + j];
                    float c = ((float *)res[1][0]->data)[((nn * T + t) * D + d) * H + j];
                    same = same && a == c;
                    if (nn == 1 && t >= 1) zeros = zeros && a == 0; /* past row 1's length */
                }
    for (int d = 0; d < D; d++)
        for (int nn = 0; nn < N; nn++)
            for (int j = 0; j < H; j++)
                same = same && ((float *)res[0][1]->data)[(d * N + nn) * H + j] ==
                                   ((float *)res[1][1]->data)[(nn * D + d) * H + j];
    CHECK(same);
    CHECK(zeros);
    nh_free_tensors(res[0], 2);
    nh_free_tensors(res[1], 2);
}

/* A run whose sequence_lens is outside 0..T fails naming the node. */
static void test_bad_lengths(void)
{
    for (int bad = 0; bad < 2; bad++) {
        og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 2, 1}, (double[]){1, 2, 3, 4}),
                           nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 1, 1}, (double[]){1}),
                           nh_tensor(OG_FLOAT, 3, (int64_t[]){1, 1, 1}, (double[]){1}),
                           nh_tensor(OG_INT32, 1, (int64_t[]){2}, (double[]){1, bad ? -1 : 3})};
        nh_node n = {.op = "RNN",
                     .opset = 14,
                     .attrs = {NH_INT("hidden_size", 1)},
                     .in = {in[0], in[1], in[2], NULL, in[3]}};
        nh_expect_fail(&n, NH_RUN, OG_ERR_RUNTIME, "sequence_lens[1]");
        nh_free_tensors(in, 4);
    }
}

/* Attributes and shapes refused when the graph resolves. */
static void test_bad_models(void)
{
    struct {
        nh_attr attr;
        int64_t dirs;
        og_status want;
        const char *needle;
    } cases[] = {
        {NH_STRINGS("activations", "Sigmoid", "Swish", "Tanh"), 1, OG_ERR_UNSUPPORTED, "'Swish'"},
        {NH_STRINGS("activations", "Sigmoid"), 1, OG_ERR_MODEL,
         "'activations' has 1 entries, expected 3"},
        {NH_STRING("direction", "sideways"), 1, OG_ERR_MODEL, "'direction' is 'sideways'"},
        {NH_STRING("direction", "forward"), 2, OG_ERR_SHAPE, "directions"},
        {NH_INT("hidden_size", 3), 1, OG_ERR_SHAPE, "hidden size"},
        {NH_FLOAT("clip", -1), 1, OG_ERR_MODEL, "'clip'"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int64_t D = cases[c].dirs, H = 2;
        og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, (int64_t[]){2, 1, 3}, NULL),
                           nh_tensor(OG_FLOAT, 3, (int64_t[]){D, 4 * H, 3}, NULL),
                           nh_tensor(OG_FLOAT, 3, (int64_t[]){D, 4 * H, H}, NULL)};
        nh_node n = {
            .op = "LSTM", .opset = 14, .attrs = {cases[c].attr}, .in = {in[0], in[1], in[2]}};
        nh_expect_fail(&n, NH_LOAD, cases[c].want, cases[c].needle);
        nh_free_tensors(in, 3);
    }
}

int main(void)
{
    test_rnn_steps();
    test_lstm_step();
    test_gru_layouts();
    test_bad_lengths();
    test_bad_models();
    NH_DONE();
}
