#include <math.h>
#include <stdio.h>

#include "matrix.h"

int mat_zero(Matrix *m, size_t rows, size_t cols)
{
    if (rows > MAT_MAX || cols > MAT_MAX) {
        return -1;
    }
    m->rows = rows;
    m->cols = cols;
    for (size_t i = 0; i < MAT_MAX; i++) {
        for (size_t j = 0; j < MAT_MAX; j++) {
            m->v[i][j] = 0.0;
        }
    }
    return 0;
}

int mat_identity(Matrix *m, size_t n)
{
    if (mat_zero(m, n, n) != 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        m->v[i][i] = 1.0;
    }
    return 0;
}

int mat_mul(const Matrix *a, const Matrix *b, Matrix *out)
{
    if (a->cols != b->rows || mat_zero(out, a->rows, b->cols) != 0) {
        return -1;
    }
    for (size_t i = 0; i < a->rows; i++) {
        for (size_t j = 0; j < b->cols; j++) {
            double sum = 0.0;
            for (size_t k = 0; k < a->cols; k++) {
                sum += a->v[i][k] * b->v[k][j];
            }
            out->v[i][j] = sum;
        }
    }
    return 0;
}

void mat_transpose(const Matrix *m, Matrix *out)
{
    mat_zero(out, m->cols, m->rows);
    for (size_t i = 0; i < m->rows; i++) {
        for (size_t j = 0; j < m->cols; j++) {
            out->v[j][i] = m->v[i][j];
        }
    }
}

int mat_equal(const Matrix *a, const Matrix *b, double eps)
{
    if (a->rows != b->rows || a->cols != b->cols) {
        return 0;
    }
    for (size_t i = 0; i < a->rows; i++) {
        for (size_t j = 0; j < a->cols; j++) {
            if (fabs(a->v[i][j] - b->v[i][j]) > eps) {
                return 0;
            }
        }
    }
    return 1;
}

void mat_print(const Matrix *m)
{
    for (size_t i = 0; i < m->rows; i++) {
        for (size_t j = 0; j < m->cols; j++) {
            printf("%s%8.3f", j == 0 ? "" : " ", m->v[i][j]);
        }
        printf("\n");
    }
}
