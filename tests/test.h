/* test.h: the few macros the unit tests share.  A failed CHECK prints file, line and the
 * library's last message, and the test exits non-zero at the end. */
#ifndef OG_TEST_H
#define OG_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include "onnxgrad.h"

static int og_test_failures;
static int og_test_checks;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        og_test_checks++;                                                                          \
        if (!(cond)) {                                                                             \
            og_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__,      \
                    #cond, og_last_error());                                                       \
        }                                                                                          \
    } while (0)

#define CHECK_OK(expr) CHECK((expr) == OG_OK)

#define TEST_DONE()                                                                                \
    do {                                                                                           \
        printf("%d checks, %d failed\n", og_test_checks, og_test_failures);                        \
        return og_test_failures ? 1 : 0;                                                           \
    } while (0)

#endif
