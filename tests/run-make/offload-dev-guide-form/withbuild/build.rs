// The build script of the guide's dependency: it runs only if the host metadata pass linked it
// (and the build dependency it calls).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(withbuild_ran)");
    if buildhelper::answer() == 42 {
        println!("cargo::rustc-cfg=withbuild_ran");
    }
}
