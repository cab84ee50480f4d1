//! The built library is libnrt to the dynamic linker: SONAME `libnrt.so.1`, every C function
//! of the API exported with the ELF version `NRT_2.0.0`, and a program linked with `-lnrt`
//! requires that version, exactly as one linked against the real library does. The header, the
//! library and the `nrt` backend's list of functions agree.

mod support;

use std::collections::BTreeSet;
use std::process::Command;

use support::{compile_c, library_path, package_dir};

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

/// The functions `include/nrt.h` declares: every `nrt_…(` in it.
fn header_functions() -> BTreeSet<String> {
    let header = std::fs::read_to_string(package_dir().join("include/nrt.h")).expect("nrt.h");
    let mut out = BTreeSet::new();
    for (start, _) in header.match_indices("nrt_") {
        let preceded =
            header[..start].chars().next_back().is_none_or(|c| !c.is_alphanumeric() && c != '_');
        let rest = &header[start..];
        let end = rest.find(|c: char| !c.is_alphanumeric() && c != '_').unwrap_or(rest.len());
        if preceded && rest[end..].starts_with('(') {
            out.insert(rest[..end].to_owned());
        }
    }
    out
}

/// `name -> version` of every dynamic symbol starting with `nrt_`, from `readelf --dyn-syms`.
fn exported_nrt_symbols() -> BTreeSet<(String, String)> {
    let table = tool("readelf", &["--dyn-syms", "-W"], &library_path());
    table
        .lines()
        .filter_map(|line| line.split_whitespace().last())
        .filter(|symbol| symbol.starts_with("nrt_"))
        .map(|symbol| match symbol.split_once("@@").or_else(|| symbol.split_once('@')) {
            Some((name, version)) => (name.to_owned(), version.to_owned()),
            None => (symbol.to_owned(), String::new()),
        })
        .collect()
}

#[test]
fn the_soname_is_libnrt_so_1() {
    let dynamic = tool("readelf", &["-d", "-W"], &library_path());
    assert!(dynamic.contains("Library soname: [libnrt.so.1]"), "{dynamic}");
}

#[test]
fn every_function_of_the_header_is_exported_with_version_nrt_2_0_0() {
    let declared = header_functions();
    assert_eq!(declared.len(), 28, "{declared:?}");
    let exported = exported_nrt_symbols();
    let expected: BTreeSet<(String, String)> =
        declared.iter().map(|name| (name.clone(), "NRT_2.0.0".to_owned())).collect();
    assert_eq!(exported, expected, "exported nrt_* symbols and their versions");
}

#[test]
fn the_header_and_the_nrt_backend_name_the_same_functions() {
    let backend: BTreeSet<String> = nrt::C_FUNCTIONS.iter().map(|name| name.to_string()).collect();
    assert_eq!(header_functions(), backend);
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
