#include <stdlib.h>

#include "ringbuf.h"

int rb_init(RingBuf *rb, size_t cap)
{
    rb->head = 0;
    rb->len = 0;
    rb->cap = cap;
    rb->data = NULL;
    if (cap == 0) {
        return -1;
    }
    rb->data = malloc(cap * sizeof *rb->data);
    return rb->data == NULL ? -1 : 0;
}

void rb_free(RingBuf *rb)
{
    free(rb->data);
    rb->data = NULL;
    rb->cap = rb->len = rb->head = 0;
}

void rb_push(RingBuf *rb, int v)
{
    size_t tail = (rb->head + rb->len) % rb->cap;
    rb->data[tail] = v;
    if (rb->len == rb->cap) {
        rb->head = (rb->head + 1) % rb->cap;
    } else {
        rb->len++;
    }
}

int rb_pop(RingBuf *rb, int *out)
{
    if (rb->len == 0) {
        return -1;
    }
    *out = rb->data[rb->head];
    rb->head = (rb->head + 1) % rb->cap;
    rb->len--;
    return 0;
}

size_t rb_peek_all(const RingBuf *rb, int *dst, size_t n)
{
    if (n > rb->len) {
        n = rb->len;
    }
    for (i = 0; i < n; i++) {
        dst[i] = rb->data[(rb->head + i) % rb->cap];
    }
    return n;
}

size_t rb_len(const RingBuf *rb)
{
    return rb->len;
}

int rb_full(const RingBuf *rb)
{
    return rb->len == rb->cap;
}
