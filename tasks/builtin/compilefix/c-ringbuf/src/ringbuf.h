#ifndef RINGBUF_H
#define RINGBUF_H

#include <stddef.h>

/* A fixed-capacity FIFO of ints. When full, rb_push overwrites the oldest
 * element. */
typedef struct {
    int *data;
    size_t cap;
    size_t head; /* index of the oldest element */
    size_t len;
} RingBuf;

/* Allocates the storage of rb; returns -1 when cap is 0 or memory runs out. */
int rb_init(RingBuf *rb, size_t cap);
void rb_free(RingBuf *rb);

void rb_push(RingBuf *rb, int v);
/* Removes the oldest element into *out; returns -1 when rb is empty. */
int rb_pop(RingBuf *rb, int *out);

/* Copies up to n elements, oldest first, into dst without removing them;
 * returns the number copied. */
size_t rb_peek_all(const RingBuf *rb, int *dst, size_t n);

size_t rb_len(const RingBuf *rb);
int rb_full(const RingBuf *rb);

#endif
