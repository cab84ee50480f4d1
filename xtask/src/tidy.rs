//! Tidy checks over the workspace's own Rust files.
//!
//! Habits the project keeps, checked mechanically so a review does not have to:
//! - every `.rs` file opens with a `//!` module doc (generated files, which say `@generated` on
//!   their first line, are exempt);
//! - `unsafe` code appears only in the places that own an FFI boundary, `nrt/src/sys*`, the
//!   recorder (`nrt/record/`) and `sim/capi/`, and every other crate root forbids it;
//! - no test is switched off and no unfinished code is left behind (the `ignore` and
//!   `should_panic` test attributes, `todo!`, `unimplemented!`, `dbg!`);
//! - no file the repository holds (sources, docs, vectors, scripts) cites a document it does not
//!   hold: the team's notes and issue numbers are not there for a reader who clones it, so the
//!   facts the code relies on are cited from `docs/`;
//! - the crates depend on each other exactly as ARCHITECTURE.md's table of crate dependencies
//!   says, so the map a newcomer reads first cannot drift from the manifests;
//! - where IO happens and which way conformance's modules depend, as ARCHITECTURE.md says
//!   ([`claims`]);
//! - no crate has an import circle (`cargo xtask modules`) beyond those it had when the check
//!   came ([`KNOWN_CIRCLES`]), so a crate whose modules are layered (`hlo`'s interpreter) stays so.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

mod claims;

/// Paths (relative, with `/`) where `unsafe` code is allowed.
fn unsafe_allowed(relative: &str) -> bool {
    relative.starts_with("nrt/src/sys")
        || relative.starts_with("nrt/record/")
        || relative.starts_with("sim/capi/")
}

/// Markers of switched-off tests and unfinished code. Built with `concat!` so this file does not
/// match itself.
const FORBIDDEN: [&str; 5] = [
    concat!("#[", "ignore"),
    concat!("#[", "should_panic"),
    concat!("todo", "!("),
    concat!("unimplemented", "!("),
    concat!("dbg", "!("),
];

/// Citations of documents outside the repository. Built with `concat!` so this file does not
/// match itself.
/// "The seed" was the specification the project started from; a random seed is fine.
const OUTSIDE: [&str; 12] = [
    concat!("ABI", "-FACTS"),
    concat!("shared", "/"),
    concat!("DESIGN", ".md"),
    concat!("STYLE", ".md"),
    concat!("seed ", "§"),
    concat!("seed's ", "§"),
    concat!("Seed ", "discrepanc"),
    concat!("reverse-engineered ", "seed"),
    concat!("the seed ", "says"),
    concat!("the seed ", "gives"),
    concat!("the seed ", "calls"),
    concat!("the seed ", "shows"),
];

/// The extensions of the text files whose citations are checked.
const TEXT_FILES: [&str; 10] = ["rs", "md", "toml", "py", "c", "h", "proto", "sh", "hlo", "txt"];

/// Runs every check and fails with the list of problems.
pub(crate) fn run(root: &Path) -> Result<()> {
    let mut problems = check(root)?;
    problems.extend(outside_citations(root)?);
    problems.extend(crate_dependencies(root)?);
    problems.extend(import_circles(root)?);
    if !problems.is_empty() {
        bail!("tidy found {} problem(s):\n  {}", problems.len(), problems.join("\n  "));
    }
    Ok(())
}

/// Returns one line per problem.
fn check(root: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    collect_rust_files(root, &mut files)?;
    files.sort();
    let mut problems = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/");
        let text = fs::read_to_string(path)?;
        problems.extend(claims::check_file(&relative, &text));
        let first = text.lines().next().unwrap_or("");
        let generated = first.contains("@generated");
        if !generated && !first.starts_with("//!") {
            problems.push(format!("{relative}: does not open with a `//!` module doc"));
        }
        if !unsafe_allowed(&relative) {
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let words: Vec<&str> = code.split_whitespace().collect();
                let unsafe_code = words.windows(2).any(|w| {
                    w[0] == "unsafe" && ["{", "fn", "impl", "extern", "trait"].contains(&w[1])
                }) || code.contains(concat!("unsafe", "{"));
                if unsafe_code {
                    problems.push(format!(
                        "{relative}:{}: unsafe code outside nrt/src/sys, nrt/record and sim/capi",
                        number + 1
                    ));
                }
            }
            let crate_root = relative.ends_with("src/lib.rs")
                || relative.ends_with("src/main.rs")
                || relative.ends_with("/main.rs") && relative.contains("/src/bin/");
            // `nrt` cannot forbid `unsafe` at its root because its `sys` module allows it; it
            // denies it instead, which only that module overrides.
            let forbids = text.contains("#![forbid(unsafe_code)]")
                || relative == "nrt/src/lib.rs" && text.contains("#![deny(unsafe_code)]");
            if crate_root && !forbids {
                problems.push(format!("{relative}: crate root without #![forbid(unsafe_code)]"));
            }
        }
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for marker in FORBIDDEN {
                if code.contains(marker) {
                    problems.push(format!("{relative}:{}: contains `{marker}`", number + 1));
                }
            }
        }
    }
    Ok(problems)
}

