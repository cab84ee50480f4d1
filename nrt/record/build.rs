//! Links the recorder: every libnrt function versioned `NRT_2.0.0` (as in the simulator's
//! `libnrt.map`, so a client linked against the real libnrt binds to the recorder when it is
//! preloaded), plus `nrtsim_record_marker`, by which a recorder recognises another recorder
//! (`record.map`); everything else local. The SONAME is the recorder's own: were it `libnrt.so.1`,
//! a preloaded recorder would satisfy the client's `DT_NEEDED` itself and the real library would
//! never be found by that name.

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=record.map");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnrtsim_record.so");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={manifest}/record.map");
}
