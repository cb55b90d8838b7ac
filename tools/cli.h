/* cli.h: what the CLI's source files share.  onnxgrad.c (main and the commands) calls
 * train.c (onnxgrad train); both use cli.c's helpers; nothing calls back up. */
#ifndef OG_CLI_H
#define OG_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "onnxgrad.h"

/* cli.c */

/* Print the library's last message to stderr and return exit status 1. */
int cli_fail(void);
/* Print a usage error to stderr and return exit status 2. */
int cli_bad_usage(const char *msg);
/* A byte count for --max-memory: digits with an optional K, M, G or T suffix (powers of
 * 1024), at least 1; false for anything else. */
bool cli_parse_bytes(const char *s, int64_t *out);

/* Write a JSON string literal (escaped) to f. */
void cli_json_string(FILE *f, const char *s);
/* mkdir -p; 0 on success, -1 with errno set. */
int cli_make_dir(const char *dir);

/* values.c: write a run's outputs under out_dir (created if missing): a tensor as
 * <name>.npy, a sequence of tensors as <name>_<i>.npy, an optional as its value, anything
 * holding a map as <name>.json; then out_dir/manifest.json (name -> file, list of files, or
 * null), and one line per output on stdout.  Names are sanitized (A-Za-z0-9._- kept, others
 * '_') and kept unique.  Returns the exit status (0, or 1 after a message on stderr). */
int cli_write_outputs(const char *const *names, og_tensor *const *values, int n,
                      const char *out_dir);

/* onnxgrad train (tools/train.c) */
void cli_train_usage(FILE *f); /* train --help */
int cli_train(int argc, char **argv);

#endif
