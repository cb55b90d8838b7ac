/* Datasets: CSV (header or not, quotes, CRLF, chosen columns, int64 targets, weights, every
 * error), .npy, .npz (stored, deflate, zip64; truncated and corrupted archives refused
 * without a crash), og_dataset_from_tensors, split and batch, and failing allocations.
 * Fixtures: tests/data/train/ (make_fixtures.py).  Run from the repository root. */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "core/rng.h"
#include "test.h"
#include "train/train.h"

#define FIX "tests/data/train/"

static char tmp_path[128];

/* Write `text` to a temporary file with extension ext; returns its path. */
static const char *tmp_file(const char *ext, const void *text, size_t n)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/og_test_data_%d%s", (int)getpid(), ext);
    FILE *f = fopen(tmp_path, "wb");
    if (!f) return tmp_path;
    if (n) fwrite(text, 1, n, f);
    fclose(f);
    return tmp_path;
}

static og_status load_text(const char *ext, const char *text, const og_data_options *o,
                           og_dataset **d)
{
    og_status st = og_dataset_load(tmp_file(ext, text, strlen(text)), o, NULL, d);
    remove(tmp_path);
    return st;
}

static const float *fx(const og_dataset *d) { return og_tensor_cdata(og_dataset_features(d)); }
static const float *fy(const og_dataset *d) { return og_tensor_cdata(og_dataset_targets(d)); }
static const int64_t *iy(const og_dataset *d) { return og_tensor_cdata(og_dataset_targets(d)); }

static bool dims_are(const og_tensor *t, int rank, int64_t d0, int64_t d1)
{
    if (!t || og_tensor_rank(t) != rank) return false;
    const int64_t *d = og_tensor_dims(t);
    return d[0] == d0 && (rank < 2 || d[1] == d1);
}

static bool has(const char *needle) { return strstr(og_last_error(), needle) != NULL; }

