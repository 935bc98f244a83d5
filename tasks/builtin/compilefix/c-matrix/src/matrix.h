#ifndef MATRIX_H
#define MATRIX_H

#include <stddef.h>

#define MAT_MAX 8

/* A dense row-major matrix of at most MAT_MAX x MAT_MAX doubles. */
typedef struct {
    size_t rows;
    size_t cols;
    double v[MAT_MAX][MAT_MAX];
} Matrix;

/* Sets m to the rows x cols zero matrix; returns -1 when it is too big. */
int mat_zero(Matrix *m, size_t rows, size_t cols);

/* Sets m to the n x n identity. */
int mat_identity(Matrix *m, size_t n);

/* out = a * b. Returns -1 when the shapes do not match. out may not alias
 * a or b. */
int mat_mul(const Matrix *a, const Matrix *b, Matrix *out);

/* out = transpose of m. */
void mat_transpose(const Matrix *m, Matrix *out);

/* Returns 1 when a and b have the same shape and every element differs by
 * at most eps. */
int mat_equal(const Matrix *a, const Matrix *b, double eps);

void mat_print(const Matrix *m);

#endif
