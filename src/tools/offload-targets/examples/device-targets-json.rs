//! Prints the device targets' table as the JSON text that `./x.py bench` gives
//! `src/offload-bench/bench.py` (`--device-targets FILE`): `cargo run --example
//! device-targets-json > FILE`.

fn main() {
    print!("{}", offload_targets::to_json());
}
