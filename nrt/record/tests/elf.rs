//! The built recorder stands in for libnrt: every function of the table exported as a sized
//! function with the ELF version `NRT_2.0.0` (so a program linked against the real library binds
//! to it when it is preloaded), the marker by which recorders recognise each other, nothing
//! else; and its own SONAME, so that preloading it does not satisfy a `libnrt.so.1` dependency.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use abi::functions::LibnrtFunction;

/// The cdylib cargo built for this test (`target/<profile>/deps/libnrtsim_record.so`).
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test has a path");
    let deps = exe.parent().expect("the test is in target/<profile>/deps").to_owned();
    let path = deps.join("libnrtsim_record.so");
    assert!(path.is_file(), "no {}", path.display());
    path
}

fn readelf(args: &[&str]) -> String {
    let output = Command::new("readelf")
        .args(args)
        .arg(library())
        .output()
        .unwrap_or_else(|err| panic!("cannot run readelf (binutils): {err}"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `(name, version, type)` of every defined global dynamic symbol with a non-zero size.
fn exported() -> BTreeSet<(String, String, String)> {
    readelf(&["--dyn-syms", "-W"])
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 8 || fields[4] != "GLOBAL" || fields[6] == "UND" {
                return None;
            }
            if fields[2] == "0" {
                return None;
            }
            let (name, version) = fields[7].split_once('@')?;
            Some((
                name.to_owned(),
                version.trim_start_matches('@').to_owned(),
                fields[3].to_owned(),
            ))
        })
        .collect()
}

#[test]
fn every_table_function_and_the_marker_are_exported_as_nrt_2_0_0_and_nothing_else() {
    let mut expected: BTreeSet<(String, String, String)> = LibnrtFunction::ALL
        .iter()
        .map(|f| (f.name().to_owned(), "NRT_2.0.0".to_owned(), "FUNC".to_owned()))
        .collect();
    expected.insert((
        "nrtsim_record_marker".to_owned(),
        "NRT_2.0.0".to_owned(),
        "OBJECT".to_owned(),
    ));
    let exported = exported();
    let missing: Vec<_> = expected.difference(&exported).collect();
    let extra: Vec<_> = exported.difference(&expected).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing {missing:?}, extra {extra:?}");
    assert_eq!(LibnrtFunction::ALL.len(), 126);
}

#[test]
fn the_soname_is_the_recorders_own() {
    let dynamic = readelf(&["-d"]);
    assert!(dynamic.contains("Library soname: [libnrtsim_record.so]"), "{dynamic}");
}
