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

bool cli_parse_bytes(const char *s, int64_t *out)
{
    int64_t v = 0;
    const char *c = s;
    for (; *c >= '0' && *c <= '9'; c++) {
        if (v > (INT64_MAX - (*c - '0')) / 10) return false;
        v = v * 10 + (*c - '0');
    }
    if (c == s) return false;
    int shift = 0;
    switch (*c) {
    case 0: break;
    case 'K':
    case 'k': shift = 10; break;
    case 'M':
    case 'm': shift = 20; break;
    case 'G':
    case 'g': shift = 30; break;
    case 'T':
    case 't': shift = 40; break;
    default: return false;
    }
    if (*c && c[1]) return false;
    if (v > (INT64_MAX >> shift) || v < 1) return false;
    *out = v << shift;
    return true;
}

int cli_bad_usage(const char *msg)
{
    fprintf(stderr, "onnxgrad: %s (see 'onnxgrad help')\n", msg);
    return 2;
}
