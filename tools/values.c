/* values.c: writing a run's outputs to a folder (cli.h: cli_write_outputs).
 *
 * A tensor goes to <stem>.npy; a sequence of tensors to one <stem>_<i>.npy per item; an
 * optional as its value (nothing when it has none); anything holding a map (ZipMap's
 * sequence of maps) to <stem>.json.  manifest.json maps every output name to its file, its
 * list of files, or null. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "onnxgrad.h"

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

int cli_make_dir(const char *dir)
{
    size_t n = strlen(dir);
    char *tmp = malloc(n + 1);
    if (!tmp) return -1;
    memcpy(tmp, dir, n + 1);
    int rc = 0;
    for (char *p = tmp + 1; *p && !rc; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) rc = -1;
        *p = '/';
    }
    if (!rc && mkdir(tmp, 0777) != 0 && errno != EEXIST) rc = -1;
    free(tmp);
    return rc;
}

/* ---- JSON of a value --------------------------------------------------------------- */

/* Numbers as Python's json reads them (NaN and Infinity included). */
static void json_number(FILE *f, double x, bool single)
{
    if (isnan(x))
        fputs("NaN", f);
    else if (isinf(x))
        fputs(x > 0 ? "Infinity" : "-Infinity", f);
    else
        fprintf(f, single ? "%.9g" : "%.17g", x);
}

static void json_element(FILE *f, const og_tensor *t, int64_t i)
{
    const void *d = og_tensor_cdata(t);
    switch (og_tensor_dtype(t)) {
    case OG_STRING: cli_json_string(f, og_tensor_string(t, i)); break;
    case OG_BOOL: fputs(((const uint8_t *)d)[i] ? "true" : "false", f); break;
    case OG_FLOAT: json_number(f, ((const float *)d)[i], true); break;
    case OG_DOUBLE: json_number(f, ((const double *)d)[i], false); break;
    case OG_INT64: fprintf(f, "%lld", (long long)((const int64_t *)d)[i]); break;
    case OG_INT32: fprintf(f, "%d", ((const int32_t *)d)[i]); break;
    case OG_UINT8: fprintf(f, "%u", ((const uint8_t *)d)[i]); break;
    case OG_INT8: fprintf(f, "%d", ((const int8_t *)d)[i]); break;
    case OG_UINT16: fprintf(f, "%u", ((const uint16_t *)d)[i]); break;
    case OG_INT16: fprintf(f, "%d", ((const int16_t *)d)[i]); break;
    case OG_UINT32: fprintf(f, "%u", ((const uint32_t *)d)[i]); break;
    case OG_UINT64: fprintf(f, "%llu", (unsigned long long)((const uint64_t *)d)[i]); break;
    default: fputs("null", f); break; /* float16, bfloat16: rare inside maps */
    }
}

/* A tensor as nested lists (a scalar as its element), dims d.. of the flat range at *i. */
static void json_tensor(FILE *f, const og_tensor *t, int d, int64_t *i)
{
    if (d == og_tensor_rank(t)) {
        json_element(f, t, (*i)++);
        return;
    }
    fputc('[', f);
    for (int64_t k = 0; k < og_tensor_dims(t)[d]; k++) {
        if (k) fputs(", ", f);
        json_tensor(f, t, d + 1, i);
    }
    fputc(']', f);
}

/* Recursion follows the value's nesting, which onnxgrad bounds (OG_MAX_NESTING). */
static void json_value(FILE *f, const og_tensor *v)
{
    int64_t i = 0;
    switch (og_tensor_kind(v)) {
    case OG_KIND_TENSOR: json_tensor(f, v, 0, &i); break;
    case OG_KIND_SEQUENCE:
        fputc('[', f);
        for (int64_t k = 0; k < og_sequence_length(v); k++) {
            if (k) fputs(", ", f);
            json_value(f, og_sequence_item(v, k));
        }
        fputc(']', f);
        break;
    case OG_KIND_MAP: {
        const og_tensor *keys = og_map_keys(v);
        fputc('{', f);
        for (int64_t k = 0; k < og_map_size(v); k++) {
            if (k) fputs(", ", f);
            if (og_tensor_dtype(keys) == OG_STRING) {
                cli_json_string(f, og_tensor_string(keys, k));
            } else {
                fputc('"', f); /* JSON keys are strings: "0", "1", ... */
                json_element(f, keys, k);
                fputc('"', f);
            }
            fputs(": ", f);
            json_value(f, og_map_value(v, k));
        }
        fputc('}', f);
        break;
    }
    case OG_KIND_OPTIONAL:
        if (og_optional_value(v))
            json_value(f, og_optional_value(v));
        else
            fputs("null", f);
        break;
    }
}

