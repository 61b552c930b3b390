/* A C program that calls the cdylib, which runs a kernel. */
#include <stdio.h>

void clib_saxpy(float a, const float (*x)[256], float (*y)[256]);

int main(void) {
    float x[256], y[256];
    for (int i = 0; i < 256; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    clib_saxpy(2.0f, &x, &y);
    printf("clib: %g %g %g\n", y[0], y[1], y[255]);
    return 0;
}
