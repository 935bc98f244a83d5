/* Unit tests of matrix.c; exits 1 on the first failure. */
#include <stdio.h>

#include "matrix.h"

static int failures;

#define CHECK(cond)                                                      \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,       \
                    __LINE__, #cond);                                    \
            failures++;                                                  \
        }                                                                \
    } while (0)

static void test_identity_is_neutral(void)
{
    Matrix a, id, out;
    mat_zero(&a, 3, 3);
    for (size_t i = 0; i < 3; i++) {
        for (size_t j = 0; j < 3; j++) {
            a.v[i][j] = ((double)i - (double)j) * 0.5;
        }
    }
    mat_identity(&id, 3);
    CHECK(mat_mul(&a, &id, &out) == 0);
    CHECK(mat_equal(&a, &out, 1e-12));
    CHECK(mat_mul(&id, &a, &out) == 0);
    CHECK(mat_equal(&a, &out, 1e-12));
}

static void test_shape_mismatch(void)
{
    Matrix a, b, out;
    mat_zero(&a, 2, 3);
    mat_zero(&b, 2, 3);
    CHECK(mat_mul(&a, &b, &out) == -1);
    CHECK(mat_zero(&a, MAT_MAX + 1, 1) == -1);
}

static void test_product(void)
{
    Matrix a, b, out, want;
    mat_zero(&a, 1, 2);
    a.v[0][0] = 1;
    a.v[0][1] = 2;
    mat_transpose(&a, &b);
    CHECK(b.rows == 2 && b.cols == 1);
    CHECK(mat_mul(&b, &a, &out) == 0);
    mat_zero(&want, 2, 2);
    want.v[0][0] = 1;
    want.v[0][1] = 2;
    want.v[1][0] = 2;
    want.v[1][1] = 4;
    CHECK(mat_equal(&out, &want, 1e-12));
}

int main(void)
{
    test_identity_is_neutral();
    test_shape_mismatch();
    test_product();
    if (failures != 0) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("matrix: all tests passed\n");
    return 0;
}
