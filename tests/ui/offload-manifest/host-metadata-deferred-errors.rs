// The host metadata pass alone in a crate that launches no kernel, where no codegen runs
// (`--emit=metadata`, as here): an error that a mono item check defers to codegen (a return
// type too big for the target's ABI) is reported as the pass's error, never left as a delayed
// bug (an internal compiler error before).

//@ needs-offload
//@ edition: 2024
//@ compile-flags: -Zunstable-options
//@ compile-flags: -Zoffload=HostMetadata={{build-base}}/offload-manifest/deferred-errors.json

#![crate_type = "lib"]

pub fn too_big() -> [u64; 1 << 61] {
    loop {}
}

//~? ERROR the offload host metadata pass found code that cannot be compiled for this target
