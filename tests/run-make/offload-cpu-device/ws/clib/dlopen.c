/* A C launcher that loads the cdylib at run time, as the offload authors' RAJAPerf ports are
 * launched: `dlopen` with `RTLD_LOCAL`, so the offload runtime that the cdylib needs is loaded
 * outside the program's global scope. The path of the cdylib is the first argument. */
#include <dlfcn.h>
#include <stdio.h>

typedef void (*saxpy_fn)(float a, const float (*x)[256], float (*y)[256]);

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBCLIB\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    saxpy_fn saxpy = (saxpy_fn)dlsym(lib, "clib_saxpy");
    if (!saxpy) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    float x[256], y[256];
    for (int i = 0; i < 256; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    saxpy(2.0f, &x, &y);
    printf("clib: %g %g %g\n", y[0], y[1], y[255]);
    return 0;
}
