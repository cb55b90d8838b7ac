/* test_loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on small hand-checked
 * inputs, and the run-time error of a label out of range. */
#include "unit/node_harness.h"

/* x [3, 2]: weight {1, 3}; target {0, 1, 1} with ignore_index 0 -> rows 1 and 2 count */
static void test_nll_weight_ignore(const char *reduction, double want)
{
    int64_t xd[] = {3, 2}, td[] = {3}, wd[] = {2};
    double x[] = {-1, -2, -3, -4, -5, -6}, t[] = {0, 1, 1}, w[] = {1, 3};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 2, xd, x), nh_tensor(OG_INT64, 1, td, t),
                       nh_tensor(OG_FLOAT, 1, wd, w)};
    nh_node n = {.op = "NegativeLogLikelihoodLoss",
                 .opset = 13,
                 .attrs = {NH_STRING("reduction", reduction), NH_INT("ignore_index", 0)},
                 .in = {in[0], in[1], in[2]},
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    if (strcmp(reduction, "none") == 0) {
        double y[] = {0, 12, 18};
        nh_expect("nll none", r.out[0], 3, y, 1e-6);
    } else {
        CHECK(r.out[0] && r.out[0]->rank == 0);
        nh_expect(reduction, r.out[0], 1, &want, 1e-6);
    }
    nh_release(&r);
    nh_free_tensors(in, 3);
}

/* scores [1, 2, 2] (two positions), int32 labels, log_prob output, double */
static void test_sce_log_prob(void)
{
    int64_t xd[] = {1, 2, 2}, td[] = {1, 2};
    double x[] = {0, 1, 0, 2}, t[] = {1, 0};
    og_tensor *in[] = {nh_tensor(OG_DOUBLE, 3, xd, x), nh_tensor(OG_INT32, 2, td, t)};
    nh_node n = {.op = "SoftmaxCrossEntropyLoss",
                 .opset = 13,
                 .attrs = {NH_STRING("reduction", "sum")},
                 .in = {in[0], in[1]},
                 .n_out = 2,
                 .threads = 2};
    nh_result r;
    CHECK_OK(nh_run(&n, &r));
    /* layout [C, D]: position 0 has scores {0, 0}, position 1 has {1, 2} */
    double l0 = log(2.0), lse1 = 2 + log(1 + exp(-1.0));
    double lp[] = {-l0, 1 - lse1, -l0, 2 - lse1};
    double loss = -lp[2] - lp[1]; /* label 1 at position 0, label 0 at position 1 */
    nh_expect("sce loss", r.out[0], 1, &loss, 1e-12);
    nh_expect("sce log_prob", r.out[1], 4, lp, 1e-12);
    nh_release(&r);
    nh_free_tensors(in, 2);
}

static void test_label_out_of_range(void)
{
    int64_t xd[] = {2, 2}, td[] = {2};
    double t[] = {1, 5};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 2, xd, NULL), nh_tensor(OG_INT64, 1, td, t)};
    nh_node n = {
        .op = "NegativeLogLikelihoodLoss", .opset = 13, .in = {in[0], in[1]}, .threads = 2};
    nh_expect_fail(&n, 0, OG_ERR_RUNTIME, "out of range");
    nh_free_tensors(in, 2);
}

static void test_bad_target_shape(void)
{
    int64_t xd[] = {2, 3, 4}, td[] = {2, 3};
    og_tensor *in[] = {nh_tensor(OG_FLOAT, 3, xd, NULL), nh_tensor(OG_INT64, 2, td, NULL)};
    nh_node n = {.op = "SoftmaxCrossEntropyLoss", .opset = 13, .in = {in[0], in[1]}, .threads = 2};
    nh_expect_fail(&n, 0, OG_ERR_SHAPE, NULL);
    nh_free_tensors(in, 2);
}

int main(void)
{
    test_nll_weight_ignore("none", 0);
    test_nll_weight_ignore("sum", 30);
    test_nll_weight_ignore("mean", 5);
    test_sce_log_prob();
    test_label_out_of_range();
    test_bad_target_shape();
    NH_DONE();
}