static void csv_basic(void)
{
    og_dataset *d = NULL;
    /* header, defaults: the last column is the target, the others features */
    CHECK_OK(load_text(".csv", "a,b,c,label\n1,2,3,0\n4,5.5,-6,1\n", NULL, &d));
    if (d) {
        CHECK(og_dataset_size(d) == 2);
        CHECK(dims_are(og_dataset_features(d), 2, 2, 3));
        CHECK(dims_are(og_dataset_targets(d), 1, 2, 0));
        CHECK(og_tensor_dtype(og_dataset_targets(d)) == OG_FLOAT);
        CHECK(og_dataset_weights(d) == NULL);
        const float *x = fx(d), *y = fy(d);
        CHECK(x[0] == 1 && x[2] == 3 && x[3] == 4 && x[4] == 5.5f && x[5] == -6);
        CHECK(y[0] == 0 && y[1] == 1);
        CHECK(og_dataset_feature_name(d, 0) && strcmp(og_dataset_feature_name(d, 0), "a") == 0);
        CHECK(og_dataset_feature_name(d, 2) && strcmp(og_dataset_feature_name(d, 2), "c") == 0);
        CHECK(og_dataset_feature_name(d, 3) == NULL && og_dataset_feature_name(d, -1) == NULL);
    }
    og_dataset_free(d);

    /* no header, CRLF, no final newline, blank lines in between and at the end; columns
     * by index; the target is the first column */
    const char *t[] = {"0"}, *f[] = {"2", "1"};
    og_data_options o = {0};
    o.no_header = 1;
    o.targets = t;
    o.n_targets = 1;
    o.features = f;
    o.n_features = 2;
    CHECK_OK(load_text(".csv", "7,1,2\r\n\r\n8,3,4\r\n9,5,6\r\n\r\n  \r\n", &o, &d));
    if (d) {
        CHECK(og_dataset_size(d) == 3);
        CHECK(dims_are(og_dataset_features(d), 2, 3, 2));
        const float *x = fx(d), *y = fy(d);
        CHECK(x[0] == 2 && x[1] == 1 && x[4] == 6 && x[5] == 5);
        CHECK(y[0] == 7 && y[1] == 8 && y[2] == 9);
        CHECK(og_dataset_feature_name(d, 0) == NULL); /* no header, no names */
    }
    og_dataset_free(d);
    CHECK(load_text(".csv", "1,2\n3,4", &o, &d) == OG_ERR_INVALID_ARG); /* index 2 */
    og_dataset_free(d);

    /* quotes: names with the delimiter, "" escapes and a newline; quoted numbers; an unused
     * text column with a quoted newline and delimiter (lines still counted right) */
    const char *q = "\xEF\xBB\xBF\"x, one\",\"say \"\"hi\"\"\",note,\"y\"\n"
                    "\"1.5\", 2 ,\"a, \"\"b\"\"\nc\",0\n"
                    "3,\" 4 \",plain,1\n";
    o = (og_data_options){0};
    const char *fq[] = {"x, one", "say \"hi\""};
    o.features = fq;
    o.n_features = 2;
    CHECK_OK(load_text(".csv", q, &o, &d));
    if (d) {
        CHECK(og_dataset_size(d) == 2);
        const float *x = fx(d), *y = fy(d);
        CHECK(x[0] == 1.5f && x[1] == 2 && x[2] == 3 && x[3] == 4);
        CHECK(y[0] == 0 && y[1] == 1);
        CHECK(strcmp(og_dataset_feature_name(d, 1), "say \"hi\"") == 0);
    }
    og_dataset_free(d);
    /* the same file with a bad cell on its fourth physical line */
    const char *q2 = "a,note,y\n1,\"two\nlines\",0\nx,z,1\n";
    CHECK(load_text(".csv", q2, NULL, &d) == OG_ERR_PARSE); /* "note" is a feature */
    CHECK(has("line 2, column 'note' (index 1): 'two?lines' is not a number"));
    const char *fa[] = {"a"};
    o.features = fa;
    o.n_features = 1;
    CHECK(load_text(".csv", q2, &o, &d) == OG_ERR_PARSE);
    CHECK(has("line 4, column 'a' (index 0)") && has("'x' is not a number"));

    /* names, a weight column, int64 targets, several targets, other delimiters */
    const char *w = "id;f1;f2;cls;wt;r\n"
                    "s1;0.5;1e3;2;0.25;-1\n"
                    "s2;-2.5E-2;+4;-3;1;2.0\n";
    o = (og_data_options){0};
    o.delimiter = ';';
    const char *tw[] = {"cls"}, *fw[] = {"f2", "f1"};
    o.targets = tw;
    o.n_targets = 1;
    o.features = fw;
    o.n_features = 2;
    o.weight = "wt";
    o.target_dtype = OG_INT64;
    CHECK_OK(load_text(".csv", w, &o, &d));
    if (d) {
        const float *x = fx(d), *wt = og_tensor_cdata(og_dataset_weights(d));
        CHECK(og_tensor_dtype(og_dataset_targets(d)) == OG_INT64);
        CHECK(x[0] == 1000 && x[1] == 0.5f && x[2] == 4 && x[3] == -0.025f);
        CHECK(iy(d)[0] == 2 && iy(d)[1] == -3);
        CHECK(dims_are(og_dataset_weights(d), 1, 2, 0) && wt[0] == 0.25f && wt[1] == 1);
        CHECK(strcmp(og_dataset_feature_name(d, 0), "f2") == 0);
    }
    og_dataset_free(d);
    /* defaults with a weight: features are what is left; "r" (last) is the target; the
     * text column "id" must then be excluded explicitly, here by its index */
    const char *t2[] = {"r", "cls"};
    o.targets = t2;
    o.n_targets = 2;
    o.features = NULL;
    o.n_features = 0;
    o.target_dtype = OG_FLOAT;
    CHECK(load_text(".csv", w, &o, &d) == OG_ERR_PARSE); /* "s1" is not a number */
    CHECK(has("line 2, column 'id' (index 0)"));
    const char *f3[] = {"1", "f2"};
    o.features = f3;
    o.n_features = 2;
    CHECK_OK(load_text(".csv", w, &o, &d));
    if (d) {
        CHECK(dims_are(og_dataset_targets(d), 2, 2, 2));
        CHECK(fy(d)[0] == -1 && fy(d)[1] == 2 && fy(d)[2] == 2 && fy(d)[3] == -3);
        CHECK(fx(d)[0] == 0.5f && fx(d)[1] == 1000);
    }
    og_dataset_free(d);
    /* .tsv defaults to tabs; a weight as the last column moves the default target left */
    o = (og_data_options){0};
    o.weight = "w";
    CHECK_OK(load_text(".tsv", "a\tt\tw\n1\t2\t3\n", &o, &d));
    if (d) {
        CHECK(dims_are(og_dataset_features(d), 2, 1, 1) && fx(d)[0] == 1 && fy(d)[0] == 2);
        CHECK(((const float *)og_tensor_cdata(og_dataset_weights(d)))[0] == 3);
    }
    og_dataset_free(d);
}

static void csv_numbers(void)
{
    const char *cells[] = {"0",
                           "-0.0",
                           "1e3",
                           ".5",
                           "5.",
                           "+4",
                           "1e-30",
                           "1E+30",
                           "0.1",
                           "123456.789e-3",
                           "nan",
                           "-inf",
                           "Infinity",
                           "3.14159265358979323846264338327950288",
                           "1e-45",
                           "1e-50",
                           "1e39",
                           "123456789012345678901234567890",
                           "000000000000000000000000012.5e0",
                           "0.000000000000000000000000000001"};
    int n = (int)(sizeof cells / sizeof *cells);
    char text[1024] = "v,t\n";
    for (int i = 0; i < n; i++) {
        strcat(text, cells[i]);
        strcat(text, ",0\n");
    }
    og_dataset *d = NULL;
    CHECK_OK(load_text(".csv", text, NULL, &d));
    if (!d) return;
    CHECK(og_dataset_size(d) == n);
    const float *x = fx(d);
    for (int i = 0; i < n; i++) {
        float want = strtof(cells[i], NULL);
        bool same = (isnan(want) && isnan(x[i])) || want == x[i];
        if (!same) fprintf(stderr, "cell '%s': got %.9g, want %.9g\n", cells[i], x[i], want);
        CHECK(same);
    }
    og_dataset_free(d);
    /* int64 targets: exact 64-bit integers, integral floats, nothing else */
    og_data_options o = {0};
    o.target_dtype = OG_INT64;
    CHECK_OK(load_text(".csv", "x,y\n1,9223372036854775807\n2,-9223372036854775807\n3,4.0\n4,1e2\n",
                       &o, &d));
    if (d) {
        CHECK(iy(d)[0] == INT64_MAX && iy(d)[1] == -INT64_MAX && iy(d)[2] == 4 && iy(d)[3] == 100);
    }
    og_dataset_free(d);
    CHECK(load_text(".csv", "x,y\n1,2\n2,3.5\n", &o, &d) == OG_ERR_PARSE);
    CHECK(has("line 3, column 'y' (index 1)") && has("'3.5' is not an integer"));
    CHECK(load_text(".csv", "x,y\n1,99999999999999999999\n", &o, &d) == OG_ERR_PARSE);
    CHECK(load_text(".csv", "x,y\n1,nan\n", &o, &d) == OG_ERR_PARSE);
}

