/* test_rnn.c: RNN, GRU and LSTM on hand-computed steps, layout 1 against layout 0, and the
 * errors of bad attributes, shapes and sequence lengths (the ops against onnxruntime are in
 * tests/opset, their gradients in tests/grad). */
#include "unit/nn_harness.h"

static void attr_strings(og_graph *g, const char *name, int n, const char *const *v)
{
    og_attr *a = h_attr(g, name, OG_ATTR_STRINGS);
    a->strings = og_calloc(g->alloc, (size_t)n + 1, sizeof *a->strings);
    for (int i = 0; i < n; i++) a->strings[i] = og_strdup(g->alloc, v[i]);
    a->n = n;
}

/* RNN, T 2, N 1, I 1, H 1: h1 = tanh(0.5·1 + 0.3), h2 = tanh(0.5·2 − 0.3·h1 + 0.3) */
static void test_rnn_steps(void)
{
    og_graph *g;
    h_node(&g, "RNN", 14, 3 + 1, 2);
    h_attr_int(g, "hidden_size", 1);
    int64_t xd[] = {2, 1, 1}, wd[] = {1, 1, 1}, bd[] = {1, 2};
    double x[] = {1, 2}, w[] = {0.5}, r[] = {-0.3}, b[] = {0.1, 0.2};
    og_tensor *in[] = {h_tensor(OG_DOUBLE, 3, xd, x), h_tensor(OG_DOUBLE, 3, wd, w),
                       h_tensor(OG_DOUBLE, 3, wd, r), h_tensor(OG_DOUBLE, 2, bd, b)};
    og_tensor *out[2];
    bool want[] = {true, true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double h1 = tanh(0.8), h2 = tanh(1.0 - 0.3 * h1 + 0.3);
    double y[] = {h1, h2}, yh[] = {h2};
    h_expect("rnn Y", out[0], 2, y, 1e-12);
    h_expect("rnn Y_h", out[1], 1, yh, 1e-12);
    h_free(g, in, 4);
    h_free(NULL, out, 2);
}

/* LSTM, one step, H 1, peepholes and an initial cell, input_forget:
 *   i = σ(x·Wi + Pi·c0), f = 1 − i, c~ = tanh(x·Wc), C = f·c0 + i·c~,
 *   o = σ(x·Wo + Po·C), h = o·tanh(C) */
static void test_lstm_step(void)
{
    og_graph *g;
    h_node(&g, "LSTM", 14, 8, 3);
    h_attr_int(g, "input_forget", 1);
    int64_t xd[] = {1, 1, 1}, wd[] = {1, 4, 1}, sd[] = {1, 1, 1}, pd[] = {1, 3};
    double x[] = {2}, w[] = {0.1, 0.2, 0.3, 0.4}, r[] = {0, 0, 0, 0}, c0[] = {0.5};
    double p[] = {0.7, -0.6, 9}; /* the forget peephole has no effect with input_forget */
    og_tensor *in[] = {h_tensor(OG_DOUBLE, 3, xd, x),
                       h_tensor(OG_DOUBLE, 3, wd, w),
                       h_tensor(OG_DOUBLE, 3, wd, r),
                       NULL,
                       NULL,
                       NULL,
                       h_tensor(OG_DOUBLE, 3, sd, c0),
                       h_tensor(OG_DOUBLE, 2, pd, p)};
    og_tensor *out[3];
    bool want[] = {true, true, true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    double i = 1 / (1 + exp(-(0.2 + 0.35))), f = 1 - i, cc = tanh(0.8);
    double C = f * 0.5 + i * cc, o = 1 / (1 + exp(-(0.4 - 0.6 * C))), h = o * tanh(C);
    double yh[] = {h}, yc[] = {C};
    h_expect("lstm Y", out[0], 1, yh, 1e-12);
    h_expect("lstm Y_h", out[1], 1, yh, 1e-12);
    h_expect("lstm Y_c", out[2], 1, yc, 1e-12);
    h_free(g, in, 8);
    h_free(NULL, out, 3);
}

/* A bidirectional GRU with lengths, in layout 0 and 1 on the same data. */
static void test_gru_layouts(void)
{
    enum { T = 3, N = 2, I = 2, H = 2, D = 2 };
    double x0[T * N * I], x1[T * N * I], w[D * 3 * H * I], r[D * 3 * H * H], b[D * 6 * H];
    double h00[D * N * H], h01[D * N * H], lens[] = {3, 1};
    for (int k = 0; k < T * N * I; k++) x0[k] = sin(k + 1.0);
    for (int t = 0; t < T; t++) /* x1[n, t, :] = x0[t, n, :] */
        for (int n = 0; n < N; n++)
            for (int j = 0; j < I; j++) x1[(n * T + t) * I + j] = x0[(t * N + n) * I + j];
    for (int k = 0; k < D * 3 * H * I; k++) w[k] = cos(k * 0.7);
    for (int k = 0; k < D * 3 * H * H; k++) r[k] = sin(k * 1.3) * 0.5;
    for (int k = 0; k < D * 6 * H; k++) b[k] = cos(k * 0.3) * 0.2;
    for (int d = 0; d < D; d++)
        for (int n = 0; n < N; n++)
            for (int j = 0; j < H; j++) {
                h00[(d * N + n) * H + j] = 0.1 * (d + 1) - 0.2 * n + 0.05 * j;
                h01[(n * D + d) * H + j] = h00[(d * N + n) * H + j];
            }
    og_tensor *res[2][2];
    for (int layout = 0; layout < 2; layout++) {
        og_graph *g;
        h_node(&g, "GRU", 14, 6, 2);
        h_attr_string(g, "direction", "bidirectional");
        h_attr_int(g, "linear_before_reset", 1);
        h_attr_int(g, "layout", layout);
        int64_t xd0[] = {T, N, I}, xd1[] = {N, T, I}, wd[] = {D, 3 * H, I}, rd[] = {D, 3 * H, H};
        int64_t bd[] = {D, 6 * H}, ld[] = {N}, hd0[] = {D, N, H}, hd1[] = {N, D, H};
        og_tensor *in[] = {layout ? h_tensor(OG_FLOAT, 3, xd1, x1) : h_tensor(OG_FLOAT, 3, xd0, x0),
                           h_tensor(OG_FLOAT, 3, wd, w),
                           h_tensor(OG_FLOAT, 3, rd, r),
                           h_tensor(OG_FLOAT, 2, bd, b),
                           h_tensor(OG_INT32, 1, ld, lens),
                           layout ? h_tensor(OG_FLOAT, 3, hd1, h01)
                                  : h_tensor(OG_FLOAT, 3, hd0, h00)};
        bool want[] = {true, true};
        H_CHECK(h_run(g, in, want, res[layout]) == OG_OK);
        h_free(g, in, 6);
    }
    /* Y: [T, D, N, H] against [N, T, D, H]; Y_h: [D, N, H] against [N, D, H] */
    for (int t = 0; t < T; t++)
        for (int d = 0; d < D; d++)
            for (int n = 0; n < N; n++)
                for (int j = 0; j < H; j++) {
                    float a = ((float *)res[0][0]->data)[((t * D + d) * N + n) * H + j];
                    float c = ((float *)res[1][0]->data)[((n * T + t) * D + d) * H + j];
                    H_CHECK(a == c);
                    if (n == 1 && t >= 1) H_CHECK(a == 0); /* past row 1's length */
                }
    for (int d = 0; d < D; d++)
        for (int n = 0; n < N; n++)
            for (int j = 0; j < H; j++)
                H_CHECK(((float *)res[0][1]->data)[(d * N + n) * H + j] ==
                        ((float *)res[1][1]->data)[(n * D + d) * H + j]);
    h_free(NULL, res[0], 2);
    h_free(NULL, res[1], 2);
}

/* A run whose sequence_lens is outside 0..T fails naming the node. */
static void test_bad_lengths(void)
{
    for (int bad = 0; bad < 2; bad++) {
        og_graph *g;
        h_node(&g, "RNN", 14, 5, 1);
        h_attr_int(g, "hidden_size", 1);
        int64_t xd[] = {2, 2, 1}, wd[] = {1, 1, 1}, ld[] = {2};
        double x[] = {1, 2, 3, 4}, one[] = {1}, lens[] = {1, bad ? -1 : 3};
        og_tensor *in[] = {h_tensor(OG_FLOAT, 3, xd, x), h_tensor(OG_FLOAT, 3, wd, one),
                           h_tensor(OG_FLOAT, 3, wd, one), NULL, h_tensor(OG_INT32, 1, ld, lens)};
        og_tensor *out[1];
        bool want[] = {true};
        H_CHECK(h_run(g, in, want, out) == OG_ERR_RUNTIME);
        H_CHECK(strstr(og_last_error(), "sequence_lens[1]") != NULL);
        H_CHECK(strstr(og_last_error(), "'n0'") != NULL);
        h_free(g, in, 5);
        h_free(NULL, out, 1);
    }
}

/* Attributes and shapes refused when the graph resolves. */
static void test_bad_models(void)
{
    struct {
        const char *what;
        og_status want;
        const char *needle;
    } cases[] = {
        {"activation", OG_ERR_UNSUPPORTED, "'Swish'"},
        {"activation count", OG_ERR_MODEL, "'activations' has 1 entries, expected 3"},
        {"direction", OG_ERR_MODEL, "'direction' is 'sideways'"},
        {"directions", OG_ERR_SHAPE, "directions"},
        {"hidden_size", OG_ERR_SHAPE, "hidden size"},
        {"clip", OG_ERR_MODEL, "'clip'"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        og_graph *g;
        h_node(&g, "LSTM", 14, 3, 1);
        int64_t D = 1, H = 2;
        const char *w = cases[c].what;
        if (strcmp(w, "activation") == 0) {
            const char *a[] = {"Sigmoid", "Swish", "Tanh"};
            attr_strings(g, "activations", 3, a);
        } else if (strcmp(w, "activation count") == 0) {
            const char *a[] = {"Sigmoid"};
            attr_strings(g, "activations", 1, a);
        } else if (strcmp(w, "direction") == 0) {
            h_attr_string(g, "direction", "sideways");
        } else if (strcmp(w, "directions") == 0) {
            D = 2; /* W and R say two, direction says forward */
        } else if (strcmp(w, "hidden_size") == 0) {
            h_attr_int(g, "hidden_size", 3);
        } else {
            h_attr_float(g, "clip", -1);
        }
        int64_t xd[] = {2, 1, 3}, wd[] = {D, 4 * H, 3}, rd[] = {D, 4 * H, H};
        og_tensor *in[] = {h_tensor(OG_FLOAT, 3, xd, NULL), h_tensor(OG_FLOAT, 3, wd, NULL),
                           h_tensor(OG_FLOAT, 3, rd, NULL)};
        og_tensor *out[1];
        bool want[] = {true};
        og_status st = h_run(g, in, want, out);
        if (st != cases[c].want || !strstr(og_last_error(), cases[c].needle)) {
            fprintf(stderr, "bad %s: status %d, message '%s'\n", w, (int)st, og_last_error());
            h_failures++;
        }
        h_free(g, in, 3);
        h_free(NULL, out, 1);
    }
}

int main(void)
{
    test_rnn_steps();
    test_lstm_step();
    test_gru_layouts();
    test_bad_lengths();
    test_bad_models();
    if (h_failures) fprintf(stderr, "test_rnn: %d failures\n", h_failures);
    return h_failures != 0;
}