/* Whether v holds a map anywhere (then it is written as JSON). */
static bool has_map(const og_tensor *v)
{
    switch (og_tensor_kind(v)) {
    case OG_KIND_MAP: return true;
    case OG_KIND_SEQUENCE:
        for (int64_t k = 0; k < og_sequence_length(v); k++)
            if (has_map(og_sequence_item(v, k))) return true;
        return false;
    case OG_KIND_OPTIONAL: return og_optional_value(v) && has_map(og_optional_value(v));
    default: return false;
    }
}

/* ---- files ------------------------------------------------------------------------- */

/* A file name stem: characters outside A-Za-z0-9._- become '_' (malloc'ed). */
static char *sanitize(const char *name)
{
    size_t n = strlen(name);
    char *out = malloc(n + 2);
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        out[i] = ok ? c : '_';
    }
    /* a file name fits in NAME_MAX (255) with a suffix and an extension: long names are cut
     * (the manifest keeps the whole name, and new_file keeps the files unique) */
    if (n > 200) n = 200;
    out[n] = 0;
    if (n == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) strcpy(out, "_");
    return out;
}

/* The files written so far, so that names stay unique. */
typedef struct files {
    char **names;
    int n, cap;
} files;

static bool taken(const files *fs, const char *name)
{
    for (int i = 0; i < fs->n; i++)
        if (strcmp(fs->names[i], name) == 0) return true;
    return false;
}

/* A new unique file name "<stem><ext>" (or "<stem>_<k><ext>"), recorded in fs. */
static const char *new_file(files *fs, const char *stem, const char *ext)
{
    size_t len = strlen(stem) + strlen(ext) + 32;
    char *name = malloc(len);
    if (!name) return NULL;
    snprintf(name, len, "%s%s", stem, ext);
    for (int k = 1; taken(fs, name); k++) snprintf(name, len, "%s_%d%s", stem, k, ext);
    if (fs->n == fs->cap) {
        int cap = fs->cap ? 2 * fs->cap : 16;
        char **p = realloc(fs->names, (size_t)cap * sizeof *p);
        if (!p) {
            free(name);
            return NULL;
        }
        fs->names = p;
        fs->cap = cap;
    }
    fs->names[fs->n++] = name;
    return name;
}

static char *join(const char *dir, const char *file)
{
    size_t len = strlen(dir) + strlen(file) + 2;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s/%s", dir, file);
    return p;
}

static void print_tensor_shape(const og_tensor *t)
{
    printf("%s [", og_dtype_name(og_tensor_dtype(t)));
    for (int d = 0; d < og_tensor_rank(t); d++)
        printf("%s%lld", d ? ", " : "", (long long)og_tensor_dims(t)[d]);
    printf("]");
}

