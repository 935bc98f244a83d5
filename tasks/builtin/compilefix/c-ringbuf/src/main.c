/* movavg: reads integers from stdin and prints the moving average of the
 * last N values (N = argv[1], default 3) after each one. */
#include <stdio.h>
#include <stdlib.h>

#include "ringbuf.h"

int main(int argc, char **argv)
{
    size_t window = 3;
    if (argc > 1) {
        window = (size_t)strtoul(argv[1], NULL, 10);
    }

    RingBuf rb;
    if (rb_init(&rb, window) != 0) {
        fprintf(stderr, "movavg: bad window size\n");
        return 2;
    }
    int *recent = malloc(window * sizeof *recent);
    if (recent == NULL) {
        rb_free(&rb);
        return 1;
    }

    int v;
    while (scanf("%d", &v) == 1) {
        rb_push(&rb, v);
        size_t n = rb_peek_all(&rb, recent, window);
        long sum = 0;
        for (size_t i = 0; i < n; i++) {
            sum += recent[i];
        }
        printf("%d -> %.2f%s\n", v, (double)sum / (double)n, rb_full(&rb) ? "" : " (warming up)");
    }

    free(recent);
    rb_free(&rb);
    return 0;
}
