//! Links the cdylib as libnrt: SONAME `libnrt.so.1`, and the version script `libnrt.map` that
//! versions every libnrt function `NRT_2.0.0`, nrtsim's binding-layer API `NRTSIM_BIND_1`, and
//! hides everything else.
//!
//! The list of functions is not here: the exported symbols are defined by `src/symbols.rs` from
//! the one function table in `abi`, and the script matches them by prefix.

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=libnrt.map");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        // SONAME and symbol versions are ELF features; other targets get a plain library.
        return;
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnrt.so.1");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={manifest}/libnrt.map");
}