/* Write output `name` (value v) under dir; its manifest entry goes to the manifest file m. */
static int write_one(const char *dir, const char *name, const og_tensor *v, files *fs, FILE *m)
{
    int rc = 1;
    char *stem = sanitize(name), *path = NULL;
    if (!stem) goto nomem;
    while (og_tensor_kind(v) == OG_KIND_OPTIONAL && og_optional_value(v)) v = og_optional_value(v);
    if (og_tensor_kind(v) == OG_KIND_OPTIONAL) { /* none */
        fputs("null", m);
        printf("%s: no value (an empty optional)\n", name);
        rc = 0;
        goto done;
    }
    if (og_tensor_kind(v) == OG_KIND_TENSOR) {
        const char *file = new_file(fs, stem, ".npy");
        if (!file || !(path = join(dir, file))) goto nomem;
        if (og_npy_save(path, v)) {
            fprintf(stderr, "onnxgrad: output '%s': %s\n", name, og_last_error());
            goto done;
        }
        cli_json_string(m, file);
        printf("%s -> %s ", name, path);
        print_tensor_shape(v);
        printf("\n");
        rc = 0;
        goto done;
    }
    if (og_tensor_kind(v) == OG_KIND_SEQUENCE && !has_map(v)) {
        bool flat = true;
        for (int64_t k = 0; k < og_sequence_length(v) && flat; k++)
            flat = og_tensor_kind(og_sequence_item(v, k)) == OG_KIND_TENSOR;
        if (flat) { /* one .npy per item */
            fputc('[', m);
            for (int64_t k = 0; k < og_sequence_length(v); k++) {
                char istem[64];
                size_t len = strlen(stem) + sizeof istem;
                char *s = malloc(len);
                if (!s) goto nomem;
                snprintf(s, len, "%s_%lld", stem, (long long)k);
                const char *file = new_file(fs, s, ".npy");
                free(s);
                free(path);
                path = NULL;
                if (!file || !(path = join(dir, file))) goto nomem;
                if (og_npy_save(path, og_sequence_item(v, k))) {
                    fprintf(stderr, "onnxgrad: output '%s', item %lld: %s\n", name, (long long)k,
                            og_last_error());
                    goto done;
                }
                if (k) fputs(", ", m);
                cli_json_string(m, file);
            }
            fputc(']', m);
            printf("%s -> %s/%s_*.npy sequence of %lld tensors\n", name, dir, stem,
                   (long long)og_sequence_length(v));
            rc = 0;
            goto done;
        }
    }
    /* a map, or a sequence holding maps or sequences: JSON */
    const char *file = new_file(fs, stem, ".json");
    if (!file || !(path = join(dir, file))) goto nomem;
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "onnxgrad: cannot write '%s': %s\n", path, strerror(errno));
        goto done;
    }
    json_value(f, v);
    fputc('\n', f);
    if (fclose(f) != 0) {
        fprintf(stderr, "onnxgrad: cannot write '%s'\n", path);
        goto done;
    }
    cli_json_string(m, file);
    if (og_tensor_kind(v) == OG_KIND_SEQUENCE)
        printf("%s -> %s (JSON) sequence of %lld\n", name, path, (long long)og_sequence_length(v));
    else
        printf("%s -> %s (JSON) %s\n", name, path, og_kind_name(og_tensor_kind(v)));
    rc = 0;
    goto done;
nomem:
    fprintf(stderr, "onnxgrad: out of memory\n");
done:
    free(stem);
    free(path);
    return rc;
}

int cli_write_outputs(const char *const *names, og_tensor *const *values, int n,
                      const char *out_dir)
{
    files fs = {NULL, 0, 0};
    int rc = 1;
    char *mpath = NULL;
    FILE *m = NULL;
    if (cli_make_dir(out_dir) != 0) {
        fprintf(stderr, "onnxgrad: cannot create folder '%s': %s\n", out_dir, strerror(errno));
        goto done;
    }
    if (!(mpath = join(out_dir, "manifest.json"))) {
        fprintf(stderr, "onnxgrad: out of memory\n");
        goto done;
    }
    /* the manifest is written after the files, from a memory stream, so that a failure
     * leaves no manifest naming files that are missing */
    char *mtext = NULL;
    size_t mlen = 0;
    m = open_memstream(&mtext, &mlen);
    if (!m) {
        fprintf(stderr, "onnxgrad: out of memory\n");
        goto done;
    }
    fprintf(m, "{\n");
    for (int j = 0; j < n; j++) {
        fprintf(m, "  ");
        cli_json_string(m, names[j]);
        fprintf(m, ": ");
        if (write_one(out_dir, names[j], values[j], &fs, m)) {
            fclose(m);
            free(mtext);
            m = NULL;
            goto done;
        }
        fprintf(m, "%s\n", j + 1 < n ? "," : "");
    }
    fprintf(m, "}\n");
    fclose(m);
    m = NULL;
    FILE *f = fopen(mpath, "w");
    bool ok = f && fwrite(mtext, 1, mlen, f) == mlen;
    if (f && fclose(f) != 0) ok = false;
    free(mtext);
    if (!ok) {
        fprintf(stderr, "onnxgrad: cannot write '%s'\n", mpath);
        goto done;
    }
    rc = 0;
done:
    for (int i = 0; i < fs.n; i++) free(fs.names[i]);
    free(fs.names);
    free(mpath);
    return rc;
}
