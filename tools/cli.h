/* cli.h: what the CLI's source files share.  onnxgrad.c (main and the commands) calls
 * train.c (onnxgrad train); both use cli.c's helpers; nothing calls back up. */
#ifndef OG_CLI_H
#define OG_CLI_H

#include <stdbool.h>
#include <stdint.h>

/* cli.c */

/* Print the library's last message to stderr and return exit status 1. */
int cli_fail(void);
/* Print a usage error to stderr and return exit status 2. */
int cli_bad_usage(const char *msg);
/* A byte count for --max-memory: digits with an optional K, M, G or T suffix (powers of
 * 1024), at least 1; false for anything else. */
bool cli_parse_bytes(const char *s, int64_t *out);

/* onnxgrad train (tools/train.c) */
extern const char cli_train_usage[];
int cli_train(int argc, char **argv);

#endif
