/*
 * onnxgrad: the command-line tool.  It uses only the public header.
 *
 *   onnxgrad info MODEL
 *   onnxgrad run MODEL --input NAME=FILE.npy ... [--threads N] [--max-memory SIZE] -o DIR
 *   onnxgrad bench MODEL --input NAME=FILE.npy ... [--threads N] [-n ITERS] [--warmup N]
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

static const char usage[] =
    "usage: onnxgrad COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  info MODEL                 inputs, outputs, initializers, opsets and op counts\n"
    "  run MODEL --input NAME=FILE.npy ... [--threads N] [--max-memory SIZE] -o DIR\n"
    "                             run the model; write each output to DIR/<name>.npy and\n"
    "                             DIR/manifest.json (tensor name -> file name)\n"
    "  bench MODEL --input NAME=FILE.npy ... [--train] [--weights A,B] [--threads N]\n"
    "       [-n ITERS] [--warmup N]\n"
    "                             time inference, or with --train one training step\n"
    "                             (forward + backward); print one JSON line with the median\n"
    "                             and min milliseconds (after warm-up), the median CPU\n"
    "                             milliseconds of the process and its peak RSS\n"
    "  grad MODEL --input NAME=FILE.npy ... [--grad-output NAME=FILE.npy ...]\n"
    "       [--weights A,B] [--threads N] -o DIR\n"
    "                             outputs and gradients: <name>_grad for every float input\n"
    "                             and every trained weight (default: all float initializers;\n"
    "                             an integer zero point of QuantizeLinear/DequantizeLinear\n"
    "                             named in --weights gets a float gradient); a missing\n"
    "                             --grad-output defaults to ones\n"
    "  export MODEL -o DIR [--prefix P] [--suffix S] [--weights A,B]\n"
    "       [--input NAME=FILE.npy ...]\n"
    "                             write DIR/<P>training<S>.onnx (forward + backward: inputs,\n"
    "                             <output>_grad seeds -> outputs, <name>_grad; the weights\n"
    "                             are initializers) and DIR/<P>eval<S>.onnx; the training\n"
    "                             graph is loaded back (types and shapes inferred) and, with\n"
    "                             --input, run: exit 1 if it does not\n"
    "  check MODEL --input NAME=FILE.npy ... [--weights A,B] [--tolerance T]\n"
    "       [--samples K]         compare gradients with central finite differences on a\n"
    "                             float64 copy, K elements per tensor (default: 2 to 24,\n"
    "                             about 2000 runs in all; the largest gradients and evenly\n"
    "                             spaced ones); per input and weight: the largest relative\n"
    "                             error beyond the finite difference's noise, the largest\n"
    "                             |gradient|, that noise and the step (an integer weight:\n"
    "                             listed as not checked); exit 1 above T (default 1e-4)\n"
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
    "  --max-memory SIZE          run, grad, check, bench: the memory budget of each session\n"
    "                             (bytes, or with K, M, G, T; default 4G): a run that needs\n"
    "                             more fails before allocating\n"
    "  -o, --output-dir DIR       where outputs go (created if missing)\n"
    "  -n ITERS                   bench: timed runs (default 20)\n"
    "  --warmup N                 bench: untimed runs before them (default 3, 1 when\n"
    "                             ITERS < 5); a process's first runs are slower (caches,\n"
    "                             clock), so compare peers after the same warm-up\n"
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

/* What run and bench share: the model, its bound inputs and a session.  The lists hold as
 * many entries as the command line has words (no fixed limit); parse_job allocates them
 * and close_job frees them. */
typedef struct job {
    const char *model_path, *out_dir;
    const char **in_names, **in_files;
    const char **go_names, **go_files; /* --grad-output */
    const char **weights;              /* --weights */
    int n_in, n_go, n_weights, threads, iters, warmup;
    int64_t max_memory; /* --max-memory: the sessions' budget (0: the library's default) */
    bool has_weights, train;
    double tolerance;
    int samples;                 /* check: elements per tensor (0: automatic) */
    const char *prefix, *suffix; /* export */
    og_model *m;
    og_session *s;
    og_tensor **inputs;
} job;

/* calloc of n pointers (at least one), or NULL after printing the error */
static void *new_list(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) fprintf(stderr, "onnxgrad: out of memory\n");
    return p;
}

