//! `cargo xtask sdk --out DIR [--profile debug|release]`: the simulator laid out as a Neuron SDK
//! install looks to a build system, so a project that is configured with the SDK's folder
//! (`cmake -DNEURON_ROOT=DIR`, `PKG_CONFIG_PATH=DIR/lib/pkgconfig`) builds against it unchanged:
//!
//! ```text
//! DIR/README                   what this folder is, and the version
//! DIR/bin/nrtsim               the tool
//! DIR/bin/neuronx-cc           -> nrtsim (run under that name it is the compiler)
//! DIR/include/nrt/*.h          our headers (sim/capi/include/nrt)
//! DIR/include/nrtsim/*.h       nrtsim's own API beside libnrt's (sim/capi/include/nrtsim)
//! DIR/lib/libnrt.so.1          the simulator's library (SONAME libnrt.so.1)
//! DIR/lib/libnrt.so            -> libnrt.so.1
//! DIR/lib/pkgconfig/nrt.pc     relocatable: prefix=${pcfiledir}/../..
//! ```
//!
//! The folder is relocatable: nothing in it names where it was made. A folder that exists must be
//! empty or an SDK folder made before (its `README` says so); the headers are replaced whole, so
//! none that was removed from the source tree stays behind. Every file is copied, so two runs over
//! the same build give the same bytes.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::libnrt::{self, PcPaths, Profile};

/// The package of the `nrtsim` tool.
pub(crate) const TOOL_PACKAGE: &str = "nrtsim-cli";
/// The tool's file name.
pub(crate) const TOOL: &str = "nrtsim";
/// The compiler's name: the tool, run under this name, behaves as neuronx-cc.
pub(crate) const COMPILER: &str = "neuronx-cc";
/// The header folders, relative to the workspace root: libnrt's API, then nrtsim's own
/// (the binding layer's, `nrtsim/bind.h`). Each is copied whole to `include/<its name>`.
pub(crate) const HEADERS: [&str; 2] = ["sim/capi/include/nrt", "sim/capi/include/nrtsim"];
/// The first line of the folder's `README`, by which a later run knows the folder is ours.
const README_FIRST_LINE: &str = "nrtsim SDK folder";

/// How the SDK folder holds its links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Links {
    /// `lib/libnrt.so` and `bin/neuronx-cc` are symbolic links.
    Symbolic,
    /// A wheel's folder: it can hold no links, so `lib/libnrt.so` is a copy of the library, and
    /// it has no `bin/` (the wheel installs the commands as scripts).
    Copies,
}

/// `cargo xtask sdk`: builds the tool and the library in `profile` and lays out `out`.
pub(crate) fn run(root: &Path, out: &Path, profile: Profile) -> Result<()> {
    let artifacts = libnrt::cargo_build(root, &[TOOL_PACKAGE, libnrt::CAPI_PACKAGE], profile)?;
    lay_out(root, &artifacts, out, Links::Symbolic)?;
    eprintln!(
        "SDK folder {}: cmake -DNEURON_ROOT={0}, PKG_CONFIG_PATH={0}/lib/pkgconfig, {0}/bin/neuronx-cc",
        out.display()
    );
    Ok(())
}

/// The text of `DIR/README`.
pub(crate) fn readme(version: &str) -> String {
    format!(
        "{README_FIRST_LINE}, version {version}\n\
         \n\
         The Neuron runtime simulator laid out as a Neuron SDK install, for build systems that\n\
         look for one (cmake -DNEURON_ROOT=<this folder>, PKG_CONFIG_PATH=<this folder>/lib/pkgconfig).\n\
         lib/libnrt.so.1 is the simulator, not AWS's libnrt: it runs NEFFs that nrtsim's compiler\n\
         wrote (bin/neuronx-cc) on simulated NeuronCores (configured by NRTSIM_* variables).\n\
         include/nrt/ holds nrtsim's own declarations of the public libnrt API;\n\
         include/nrtsim/ holds nrtsim's binding-layer API, which lib/libnrt.so.1 also exports.\n"
    )
}

