/* cli.c: the helpers every command of the CLI uses (cli.h). */
#include <stdio.h>

#include "cli.h"
#include "onnxgrad.h"

/* The library's messages already name the file, node and value concerned. */
int cli_fail(void)
{
    fprintf(stderr, "onnxgrad: %s\n", og_last_error());
    return 1;
}

int cli_bad_usage(const char *msg)
{
    fprintf(stderr, "onnxgrad: %s (see 'onnxgrad help')\n", msg);
    return 2;
}
