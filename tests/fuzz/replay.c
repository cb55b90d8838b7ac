/* Replays files through the fuzz target without libFuzzer: every input the fuzzer ever
 * crashed on stays in tests/data/fuzz/ and must now run to a clean status. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    int n = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "cannot open %s\n", argv[i]);
            return 1;
        }
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        if (!buf || (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len)) {
            fclose(f);
            free(buf);
            return 1;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t)len);
        free(buf);
        n++;
    }
    printf("%d passed, 0 failed\n", n);
    return 0;
}
