//! The builds and installs the library commands share: `cargo build` of workspace packages in a
//! profile, the library installed as `libnrt.so.1` with its `libnrt.so` link, and the
//! pkg-config file filled from `sim/capi/nrt.pc.in`.
//!
//! `cargo xtask libnrt [--dest DIR]` is the developer's layout, for C programs built against the
//! working tree: one flat folder (`libnrt.so.1`, `libnrt.so`, `nrt.pc`, default
//! `target/debug/libnrt`) whose `nrt.pc` points at the headers where they are in the source tree
//! (`sim/capi/include`), by absolute paths. `cargo xtask sdk` (`sdk.rs`) is the install layout
//! of the same files, relocatable, with the headers and the tools copied in: what a build system
//! that looks for a Neuron SDK folder expects.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The `nrt.pc` template, relative to the workspace root.
pub(crate) const PC_TEMPLATE: &str = "sim/capi/nrt.pc.in";
/// The package of the simulator's C library.
pub(crate) const CAPI_PACKAGE: &str = "nrtsim-capi";
/// The file cargo writes for that package's cdylib.
pub(crate) const CAPI_ARTIFACT: &str = "libnrtsim_capi.so";
/// The library's SONAME, and the file name it is installed as.
pub(crate) const SONAME: &str = "libnrt.so.1";
/// The link-time name (`-lnrt`, CMake's `find_library(NAMES libnrt.so)`).
pub(crate) const LINK_NAME: &str = "libnrt.so";

/// The cargo profile of a build xtask makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Profile {
    /// cargo's `dev` profile, in `target/debug`.
    Debug,
    /// cargo's `release` profile, in `target/release`.
    Release,
}

impl Profile {
    /// The folder under the target directory cargo writes this profile's artifacts to.
    pub(crate) fn dir_name(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => "release",
        }
    }

    /// The cargo profile name (`--profile NAME`).
    fn cargo_name(self) -> &'static str {
        match self {
            Profile::Debug => "dev",
            Profile::Release => "release",
        }
    }
}

/// The cargo target directory: `CARGO_TARGET_DIR` when set, else `target/` in the workspace.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// Builds whole `packages` (not target filters: those would apply to every package named, and
/// the capi package's cdylib is a library target) in `profile`; returns the folder of the
/// artifacts.
pub(crate) fn cargo_build(root: &Path, packages: &[&str], profile: Profile) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    command.current_dir(root).args(["build", "--quiet", "--profile", profile.cargo_name()]);
    for package in packages {
        command.args(["--package", package]);
    }
    crate::run(&mut command, &format!("cargo build --package {}", packages.join(" --package ")))?;
    Ok(target_dir(root).join(profile.dir_name()))
}

/// Copies `from` to `to` through a temporary file renamed into place, so a program running
/// from (or a process that mapped) the old file keeps its copy and the new one appears whole.
pub(crate) fn install_file(from: &Path, to: &Path) -> Result<()> {
    let mut partial = to.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    fs::copy(from, &partial)
        .with_context(|| format!("copying {} to {}", from.display(), partial.display()))?;
    fs::rename(&partial, to)
        .with_context(|| format!("renaming {} to {}", partial.display(), to.display()))?;
    Ok(())
}

/// Makes `link` a symbolic link to `target` (a name in the same folder), replacing whatever
/// `link` was.
pub(crate) fn install_symlink(target: &str, link: &Path) -> Result<()> {
    match fs::symlink_metadata(link) {
        Ok(meta) if meta.is_dir() => {
            bail!("{} is a folder, expected a file or link", link.display())
        }
        Ok(_) => fs::remove_file(link).with_context(|| format!("removing {}", link.display()))?,
        Err(_) => {}
    }
    std::os::unix::fs::symlink(target, link)
        .with_context(|| format!("linking {} to {target}", link.display()))
}

