/* test_loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on small hand-checked
 * inputs, and the run-time error of a label out of range. */
#include "unit/nn_harness.h"

/* x [3, 2]: weight {1, 3}; target {0, 1, 1} with ignore_index 0 -> rows 1 and 2 count */
static void test_nll_weight_ignore(const char *reduction, double want)
{
    og_graph *g;
    h_node(&g, "NegativeLogLikelihoodLoss", 13, 3, 1);
    h_attr_string(g, "reduction", reduction);
    h_attr_int(g, "ignore_index", 0);
    int64_t xd[] = {3, 2}, td[] = {3}, wd[] = {2};
    double x[] = {-1, -2, -3, -4, -5, -6}, t[] = {0, 1, 1}, w[] = {1, 3};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 2, xd, x), h_tensor(OG_INT64, 1, td, t),
                       h_tensor(OG_FLOAT, 1, wd, w)};
    og_tensor *out[1];
    bool want_out[] = {true};
    H_CHECK(h_run(g, in, want_out, out) == OG_OK);
    if (strcmp(reduction, "none") == 0) {
        double y[] = {0, 12, 18};
        h_expect("nll none", out[0], 3, y, 1e-6);
    } else {
        H_CHECK(out[0] && out[0]->rank == 0);
        h_expect(reduction, out[0], 1, &want, 1e-6);
    }
    h_free(g, in, 3);
    h_free(NULL, out, 1);
}

/* scores [1, 2, 2] (two positions), int32 labels, log_prob output, double */
static void test_sce_log_prob(void)
{
    og_graph *g;
    h_node(&g, "SoftmaxCrossEntropyLoss", 13, 2, 2);
    h_attr_string(g, "reduction", "sum");
    int64_t xd[] = {1, 2, 2}, td[] = {1, 2};
    double x[] = {0, 1, 0, 2}, t[] = {1, 0};
    og_tensor *in[] = {h_tensor(OG_DOUBLE, 3, xd, x), h_tensor(OG_INT32, 2, td, t)};
    og_tensor *out[2];
    bool want[] = {true, true};
    H_CHECK(h_run(g, in, want, out) == OG_OK);
    /* layout [C, D]: position 0 has scores {0, 0}, position 1 has {1, 2} */
    double l0 = log(2.0), lse1 = 2 + log(1 + exp(-1.0));
    double lp[] = {-l0, 1 - lse1, -l0, 2 - lse1};
    double loss = -lp[2] - lp[1]; /* label 1 at position 0, label 0 at position 1 */
    h_expect("sce loss", out[0], 1, &loss, 1e-12);
    h_expect("sce log_prob", out[1], 4, lp, 1e-12);
    h_free(g, in, 2);
    h_free(NULL, out, 2);
}

static void test_label_out_of_range(void)
{
    og_graph *g;
    h_node(&g, "NegativeLogLikelihoodLoss", 13, 2, 1);
    int64_t xd[] = {2, 2}, td[] = {2};
    double t[] = {1, 5};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 2, xd, NULL), h_tensor(OG_INT64, 1, td, t)};
    og_tensor *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_ERR_RUNTIME);
    H_CHECK(strstr(og_last_error(), "out of range") != NULL);
    h_free(g, in, 2);
    h_free(NULL, out, 1);
}

static void test_bad_target_shape(void)
{
    og_graph *g;
    h_node(&g, "SoftmaxCrossEntropyLoss", 13, 2, 1);
    int64_t xd[] = {2, 3, 4}, td[] = {2, 3};
    og_tensor *in[] = {h_tensor(OG_FLOAT, 3, xd, NULL), h_tensor(OG_INT64, 2, td, NULL)};
    og_tensor *out[1];
    bool want[] = {true};
    H_CHECK(h_run(g, in, want, out) == OG_ERR_SHAPE);
    h_free(g, in, 2);
}

int main(void)
{
    test_nll_weight_ignore("none", 0);
    test_nll_weight_ignore("sum", 30);
    test_nll_weight_ignore("mean", 5);
    test_sce_log_prob();
    test_label_out_of_range();
    test_bad_target_shape();
    if (h_failures) fprintf(stderr, "test_loss: %d failures\n", h_failures);
    return h_failures != 0;
}