static void csv_errors(void)
{
    og_dataset *d = NULL;
    og_data_options o = {0};
    const char *t[] = {"zzz"};
    o.targets = t;
    o.n_targets = 1;
    CHECK(load_text(".csv", "alpha,beta,gamma\n1,2,3\n", &o, &d) == OG_ERR_INVALID_ARG);
    CHECK(has("no column 'zzz'") && has("alpha, beta, gamma"));
    CHECK(d == NULL);
    o.no_header = 1;
    CHECK(load_text(".csv", "1,2,3\n", &o, &d) == OG_ERR_INVALID_ARG);
    CHECK(has("0-based index (0..2)"));
    t[0] = "3";
    CHECK(load_text(".csv", "1,2,3\n", &o, &d) == OG_ERR_INVALID_ARG);
    CHECK(has("out of range"));
    /* a long header is listed in part */
    char big[4096] = "";
    for (int i = 0; i < 300; i++) snprintf(big + strlen(big), 16, "%scol%d", i ? "," : "", i);
    strcat(big, "\n");
    for (int i = 0; i < 300; i++) strcat(big, i ? ",1" : "1");
    o.no_header = 0;
    t[0] = "nope";
    CHECK(load_text(".csv", big, &o, &d) == OG_ERR_INVALID_ARG);
    CHECK(has("col0, col1") && has("(300 in all)"));

    CHECK(load_text(".csv", "a,b\n1,2\n3,x4\n", NULL, &d) == OG_ERR_PARSE);
    CHECK(has("line 3, column 'b' (index 1)") && has("'x4' is not a number"));
    CHECK(load_text(".csv", "a,b\n1,2\n3,4,5\n6,7\n", NULL, &d) == OG_ERR_PARSE);
    CHECK(has("line 3 has 3 fields, expected 2"));
    CHECK(load_text(".csv", "a,b,c\n1,2,3\n4,5\n", NULL, &d) == OG_ERR_PARSE);
    CHECK(has("line 3 has 2 fields, expected 3"));
    o = (og_data_options){0};
    o.no_header = 1;
    CHECK(load_text(".csv", "1,2\n\n3\n", &o, &d) == OG_ERR_PARSE);
    CHECK(has("line 3 has 1 fields, expected 2 (as the first row)"));
    CHECK(load_text(".csv", "a,b\n1,\n", NULL, &d) == OG_ERR_PARSE);
    CHECK(has("line 2, column 'b' (index 1): empty cell"));
    CHECK(load_text(".csv", "a,b\n1,\"2\n", NULL, &d) == OG_ERR_PARSE);
    CHECK(has("line 2: unterminated quoted field"));
    CHECK(load_text(".csv", "a,b\n1,\"2\"x\n", NULL, &d) == OG_ERR_PARSE);
    CHECK(has("after a closing quote"));
    CHECK(load_text(".csv", "a,b\n1,\"2\"\"\"\n", NULL, &d) == OG_ERR_PARSE); /* 2" */
    CHECK(load_text(".csv", "", NULL, &d) == OG_ERR_INVALID_ARG);
    CHECK(has("empty file"));
    CHECK(load_text(".csv", "\r\n \n\n", NULL, &d) == OG_ERR_INVALID_ARG);
    CHECK(load_text(".csv", "a,b,c\n", NULL, &d) == OG_ERR_INVALID_ARG);
    CHECK(has("empty dataset"));
    CHECK(load_text(".csv", "a,b,c\n\n\r\n", NULL, &d) == OG_ERR_INVALID_ARG);
    CHECK(load_text(".csv", "only\n1\n", NULL, &d) == OG_ERR_INVALID_ARG);
    CHECK(has("no feature column"));
    o = (og_data_options){0};
    o.delimiter = '"';
    CHECK(load_text(".csv", "a,b\n1,2\n", &o, &d) == OG_ERR_INVALID_ARG);
    o.delimiter = 0;
    o.target_dtype = OG_DOUBLE;
    CHECK(load_text(".csv", "a,b\n1,2\n", &o, &d) == OG_ERR_INVALID_ARG);
    CHECK(og_dataset_load("/nonexistent/x.csv", NULL, NULL, &d) == OG_ERR_IO);
    CHECK(og_dataset_load(NULL, NULL, NULL, &d) == OG_ERR_INVALID_ARG);
    CHECK(og_dataset_load("x.csv", NULL, NULL, NULL) == OG_ERR_INVALID_ARG);
    CHECK(d == NULL);
    og_dataset_free(NULL);
}

