//! Our public headers (`include/nrt/*.h`) declare exactly the functions of the function table,
//! each in its header and with the table's signature, and compile cleanly as C11 and C++17.

mod support;

use std::collections::BTreeMap;
use std::process::Command;

use abi::functions::{Header, LibnrtFunction};
use support::{package_dir, scratch_dir, text};

/// The header's text without comments and preprocessor lines.
fn declarations(header: Header) -> String {
    let path = package_dir().join("include").join(header.path());
    let source = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    let mut out = String::new();
    let mut rest = source.as_str();
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").map_or(rest.len(), |end| start + end + 2);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `name -> prototype` (whitespace collapsed) of every function a header declares.
fn prototypes(header: Header) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for statement in declarations(header).split(';') {
        let statement = statement.split_whitespace().collect::<Vec<_>>().join(" ");
        // Skip type declarations: a prototype is `<type> name(<parameters>)` at top level.
        let statement = statement.rsplit(['{', '}']).next().unwrap_or("").trim().to_owned();
        if statement.starts_with("typedef") || !statement.ends_with(')') {
            continue;
        }
        let Some(open) = statement.find('(') else { continue };
        let before = &statement[..open];
        let name: String = before
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if name.starts_with("nrt") {
            found.insert(name, statement.replace("( ", "(").replace(" )", ")"));
        }
    }
    found
}

#[test]
fn each_header_declares_its_functions_of_the_table_with_the_tables_signature() {
    for &header in Header::ALL {
        let declared = prototypes(header);
        let expected: BTreeMap<String, String> = LibnrtFunction::in_header(header)
            .map(|function| (function.name().to_owned(), function.info().c_declaration()))
            .collect();
        assert_eq!(declared, expected, "{}", header.path());
    }
}

#[test]
fn the_old_header_name_includes_the_new_one() {
    let old = std::fs::read_to_string(package_dir().join("include/nrt.h")).expect("nrt.h");
    let includes: Vec<&str> = old.lines().filter(|line| line.starts_with("#include")).collect();
    assert_eq!(includes, ["#include \"nrt/nrt.h\""]);
}

/// Compiles a file including every header with `compiler` and `flags`.
fn compiles(compiler: &str, flags: &[&str], extension: &str) {
    let dir = scratch_dir("headers");
    let source = dir.join(format!("all_headers.{extension}"));
    let mut program = String::new();
    for header in Header::ALL {
        program.push_str(&format!("#include <{}>\n", header.path()));
    }
    program.push_str(
        "#include <nrt.h>\nint main(void) { return (int)sizeof(nrt_tensor_info_t) - 296; }\n",
    );
    std::fs::write(&source, program).expect("write the program");
    let output = Command::new(compiler)
        .args(flags)
        .arg("-I")
        .arg(package_dir().join("include"))
        .arg(&source)
        .arg("-o")
        .arg(dir.join(format!("all_headers_{extension}")))
        .output()
        .unwrap_or_else(|err| panic!("cannot run {compiler}: {err}"));
    assert!(output.status.success(), "{compiler} {flags:?}:\n{}", text(&output));
}

#[test]
fn the_headers_compile_as_strict_c11() {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    compiles(
        &cc,
        &["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wstrict-prototypes"],
        "c",
    );
}

#[test]
fn the_headers_compile_as_cxx17() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    compiles(&cxx, &["-std=c++17", "-Wall", "-Wextra", "-Werror"], "cpp");
}