enum { OPT_OUT_DIR = 1, OPT_GRAD = 2, OPT_CHECK = 4, OPT_EXPORT = 8, OPT_BENCH = 16 };

static int parse_job(job *j, int argc, char **argv, unsigned allowed)
{
    bool want_out_dir = (allowed & OPT_OUT_DIR) != 0;
    size_t cap = (size_t)argc + 1; /* no list can have more entries than words */
    j->in_names = new_list(cap, sizeof *j->in_names);
    j->in_files = new_list(cap, sizeof *j->in_files);
    j->go_names = new_list(cap, sizeof *j->go_names);
    j->go_files = new_list(cap, sizeof *j->go_files);
    j->inputs = new_list(cap, sizeof *j->inputs);
    if (!j->in_names || !j->in_files || !j->go_names || !j->go_files || !j->inputs) return 1;
    for (int i = 0; i < argc; i++) {
        if ((allowed & OPT_GRAD) && strcmp(argv[i], "--grad-output") == 0) {
            if (++i >= argc) return cli_bad_usage("--grad-output needs NAME=FILE.npy");
            char *eq = strchr(argv[i], '=');
            if (!eq) return cli_bad_usage("--grad-output needs NAME=FILE.npy");
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
            size_t n = 1;
            for (const char *c = argv[i]; *c; c++) n += *c == ',';
            const char **w = realloc(j->weights, ((size_t)j->n_weights + n) * sizeof *w);
            if (!w) {
                fprintf(stderr, "onnxgrad: out of memory\n");
                return 1;
            }
            j->weights = w;
            for (char *tok = strtok(argv[i], ","); tok; tok = strtok(NULL, ","))
                j->weights[j->n_weights++] = tok;
            continue;
        }
        if ((allowed & OPT_CHECK) && strcmp(argv[i], "--samples") == 0) {
            char *end;
            if (++i >= argc) return cli_bad_usage("--samples needs a number");
            long k = strtol(argv[i], &end, 10);
            if (*end || k < 1 || k > 24) return cli_bad_usage("--samples needs a number in 1..24");
            j->samples = (int)k;
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
        } else if (strcmp(argv[i], "--max-memory") == 0) {
            if (++i >= argc || !cli_parse_bytes(argv[i], &j->max_memory))
                return cli_bad_usage("--max-memory needs a size: bytes, or a number with K, M, "
                                     "G or T");
        } else if (strcmp(argv[i], "--threads") == 0 || strcmp(argv[i], "-n") == 0 ||
                   ((allowed & OPT_BENCH) && strcmp(argv[i], "--warmup") == 0)) {
            const char *opt = argv[i];
            if (++i >= argc) return cli_bad_usage("--threads, -n and --warmup need a number");
            char *end;
            long t = strtol(argv[i], &end, 10);
            if (*end || t < 0 || t > 1000000)
                return cli_bad_usage("--threads, -n and --warmup need a number >= 0");
            if (strcmp(opt, "-n") == 0)
                j->iters = (int)t;
            else if (strcmp(opt, "--warmup") == 0)
                j->warmup = (int)t;
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
    opts.max_memory = j->max_memory;
    if (og_session_create(j->m, &opts, &j->s)) return cli_fail();
    return 0;
}

static void close_job(job *j)
{
    for (int i = 0; j->inputs && i < j->n_in; i++) og_tensor_free(j->inputs[i]);
    og_session_free(j->s);
    og_model_free(j->m);
    free(j->in_names);
    free(j->in_files);
    free(j->go_names);
    free(j->go_files);
    free(j->weights);
    free(j->inputs);
}

/* n_out tensors, then free the array */
static void free_tensors(og_tensor **t, int n)
{
    for (int k = 0; t && k < n; k++) og_tensor_free(t[k]);
    free(t);
}

static int cmd_run(int argc, char **argv)
{
    job j = {0};
    int rc = parse_job(&j, argc, argv, OPT_OUT_DIR);
    if (!rc) rc = open_job(&j);
    int no = rc ? 0 : og_model_output_count(j.m);
    og_tensor **outputs = rc ? NULL : new_list((size_t)no, sizeof *outputs);
    const char **names = rc ? NULL : new_list((size_t)no, sizeof *names);
    if (!rc && (!outputs || !names)) rc = 1;
    if (!rc && og_session_run(j.s, j.in_names, (const og_tensor *const *)j.inputs, j.n_in, outputs))
        rc = cli_fail();
    for (int k = 0; !rc && k < no; k++) names[k] = og_model_output_name(j.m, k);
    if (!rc) rc = cli_write_outputs(names, outputs, no, j.out_dir);
    free_tensors(outputs, no);
    free(names);
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
static og_status bench_step(job *j, og_instance *inst, og_tensor **outputs, int n_out,
                            og_tensor **grads, int n_res)
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
    for (int k = 0; k < n_out; k++) og_tensor_free(outputs[k]), outputs[k] = NULL;
    for (int k = 0; k < n_res; k++) og_tensor_free(grads[k]), grads[k] = NULL;
    return st;
}

static int cmd_bench(int argc, char **argv)
{
    job j = {0};
    j.iters = 20;
    j.warmup = -1; /* not given */
    double *times = NULL;
    og_grad *g = NULL;
    og_instance *inst = NULL;
    int rc = parse_job(&j, argc, argv, OPT_BENCH | OPT_GRAD);
    if (!rc && j.iters < 1) rc = cli_bad_usage("-n must be at least 1");
    if (rc) {
        close_job(&j); /* parse_job's lists */
        return rc;
    }
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
    og_tensor **outs = new_list((size_t)n_out, sizeof *outs);
    og_tensor **grads = new_list((size_t)n_res, sizeof *grads);
    if (!rc && (!times || !outs || !grads)) {
        fprintf(stderr, "onnxgrad: out of memory\n");
        rc = 1;
    }
    int warmup = j.warmup >= 0 ? j.warmup : j.iters < 5 ? 1 : 3;
    for (int it = -warmup; !rc && it < j.iters; it++) {
        double t0 = now_ms(), c0 = cpu_ms();
        if (bench_step(&j, inst, outs, n_out, grads, n_res)) {
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
        printf(", \"mode\": \"%s\", \"threads\": %d, \"iters\": %d, \"warmup\": %d, "
               "\"median_ms\": %.4f, \"min_ms\": %.4f, \"median_cpu_ms\": %.4f, "
               "\"peak_rss_kb\": %ld}\n",
               j.train ? "train" : "inference", j.threads, j.iters, warmup, times[j.iters / 2],
               times[0], cpu[j.iters / 2], peak_rss_kb());
    }
    free(times);
    free(outs);
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
    o.max_memory = j->max_memory;
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

/* "<base>_grad", malloc'ed (names have any length) */
static char *grad_name(const char *base)
{
    size_t n = strlen(base) + 6;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s_grad", base);
    return s;
}

/* The gradient objects' results: outputs, then the gradients of inputs and weights, with
 * their names ("<name>_grad"), all allocated for any count. */
typedef struct grad_results {
    int no, nr;
    og_tensor **seeds, **outs, **grads;
    char **gnames;
} grad_results;

static int results_alloc(grad_results *r, const og_grad *g)
{
    r->no = og_grad_output_count(g);
    r->nr = og_grad_input_count(g) + og_grad_weight_count(g);
    r->seeds = new_list((size_t)r->no, sizeof *r->seeds);
    r->outs = new_list((size_t)r->no, sizeof *r->outs);
    r->grads = new_list((size_t)r->nr, sizeof *r->grads);
    r->gnames = new_list((size_t)r->nr, sizeof *r->gnames);
    if (!r->seeds || !r->outs || !r->grads || !r->gnames) return 1;
    int ni = og_grad_input_count(g);
    for (int k = 0; k < r->nr; k++) {
        const char *base = k < ni ? og_grad_input_name(g, k) : og_grad_weight_name(g, k - ni);
        if (!(r->gnames[k] = grad_name(base))) {
            fprintf(stderr, "onnxgrad: out of memory\n");
            return 1;
        }
    }
    return 0;
}

static void results_free(grad_results *r)
{
    free_tensors(r->seeds, r->no);
    free_tensors(r->outs, r->no);
    free_tensors(r->grads, r->nr);
    for (int k = 0; r->gnames && k < r->nr; k++) free(r->gnames[k]);
    free(r->gnames);
    memset(r, 0, sizeof *r);
}

static int cmd_grad(int argc, char **argv)
{
    job j = {0};
    og_grad *g = NULL;
    grad_results res = {0};
    const char **names = NULL;
    og_tensor **all = NULL;
    int rc = parse_job(&j, argc, argv, OPT_OUT_DIR | OPT_GRAD);
    if (!rc) rc = open_job(&j);
    og_grad_options o = grad_options(&j);
    if (!rc && og_grad_create(j.m, &o, &g)) rc = cli_fail();
    if (!rc) rc = results_alloc(&res, g);
    if (!rc) rc = load_seeds(&j, g, res.seeds);
    if (!rc && og_grad_run(g, j.in_names, (const og_tensor *const *)j.inputs, j.n_in,
                           (const og_tensor *const *)res.seeds, res.outs, res.grads))
        rc = cli_fail();
    if (!rc) {
        names = new_list((size_t)(res.no + res.nr), sizeof *names);
        all = new_list((size_t)(res.no + res.nr), sizeof *all);
        if (!names || !all) rc = 1;
    }
    if (!rc) {
        int n = 0;
        for (int k = 0; k < res.no; k++) {
            names[n] = og_grad_output_name(g, k);
            all[n++] = res.outs[k];
        }
        for (int k = 0; k < res.nr; k++) {
            names[n] = res.gnames[k];
            all[n++] = res.grads[k];
        }
        rc = cli_write_outputs(names, all, n, j.out_dir);
    }
    free(names);
    free(all);
    results_free(&res);
    og_grad_free(g);
    close_job(&j);
    return rc;
}

/* Run the training graph `path` as written, with the inputs given and ones as output
 * gradients, so that export never leaves a graph that does not run.  Loading it resolves
 * every node (types and shapes inferred over the saved graph) and a session binds every
 * node to a kernel; the run then checks every shape on real inputs. */
static int check_written(const char *path, const job *j)
{
    og_model *m = NULL;
    og_session *s = NULL;
    og_tensor **outs = NULL, **seeds = NULL;
    const char **names = NULL;
    const og_tensor **vals = NULL;
    int rc = 0, no = 0, nb = 0;
    if (og_model_load_file(path, NULL, &m) || og_session_create(m, NULL, &s)) {
        fprintf(stderr, "onnxgrad: the written graph %s does not load: %s\n", path,
                og_last_error());
        rc = 1;
        goto done;
    }
    if (j->n_in == 0) goto done; /* nothing to run it on: loading checked what it can */
    no = og_model_output_count(m);
    int nin = og_model_input_count(m);
    outs = new_list((size_t)no, sizeof *outs);
    seeds = new_list((size_t)nin, sizeof *seeds);
    names = new_list((size_t)(nin + j->n_in), sizeof *names);
    vals = new_list((size_t)(nin + j->n_in), sizeof *vals);
    if (!outs || !seeds || !names || !vals) {
        rc = 1;
        goto done;
    }
    for (int i = 0; i < j->n_in; i++) {
        names[nb] = j->in_names[i];
        vals[nb++] = j->inputs[i];
    }
    /* seeds: ones shaped like the forward outputs (from a run of the eval half: the
     * training graph's outputs start with the model outputs, in the same order) */
    for (int i = 0; i < nin; i++) {
        const char *in = og_model_input_name(m, i);
        size_t len = strlen(in);
        if (len < 5 || strcmp(in + len - 5, "_grad") != 0) continue;
        og_tensor *y = NULL;
        char *oname = strdup(in);
        if (!oname) {
            rc = 1;
            goto done;
        }
        oname[len - 5] = 0;
        const char *on = oname;
        og_status st = og_session_run_named(s, names, vals, nb, &on, 1, &y);
        free(oname);
        if (st) {
            fprintf(stderr, "onnxgrad: the written graph %s does not run: %s\n", path,
                    og_last_error());
            rc = 1;
            goto done;
        }
        if (og_tensor_create(og_tensor_dtype(y), og_tensor_rank(y), og_tensor_dims(y), NULL,
                             &seeds[i])) {
            og_tensor_free(y);
            rc = cli_fail();
            goto done;
        }
        og_tensor_free(y);
        if (og_tensor_dtype(seeds[i]) == OG_FLOAT) {
            float *d = og_tensor_data(seeds[i]);
            for (int64_t k = 0; k < og_tensor_numel(seeds[i]); k++) d[k] = 1.0f;
        } else if (og_tensor_dtype(seeds[i]) == OG_DOUBLE) {
            double *d = og_tensor_data(seeds[i]);
            for (int64_t k = 0; k < og_tensor_numel(seeds[i]); k++) d[k] = 1.0;
        }
        names[nb] = in;
        vals[nb++] = seeds[i];
    }
    if (og_session_run(s, names, vals, nb, outs)) {
        fprintf(stderr, "onnxgrad: the written graph %s does not run: %s\n", path, og_last_error());
        rc = 1;
    }
done:
    free_tensors(outs, no);
    free_tensors(seeds, m ? og_model_input_count(m) : 0);
    free(names);
    free(vals);
    og_session_free(s);
    og_model_free(m);
    return rc;
}

static int cmd_export(int argc, char **argv)
{
    job j = {0};
    og_grad *g = NULL;
    int rc = parse_job(&j, argc, argv, OPT_OUT_DIR | OPT_EXPORT);
    if (!rc && og_model_load_file(j.model_path, NULL, &j.m)) rc = cli_fail();
    for (int i = 0; !rc && i < j.n_in; i++) {
        if (!j.in_names[i]) {
            if (og_model_input_count(j.m) != 1) {
                rc = cli_bad_usage("--input: name it as NAME=FILE.npy");
                break;
            }
            j.in_names[i] = og_model_input_name(j.m, 0);
        }
        if (og_npy_load(j.in_files[i], NULL, &j.inputs[i])) rc = cli_fail();
    }
    og_grad_options o = grad_options(&j);
    if (!rc && og_grad_create(j.m, &o, &g)) rc = cli_fail();
    if (!rc && cli_make_dir(j.out_dir) != 0) {
        fprintf(stderr, "onnxgrad: cannot create folder '%s': %s\n", j.out_dir, strerror(errno));
        rc = 1;
    }
    if (!rc && og_grad_save_graphs(g, j.out_dir, j.prefix, j.suffix)) rc = cli_fail();
    const char *p = j.prefix ? j.prefix : "", *s = j.suffix ? j.suffix : "";
    size_t plen = rc ? 0 : strlen(j.out_dir) + strlen(p) + strlen(s) + 32;
    char *path = rc ? NULL : malloc(plen);
    if (!rc && !path) rc = 1;
    if (!rc) {
        snprintf(path, plen, "%s/%straining%s.onnx", j.out_dir, p, s);
        rc = check_written(path, &j);
    }
    if (!rc) {
        printf("%s/%straining%s.onnx: training graph (%d nodes)%s\n", j.out_dir, p, s,
               og_model_node_count(og_grad_training_model(g)),
               j.n_in ? ", checked: it runs on the given inputs" : "");
        printf("%s/%seval%s.onnx: eval graph (%d nodes)\n", j.out_dir, p, s,
               og_model_node_count(og_grad_eval_model(g)));
    }
    free(path);
    og_grad_free(g);
    close_job(&j);
    return rc;
}

/* ---- check: gradients against finite differences ------------------------------ */

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

/* What one finite-difference objective needs: L = sum_j <r_j, y_j> over the outputs of one
 * forward run of the training graph's session, with every bound tensor. */
typedef struct fd_ctx {
    og_session *s;
    const char **bnames;
    og_tensor **bound;
    int nb;
    const char **onames;
    og_tensor **r, **y;
    int no;
} fd_ctx;

/* *out = L; *abs_out = sum |r y| (the scale of L's rounding) */
static og_status objective(fd_ctx *c, double *out, double *abs_out)
{
    /* every run draws as the gradient object's first run did (Dropout's masks): the
     * function differentiated is the one whose gradient og_grad_run gave */
    og_status st = og_session_set_rng(c->s, 0, 0);
    if (!st)
        st = og_session_run_named(c->s, c->bnames, (const og_tensor *const *)c->bound, c->nb,
                                  c->onames, c->no, c->y);
    double sum = 0, sabs = 0;
    for (int k = 0; !st && k < c->no; k++) {
        if (og_tensor_dtype(c->y[k]) != OG_DOUBLE) continue;
        const double *a = og_tensor_cdata(c->y[k]), *b = og_tensor_cdata(c->r[k]);
        for (int64_t i = 0; i < og_tensor_numel(c->y[k]); i++) {
            sum += a[i] * b[i];
            sabs += fabs(a[i] * b[i]);
        }
    }
    for (int k = 0; k < c->no; k++) og_tensor_free(c->y[k]), c->y[k] = NULL;
    *out = sum;
    if (abs_out) *abs_out = sabs;
    return st;
}

/* The elements of a tensor to check: up to k/2 with the largest |gradient| (the rows an
 * embedding really uses, the channels that matter), the rest evenly spaced; no repeats. */
/* The error of the gradient ga at element i of x against central finite differences of
 * step h (and h/2), beyond their noise, relative to the larger of the two and to 1e-3 of
 * the model's largest gradient G; *noise_out the noise estimated */
static og_status fd_error(fd_ctx *c, double *x, int64_t i, double h, double ga, double G,
                          double Labs, double *err_out, double *noise_out)
{
    double x0 = x[i], L[4];
    const double off[4] = {h, -h, h / 2, -h / 2};
    for (int q = 0; q < 4; q++) {
        x[i] = x0 + off[q];
        og_status st = objective(c, &L[q], NULL);
        if (st) {
            x[i] = x0;
            return st;
        }
    }
    x[i] = x0;
    double fd_h = (L[0] - L[1]) / (2 * h), fd = (L[2] - L[3]) / h;
    /* uncertainty of fd: its change with the step (truncation, kinks crossed, rounding as
     * seen) plus the rounding of L's terms, eps |r y| / h */
    double noise = fabs(fd_h - fd) + 16 * 2.2e-16 * Labs / h;
    double excess = fabs(fd - ga) - 2 * noise;
    /* relative to the larger value, and to 1e-3 of the model's largest gradient: a
     * difference of 1e-7 G on a gradient 1e-5 G small (an early bias under ReLU6's kinks)
     * is no error (MobileNet-v2: autograd agreed to 2e-7) */
    double den = fmax(fmax(fabs(fd), fabs(ga)), fmax(1e-3 * G, 1e-300));
    *err_out = excess > 0 ? excess / den : 0;
    *noise_out = noise;
    return OG_OK;
}

static int pick_samples(const double *ga, int64_t numel, int k, int64_t *idx)
{
    int n = 0, top = k / 2;
    for (int64_t i = 0; i < numel; i++) { /* insertion into the top list, largest first */
        double v = fabs(ga[i]);
        if (n == top && !(v > fabs(ga[idx[n - 1]]))) continue;
        int at = n < top ? n++ : n - 1;
        while (at > 0 && fabs(ga[idx[at - 1]]) < v) {
            idx[at] = idx[at - 1];
            at--;
        }
        idx[at] = i;
    }
    int64_t step = numel > k - n ? numel / (k - n) : 1;
    for (int64_t i = 0; i < numel && n < k; i += step) {
        bool dup = false;
        for (int q = 0; q < n && !dup; q++) dup = idx[q] == i;
        if (!dup) idx[n++] = i;
    }
    return n;
}

static int cmd_check(int argc, char **argv)
{
    job j = {0};
    j.tolerance = 1e-4;
    og_model *m64 = NULL;
    og_grad *g = NULL;
    og_session *fs = NULL;
    grad_results res = {0};
    og_tensor **x64 = NULL;
    fd_ctx c = {0};
    int worst_rc = 0, nb = 0;
    int rc = parse_job(&j, argc, argv, OPT_CHECK);
    if (!rc) rc = open_job(&j);
    if (!rc && og_model_convert_float64(j.m, &m64)) rc = cli_fail();
    if (!rc && !(x64 = new_list((size_t)j.n_in, sizeof *x64))) rc = 1;
    for (int i = 0; !rc && i < j.n_in; i++)
        if (to_double(j.inputs[i], &x64[i])) rc = cli_fail();
    og_grad_options o = grad_options(&j);
    if (!rc && og_grad_create(m64, &o, &g)) rc = cli_fail();
    if (!rc) rc = results_alloc(&res, g);
    int no = res.no, ni = g ? og_grad_input_count(g) : 0, nw = g ? og_grad_weight_count(g) : 0;
    og_session_options so = {0};
    so.threads = j.threads;
    so.max_memory = j.max_memory;
    if (!rc && og_session_create(og_grad_training_model(g), &so, &fs)) rc = cli_fail();
    c.s = fs;
    c.no = no;
    c.onames = rc ? NULL : new_list((size_t)no, sizeof *c.onames);
    c.y = rc ? NULL : new_list((size_t)no, sizeof *c.y);
    c.r = res.seeds;
    c.bnames = rc ? NULL : new_list((size_t)(j.n_in + nw + no), sizeof *c.bnames);
    c.bound = rc ? NULL : new_list((size_t)(j.n_in + nw + no), sizeof *c.bound);
    if (!rc && (!c.onames || !c.y || !c.bnames || !c.bound)) rc = 1;
    for (int k = 0; !rc && k < no; k++) c.onames[k] = og_grad_output_name(g, k);
    /* random seeds r_j, shaped like the outputs */
    if (!rc) {
        og_session *plain = NULL;
        if (og_session_create(m64, &so, &plain) ||
            og_session_run_named(plain, j.in_names, (const og_tensor *const *)x64, j.n_in, c.onames,
                                 no, res.outs))
            rc = cli_fail();
        og_session_free(plain);
        uint64_t state = 12345;
        for (int k = 0; !rc && k < no; k++) {
            if (og_tensor_create(og_tensor_dtype(res.outs[k]), og_tensor_rank(res.outs[k]),
                                 og_tensor_dims(res.outs[k]), NULL, &res.seeds[k])) {
                rc = cli_fail();
                break;
            }
            if (og_tensor_dtype(res.seeds[k]) == OG_DOUBLE) {
                double *d = og_tensor_data(res.seeds[k]);
                for (int64_t i = 0; i < og_tensor_numel(res.seeds[k]); i++)
                    d[i] = lcg_uniform(&state);
            }
            og_tensor_free(res.outs[k]);
            res.outs[k] = NULL;
        }
    }
    if (!rc && og_grad_run(g, j.in_names, (const og_tensor *const *)x64, j.n_in,
                           (const og_tensor *const *)res.seeds, res.outs, res.grads))
        rc = cli_fail();
    /* bind: inputs, then every trained weight (overridable in the training graph), then
     * the seeds the training graph requires */
    for (int i = 0; !rc && i < j.n_in; i++) {
        c.bnames[nb] = j.in_names[i];
        c.bound[nb++] = x64[i];
    }
    int first_weight = nb;
    const og_model *tm = g ? og_grad_training_model(g) : NULL;
    for (int k = 0; !rc && k < nw; k++) {
        const char *wn = og_grad_weight_name(g, k);
        for (int q = 0; q < og_model_initializer_count(tm); q++)
            if (strcmp(og_model_initializer_name(tm, q), wn) == 0) {
                if (to_double(og_model_initializer(tm, q), &c.bound[nb])) rc = cli_fail();
                c.bnames[nb++] = wn;
                break;
            }
    }
    int first_seed = nb;
    for (int k = 0; !rc && k < no; k++) {
        c.bnames[nb] = NULL;
        for (int q = 0; q < og_model_input_count(tm); q++) {
            const char *in = og_model_input_name(tm, q);
            size_t ln = strlen(in), lo = strlen(c.onames[k]);
            if (ln == lo + 5 && strncmp(in, c.onames[k], lo) == 0 && strcmp(in + lo, "_grad") == 0)
                c.bnames[nb] = in;
        }
        if (c.bnames[nb]) c.bound[nb++] = res.seeds[k];
    }
    c.nb = nb;
    /* the scale of the whole model's gradient, and of L's rounding */
    double G = 0, L0 = 0, Labs = 0;
    for (int p = 0; !rc && p < ni + nw; p++) {
        if (!res.grads[p] || og_tensor_dtype(res.grads[p]) != OG_DOUBLE) continue;
        const double *ga = og_tensor_cdata(res.grads[p]);
        for (int64_t i = 0; i < og_tensor_numel(res.grads[p]); i++) G = fmax(G, fabs(ga[i]));
    }
    if (!rc && objective(&c, &L0, &Labs)) rc = cli_fail();
    /* about 2000 forward runs in all: 4 per checked element, 2 to 24 elements a tensor
     * (--samples K: K each) */
    int per = ni + nw > 0 ? 500 / (ni + nw) : 24;
    per = per < 2 ? 2 : (per > 24 ? 24 : per);
    if (j.samples > 0) per = j.samples;
    if (!rc) {
        printf("gradient scale of the model (largest |gradient|): %.3g; objective L = sum(r*y) "
               "with random r, |L| terms summing to %.3g\n",
               G, Labs);
        printf("%-40s %12s %10s %11s %11s %9s\n", "gradient of", "max rel err", "checked",
               "max |grad|", "fd noise", "step");
    }
    for (int p = 0; !rc && p < ni + nw; p++) {
        const char *pname = p < ni ? og_grad_input_name(g, p) : og_grad_weight_name(g, p - ni);
        int bi = -1;
        for (int q = 0; q < first_seed; q++)
            if (strcmp(c.bnames[q], pname) == 0) bi = q;
        const og_tensor *an = res.grads[p];
        if (bi >= 0 && og_tensor_dtype(c.bound[bi]) != OG_DOUBLE) {
            /* an integer weight (a quantization zero point): no finite step exists */
            printf("%-40s not checked: %s values have no finite differences\n", pname,
                   og_dtype_name(og_tensor_dtype(c.bound[bi])));
            continue;
        }
        if (bi < 0) continue;
        double *x = og_tensor_data(c.bound[bi]);
        const double *ga = og_tensor_cdata(an);
        int64_t numel = og_tensor_numel(c.bound[bi]);
        double gmax = 0, rms = 0;
        for (int64_t i = 0; i < numel; i++) {
            gmax = fmax(gmax, fabs(ga[i]));
            rms += x[i] * x[i];
        }
        rms = numel ? sqrt(rms / (double)numel) : 0;
        /* the step of this tensor: about cbrt(machine epsilon) times its values' scale,
         * the best trade between truncation (h^2) and rounding (eps / h) */
        double h = 6e-6 * fmax(rms, 0.1);
        int64_t idx[24]; /* per <= 24 */
        int k = pick_samples(ga, numel, per, idx);
        double worst = 0, noise_max = 0;
        for (int s = 0; s < k && !rc; s++) {
            int64_t i = idx[s];
            /* a disagreement is measured again at a step 64 times smaller: with batch
             * statistics every activation moves with one weight, and steps of 6e-6 cross
             * ReLU kinks whose slope changes the two steps above do not always see
             * (regnet_y_400mf in training mode, PyTorch in float64: finite differences
             * 4e-3 from autograd at a step of 6e-6, 3e-8 at 1e-7); a wrong gradient stays
             * wrong at any step */
            double err = 1e300, noise = 0;
            for (int t = 0; t < 2 && !rc && err > j.tolerance; t++) {
                double hs = t ? h / 64 : h, e = 0, nz = 0;
                if (fd_error(&c, x, i, hs, ga[i], G, Labs, &e, &nz)) rc = cli_fail();
                if (!rc && e < err) {
                    err = e;
                    noise = nz;
                }
            }
            if (rc) break;
            worst = fmax(worst, err);
            noise_max = fmax(noise_max, noise);
        }
        if (rc) break;
        printf("%-40s %12.3g %4d/%-6lld %11.3g %11.3g %9.2g%s\n", pname, worst, k, (long long)numel,
               gmax, noise_max, h, worst > j.tolerance ? "  FAIL" : "");
        if (worst > j.tolerance) worst_rc = 1;
    }
    if (!rc && worst_rc)
        fprintf(stderr,
                "onnxgrad: a gradient differs from finite differences by more than %g of its "
                "size, beyond their noise\n",
                j.tolerance);
    for (int k = first_weight; k < first_seed; k++) og_tensor_free(c.bound[k]);
    free(c.bnames);
    free(c.bound);
    free(c.onames);
    free(c.y);
    free_tensors(x64, j.n_in);
    results_free(&res);
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
            if (strcmp(cmd, "train") == 0)
                cli_train_usage(stdout);
            else
                fputs(usage, stdout);
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