/// One line per citation of a document outside the repository, or of an issue by number.
fn outside_citations(root: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    collect_files(root, &TEXT_FILES, &mut files)?;
    files.sort();
    let mut problems = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/");
        let Ok(text) = fs::read_to_string(path) else { continue };
        for (number, line) in text.lines().enumerate() {
            let found = OUTSIDE
                .iter()
                .find(|marker| line.contains(*marker))
                .copied()
                .or_else(|| cites_an_issue(line).then_some("an issue number"));
            if let Some(found) = found {
                problems.push(format!(
                    "{relative}:{}: cites {found:?}, which the repository does not hold: cite \
                     docs/ instead",
                    number + 1
                ));
            }
        }
    }
    Ok(problems)
}

/// Whether a line names an issue by number: the word, a space, an optional `#`, a digit.
fn cites_an_issue(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.match_indices("issue ").any(|(at, word)| {
        let rest = lower[at + word.len()..].trim_start_matches('#');
        rest.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Where ARCHITECTURE.md's table of crate dependencies begins and ends.
const TABLE_BEGIN: &str = "<!-- crate-dependencies: begin -->";
const TABLE_END: &str = "<!-- crate-dependencies: end -->";

/// One line per difference between ARCHITECTURE.md's table of crate dependencies and the
/// workspace members' manifests.
fn crate_dependencies(root: &Path) -> Result<Vec<String>> {
    let architecture = fs::read_to_string(root.join("ARCHITECTURE.md"))?;
    let manifest = fs::read_to_string(root.join("Cargo.toml"))?;
    let mut members = Vec::new();
    for folder in crate::modules::workspace_members(&manifest) {
        let text = fs::read_to_string(root.join(&folder).join("Cargo.toml"))?;
        members.push((folder, text));
    }
    Ok(compare_dependencies(&architecture, &members))
}

/// The differences between the table in `architecture` and the members (folder, manifest text).
fn compare_dependencies(architecture: &str, members: &[(String, String)]) -> Vec<String> {
    let Some(table) = dependency_table(architecture) else {
        return vec![format!(
            "ARCHITECTURE.md: no table of crate dependencies between `{TABLE_BEGIN}` and `{TABLE_END}`"
        )];
    };
    // Package name → folder, for the members' own names in each other's manifests.
    let folder_of: std::collections::BTreeMap<String, &String> =
        members.iter().filter_map(|(folder, text)| Some((package_name(text)?, folder))).collect();
    let mut problems = Vec::new();
    for (folder, text) in members {
        let Some(said) = table.get(folder.as_str()) else {
            problems.push(format!("ARCHITECTURE.md: the crate table has no row for `{folder}`"));
            continue;
        };
        let named: std::collections::BTreeSet<&str> = dependency_names(text)
            .iter()
            .filter_map(|name| folder_of.get(name).map(|f| f.as_str()))
            .collect();
        for extra in named.difference(said) {
            problems.push(format!(
                "{folder}/Cargo.toml: depends on `{extra}`, which ARCHITECTURE.md's crate table does not list for `{folder}`"
            ));
        }
        for missing in said.difference(&named) {
            problems.push(format!(
                "ARCHITECTURE.md: the crate table says `{folder}` depends on `{missing}`, which {folder}/Cargo.toml does not name"
            ));
        }
    }
    for folder in table.keys() {
        if !members.iter().any(|(f, _)| f == folder) {
            problems.push(format!("ARCHITECTURE.md: the crate table names `{folder}`, which is not a member of the workspace"));
        }
    }
    problems
}

/// The rows of the table between the markers: crate → the crates it depends on (each cell's
/// names in backquotes).
fn dependency_table(
    architecture: &str,
) -> Option<std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>>> {
    let (_, rest) = architecture.split_once(TABLE_BEGIN)?;
    let (table, _) = rest.split_once(TABLE_END)?;
    fn quoted(cell: &str) -> Vec<&str> {
        cell.split('`').skip(1).step_by(2).collect()
    }
    let mut rows = std::collections::BTreeMap::new();
    for line in table.lines().map(str::trim).filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
        if let [name, depends] = cells[..]
            && let [name] = quoted(name)[..]
        {
            rows.insert(name, quoted(depends).into_iter().collect());
        }
    }
    Some(rows)
}

/// The `name` of a manifest's `[package]`.
fn package_name(manifest: &str) -> Option<String> {
    let (_, package) = manifest.split_once("[package]")?;
    package.lines().take_while(|l| !l.trim_start().starts_with('[')).find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "name").then(|| value.trim().trim_matches('"').to_string())
    })
}

