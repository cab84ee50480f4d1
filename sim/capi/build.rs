//! Links the cdylib as libnrt: SONAME `libnrt.so.1` and every C function versioned `NRT_2.0.0`.
//!
//! rustc gives a cdylib its own anonymous version script that lists every `#[no_mangle]`
//! function, and such a symbol stays unversioned whatever a second script says. So the Rust
//! functions are named `nrtsim_<c name>`, and each C name is defined as an alias of it with
//! `--defsym`: the aliases are not in rustc's script, and ours (`libnrt.map`) versions them.

/// The C API of ABI-FACTS §4, in its order. A test checks the built library against it.
const C_FUNCTIONS: &[&str] = &[
    "nrt_init",
    "nrt_close",
    "nrt_load",
    "nrt_load_collectives",
    "nrt_unload",
    "nrt_execute",
    "nrt_execute_repeat",
    "nrt_allocate_tensor_set",
    "nrt_destroy_tensor_set",
    "nrt_add_tensor_to_tensor_set",
    "nrt_get_tensor_from_tensor_set",
    "nrt_tensor_allocate",
    "nrt_tensor_allocate_empty",
    "nrt_tensor_attach_buffer",
    "nrt_tensor_allocate_slice",
    "nrt_tensor_free",
    "nrt_tensor_read",
    "nrt_tensor_write",
    "nrt_tensor_copy",
    "nrt_tensor_memset",
    "nrt_tensor_get_size",
    "nrt_tensor_get_va",
    "nrt_get_model_tensor_info",
    "nrt_free_model_tensor_info",
    "nrt_get_version",
    "nrt_get_total_vnc_count",
    "nrt_get_visible_vnc_count",
    "nrt_get_status_as_str",
];

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=libnrt.map");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=NRTSIM_CAPI_FUNCTIONS={}", C_FUNCTIONS.join(","));
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        // SONAME and symbol versions are ELF features; other targets get a plain library.
        return;
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnrt.so.1");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={manifest}/libnrt.map");
    for name in C_FUNCTIONS {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--defsym={name}=nrtsim_{name}");
    }
}
