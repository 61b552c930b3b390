//! A build script, so that the check links a host program of the build itself with the
//! toolchain's linker.
fn main() {
    println!("cargo:rustc-env=APP_BUILD_SCRIPT=ran");
}
