/* A launcher for the `cdylib` shape: loads the library named by its argument and calls the
 * `main` that it exports (a direct call would reach this program's own `main`). The library
 * is loaded with RTLD_GLOBAL: on the CPU device, the image that the offload runtime loads
 * reads the launch's grid from a thread-local that the library defines. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
        return 2;
    }
    void *library = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 2;
    }
    void (*library_main)(void) = (void (*)(void))dlsym(library, "main");
    if (!library_main) {
        fprintf(stderr, "%s exports no `main`: %s\n", argv[1], dlerror());
        return 2;
    }
    library_main();
    return 0;
}