/// Installs the built cdylib as `libdir/libnrt.so.1` with the link `libdir/libnrt.so`.
pub(crate) fn install_library(artifacts: &Path, libdir: &Path) -> Result<()> {
    fs::create_dir_all(libdir).with_context(|| format!("creating {}", libdir.display()))?;
    install_file(&artifacts.join(CAPI_ARTIFACT), &libdir.join(SONAME))?;
    install_symlink(SONAME, &libdir.join(LINK_NAME))
}

/// Where the pkg-config file finds the library and the headers.
pub(crate) struct PcPaths<'a> {
    /// A `prefix=` line written first, for paths relative to it (`${pcfiledir}/../..`).
    pub(crate) prefix: Option<&'a str>,
    /// The `libdir=` value.
    pub(crate) libdir: &'a str,
    /// The `includedir=` value.
    pub(crate) includedir: &'a str,
}

/// `nrt.pc` from its template: the comment lines of the template are dropped (they describe
/// the template), the placeholders filled, and the prefix, when given, written before them.
pub(crate) fn pkg_config(template: &str, paths: &PcPaths<'_>) -> String {
    let body: String = template
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    let body = body.replace("@LIBDIR@", paths.libdir).replace("@INCLUDEDIR@", paths.includedir);
    match paths.prefix {
        Some(prefix) => format!("prefix={prefix}\n{body}"),
        None => body,
    }
}

/// Reads the pkg-config template of the workspace at `root`.
pub(crate) fn read_pc_template(root: &Path) -> Result<String> {
    fs::read_to_string(root.join(PC_TEMPLATE)).with_context(|| format!("reading {PC_TEMPLATE}"))
}

/// `cargo xtask libnrt [--dest DIR]`: builds `nrtsim-capi` (debug) and installs the flat
/// developer layout into `dest` (default `target/debug/libnrt`).
pub(crate) fn run(root: &Path, dest: Option<PathBuf>) -> Result<()> {
    let artifacts = cargo_build(root, &[CAPI_PACKAGE], Profile::Debug)?;
    let dest = dest.unwrap_or_else(|| artifacts.join("libnrt"));
    fs::create_dir_all(&dest).with_context(|| format!("creating {}", dest.display()))?;
    let dest = dest.canonicalize().with_context(|| format!("resolving {}", dest.display()))?;
    install_library(&artifacts, &dest)?;
    let libdir = dest.display().to_string();
    let includedir = root.join("sim/capi/include").display().to_string();
    let pc = pkg_config(
        &read_pc_template(root)?,
        &PcPaths { prefix: None, libdir: &libdir, includedir: &includedir },
    );
    fs::write(dest.join("nrt.pc"), pc).context("writing nrt.pc")?;
    eprintln!(
        "installed libnrt.so.1, libnrt.so and nrt.pc in {} (PKG_CONFIG_PATH={0} pkg-config --cflags --libs nrt)",
        dest.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pkg_config_file_names_the_library_and_header_folders() {
        let template = read_pc_template(&crate::workspace_root()).unwrap();
        let pc = pkg_config(
            &template,
            &PcPaths { prefix: None, libdir: "/opt/sim/lib", includedir: "/opt/sim/include" },
        );
        assert!(pc.starts_with("libdir=/opt/sim/lib\nincludedir=/opt/sim/include\n"), "{pc}");
        assert!(pc.contains("Libs: -L${libdir} -Wl,-rpath,${libdir} -lnrt"), "{pc}");
        assert!(!pc.contains('@'), "every placeholder is filled: {pc}");
        assert!(!pc.contains('#'), "the template's comment stays in the template: {pc}");
    }

    #[test]
    fn a_relocatable_pkg_config_file_starts_with_its_prefix() {
        let template = read_pc_template(&crate::workspace_root()).unwrap();
        let pc = pkg_config(
            &template,
            &PcPaths {
                prefix: Some("${pcfiledir}/../.."),
                libdir: "${prefix}/lib",
                includedir: "${prefix}/include",
            },
        );
        assert!(
            pc.starts_with(
                "prefix=${pcfiledir}/../..\nlibdir=${prefix}/lib\nincludedir=${prefix}/include\n"
            ),
            "{pc}"
        );
    }
}