/// The crates a manifest's `[dependencies]` and `[build-dependencies]` name (target-specific
/// tables too), not its `[dev-dependencies]`.
fn dependency_names(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut counted = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            let header = line.trim_matches(|c| c == '[' || c == ']');
            // `[dependencies.name]` is one crate's table: the name is the header's last part.
            let (table, one) = match header.rsplit_once("dependencies.") {
                Some((before, name)) => (format!("{before}dependencies"), Some(name)),
                None => (header.to_string(), None),
            };
            let counts = table.ends_with("dependencies") && !table.ends_with("dev-dependencies");
            counted = counts && one.is_none();
            if counts && let Some(name) = one {
                names.push(name.trim_matches('"').to_string());
            }
            continue;
        }
        if counted
            && let Some((key, _)) = line.split_once('=')
            && !key.trim().is_empty()
            && !line.starts_with('#')
        {
            names.push(
                key.trim().split('.').next().unwrap_or_default().trim_matches('"').to_string(),
            );
        }
    }
    names
}

fn collect_rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    collect_files(dir, &["rs"], out)
}

/// Every file under `dir` whose extension is one of `extensions`, skipping hidden folders and
/// `target`.
fn collect_files(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if entry.file_type()?.is_dir() {
            collect_files(&path, extensions, out)?;
        } else if path.extension().is_some_and(|e| extensions.iter().any(|x| e == *x)) {
            out.push(path);
        }
    }
    Ok(())
}

/// The import circles the workspace's crates had when the circle check came, as
/// `crate: module, module, …` (the modules as `cargo xtask modules` names them). A circle found
/// is allowed when all its modules are in one of these, so one may shrink or go, but none may
/// grow or appear; an entry whose circle is gone fails the check until it is removed. `hlo`'s
/// interpreter (`eval`) has none, and none may come back.
const KNOWN_CIRCLES: [&str; 5] = [
    "abi: neff, neff::archive, neff::json, neff::signature, neff::vars",
    "abi: metaneff, metaneff::edit, metaneff::view",
    "nki: crate, exec, kernels, memory",
    "nki: ops, program",
    "xtask: bench, conformance, crate, libnrt, nki_suites, nkipy, sdk, test, wheel",
];

/// One line per import circle inside a workspace crate that [`KNOWN_CIRCLES`] does not allow.
fn import_circles(root: &Path) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for (name, entry) in crate::modules::workspace_crates(root)? {
        let graph = crate::modules::crate_graph(root, &entry)?;
        found.extend(crate::modules::circles(&graph).into_iter().map(|c| (name.clone(), c)));
    }
    let mut problems = new_circles(&found, &KNOWN_CIRCLES);
    problems.extend(gone_circles(&found, &KNOWN_CIRCLES));
    Ok(problems)
}

/// The entries of `known` inside which no circle of `found` lies any more: the list must say
/// what the workspace still has, so an entry goes with its circle.
fn gone_circles(found: &[(String, BTreeSet<String>)], known: &[&str]) -> Vec<String> {
    known
        .iter()
        .filter(|entry| {
            let (crate_name, modules) = entry.split_once(':').unwrap_or((entry, ""));
            let modules: BTreeSet<&str> = modules.split(',').map(str::trim).collect();
            !found.iter().any(|(name, circle)| {
                name == crate_name && circle.iter().all(|m| modules.contains(m.as_str()))
            })
        })
        .map(|entry| {
            format!(
                "xtask/src/tidy.rs: the import circle `{entry}` is gone; remove it from \
                 KNOWN_CIRCLES"
            )
        })
        .collect()
}