static void npy(void)
{
    og_dataset *d = NULL;
    CHECK_OK(og_dataset_load(FIX "table.npy", NULL, NULL, &d));
    if (d) {
        CHECK(dims_are(og_dataset_features(d), 2, 5, 3) &&
              dims_are(og_dataset_targets(d), 1, 5, 0));
        const float *x = fx(d), *y = fy(d);
        for (int i = 0; i < 5; i++) {
            CHECK(y[i] == (float)(i % 3));
            for (int j = 0; j < 3; j++) CHECK(x[i * 3 + j] == (float)(i + j / 10.0));
        }
        CHECK(og_dataset_feature_name(d, 0) == NULL);
    }
    og_dataset_free(d);
    og_data_options o = {0};
    const char *t[] = {"3"}, *f[] = {"2", "0"};
    o.targets = t;
    o.n_targets = 1;
    o.features = f;
    o.n_features = 2;
    o.weight = "1";
    o.target_dtype = OG_INT64;
    CHECK_OK(og_dataset_load(FIX "table.npy", &o, NULL, &d));
    if (d) {
        CHECK(dims_are(og_dataset_features(d), 2, 5, 2));
        CHECK(fx(d)[2] == 1.2f && fx(d)[3] == 1.0f && iy(d)[4] == 1);
        CHECK(((const float *)og_tensor_cdata(og_dataset_weights(d)))[1] == 1.1f);
    }
    og_dataset_free(d);
    t[0] = "1"; /* 0.1, 1.1, ...: not integers */
    o.weight = NULL;
    CHECK(og_dataset_load(FIX "table.npy", &o, NULL, &d) == OG_ERR_TYPE);
    CHECK(has("row 0, column 1 is 0.1"));
    t[0] = "4";
    CHECK(og_dataset_load(FIX "table.npy", &o, NULL, &d) == OG_ERR_INVALID_ARG);
    t[0] = "y";
    CHECK(og_dataset_load(FIX "table.npy", &o, NULL, &d) == OG_ERR_INVALID_ARG);
    o = (og_data_options){0};
    o.target_dtype = OG_INT64;
    CHECK_OK(og_dataset_load(FIX "table_int.npy", &o, NULL, &d));
    if (d) {
        CHECK(dims_are(og_dataset_features(d), 2, 4, 2) && fx(d)[7] == 20);
        CHECK(iy(d)[0] == 4 && iy(d)[3] == 22);
    }
    og_dataset_free(d);
    CHECK(og_dataset_load(FIX "vector.npy", NULL, NULL, &d) == OG_ERR_SHAPE);
    CHECK(has("2-D"));
    CHECK(og_dataset_load(FIX "stored.npz", NULL, NULL, NULL) == OG_ERR_INVALID_ARG);
}

static void npz(void)
{
    og_dataset *d = NULL;
    og_data_options o = {0};
    /* stored: N-D features kept, float64 -> float32; sample_weight found by name */
    CHECK_OK(og_dataset_load(FIX "stored.npz", NULL, NULL, &d));
    if (d) {
        const og_tensor *x = og_dataset_features(d);
        CHECK(og_tensor_rank(x) == 4 && og_tensor_dims(x)[1] == 1 && og_tensor_dims(x)[3] == 3);
        CHECK(og_tensor_dtype(x) == OG_FLOAT && og_tensor_numel(x) == 36);
        for (int i = 0; i < 36; i++) CHECK(fx(d)[i] == i / 4.0f);
        CHECK(og_tensor_dtype(og_dataset_targets(d)) == OG_FLOAT && fy(d)[5] == 2);
        const float *w = og_tensor_cdata(og_dataset_weights(d));
        CHECK(w && w[0] == 0.5f && w[5] == 3);
    }
    og_dataset_free(d);
    o.target_dtype = OG_INT64;
    CHECK_OK(og_dataset_load(FIX "stored.npz", &o, NULL, &d));
    if (d) CHECK(og_tensor_dtype(og_dataset_targets(d)) == OG_INT64 && iy(d)[4] == 1);
    og_dataset_free(d);
    /* deflate, int32 labels widened */
    CHECK_OK(og_dataset_load(FIX "compressed.npz", &o, NULL, &d));
    if (d) {
        CHECK(og_dataset_size(d) == 40 && dims_are(og_dataset_features(d), 2, 40, 4));
        bool ok = true;
        for (int i = 0; i < 40; i++) {
            ok = ok && iy(d)[i] == i % 3;
            for (int j = 0; j < 4; j++) ok = ok && fx(d)[i * 4 + j] == (float)(i + j / 10.0);
        }
        CHECK(ok);
        CHECK(og_dataset_weights(d) == NULL);
    }
    og_dataset_free(d);
    /* zip64 records with the classic end record saturated */
    CHECK_OK(og_dataset_load(FIX "zip64.npz", &o, NULL, &d));
    if (d) {
        CHECK(dims_are(og_dataset_features(d), 2, 7, 3) && fx(d)[20] == 6.2f && iy(d)[6] == 6);
    }
    og_dataset_free(d);
    /* written through a stream: data descriptors, no sizes in the local headers */
    CHECK_OK(og_dataset_load(FIX "streamed.npz", &o, NULL, &d));
    if (d) CHECK(dims_are(og_dataset_features(d), 2, 4, 2) && fx(d)[7] == 3.1f && iy(d)[3] == 3);
    og_dataset_free(d);
    /* second-choice default names; float16 features; bool labels */
    CHECK_OK(og_dataset_load(FIX "names.npz", &o, NULL, &d));
    if (d) {
        CHECK(fx(d)[5] == 2.099609375f); /* 2.1 in float16 */
        CHECK(iy(d)[0] == 1 && iy(d)[1] == 0 && iy(d)[2] == 1);
    }
    og_dataset_free(d);
    /* names given */
    const char *f[] = {"extra"}, *t[] = {"extra"};
    o.features = f;
    o.n_features = 1;
    o.targets = t;
    o.n_targets = 1;
    o.target_dtype = OG_FLOAT;
    CHECK_OK(og_dataset_load(FIX "names.npz", &o, NULL, &d));
    if (d) CHECK(og_dataset_size(d) == 2 && og_tensor_rank(og_dataset_features(d)) == 1);
    og_dataset_free(d);
    t[0] = "nope";
    CHECK(og_dataset_load(FIX "names.npz", &o, NULL, &d) == OG_ERR_INVALID_ARG);
    CHECK(has("no array 'nope'") && has("data, labels, extra"));
    o = (og_data_options){0};
    o.weight = "w";
    CHECK(og_dataset_load(FIX "stored.npz", &o, NULL, &d) == OG_ERR_INVALID_ARG);
    CHECK(has("X, y, sample_weight"));
    o.weight = "y"; /* weights must be float-convertible [N]: int64 y is */
    CHECK_OK(og_dataset_load(FIX "stored.npz", &o, NULL, &d));
    og_dataset_free(d);
    o.weight = "X"; /* [6, 1, 2, 3] is not [N] */
    CHECK(og_dataset_load(FIX "stored.npz", &o, NULL, &d) == OG_ERR_SHAPE);
    o = (og_data_options){0};
    const char *two[] = {"X", "y"};
    o.targets = two;
    o.n_targets = 2;
    CHECK(og_dataset_load(FIX "stored.npz", &o, NULL, &d) == OG_ERR_INVALID_ARG);
    CHECK(og_dataset_load(FIX "table_int.npy", &o, NULL, &d) == OG_ERR_INVALID_ARG); /* "X" */
    /* targets: float labels as int64 must be integral */
    o = (og_data_options){0};
    CHECK_OK(og_dataset_load(FIX "float_labels.npz", &o, NULL, &d));
    if (d) CHECK(fy(d)[1] == 2.5f);
    og_dataset_free(d);
    o.target_dtype = OG_INT64;
    CHECK(og_dataset_load(FIX "float_labels.npz", &o, NULL, &d) == OG_ERR_TYPE);
    CHECK(has("element 1 is 2.5"));
    CHECK(og_dataset_load(FIX "mismatch.npz", NULL, NULL, &d) == OG_ERR_SHAPE);
    CHECK(has("sample counts differ"));
    CHECK(og_dataset_load(FIX "names.npz", NULL, NULL, &d) == OG_OK);
    og_dataset_free(d);
}

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    *n = 0;
    if (!f) return NULL;
    unsigned char *b = malloc(1 << 16);
    *n = fread(b, 1, 1 << 16, f);
    fclose(f);
    return b;
}

