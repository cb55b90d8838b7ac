/*
 * onnxgrad: the command-line tool.  It uses only the public header.
 *
 *   onnxgrad info MODEL
 *   onnxgrad run MODEL --input NAME=FILE.npy ... [--threads N] -o DIR
 *   onnxgrad bench MODEL --input NAME=FILE.npy ... [--threads N] [-n ITERS]
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "onnxgrad.h"
#include "cli.h"

#define MAX_IO 256

static const char usage[] =
    "usage: onnxgrad COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  info MODEL                 inputs, outputs, initializers, opsets and op counts\n"
    "  run MODEL --input NAME=FILE.npy ... [--threads N] -o DIR\n"
    "                             run the model; write each output to DIR/<name>.npy and\n"
    "                             DIR/manifest.json (tensor name -> file name)\n"
    "  bench MODEL --input NAME=FILE.npy ... [--train] [--weights A,B] [--threads N]\n"
    "       [-n ITERS]            time inference, or with --train one training step\n"
    "                             (forward + backward); print one JSON line with the median\n"
    "                             and min milliseconds (after warm-up), the median CPU\n"
    "                             milliseconds of the process and its peak RSS\n"
    "  grad MODEL --input NAME=FILE.npy ... [--grad-output NAME=FILE.npy ...]\n"
    "       [--weights A,B] [--threads N] -o DIR\n"
    "                             outputs and gradients: <name>_grad for every float input\n"
    "                             and every trained weight (default: all float initializers);\n"
    "                             a missing --grad-output defaults to ones\n"
    "  export MODEL -o DIR [--prefix P] [--suffix S] [--weights A,B]\n"
    "                             write DIR/<P>training<S>.onnx (forward + backward: inputs,\n"
    "                             weights, <output>_grad seeds -> outputs, <name>_grad) and\n"
    "                             DIR/<P>eval<S>.onnx (weights as inputs)\n"
    "  check MODEL --input NAME=FILE.npy ... [--weights A,B] [--tolerance T]\n"
    "                             compare gradients with central finite differences on a\n"
    "                             float64 copy; largest relative error per input and weight;\n"
    "                             exit 1 above T (default 1e-4)\n"
    "  train MODEL --data FILE --loss L [--optimizer O] [--lr X] [--epochs N]\n"
    "       [--batch-size B] [--val-split F] [--checkpoint FILE] [--resume] -o OUT.onnx\n"
    "                             train the weights; write the trained model, OUT.csv (losses\n"
    "                             per epoch) and OUT.svg (their plot); see 'onnxgrad train\n"
    "                             --help' for every option\n"
    "  help                       this text\n"
    "  version                    the version\n"
    "\n"
    "Options of run:\n"
    "  --input NAME=FILE.npy      bind a graph input (repeatable); a model with a single\n"
    "                             input also takes --input FILE.npy\n"
    "  --threads N                worker threads (default: one per core)\n"
    "  -o, --output-dir DIR       where outputs go (created if missing)\n"
    "  -n ITERS                   bench: timed runs (default 20)\n"
    "\n"
    ".npy files: float16, float32, float64, int32, int64 or bool, C order.\n"
    "Output file names are tensor names with every character outside A-Za-z0-9._-\n"
    "replaced by '_' (a numeric suffix keeps them unique).\n"
    "Exit status: 0 on success, 1 on error (one line on stderr), 2 on bad usage.\n";

static void print_shape(og_dtype dt, int rank, const int64_t *dims, const char **names)
{
    printf("%s [", og_dtype_name(dt));
    if (rank < 0) printf("?");
    for (int d = 0; d < rank; d++) {
        if (d) printf(", ");
        if (dims[d] >= 0)
            printf("%lld", (long long)dims[d]);
        else if (names && names[d])
            printf("%s", names[d]);
        else
            printf("?");
    }
    printf("]");
}

static int cmd_info(int argc, char **argv)
{
    if (argc != 1) return cli_bad_usage("info takes one model path");
    og_model *m = NULL;
    if (og_model_load_file_any_op(argv[0], NULL, &m)) return cli_fail();
    printf("model: %s\n", argv[0]);
    printf("ir_version: %lld\n", (long long)og_model_ir_version(m));
    printf("opsets:");
    for (int i = 0; i < og_model_opset_count(m); i++) {
        const char *dom = "", *prev = "";
        int64_t ver = 0, pver = 0;
        og_model_opset(m, i, &dom, &ver);
        if (!dom[0]) dom = "ai.onnx";
        bool seen = false; /* "" and "ai.onnx" are one domain; converters list it twice */
        for (int k = 0; k < i && !seen; k++) {
            og_model_opset(m, k, &prev, &pver);
            seen = strcmp(prev[0] ? prev : "ai.onnx", dom) == 0 && pver == ver;
        }
        if (!seen) printf(" %s=%lld", dom, (long long)ver);
    }
    printf("\n");
    if (og_model_training_info_count(m) > 0)
        printf("training info: %d TrainingInfoProto (train it with 'onnxgrad train %s --data "
               "FILE -o OUT.onnx', no --loss)\n",
               og_model_training_info_count(m), argv[0]);
    char type[1024];
    printf("inputs (%d):\n", og_model_input_count(m));
    for (int i = 0; i < og_model_input_count(m); i++) {
        og_model_input_type(m, i, NULL, type, sizeof type);
        printf("  %s: %s\n", og_model_input_name(m, i), type);
    }
    printf("outputs (%d):\n", og_model_output_count(m));
    for (int i = 0; i < og_model_output_count(m); i++) {
        og_model_output_type(m, i, NULL, type, sizeof type);
        printf("  %s: %s\n", og_model_output_name(m, i), type);
    }
    size_t total = 0;
    printf("initializers (%d):\n", og_model_initializer_count(m));
    for (int i = 0; i < og_model_initializer_count(m); i++) {
        const og_tensor *t = og_model_initializer(m, i);
        printf("  %s: ", og_model_initializer_name(m, i));
        print_shape(og_tensor_dtype(t), og_tensor_rank(t), og_tensor_dims(t), NULL);
        printf(" %zu bytes\n", og_tensor_nbytes(t));
        total += og_tensor_nbytes(t);
    }
    printf("initializer bytes: %zu\n", total);
    /* op histogram, in order of first appearance */
    int n = og_model_node_count(m);
    const char **ops = calloc((size_t)n + 1, sizeof *ops);
    int *counts = calloc((size_t)n + 1, sizeof *counts);
    int n_ops = 0;
    if (!ops || !counts) {
        free(ops);
        free(counts);
        og_model_free(m);
        fprintf(stderr, "onnxgrad: out of memory\n");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        const char *op = NULL, *dom = NULL;
        og_model_node_op(m, i, &op, &dom);
        int k = 0;
        while (k < n_ops && strcmp(ops[k], op) != 0) k++;
        if (k == n_ops) ops[n_ops++] = op;
        counts[k]++;
    }
    printf("nodes (%d):\n", n);
    for (int k = 0; k < n_ops; k++) printf("  %s: %d\n", ops[k], counts[k]);
    free(ops);
    free(counts);
    og_model_free(m);
    return 0;
}

