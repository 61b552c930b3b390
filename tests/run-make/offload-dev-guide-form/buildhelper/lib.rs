//! A build dependency: compiled for the host, with the pass's `RUSTFLAGS`, and called by the
//! build script of `withbuild`.

pub fn answer() -> u32 {
    42
}