/* Everything of an archive through the internal reader: open, read and parse each entry. */
static og_status read_archive(const unsigned char *b, size_t n)
{
    og_zip z;
    og_status st = og_zip_open(b, n, "fuzz", NULL, &z);
    if (st) return st;
    for (int64_t i = 0; i < z.n_entries && !st; i++) {
        const void *bytes;
        size_t size;
        void *owned;
        st = og_zip_read(&z, i, &bytes, &size, &owned);
        if (st) break;
        og_tensor *t = NULL;
        st = og_npy_load_buffer(bytes, size, NULL, &t);
        og_tensor_free(t);
        free(owned);
    }
    og_zip_close(&z);
    return st;
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static og_status load_bytes(const unsigned char *b, size_t n)
{
    og_dataset *d = NULL;
    og_status st = og_dataset_load(tmp_file(".npz", b, n), NULL, NULL, &d);
    remove(tmp_path);
    og_dataset_free(d);
    return st;
}

static void npz_corrupt(void)
{
    const char *files[] = {FIX "compressed.npz", FIX "stored.npz", FIX "zip64.npz",
                           FIX "streamed.npz"};
    for (int fi = 0; fi < 4; fi++) {
        size_t n;
        unsigned char *orig = read_all(files[fi], &n), *b = malloc(n);
        CHECK(orig && n > 100);
        if (!orig || !b) return;
        CHECK_OK(read_archive(orig, n));
        /* every truncation: a clean parse error (a prefix never holds a valid archive) */
        int bad = 0;
        for (size_t k = 0; k < n; k++)
            if (read_archive(orig, k) != OG_ERR_PARSE) bad++;
        CHECK(bad == 0);
        /* every byte flipped, several ways: never a crash; only the statuses a corrupt
         * archive may give */
        int other = 0, parse = 0;
        unsigned char flips[] = {0xFF, 0x01, 0x80};
        for (size_t k = 0; k < n; k++)
            for (int v = 0; v < 3; v++) {
                memcpy(b, orig, n);
                b[k] ^= flips[v];
                og_status st = read_archive(b, n);
                parse += st == OG_ERR_PARSE;
                if (st != OG_OK && st != OG_ERR_PARSE && st != OG_ERR_UNSUPPORTED) {
                    other++;
                    fprintf(stderr, "%s byte %zu ^ 0x%02x: %s: %s\n", files[fi], k, flips[v],
                            og_status_name(st), og_last_error());
                }
            }
        printf("%s: %zu truncations and %zu byte flips, %d parse errors\n", files[fi], n, 3 * n,
               parse);
        CHECK(other == 0);
        CHECK(parse > (int)n); /* most flips are caught (data by CRC) */
        free(orig);
        free(b);
    }

    /* targeted corruptions of compressed.npz, through og_dataset_load */
    size_t n;
    unsigned char *orig = read_all(FIX "compressed.npz", &n), *b = malloc(n);
    if (!orig || !b) return;
    size_t eocd = n - 22, cd = orig[eocd + 16] | (size_t)orig[eocd + 17] << 8;
    CHECK(orig[eocd] == 'P' && orig[eocd + 1] == 'K' && orig[eocd + 2] == 5);
    CHECK(orig[cd] == 'P' && orig[cd + 2] == 1);
    CHECK(load_bytes(orig, n) == OG_OK);
    CHECK(load_bytes(orig, 0) == OG_ERR_PARSE);
    CHECK(has("not a zip archive"));
    CHECK(load_bytes(orig, n / 2) == OG_ERR_PARSE);
    CHECK(load_bytes(orig, n - 1) == OG_ERR_PARSE);
    CHECK(load_bytes((const unsigned char *)"a,b\n1,2\n", 8) == OG_ERR_PARSE);
#define CORRUPT(stmt, needle)                                                                      \
    do {                                                                                           \
        memcpy(b, orig, n);                                                                        \
        stmt;                                                                                      \
        CHECK(load_bytes(b, n) == OG_ERR_PARSE);                                                   \
        CHECK(has(needle));                                                                        \
    } while (0)
    CORRUPT(put32(b + eocd + 16, 0x7FFFFFF0u), "central directory"); /* cd offset */
    CORRUPT(put32(b + eocd + 12, (uint32_t)n), "central directory"); /* cd size */
    CORRUPT(b[eocd + 10] = 0xF0, "entries cannot fit");              /* entry count */
    CORRUPT(put32(b + cd + 42, (uint32_t)n - 10), "starts outside"); /* local offset */
    CORRUPT(put32(b + cd + 20, 0x10000), "past the end");            /* csize */
    CORRUPT(put32(b + cd + 24, 0x7FFFFFF0u), "cannot inflate");      /* usize */
    CORRUPT(put32(b + cd + 24, 700), "more than its declared");      /* usize smaller */
    CORRUPT(put32(b + cd + 24, 800), "fewer than its declared");     /* usize larger */
    CORRUPT(b[cd + 16] ^= 1, "CRC mismatch");                        /* crc */
    CORRUPT(b[0] = 'Q', "bad local header");                         /* local signature */
    CORRUPT(b[30] = 'Z', "names another file");                      /* local name */
    CORRUPT(b[29] = 0xFF, "past the end");                           /* local extra len */
    CORRUPT(b[cd + 30] = 0xFF, "overruns");                          /* central extra */
    CORRUPT(b[cd + 46] = 0, "NUL byte");                             /* central name */
    CORRUPT(put32(b + 60, 0xFFFFFFFFu), "X.npy");                    /* deflate data */
    memcpy(b, orig, n);
    b[cd + 10] = 12; /* bzip2 */
    CHECK(load_bytes(b, n) == OG_ERR_UNSUPPORTED);
    b[cd + 10] = 8;
    b[cd + 8] |= 1; /* encrypted */
    CHECK(load_bytes(b, n) == OG_ERR_UNSUPPORTED);
    free(orig);
    free(b);
}

static void from_tensors_split_batch(void)
{
    enum { N = 10 };
    float xv[N * 2], wv[N];
    int64_t yv[N];
    for (int i = 0; i < N; i++) {
        xv[2 * i] = (float)i;
        xv[2 * i + 1] = (float)(100 + i);
        yv[i] = 1000 + i;
        wv[i] = 0.5f * (float)i;
    }
    int64_t dx[2] = {N, 2}, dy[1] = {N};
    og_tensor *x = NULL, *y = NULL, *w = NULL, *bad = NULL;
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 2, dx, xv, sizeof xv, NULL, &x));
    CHECK_OK(og_tensor_from_data(OG_INT64, 1, dy, yv, sizeof yv, NULL, &y));
    CHECK_OK(og_tensor_from_data(OG_FLOAT, 1, dy, wv, sizeof wv, NULL, &w));
    og_dataset *d = NULL, *tr = NULL, *va = NULL, *tr2 = NULL, *va2 = NULL;
    CHECK_OK(og_dataset_from_tensors(x, y, w, NULL, &d));
    if (!d) goto done;
    /* copies, not views */
    xv[0] = -1;
    ((float *)og_tensor_data(x))[0] = -1;
    CHECK(fx(d)[0] == 0 && og_dataset_size(d) == N && og_dataset_feature_name(d, 0) == NULL);
    /* errors */
    og_dataset *e = NULL;
    CHECK(og_dataset_from_tensors(y, y, NULL, NULL, &e) == OG_ERR_TYPE);
    CHECK(og_dataset_from_tensors(x, x, y, NULL, &e) == OG_ERR_TYPE);
    int64_t d9[1] = {9}, d0[2] = {0, 2};
    CHECK_OK(og_tensor_create(OG_FLOAT, 1, d9, NULL, &bad));
    CHECK(og_dataset_from_tensors(x, bad, NULL, NULL, &e) == OG_ERR_SHAPE);
    CHECK(og_dataset_from_tensors(x, y, bad, NULL, &e) == OG_ERR_SHAPE);
    og_tensor_free(bad);
    CHECK_OK(og_tensor_create(OG_FLOAT, 2, d0, NULL, &bad));
    CHECK(og_dataset_from_tensors(bad, bad, NULL, NULL, &e) == OG_ERR_INVALID_ARG);
    og_tensor_free(bad);
    CHECK(og_dataset_from_tensors(NULL, y, NULL, NULL, &e) == OG_ERR_INVALID_ARG);
    CHECK(e == NULL);

    /* split: round(0.25 * 10) = 3 (half away from zero) */
    CHECK_OK(og_dataset_split(d, 0.25, 42, &tr, &va));
    CHECK_OK(og_dataset_split(d, 0.25, 42, &tr2, &va2));
    if (tr && va && tr2 && va2) {
        CHECK(og_dataset_size(tr) == 7 && og_dataset_size(va) == 3);
        CHECK(memcmp(fx(tr), fx(tr2), 7 * 2 * sizeof(float)) == 0);
        CHECK(memcmp(fx(va), fx(va2), 3 * 2 * sizeof(float)) == 0);
        /* every sample once, rows kept together */
        int seen[N] = {0};
        bool rows = true, moved = false;
        for (int part = 0; part < 2; part++) {
            const og_dataset *s = part ? va : tr;
            const float *sw = og_tensor_cdata(og_dataset_weights(s));
            for (int64_t i = 0; i < og_dataset_size(s); i++) {
                int k = (int)fx(s)[2 * i];
                if (k < 0 || k >= N) {
                    rows = false;
                    continue;
                }
                seen[k]++;
                rows = rows && fx(s)[2 * i + 1] == 100 + k && iy(s)[i] == 1000 + k &&
                       sw[i] == 0.5f * k;
                moved = moved || (part == 0 && k != i);
            }
        }
        for (int k = 0; k < N; k++) CHECK(seen[k] == 1);
        CHECK(rows && moved);
        og_dataset_free(tr2);
        og_dataset_free(va2);
        tr2 = va2 = NULL;
        /* another seed, another order */
        CHECK_OK(og_dataset_split(d, 0.25, 43, &tr2, &va2));
        if (tr2) CHECK(memcmp(fx(tr), fx(tr2), 7 * 2 * sizeof(float)) != 0);
    }
    og_dataset *a = NULL, *b = NULL;
    CHECK(og_dataset_split(d, 0.0, 1, &a, &b) == OG_ERR_INVALID_ARG);
    CHECK(og_dataset_split(d, 1.0, 1, &a, &b) == OG_ERR_INVALID_ARG);
    CHECK(og_dataset_split(d, NAN, 1, &a, &b) == OG_ERR_INVALID_ARG);
    CHECK(og_dataset_split(d, 0.04, 1, &a, &b) == OG_ERR_INVALID_ARG); /* 0 for validation */
    CHECK(og_dataset_split(d, 0.96, 1, &a, &b) == OG_ERR_INVALID_ARG); /* 0 for training */
    CHECK(a == NULL && b == NULL);
    /* PRNG: xoshiro256** seeded by splitmix64 (whose first output from 0 is the published
     * 0xe220a8397b1dcdaf), values from an independent Python implementation */
    og_rng r1;
    og_rng_seed(&r1, 0);
    CHECK(r1.s[0] == 0xe220a8397b1dcdafu);
    og_rng_seed(&r1, 42);
    CHECK(og_rng_next(&r1) == 0x15780b2e0c2ec716u);
    CHECK(og_rng_next(&r1) == 0x6104d9866d113a7eu);
    CHECK(og_rng_next(&r1) == 0xae17533239e499a1u);
    for (int i = 0; i < 1000; i++) CHECK(og_rng_below(&r1, 3) < 3);

    /* batch */
    int64_t idx[4] = {9, 0, 9, 4};
    og_tensor *bx = NULL, *by = NULL, *bw = NULL;
    CHECK_OK(og_dataset_batch(d, idx, 4, &bx, &by, &bw));
    if (bx && by && bw) {
        CHECK(dims_are(bx, 2, 4, 2) && dims_are(by, 1, 4, 0) && dims_are(bw, 1, 4, 0));
        const float *px = og_tensor_cdata(bx), *pw = og_tensor_cdata(bw);
        const int64_t *py = og_tensor_cdata(by);
        CHECK(px[0] == 9 && px[1] == 109 && px[2] == 0 && px[4] == 9 && px[6] == 4);
        CHECK(py[0] == 1009 && py[1] == 1000 && py[3] == 1004);
        CHECK(pw[0] == 4.5f && pw[3] == 2.0f);
    }
    og_tensor_free(bx);
    og_tensor_free(by);
    og_tensor_free(bw);
    CHECK_OK(og_dataset_batch(d, idx, 2, &bx, &by, NULL));
    og_tensor_free(bx);
    og_tensor_free(by);
    CHECK_OK(og_dataset_batch(d, NULL, 0, &bx, &by, &bw));
    CHECK(bx && og_tensor_dims(bx)[0] == 0 && og_tensor_numel(by) == 0);
    og_tensor_free(bx);
    og_tensor_free(by);
    og_tensor_free(bw);
    idx[2] = 10;
    CHECK(og_dataset_batch(d, idx, 4, &bx, &by, &bw) == OG_ERR_INVALID_ARG);
    CHECK(has("indices[2] = 10") && bx == NULL && by == NULL && bw == NULL);
    idx[2] = -1;
    CHECK(og_dataset_batch(d, idx, 4, &bx, &by, &bw) == OG_ERR_INVALID_ARG);
    CHECK(og_dataset_batch(d, idx, -1, &bx, &by, &bw) == OG_ERR_INVALID_ARG);
    /* a dataset without weights gives *w == NULL */
    og_dataset *nw = NULL;
    CHECK_OK(og_dataset_from_tensors(x, y, NULL, NULL, &nw));
    bw = (og_tensor *)1;
    CHECK_OK(og_dataset_batch(nw, idx, 2, &bx, &by, &bw));
    CHECK(bw == NULL);
    og_tensor_free(bx);
    og_tensor_free(by);
    og_dataset_free(nw);