/// Lays out the SDK folder `out` from the build artifacts in `artifacts`.
pub(crate) fn lay_out(root: &Path, artifacts: &Path, out: &Path, links: Links) -> Result<()> {
    check_destination(out)?;
    let lib = out.join("lib");
    let pkgconfig = lib.join("pkgconfig");
    fs::create_dir_all(&pkgconfig).with_context(|| format!("creating {}", pkgconfig.display()))?;
    match links {
        Links::Symbolic => {
            libnrt::install_library(artifacts, &lib)?;
            let bin = out.join("bin");
            fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
            libnrt::install_file(&artifacts.join(TOOL), &bin.join(TOOL))?;
            libnrt::install_symlink(TOOL, &bin.join(COMPILER))?;
        }
        Links::Copies => {
            let built = artifacts.join(libnrt::CAPI_ARTIFACT);
            libnrt::install_file(&built, &lib.join(libnrt::SONAME))?;
            libnrt::install_file(&built, &lib.join(libnrt::LINK_NAME))?;
        }
    }
    let pc = libnrt::pkg_config(
        &libnrt::read_pc_template(root)?,
        &PcPaths {
            prefix: Some("${pcfiledir}/../.."),
            libdir: "${prefix}/lib",
            includedir: "${prefix}/include",
        },
    );
    fs::write(pkgconfig.join("nrt.pc"), pc).context("writing lib/pkgconfig/nrt.pc")?;
    for folder in HEADERS {
        let include = out.join("include").join(Path::new(folder).file_name().context("a folder")?);
        if include.exists() {
            fs::remove_dir_all(&include)
                .with_context(|| format!("removing {}", include.display()))?;
        }
        fs::create_dir_all(&include).with_context(|| format!("creating {}", include.display()))?;
        for header in headers(root, folder)? {
            let name = header.file_name().context("a header path without a file name")?;
            libnrt::install_file(&header, &include.join(name))?;
        }
    }
    fs::write(out.join("README"), readme(env!("CARGO_PKG_VERSION"))).context("writing README")?;
    Ok(())
}

/// The `.h` files of one of the [`HEADERS`] folders, sorted by name.
pub(crate) fn headers(root: &Path, folder: &str) -> Result<Vec<PathBuf>> {
    let dir = root.join(folder);
    let mut headers = Vec::new();
    for entry in fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry.with_context(|| format!("reading {}", dir.display()))?.path();
        if path.extension().is_some_and(|ext| ext == "h") {
            headers.push(path);
        }
    }
    headers.sort();
    if headers.is_empty() {
        bail!("no headers in {}", dir.display());
    }
    Ok(headers)
}