/// One line per circle of `found` (crate, modules) whose modules are not all in one circle of
/// `known` of the same crate.
fn new_circles(found: &[(String, BTreeSet<String>)], known: &[&str]) -> Vec<String> {
    let allowed = |name: &str, circle: &BTreeSet<String>| {
        known.iter().any(|entry| {
            let (crate_name, modules) = entry.split_once(':').unwrap_or((entry, ""));
            let modules: BTreeSet<&str> = modules.split(',').map(str::trim).collect();
            crate_name == name && circle.iter().all(|m| modules.contains(m.as_str()))
        })
    };
    found
        .iter()
        .filter(|(name, circle)| !allowed(name, circle))
        .map(|(name, circle)| {
            let members: Vec<&str> = circle.iter().map(String::as_str).collect();
            format!(
                "{name}: import circle of {} modules ({}); `cargo xtask modules --why` lists the \
                 imports that close it, and one of them must go",
                circle.len(),
                members.join(", ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_is_tidy() {
        run(&crate::workspace_root()).unwrap();
    }

    /// The checks themselves must be able to fail.
    #[test]
    fn tidy_finds_each_kind_of_problem() {
        let dir = std::env::temp_dir().join(format!("nrtsim-tidy-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("demo/src")).unwrap();
        fs::create_dir_all(dir.join("sim/capi/src")).unwrap();
        let bad = format!(
            "fn main() {{ {} }}\n{}\n",
            concat!("unsafe", " { }"),
            concat!("#[", "ignore", "]")
        );
        fs::write(dir.join("demo/src/main.rs"), bad).unwrap();
        fs::write(
            dir.join("sim/capi/src/lib.rs"),
            concat!("//! FFI.\npub fn f() { ", "unsafe", " {} }\n"),
        )
        .unwrap();
        fs::create_dir_all(dir.join("nrt/record/src")).unwrap();
        fs::create_dir_all(dir.join("nrt/recorder/src")).unwrap();
        let ffi =
            concat!("//! FFI.\n#![allow(unsafe_code)]\npub fn f() { ", "unsafe", " { () } }\n");
        fs::write(dir.join("nrt/record/src/lib.rs"), ffi).unwrap();
        fs::create_dir_all(dir.join("nrt/src")).unwrap();
        fs::write(dir.join("nrt/src/sys.rs"), ffi).unwrap();
        // Only the FFI places: a crate of its own beside them is not allowed.
        fs::write(dir.join("nrt/recorder/src/lib.rs"), ffi).unwrap();
        let problems = check(&dir).unwrap();
        let _ = fs::remove_dir_all(&dir);
        let text = problems.join("\n");
        assert!(text.contains("demo/src/main.rs: does not open with a `//!`"), "{text}");
        assert!(text.contains("demo/src/main.rs:1: unsafe code"), "{text}");
        assert!(text.contains("demo/src/main.rs: crate root without"), "{text}");
        assert!(text.contains("demo/src/main.rs:2: contains"), "{text}");
        assert!(!text.contains("sim/capi/src"), "unsafe is allowed in sim/capi: {text}");
        assert!(!text.contains("nrt/record/src"), "unsafe is allowed in nrt/record: {text}");
        assert!(!text.contains("nrt/src/sys.rs"), "unsafe is allowed in nrt/src/sys*: {text}");
        assert!(text.contains("nrt/recorder/src/lib.rs:3: unsafe code"), "{text}");
        assert!(text.contains("nrt/recorder/src/lib.rs: crate root without"), "{text}");
        assert_eq!(problems.len(), 6, "{text}");
    }

    #[test]
    fn the_crate_table_is_compared_with_every_manifest_both_ways() {
        let architecture = format!(
            "prose `abi`\n{TABLE_BEGIN}\n| crate | depends on |\n|---|---|\n| `abi` | |\n| `sim` | `abi` |\n| `cli` | `sim` |\n| `gone` | |\n{TABLE_END}\n| `abi` | `cli` |\n"
        );
        let members = [
            ("abi".to_string(), "[package]\nname = \"nrtsim-abi\"\n".to_string()),
            (
                "sim".to_string(),
                "[package]\nname = \"nrtsim-sim\"\n[dependencies]\nnrtsim-abi.workspace = true\nserde = \"1\"\n[dev-dependencies]\nnrtsim-cli = { path = \"../cli\" }\n".to_string(),
            ),
            (
                "cli".to_string(),
                "[package]\nname = \"nrtsim-cli\"\n[dependencies]\nnrtsim-abi = { path = \"../abi\" }\n[target.'cfg(unix)'.build-dependencies]\nnrtsim-new = \"1\"\n[dependencies.nrtsim-sim]\npath = \"../sim\"\n".to_string(),
            ),
            ("new".to_string(), "[package]\nname = \"nrtsim-new\"\n".to_string()),
        ];
        let problems = compare_dependencies(&architecture, &members);
        let text = problems.join("\n");
        assert!(text.contains("cli/Cargo.toml: depends on `abi`"), "{text}");
        assert!(
            text.contains("cli/Cargo.toml: depends on `new`"),
            "a build dependency counts: {text}"
        );
        assert!(!text.contains("`cli` depends on `sim`"), "a crate's own table counts: {text}");
        assert!(text.contains("no row for `new`"), "{text}");
        assert!(text.contains("names `gone`, which is not a member"), "{text}");
        assert_eq!(
            problems.len(),
            4,
            "sim's dev-dependency and crates.io ones are not counted, nor rows past the end marker: {text}"
        );
        let none = compare_dependencies("no table", &members);
        assert!(none[0].contains("no table of crate dependencies"), "{none:?}");
    }

    /// A citation of a document the repository does not hold is found in any text file.
    #[test]
    fn tidy_finds_citations_of_documents_outside_the_repository() {
        let dir = std::env::temp_dir().join(format!("nrtsim-tidy-cite-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("docs")).unwrap();
        let cites = [
            concat!("as ABI", "-FACTS §4 says"),
            concat!("see DESIGN", ".md"),
            concat!("as the seed ", "says"),
            concat!("added in issue", " 21"),
            concat!("Issue ", "#7 did it"),
        ];
        fs::write(dir.join("docs/a.md"), cites.join("\n")).unwrap();
        let fine = "docs/abi-facts.md §4, the seed of the stream, an issue of style, seeds 3 cases";
        fs::write(dir.join("b.rs"), fine).unwrap();
        let problems = outside_citations(&dir).unwrap();
        let _ = fs::remove_dir_all(&dir);
        let text = problems.join("\n");
        for line in 1..=cites.len() {
            assert!(text.contains(&format!("docs/a.md:{line}: cites")), "{text}");
        }
        assert_eq!(problems.len(), cites.len(), "{text}");
    }

    /// A circle is allowed only inside a known one of its own crate: a new one, or a known one
    /// grown by a module, is a problem.
    #[test]
    fn tidy_finds_import_circles_beyond_the_known_ones() {
        let sources = [
            ("crate", "mod a; mod b; mod c; mod d; mod e;\n"),
            ("a", "use crate::b;\n"),
            ("b", "use crate::a;\n"),
            ("c", "use crate::d;\n"),
            ("d", "use crate::e;\n"),
            ("e", "use crate::c;\n"),
        ];
        let sources = sources
            .iter()
            .map(|(m, text)| (m.to_string(), (format!("{m}.rs"), text.to_string())))
            .collect();
        let graph = crate::modules::graph_of(&sources);
        let found: Vec<(String, BTreeSet<String>)> =
            crate::modules::circles(&graph).into_iter().map(|c| ("demo".to_string(), c)).collect();
        assert_eq!(found.len(), 2, "{found:?}");
        let problems = new_circles(&found, &["demo: a, b, x", "demo: c, d", "other: c, d, e"]);
        let text = problems.join("\n");
        assert!(text.contains("demo: import circle of 3 modules (c, d, e)"), "{text}");
        assert_eq!(problems.len(), 1, "a, b is inside a known circle; c, d, e is in none: {text}");
        assert!(new_circles(&found, &["demo: a, b", "demo: c, d, e"]).is_empty());
        assert_eq!(new_circles(&found, &[]).len(), 2);
        let gone = gone_circles(&found, &["demo: a, b, x", "demo: q, r", "other: a, b"]);
        assert_eq!(gone.len(), 2, "{gone:?}");
        assert!(gone[0].contains("`demo: q, r` is gone"), "{gone:?}");
        assert!(gone[1].contains("`other: a, b` is gone"), "a circle counts in its own crate only");
    }
}
