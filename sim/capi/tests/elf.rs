//! The built library is libnrt to the dynamic linker: SONAME `libnrt.so.1`, every C function
//! of the API exported with the ELF version `NRT_2.0.0`, and a program linked with `-lnrt`
//! requires that version, exactly as one linked against the real library does. The header, the
//! library and the `nrt` backend's list of functions agree.

mod support;

use std::collections::BTreeSet;
use std::process::Command;

use abi::functions::LibnrtFunction;
use support::{compile_c, library_path};

fn tool(program: &str, args: &[&str], path: &std::path::Path) -> String {
    let output = Command::new(program)
        .args(args)
        .arg(path)
        .output()
        .unwrap_or_else(|err| panic!("cannot run {program} (binutils): {err}"));
    assert!(
        output.status.success(),
        "{program} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every defined, global dynamic symbol: `(name, version, type, size)` from
/// `readelf --dyn-syms`.
fn exported_symbols() -> BTreeSet<(String, String, String, u64)> {
    let table = tool("readelf", &["--dyn-syms", "-W"], &library_path());
    table
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // Num: Value Size Type Bind Vis Ndx Name
            if fields.len() < 8 || fields[4] != "GLOBAL" || fields[6] == "UND" {
                return None;
            }
            let size = fields[2].parse().ok()?;
            let symbol = fields[7];
            let (name, version) = match symbol.split_once("@@").or_else(|| symbol.split_once('@')) {
                Some((name, version)) => (name.to_owned(), version.to_owned()),
                None => (symbol.to_owned(), String::new()),
            };
            Some((name, version, fields[3].to_owned(), size))
        })
        .collect()
}

#[test]
fn the_soname_is_libnrt_so_1() {
    let dynamic = tool("readelf", &["-d", "-W"], &library_path());
    assert!(dynamic.contains("Library soname: [libnrt.so.1]"), "{dynamic}");
}

/// The functions `include/nrtsim/bind.h` declares: nrtsim's own API, beside libnrt's.
fn bind_header_functions() -> BTreeSet<String> {
    let header = std::fs::read_to_string(support::package_dir().join("include/nrtsim/bind.h"))
        .expect("read include/nrtsim/bind.h");
    // A declaration is the identifier right before a `(`.
    header
        .split('(')
        .filter_map(|before| {
            before.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next()
        })
        .filter(|name| name.starts_with("nrtsim_bind_"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn exactly_the_functions_of_the_table_are_exported_with_version_nrt_2_0_0() {
    let exported: BTreeSet<(String, String)> =
        exported_symbols().into_iter().map(|(name, version, _, _)| (name, version)).collect();
    let mut expected: BTreeSet<(String, String)> = LibnrtFunction::ALL
        .iter()
        .map(|function| (function.name().to_owned(), "NRT_2.0.0".to_owned()))
        .collect();
    assert_eq!(expected.len(), 126);
    // nrtsim's binding-layer API is ours, not libnrt's: a version of its own.
    let bind = bind_header_functions();
    assert_eq!(bind.len(), 22, "{bind:?}");
    expected.extend(bind.into_iter().map(|name| (name, "NRTSIM_BIND_1".to_owned())));
    assert_eq!(exported, expected, "exported symbols and their versions");
}

#[test]
fn every_exported_symbol_is_a_function_with_a_size() {
    for (name, _, kind, size) in exported_symbols() {
        assert_eq!(kind, "FUNC", "{name}");
        assert!(size > 0, "{name} has size 0 in .dynsym");
    }
}

#[test]
fn a_program_linked_with_lnrt_requires_nrt_2_0_0_from_libnrt_so_1() {
    let program = compile_c("client_flow");
    let needed = tool("readelf", &["-V", "-W"], &program);
    let section =
        needed.split("Version needs section").nth(1).unwrap_or_else(|| panic!("{needed}"));
    let libnrt = section.split("File: ").find(|entry| entry.starts_with("libnrt.so.1"));
    let libnrt = libnrt.unwrap_or_else(|| panic!("no libnrt.so.1 entry:\n{section}"));
    assert!(libnrt.contains("Name: NRT_2.0.0"), "{libnrt}");
}