/* What run and bench share: the model, its bound inputs and a session. */
typedef struct job {
    const char *model_path, *out_dir;
    const char *in_names[MAX_IO], *in_files[MAX_IO];
    const char *go_names[MAX_IO], *go_files[MAX_IO]; /* --grad-output */
    const char *weights[MAX_IO];                     /* --weights */
    int n_in, n_go, n_weights, threads, iters;
    bool has_weights, train;
    double tolerance;
    const char *prefix, *suffix; /* export */
    og_model *m;
    og_session *s;
    og_tensor *inputs[MAX_IO];
} job;

enum { OPT_OUT_DIR = 1, OPT_GRAD = 2, OPT_CHECK = 4, OPT_EXPORT = 8, OPT_BENCH = 16 };

static int parse_job(job *j, int argc, char **argv, unsigned allowed)
{
    bool want_out_dir = (allowed & OPT_OUT_DIR) != 0;
    for (int i = 0; i < argc; i++) {
        if ((allowed & OPT_GRAD) && strcmp(argv[i], "--grad-output") == 0) {
            if (++i >= argc) return cli_bad_usage("--grad-output needs NAME=FILE.npy");
            char *eq = strchr(argv[i], '=');
            if (!eq) return cli_bad_usage("--grad-output needs NAME=FILE.npy");
            if (j->n_go == MAX_IO) return cli_bad_usage("too many --grad-output");
            *eq = 0;
            j->go_names[j->n_go] = argv[i];
            j->go_files[j->n_go++] = eq + 1;
            continue;
        }
        if ((allowed & OPT_BENCH) && strcmp(argv[i], "--train") == 0) {
            j->train = true;
            continue;
        }
        if ((allowed & OPT_EXPORT) &&
            (strcmp(argv[i], "--prefix") == 0 || strcmp(argv[i], "--suffix") == 0)) {
            const char *opt = argv[i];
            if (++i >= argc) return cli_bad_usage("--prefix and --suffix need a value");
            if (strchr(argv[i], '/'))
                return cli_bad_usage("--prefix and --suffix may not contain '/'");
            if (strcmp(opt, "--prefix") == 0)
                j->prefix = argv[i];
            else
                j->suffix = argv[i];
            continue;
        }
        if ((allowed & (OPT_GRAD | OPT_CHECK | OPT_EXPORT)) && strcmp(argv[i], "--weights") == 0) {
            if (++i >= argc) return cli_bad_usage("--weights needs a comma-separated list");
            j->has_weights = true;
            for (char *tok = strtok(argv[i], ","); tok; tok = strtok(NULL, ",")) {
                if (j->n_weights == MAX_IO) return cli_bad_usage("too many weights");
                j->weights[j->n_weights++] = tok;
            }
            continue;
        }
        if ((allowed & OPT_CHECK) && strcmp(argv[i], "--tolerance") == 0) {
            if (++i >= argc) return cli_bad_usage("--tolerance needs a number");
            char *end;
            j->tolerance = strtod(argv[i], &end);
            if (*end || !(j->tolerance > 0)) return cli_bad_usage("--tolerance needs a number > 0");
            continue;
        }
        if (strcmp(argv[i], "--input") == 0 || strcmp(argv[i], "-i") == 0) {
            if (++i >= argc) return cli_bad_usage("--input needs NAME=FILE.npy");
            if (j->n_in == MAX_IO) return cli_bad_usage("too many --input");
            char *eq = strchr(argv[i], '=');
            if (eq) {
                *eq = 0;
                j->in_names[j->n_in] = argv[i];
                j->in_files[j->n_in] = eq + 1;
            } else {
                j->in_names[j->n_in] = NULL;
                j->in_files[j->n_in] = argv[i];
            }
            j->n_in++;
        } else if (strcmp(argv[i], "--threads") == 0 || strcmp(argv[i], "-n") == 0) {
            const char *opt = argv[i];
            if (++i >= argc) return cli_bad_usage("--threads and -n need a number");
            char *end;
            long t = strtol(argv[i], &end, 10);
            if (*end || t < 0 || t > 1000000)
                return cli_bad_usage("--threads and -n need a number >= 0");
            if (strcmp(opt, "-n") == 0)
                j->iters = (int)t;
            else
                j->threads = (int)t;
        } else if (want_out_dir &&
                   (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output-dir") == 0)) {
            if (++i >= argc) return cli_bad_usage("-o needs a folder");
            j->out_dir = argv[i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "onnxgrad: unknown option '%s' (see 'onnxgrad help')\n", argv[i]);
            return 2;
        } else if (!j->model_path) {
            j->model_path = argv[i];
        } else {
            return cli_bad_usage("one model path only");
        }
    }
    if (!j->model_path) return cli_bad_usage("a model path is needed");
    if (want_out_dir && !j->out_dir) return cli_bad_usage("this command needs -o DIR");
    return 0;
}

/* Load the model and the inputs, create the session. */
static int open_job(job *j)
{
    if (og_model_load_file(j->model_path, NULL, &j->m)) return cli_fail();
    for (int i = 0; i < j->n_in; i++) {
        if (!j->in_names[i]) {
            if (og_model_input_count(j->m) != 1) {
                fprintf(stderr,
                        "onnxgrad: --input %s: the model has %d inputs, name it as "
                        "NAME=FILE.npy\n",
                        j->in_files[i], og_model_input_count(j->m));
                return 1;
            }
            j->in_names[i] = og_model_input_name(j->m, 0);
        }
        if (og_npy_load(j->in_files[i], NULL, &j->inputs[i])) return cli_fail();
    }
    og_session_options opts = {0};
    opts.threads = j->threads;
    if (og_session_create(j->m, &opts, &j->s)) return cli_fail();
    if (og_model_output_count(j->m) > MAX_IO) {
        fprintf(stderr, "onnxgrad: the model has more than %d outputs\n", MAX_IO);
        return 1;
    }
    return 0;
}

static void close_job(job *j)
{
    for (int i = 0; i < MAX_IO; i++) og_tensor_free(j->inputs[i]);
    og_session_free(j->s);
    og_model_free(j->m);
}

static int cmd_run(int argc, char **argv)
{
    job j = {0};
    og_tensor *outputs[MAX_IO] = {0};
    int rc = parse_job(&j, argc, argv, OPT_OUT_DIR);
    if (rc) return rc;
    rc = open_job(&j);
    if (!rc && og_session_run(j.s, j.in_names, (const og_tensor *const *)j.inputs, j.n_in, outputs))
        rc = cli_fail();
    const char *names[MAX_IO];
    for (int k = 0; k < og_model_output_count(j.m); k++) names[k] = og_model_output_name(j.m, k);
    if (!rc) rc = cli_write_outputs(names, outputs, og_model_output_count(j.m), j.out_dir);
    for (int i = 0; i < MAX_IO; i++) og_tensor_free(outputs[i]);
    close_job(&j);
    return rc;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* CPU time of the process (all its threads), in ms: beside the wall time, what a run costs
 * on a machine that other processes share. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static og_grad_options grad_options(const job *j);

/* Peak resident memory of this process in KiB: VmHWM where /proc has it (ru_maxrss keeps
 * the parent's peak across fork and exec, which would count a Python driver's memory). */
static long peak_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    if (kb < 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        kb = ru.ru_maxrss;
    }
    return kb;
}

/* One timed unit of work: an inference run, or a training step (forward + backward with
 * ones as the output gradients) through a gradient instance. */
static og_status bench_step(job *j, og_instance *inst, int n_out, int n_res, og_tensor **outputs,
                            og_tensor **grads)
{
    og_status st;
    if (inst) {
        st = og_instance_forward(inst, j->in_names, (const og_tensor *const *)j->inputs, j->n_in, 1,
                                 outputs);
        if (!st) st = og_instance_backward(inst, NULL, grads);
    } else {
        st = og_session_run(j->s, j->in_names, (const og_tensor *const *)j->inputs, j->n_in,
                            outputs);
    }
    for (int k = 0; k < n_out; k++) {
        og_tensor_free(outputs[k]);
        outputs[k] = NULL;
    }
    for (int k = 0; k < n_res; k++) {
        og_tensor_free(grads[k]);
        grads[k] = NULL;
    }
    return st;
}

static int cmd_bench(int argc, char **argv)
{
    job j = {0};
    j.iters = 20;
    double *times = NULL;
    og_tensor **outputs = NULL, **grads = NULL; /* as many as the model or gradient has */
    og_grad *g = NULL;
    og_instance *inst = NULL;
    int rc = parse_job(&j, argc, argv, OPT_BENCH | OPT_GRAD);
    if (rc) return rc;
    if (j.iters < 1) return cli_bad_usage("-n must be at least 1");
    rc = open_job(&j);
    int n_out = j.m ? og_model_output_count(j.m) : 0, n_res = 0;
    if (!rc && j.train) {
        og_grad_options o = grad_options(&j);
        if (og_grad_create(j.m, &o, &g) || og_grad_new_instance(g, &inst)) rc = cli_fail();
        n_res = g ? og_grad_input_count(g) + og_grad_weight_count(g) : 0;
        if (g) n_out = og_grad_output_count(g);
    }
    times = calloc(2 * (size_t)j.iters, sizeof *times);
    double *cpu = times ? times + j.iters : NULL;
    outputs = calloc((size_t)n_out + 1, sizeof *outputs);
    grads = calloc((size_t)n_res + 1, sizeof *grads);
    if (!rc && (!times || !outputs || !grads)) {
        fprintf(stderr, "onnxgrad: out of memory\n");
        rc = 1;
    }
    int warmup = j.iters < 5 ? 1 : 3;
    for (int it = -warmup; !rc && it < j.iters; it++) {
        double t0 = now_ms(), c0 = cpu_ms();
        if (bench_step(&j, inst, n_out, n_res, outputs, grads)) {
            rc = cli_fail();
            break;
        }
        if (it >= 0) {
            times[it] = now_ms() - t0;
            cpu[it] = cpu_ms() - c0;
        }
    }
    if (!rc) {
        qsort(times, (size_t)j.iters, sizeof *times, cmp_double);
        qsort(cpu, (size_t)j.iters, sizeof *cpu, cmp_double);
        printf("{\"model\": ");
        cli_json_string(stdout, j.model_path);
        printf(", \"mode\": \"%s\", \"threads\": %d, \"iters\": %d, "
               "\"median_ms\": %.4f, \"min_ms\": %.4f, \"median_cpu_ms\": %.4f, "
               "\"peak_rss_kb\": %ld}\n",
               j.train ? "train" : "inference", j.threads, j.iters, times[j.iters / 2], times[0],
               cpu[j.iters / 2], peak_rss_kb());
    }
    free(times);
    free(outputs);
    free(grads);
    og_instance_free(inst);
    og_grad_free(g);
    close_job(&j);
    return rc;
}

/* ---- gradients ------------------------------------------------------------------- */

static og_grad_options grad_options(const job *j)
{
    og_grad_options o = {0};
    if (j->has_weights) {
        o.weights = j->weights;
        o.n_weights = j->n_weights;
    }
    o.threads = j->threads;
    return o;
}

/* Gradient seeds by output, from --grad-output (NULL entries mean ones). */
static int load_seeds(const job *j, const og_grad *g, og_tensor **seeds)
{
    for (int k = 0; k < j->n_go; k++) {
        int idx = -1;
        for (int o = 0; o < og_grad_output_count(g); o++)
            if (strcmp(og_grad_output_name(g, o), j->go_names[k]) == 0) idx = o;
        if (idx < 0) {
            fprintf(stderr, "onnxgrad: --grad-output %s: no such output\n", j->go_names[k]);
            return 1;
        }
        if (og_npy_load(j->go_files[k], NULL, &seeds[idx])) return cli_fail();
    }
    return 0;
}

static int cmd_grad(int argc, char **argv)
{
    job j = {0};
    og_grad *g = NULL;
    og_tensor *seeds[MAX_IO] = {0}, *outs[MAX_IO] = {0}, *grads[2 * MAX_IO] = {0};
    int rc = parse_job(&j, argc, argv, OPT_OUT_DIR | OPT_GRAD);
    if (rc) return rc;
    rc = open_job(&j);
    og_grad_options o = grad_options(&j);
    if (!rc && og_grad_create(j.m, &o, &g)) rc = cli_fail();
    int no = g ? og_grad_output_count(g) : 0;
    int nr = g ? og_grad_input_count(g) + og_grad_weight_count(g) : 0;
    if (!rc && (no > MAX_IO || nr > MAX_IO)) {
        fprintf(stderr, "onnxgrad: more than %d outputs or gradients\n", MAX_IO);
        rc = 1;
    }
    if (!rc) rc = load_seeds(&j, g, seeds);
    if (!rc && og_grad_run(g, j.in_names, (const og_tensor *const *)j.inputs, j.n_in,
                           (const og_tensor *const *)seeds, outs, grads))
        rc = cli_fail();
    if (!rc) {
        const char *names[3 * MAX_IO];
        og_tensor *all[3 * MAX_IO];
        char gnames[2 * MAX_IO][300];
        int n = 0;
        for (int k = 0; k < no; k++) {
            names[n] = og_grad_output_name(g, k);
            all[n++] = outs[k];
        }
        for (int k = 0; k < nr; k++) {
            const char *base = k < og_grad_input_count(g)
                                   ? og_grad_input_name(g, k)
                                   : og_grad_weight_name(g, k - og_grad_input_count(g));
            snprintf(gnames[k], sizeof gnames[k], "%s_grad", base);
            names[n] = gnames[k];
            all[n++] = grads[k];
        }
        rc = cli_write_outputs(names, all, n, j.out_dir);
    }
    for (int k = 0; k < MAX_IO; k++) {
        og_tensor_free(seeds[k]);
        og_tensor_free(outs[k]);
    }
    for (int k = 0; k < 2 * MAX_IO; k++) og_tensor_free(grads[k]);
    og_grad_free(g);
    close_job(&j);
    return rc;
}

static int cmd_export(int argc, char **argv)
{
    job j = {0};
    og_grad *g = NULL;
    int rc = parse_job(&j, argc, argv, OPT_OUT_DIR | OPT_EXPORT);
    if (rc) return rc;
    if (og_model_load_file(j.model_path, NULL, &j.m)) return cli_fail();
    og_grad_options o = grad_options(&j);
    if (og_grad_create(j.m, &o, &g)) rc = cli_fail();
    if (!rc && cli_make_dir(j.out_dir) != 0) {
        fprintf(stderr, "onnxgrad: cannot create folder '%s': %s\n", j.out_dir, strerror(errno));
        rc = 1;
    }
    if (!rc && og_grad_save_graphs(g, j.out_dir, j.prefix, j.suffix)) rc = cli_fail();
    if (!rc) {
        const char *p = j.prefix ? j.prefix : "", *s = j.suffix ? j.suffix : "";
        printf("%s/%straining%s.onnx: training graph (%d nodes)\n", j.out_dir, p, s,
               og_model_node_count(og_grad_training_model(g)));
        printf("%s/%seval%s.onnx: eval graph (%d nodes)\n", j.out_dir, p, s,
               og_model_node_count(og_grad_eval_model(g)));
    }
    og_grad_free(g);
    close_job(&j);
    return rc;
}

/* float32 tensor -> new float64 copy; others: a plain copy */
static og_status to_double(const og_tensor *t, og_tensor **out)
{
    if (og_tensor_dtype(t) != OG_FLOAT)
        return og_tensor_from_data(og_tensor_dtype(t), og_tensor_rank(t), og_tensor_dims(t),
                                   og_tensor_cdata(t), og_tensor_nbytes(t), NULL, out);
    og_status st = og_tensor_create(OG_DOUBLE, og_tensor_rank(t), og_tensor_dims(t), NULL, out);
    if (st) return st;
    const float *s = og_tensor_cdata(t);
    double *d = og_tensor_data(*out);
    for (int64_t i = 0; i < og_tensor_numel(t); i++) d[i] = s[i];
    return OG_OK;
}

static double lcg_uniform(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* L = sum_j <r_j, y_j> for the outputs of one forward run */
static og_status objective(og_session *s, const char *const *names, const og_tensor *const *in,
                           int n, const char *const *onames, og_tensor *const *r, int no,
                           double *out)
{
    og_tensor *y[MAX_IO] = {0};
    og_status st = og_session_run_named(s, names, in, n, onames, no, y);
    double sum = 0;
    for (int k = 0; !st && k < no; k++) {
        if (og_tensor_dtype(y[k]) != OG_DOUBLE) continue;
        const double *a = og_tensor_cdata(y[k]), *b = og_tensor_cdata(r[k]);
        for (int64_t i = 0; i < og_tensor_numel(y[k]); i++) sum += a[i] * b[i];
    }
    for (int k = 0; k < no; k++) og_tensor_free(y[k]);
    *out = sum;
    return st;
}

static int cmd_check(int argc, char **argv)
{
    job j = {0};
    j.tolerance = 1e-4;
    og_model *m64 = NULL;
    og_grad *g = NULL;
    og_session *fs = NULL;
    og_tensor *x64[MAX_IO] = {0}, *r[MAX_IO] = {0}, *outs[MAX_IO] = {0}, *grads[2 * MAX_IO] = {0};
    og_tensor *bound[2 * MAX_IO] = {0};
    const char *bnames[2 * MAX_IO];
    int worst_rc = 0;
    int rc = parse_job(&j, argc, argv, OPT_CHECK);
    if (rc) return rc;
    rc = open_job(&j);
    if (!rc && og_model_convert_float64(j.m, &m64)) rc = cli_fail();
    for (int i = 0; !rc && i < j.n_in; i++)
        if (to_double(j.inputs[i], &x64[i])) rc = cli_fail();
    og_grad_options o = grad_options(&j);
    if (!rc && og_grad_create(m64, &o, &g)) rc = cli_fail();
    int no = g ? og_grad_output_count(g) : 0, ni = g ? og_grad_input_count(g) : 0;
    int nw = g ? og_grad_weight_count(g) : 0;
    if (!rc && (no > MAX_IO || ni + nw > MAX_IO)) {
        fprintf(stderr, "onnxgrad: too many outputs or gradients\n");
        rc = 1;
    }
    /* random seeds r_j, shaped like the outputs */
    og_session_options so = {0};
    so.threads = j.threads;
    if (!rc && og_session_create(og_grad_training_model(g), &so, &fs)) rc = cli_fail();
    const char *onames[MAX_IO];
    for (int k = 0; k < no; k++) onames[k] = og_grad_output_name(g, k);
    if (!rc) {
        og_session *plain = NULL;
        if (og_session_create(m64, &so, &plain) ||
            og_session_run_named(plain, j.in_names, (const og_tensor *const *)x64, j.n_in, onames,
                                 no, outs))
            rc = cli_fail();
        og_session_free(plain);
        uint64_t state = 12345;
        for (int k = 0; !rc && k < no; k++) {
            if (og_tensor_create(og_tensor_dtype(outs[k]), og_tensor_rank(outs[k]),
                                 og_tensor_dims(outs[k]), NULL, &r[k])) {
                rc = cli_fail();
                break;
            }
            if (og_tensor_dtype(r[k]) == OG_DOUBLE) {
                double *d = og_tensor_data(r[k]);
                for (int64_t i = 0; i < og_tensor_numel(r[k]); i++) d[i] = lcg_uniform(&state);
            }
            og_tensor_free(outs[k]);
            outs[k] = NULL;
        }
    }
    if (!rc && og_grad_run(g, j.in_names, (const og_tensor *const *)x64, j.n_in,
                           (const og_tensor *const *)r, outs, grads))
        rc = cli_fail();
    /* bind: inputs, then every trained weight (overridable in the training graph), then
     * the seeds the training graph requires */
    int nb = 0;
    for (int i = 0; !rc && i < j.n_in; i++) {
        bnames[nb] = j.in_names[i];
        bound[nb++] = x64[i];
    }
    const og_model *tm = g ? og_grad_training_model(g) : NULL;
    for (int k = 0; !rc && k < nw; k++) {
        const char *wn = og_grad_weight_name(g, k);
        for (int q = 0; q < og_model_initializer_count(tm); q++)
            if (strcmp(og_model_initializer_name(tm, q), wn) == 0) {
                if (to_double(og_model_initializer(tm, q), &bound[nb])) rc = cli_fail();
                bnames[nb++] = wn;
            }
    }
    char seed_names[MAX_IO][300];
    int n_seeds = 0;
    for (int k = 0; !rc && k < no; k++) {
        if (og_tensor_dtype(r[k]) != OG_DOUBLE) continue; /* labels: no gradient, no seed */
        snprintf(seed_names[k], sizeof seed_names[k], "%s_grad", onames[k]);
        bnames[nb] = seed_names[k];
        bound[nb++] = r[k];
        n_seeds++;
    }
    if (!rc) printf("%-40s %12s %10s\n", "gradient of", "max rel err", "checked");
    for (int p = 0; !rc && p < ni + nw; p++) {
        const char *pname = p < ni ? og_grad_input_name(g, p) : og_grad_weight_name(g, p - ni);
        int bi = -1;
        for (int q = 0; q < nb; q++)
            if (strcmp(bnames[q], pname) == 0) bi = q;
        const og_tensor *an = grads[p];
        if (bi < 0 || og_tensor_dtype(bound[bi]) != OG_DOUBLE) continue;
        double *x = og_tensor_data(bound[bi]);
        const double *ga = og_tensor_cdata(an);
        int64_t numel = og_tensor_numel(bound[bi]);
        double scale = 0;
        for (int64_t i = 0; i < numel; i++) scale = fmax(scale, fabs(ga[i]));
        int64_t step = numel > 24 ? numel / 24 : 1;
        double worst = 0;
        int checked = 0;
        for (int64_t i = 0; i < numel && !rc; i += step) {
            double x0 = x[i], eps = 1e-6 * fmax(1.0, fabs(x0)), lp, lm;
            x[i] = x0 + eps;
            if (objective(fs, bnames, (const og_tensor *const *)bound, nb, onames, r, no, &lp))
                rc = cli_fail();
            x[i] = x0 - eps;
            if (!rc &&
                objective(fs, bnames, (const og_tensor *const *)bound, nb, onames, r, no, &lm))
                rc = cli_fail();
            x[i] = x0;
            double fd = (lp - lm) / (2 * eps);
            double den = fmax(fmax(fabs(fd), fabs(ga[i])), fmax(1e-3 * scale, 1e-10));
            double err = fabs(fd - ga[i]) / den;
            if (err > worst) worst = err;
            checked++;
        }
        if (rc) break;
        printf("%-40s %12.3g %6d/%-6lld%s\n", pname, worst, checked, (long long)numel,
               worst > j.tolerance ? "  FAIL" : "");
        if (worst > j.tolerance) worst_rc = 1;
    }
    if (!rc && worst_rc)
        fprintf(stderr,
                "onnxgrad: a gradient differs from finite differences by more than "
                "%g\n",
                j.tolerance);
    for (int k = 0; k < MAX_IO; k++) {
        og_tensor_free(x64[k]);
        og_tensor_free(r[k]);
        og_tensor_free(outs[k]);
    }
    for (int k = 0; k < 2 * MAX_IO; k++) og_tensor_free(grads[k]);
    for (int k = j.n_in; k < nb - n_seeds; k++) og_tensor_free(bound[k]); /* the weight copies */
    og_session_free(fs);
    og_grad_free(g);
    og_model_free(m64);
    close_job(&j);
    return rc ? rc : worst_rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("onnxgrad %s\n", OG_VERSION_STRING);
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(strcmp(cmd, "train") == 0 ? cli_train_usage : usage, stdout);
            return 0;
        }
    if (strcmp(cmd, "info") == 0) return cmd_info(argc - 2, argv + 2);
    if (strcmp(cmd, "run") == 0) return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "bench") == 0) return cmd_bench(argc - 2, argv + 2);
    if (strcmp(cmd, "grad") == 0) return cmd_grad(argc - 2, argv + 2);
    if (strcmp(cmd, "check") == 0) return cmd_check(argc - 2, argv + 2);
    if (strcmp(cmd, "export") == 0) return cmd_export(argc - 2, argv + 2);
    if (strcmp(cmd, "train") == 0) return cli_train(argc - 2, argv + 2);
    fprintf(stderr, "onnxgrad: unknown command '%s' (see 'onnxgrad help')\n", cmd);
    return 2;
}