/// Refuses a destination that is a file, or a non-empty folder that is not an SDK folder.
fn check_destination(out: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(out) else {
        if out.exists() {
            bail!("{} is not a folder; expected a new or an SDK folder", out.display());
        }
        return Ok(());
    };
    if entries.count() == 0 {
        return Ok(());
    }
    let readme = fs::read_to_string(out.join("README")).unwrap_or_default();
    if !readme.starts_with(README_FIRST_LINE) {
        bail!(
            "{} is not empty and not an nrtsim SDK folder (no README starting {README_FIRST_LINE:?}); \
             give a new folder",
            out.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = libnrt::target_dir(&crate::workspace_root())
            .join(format!("xtask-tests/{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn output_of(command: &mut Command) -> String {
        let output = command.output().unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "{command:?} failed ({}):\n{text}", output.status);
        text
    }

    /// A C program that includes the SDK's header by the name clients use and asks the library
    /// a question it answers before `nrt_init`: how many cores the (simulated) machine has.
    const PROGRAM: &str = r#"
#include <stdio.h>
#include <nrt/nrt.h>
int main(void) {
    uint32_t count = 0;
    NRT_STATUS status = nrt_get_total_nc_count(&count);
    printf("status %d cores %u\n", (int)status, count);
    return status == NRT_SUCCESS ? 0 : 1;
}
"#;

    /// The build flags of the SDK folder `sdk`: pkg-config's answer when pkg-config is
    /// installed, else the same flags written out (a machine with gcc need not have pkg-config).
    fn build_flags(sdk: &Path) -> Vec<String> {
        let pkgconfig = sdk.join("lib/pkgconfig");
        match Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", &pkgconfig)
            .args(["--cflags", "--libs", "nrt"])
            .output()
        {
            Ok(output) => {
                assert!(
                    output.status.success(),
                    "pkg-config --cflags --libs nrt: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
                let flags = String::from_utf8(output.stdout).unwrap();
                let flags: Vec<String> = flags.split_whitespace().map(str::to_owned).collect();
                let lib = format!("-L{}", pkgconfig.join("../../lib").display());
                assert!(flags.contains(&lib), "{lib} (relative to the .pc file) in {flags:?}");
                flags
            }
            Err(_) => {
                eprintln!("no pkg-config: building with the flags nrt.pc would give");
                let lib = sdk.join("lib").display().to_string();
                vec![
                    format!("-I{}", sdk.join("include").display()),
                    format!("-L{lib}"),
                    format!("-Wl,-rpath,{lib}"),
                    "-lnrt".to_owned(),
                ]
            }
        }
    }

    /// Builds the debug tool and library (cargo finds them fresh after `cargo test`), lays out
    /// an SDK folder, moves it (the folder must not depend on where it was made), and checks it
    /// as a build system would.
    #[test]
    fn an_sdk_folder_is_found_by_pkg_config_and_cmake_rules_and_runs_a_c_program() {
        let root = crate::workspace_root();
        let artifacts =
            libnrt::cargo_build(&root, &[TOOL_PACKAGE, libnrt::CAPI_PACKAGE], Profile::Debug)
                .unwrap();
        let dir = scratch("sdk");
        let made = dir.join("made");
        lay_out(&root, &artifacts, &made, Links::Symbolic).unwrap();
        // A second run over its own folder is allowed and changes nothing.
        lay_out(&root, &artifacts, &made, Links::Symbolic).unwrap();
        let sdk = dir.join("moved");
        fs::rename(&made, &sdk).unwrap();

        // What CMake's find_library(NAMES libnrt.so HINTS DIR/lib) and
        // find_path(NAMES nrt/nrt.h HINTS DIR/include) look for.
        let link = sdk.join("lib/libnrt.so");
        assert_eq!(fs::read_link(&link).unwrap(), Path::new("libnrt.so.1"));
        let library = fs::read(&link).unwrap();
        assert_eq!(&library[..4], b"\x7fELF", "lib/libnrt.so resolves to an ELF file");
        let dynamic = output_of(Command::new("readelf").args(["-d", "-W"]).arg(&link));
        assert!(dynamic.contains("Library soname: [libnrt.so.1]"), "{dynamic}");
        assert!(sdk.join("include/nrt/nrt.h").is_file());
        assert!(sdk.join("include/nrtsim/bind.h").is_file());
        for (folder, installed) in HEADERS.iter().zip(["include/nrt", "include/nrtsim"]) {
            for header in headers(&root, folder).unwrap() {
                let name = header.file_name().unwrap();
                assert_eq!(
                    fs::read(sdk.join(installed).join(name)).unwrap(),
                    fs::read(&header).unwrap(),
                    "{installed}/{name:?} is the source tree's"
                );
            }
        }
        let pc = fs::read_to_string(sdk.join("lib/pkgconfig/nrt.pc")).unwrap();
        assert!(pc.starts_with("prefix=${pcfiledir}/../..\n"), "{pc}");
        assert!(!pc.contains(dir.to_str().unwrap()), "no absolute path: {pc}");
        assert_eq!(fs::read_link(sdk.join("bin/neuronx-cc")).unwrap(), Path::new("nrtsim"));
        let version = output_of(Command::new(sdk.join("bin/nrtsim")).arg("--version"));
        assert!(version.starts_with("nrtsim "), "{version}");
        // Run through the link, the tool is the compiler (its argv[0] is neuronx-cc).
        let compiler = output_of(Command::new(sdk.join("bin/neuronx-cc")).arg("--version"));
        assert!(compiler.starts_with("neuronx-cc: "), "{compiler}");
        let readme = fs::read_to_string(sdk.join("README")).unwrap();
        assert!(
            readme.starts_with(&format!(
                "nrtsim SDK folder, version {}\n",
                env!("CARGO_PKG_VERSION")
            ))
        );

        let source = dir.join("cores.c");
        fs::write(&source, PROGRAM).unwrap();
        let program = dir.join("cores");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
        output_of(Command::new(&cc).arg(&source).arg("-o").arg(&program).args(build_flags(&sdk)));
        // No LD_LIBRARY_PATH: the program finds the library through the rpath nrt.pc adds.
        let ran = output_of(
            Command::new(&program).env("NRTSIM_CORES", "3").env_remove("LD_LIBRARY_PATH"),
        );
        assert_eq!(ran, "status 0 cores 3\n");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_folder_that_is_not_an_sdk_folder_is_refused() {
        let dir = scratch("foreign");
        fs::write(dir.join("notes.txt"), "mine").unwrap();
        let error = check_destination(&dir).unwrap_err().to_string();
        assert!(error.contains("is not empty and not an nrtsim SDK folder"), "{error}");
        let file = dir.join("notes.txt");
        let error = check_destination(&file).unwrap_err().to_string();
        assert!(error.contains("is not a folder"), "{error}");
        fs::write(dir.join("README"), readme("0.0.0")).unwrap();
        check_destination(&dir).unwrap();
        check_destination(&dir.join("new")).unwrap();
        let _ = fs::remove_dir_all(&dir);
    }
}