done:
    og_dataset_free(d);
    og_dataset_free(tr);
    og_dataset_free(va);
    og_dataset_free(tr2);
    og_dataset_free(va2);
    og_tensor_free(x);
    og_tensor_free(y);
    og_tensor_free(w);
}

/* ---- failing allocations -------------------------------------------------------------- */

static og_status alloc_attempt(og_test_counting *c, const char *path, const og_data_options *o)
{
    og_allocator a = {og_test_malloc, og_test_free, c};
    og_dataset *d = NULL, *tr = NULL, *va = NULL;
    og_tensor *x = NULL, *y = NULL, *w = NULL;
    int64_t idx[2] = {1, 0};
    og_status st = og_dataset_load(path, o, &a, &d);
    if (!st) st = og_dataset_split(d, 0.5, 3, &tr, &va);
    if (!st) st = og_dataset_batch(tr, idx, 2, &x, &y, &w);
    og_tensor_free(x);
    og_tensor_free(y);
    og_tensor_free(w);
    og_dataset_free(tr);
    og_dataset_free(va);
    og_dataset_free(d);
    return st;
}

static void alloc_failures(void)
{
    char csv_path[160];
    snprintf(csv_path, sizeof csv_path, "%s", tmp_file("_alloc.csv", "", 0));
    FILE *f = fopen(csv_path, "wb");
    if (f) {
        fputs("a,b,w,y\n1,2,0.5,0\n3,4,1,1\n5,6,2,2\n7,8,1,0\n", f);
        fclose(f);
    }
    og_data_options ow = {0};
    ow.weight = "w";
    ow.target_dtype = OG_INT64;
    struct {
        const char *path;
        const og_data_options *o;
    } cases[] = {{csv_path, &ow},
                 {FIX "compressed.npz", NULL},
                 {FIX "stored.npz", NULL},
                 {FIX "table.npy", NULL}};
    for (int k = 0; k < 4; k++) {
        int nomem = 0, other = 0;
        long n;
        for (n = 0; n < 10000; n++) {
            og_test_counting c = {0, n, 0};
            og_status st = alloc_attempt(&c, cases[k].path, cases[k].o);
            if (c.live != 0)
                fprintf(stderr, "%s fail_at=%ld leaked %ld\n", cases[k].path, n, c.live);
            CHECK(c.live == 0);
            if (st == OG_OK) break;
            if (st == OG_ERR_NOMEM) {
                nomem++;
            } else {
                other++;
                fprintf(stderr, "%s fail_at=%ld: %s: %s\n", cases[k].path, n, og_status_name(st),
                        og_last_error());
            }
        }
        printf("%s: succeeded once %ld allocations were allowed; %d clean OG_ERR_NOMEM\n",
               cases[k].path, n, nomem);
        CHECK(n < 10000 && other == 0 && nomem >= 10);
    }
    remove(csv_path);
}

