/* cli.h: what the CLI's source files share.  onnxgrad.c (main and the commands) calls
 * train.c (onnxgrad train); both use cli.c's helpers; nothing calls back up. */
#ifndef OG_CLI_H
#define OG_CLI_H

/* cli.c */

/* Print the library's last message to stderr and return exit status 1. */
int cli_fail(void);
/* Print a usage error to stderr and return exit status 2. */
int cli_bad_usage(const char *msg);

/* onnxgrad train (tools/train.c) */
extern const char cli_train_usage[];
int cli_train(int argc, char **argv);

#endif
