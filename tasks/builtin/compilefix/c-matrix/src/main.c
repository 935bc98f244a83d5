/* matdemo: multiplies a 2x3 matrix by its transpose and prints the
 * result. */
#include <stdio.h>

#include "matrix.h"

int main(void)
{
    Matrix a, at, p;

    mat_zero(&a, 2, 3);
    for (size_t i = 0; i < a.rows; i++) {
        for (size_t j = 0; j < a.cols; j++) {
            a.v[i][j] = (double)(i * a.cols + j + 1);
        }
    }
    mat_transpose(&a, &at);
    if (mat_mul(&a, &at) != 0) {
        fprintf(stderr, "matdemo: shape mismatch\n");
        return 1;
    }
    printf("A =\n");
    mat_print(&a);
    printf("A * A^T =\n");
    mat_print(&p);
    return 0;
}