/* og_dataset_load_buffer: the name picks the format and names the data in messages; an
 * unterminated buffer is read within its size. */
static void from_buffer(void)
{
    const char text[] = "a,b,y\n1,2,3\n4,5,6"; /* no trailing newline */
    og_dataset *d = NULL;
    CHECK_OK(og_dataset_load_buffer(text, sizeof text - 1, "mem.csv", NULL, NULL, &d));
    CHECK(og_dataset_size(d) == 2);
    if (d) {
        const float *y = og_tensor_cdata(og_dataset_targets(d));
        CHECK(y[0] == 3.0f && y[1] == 6.0f);
    }
    og_dataset_free(d);
    d = NULL;
    CHECK_OK(og_dataset_load_buffer(text, 12, "mem.csv", NULL, NULL, &d)); /* "a,b,y\n1,2,3" */
    CHECK(og_dataset_size(d) == 1);
    og_dataset_free(d);
    d = NULL;
    const char bad[] = "a,y\n1,x\n";
    CHECK(og_dataset_load_buffer(bad, sizeof bad - 1, "mem.csv", NULL, NULL, &d) == OG_ERR_PARSE);
    CHECK(strstr(og_last_error(), "mem.csv") && strstr(og_last_error(), "line 2"));
    CHECK(og_dataset_load_buffer("xx", 2, "mem.npz", NULL, NULL, &d) == OG_ERR_PARSE && !d);
    CHECK(og_dataset_load_buffer(NULL, 0, NULL, NULL, NULL, &d) == OG_ERR_INVALID_ARG);
}

int main(void)
{
    csv_basic();
    from_buffer();
    csv_numbers();
    csv_errors();
    npy();
    npz();
    npz_corrupt();
    from_tensors_split_batch();
    alloc_failures();
    TEST_DONE();
}
