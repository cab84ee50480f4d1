//! `cargo xtask wheel [--out DIR]`: the Python wheels, in the release profile (they are for
//! users), written to `DIR` (default `wheels/` in the target directory, `target/wheels`):
//!
//! - `nrtsim` (`python/nrtsim`): the `nrtsim` tool as a command (maturin's "bin" bindings: the
//!   Rust binary itself, no Python between the user and it) and the Python package `nrtsim`
//!   whose `sdk/` folder is the SDK layout of `sdk.rs` without `bin/` and with `lib/libnrt.so` a
//!   copy (a wheel holds no links): `python -m nrtsim sdk-root` prints it.
//! - `nrtsim-neuronx-cc` (`python/neuronx-cc`): the compiler shim, pure Python, built by
//!   hatchling (`python/neuronx-cc/README.md` says how it stays out of a real neuronx-cc's way).
//! - `nrtsim-nki` (`python/nki`): nrtsim's NKI (`nki` and `neuronxcc.nki`), pure Python, built
//!   the same way; its run dependencies numpy and ml_dtypes, at the cross-checks' pins
//!   (`pyref/requirements.txt`), are downloaded into `DIR/deps`, so the smoke checks install
//!   everything from files with no network.
//! - `nrtsim-torch` (`python/torch`): libtorchneuron's objects and `trace` for torch programs,
//!   pure Python plus the C++ source of its TorchBind layer, which it builds for the user's torch
//!   at first import (so the wheel does not depend on one torch release).
//!
//! The tools come from `python/requirements-build.txt`, the one list of pins, installed into
//! `target/wheel-env` (made as `cargo xtask test` makes `target/pyenv`). Both binaries are
//! linked by zig against glibc 2.17 through one linker script that calls `maturin zig cc`
//! (the wrapper maturin's own `--zig` uses), which makes the `manylinux_2_17` tag true on a
//! build host with a newer glibc; `auditwheel show` must confirm the tag, or the command fails.
//! Debug info is off for these builds (`CARGO_PROFILE_RELEASE_DEBUG=0`, the same for both so
//! they share their dependencies) and both artifacts are stripped of their static symbols; the
//! library's dynamic symbols and their `NRT_2.0.0` versions are kept.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::libnrt::{self, Profile};
use crate::sdk::{self, Links};

/// The build tools' pins, relative to the workspace root.
pub(crate) const REQUIREMENTS: &str = "python/requirements-build.txt";
/// The build environment, relative to the workspace root.
pub(crate) const VENV: &str = "target/wheel-env";
/// The `nrtsim` wheel's project.
pub(crate) const NRTSIM_PROJECT: &str = "python/nrtsim";
/// Where its SDK folder is staged before maturin packs the Python sources.
pub(crate) const STAGED_SDK: &str = "python/nrtsim/src/nrtsim/sdk";
/// The compiler shim's project.
pub(crate) const SHIM_PROJECT: &str = "python/neuronx-cc";
/// nrtsim's NKI project.
pub(crate) const NKI_PROJECT: &str = "python/nki";
/// nrtsim's torch layer.
pub(crate) const TORCH_PROJECT: &str = "python/torch";
/// nrtsim-nki's run dependencies, whose pins are the cross-checks' (one list of pins).
const NKI_DEPENDENCIES: [&str; 2] = ["numpy", "ml_dtypes"];
/// The Rust target both binaries are built for.
const TARGET: &str = "x86_64-unknown-linux-gnu";
/// The glibc they are linked against, and the wheel tag that says so.
const GLIBC: &str = "2.17";
const MANYLINUX: &str = "manylinux_2_17";

/// The build's environment variables, the same for both cargo runs so they share dependencies.
const BUILD_ENV: [(&str, &str); 1] = [("CARGO_PROFILE_RELEASE_DEBUG", "0")];

/// The date of every wheel entry (hatchling's default for reproducible builds, 2020-02-02).
const SOURCE_DATE_EPOCH: &str = "1580601600";

/// `cargo xtask wheel`.
pub(crate) fn run(root: &Path, out: Option<PathBuf>) -> Result<()> {
    if std::env::consts::OS != "linux" || std::env::consts::ARCH != "x86_64" {
        bail!("cargo xtask wheel builds x86_64 Linux wheels, on x86_64 Linux only");
    }
    let started = std::time::Instant::now();
    let out = out.unwrap_or_else(|| libnrt::target_dir(root).join("wheels"));
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let out = out.canonicalize().with_context(|| format!("resolving {}", out.display()))?;
    remove_old_wheels(&out)?;

    let python = crate::test::ensure_venv(root, REQUIREMENTS, VENV)?;
    let bin = python.parent().context("the build environment's interpreter has no folder")?;
    let linker = zig_linker(root, bin)?;

    let artifacts = build_library(root, &linker)?;
    sdk::lay_out(root, &artifacts, &root.join(STAGED_SDK), Links::Copies)?;
    maturin(root, bin, &linker, &out)?;
    pure_python(root, &python, &out, SHIM_PROJECT)?;
    pure_python(root, &python, &out, NKI_PROJECT)?;
    pure_python(root, &python, &out, TORCH_PROJECT)?;
    nki_dependencies(root, &python, &out.join("deps"))?;

    let nrtsim_wheel = find_wheel(&out, "nrtsim-")?;
    audit(bin, &nrtsim_wheel)?;
    let shim_wheel = find_wheel(&out, "nrtsim_neuronx_cc-")?;
    let nki_wheel = find_wheel(&out, "nrtsim_nki-")?;
    let torch_wheel = find_wheel(&out, "nrtsim_torch-")?;
    eprintln!(
        "xtask wheel: {}, {}, {} and {} in {:.0?}",
        nrtsim_wheel.display(),
        shim_wheel.display(),
        nki_wheel.display(),
        torch_wheel.display(),
        started.elapsed()
    );
    Ok(())
}

/// Removes the wheels of both distributions from `out`, so `pip install out/*.whl` finds only
/// the ones just built.
fn remove_old_wheels(out: &Path) -> Result<()> {
    for entry in fs::read_dir(out).with_context(|| format!("reading {}", out.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let ours = name.starts_with("nrtsim-")
            || name.starts_with("nrtsim_neuronx_cc-")
            || name.starts_with("nrtsim_nki-")
            || name.starts_with("nrtsim_torch-");
        if ours && name.ends_with(".whl") {
            fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

/// The script cargo links with: maturin's zig linker wrapper for the glibc of the tag, the same
/// command line maturin's `--zig` gives its own link.
fn zig_linker(root: &Path, bin: &Path) -> Result<PathBuf> {
    let dir = libnrt::target_dir(root).join("wheel-zig");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let script = dir.join(format!("zigcc-{TARGET}.{GLIBC}.sh"));
    let maturin = bin.join("maturin");
    let python = bin.join("python");
    let text = format!(
        "#!/bin/sh\n\
         # Written by cargo xtask wheel: link for {TARGET} against glibc {GLIBC} with zig.\n\
         export CARGO_ZIGBUILD_ZIG_COMMAND='{}'\n\
         export CARGO_ZIGBUILD_ZIG_COMMAND_ARGS='-m ziglang'\n\
         exec '{}' zig cc -- -g -fno-sanitize=all -target x86_64-linux-gnu.{GLIBC} \"$@\"\n",
        python.display(),
        maturin.display()
    );
    fs::write(&script, text).with_context(|| format!("writing {}", script.display()))?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", script.display()))?;
    Ok(script)
}

/// The variable that gives cargo the linker of `TARGET`.
fn linker_var() -> String {
    format!("CARGO_TARGET_{}_LINKER", TARGET.to_uppercase().replace('-', "_"))
}

/// Builds the library with the zig linker; returns the folder of the artifacts.
fn build_library(root: &Path, linker: &Path) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    crate::run(
        Command::new(&cargo)
            .current_dir(root)
            .args(["rustc", "--quiet", "--locked", "--profile", "release", "--target", TARGET])
            .args(["--package", libnrt::CAPI_PACKAGE, "--lib", "--", "-C", "strip=symbols"])
            .envs(BUILD_ENV)
            .env(linker_var(), linker),
        &format!("cargo rustc --package {}", libnrt::CAPI_PACKAGE),
    )?;
    Ok(libnrt::target_dir(root).join(TARGET).join(Profile::Release.dir_name()))
}

/// `maturin build` of the `nrtsim` wheel into `out`.
fn maturin(root: &Path, bin: &Path, linker: &Path, out: &Path) -> Result<()> {
    // Not `--zig`: maturin would link through a wrapper of its own, whose path differs from
    // the library's linker, and cargo, whose fingerprints include the linker, would then rebuild
    // every dependency on each of the two builds. The same wrapper for both instead.
    crate::run(
        Command::new(bin.join("maturin"))
            .current_dir(root.join(NRTSIM_PROJECT))
            .args(["build", "--quiet", "--locked", "--release", "--strip", "--target", TARGET])
            .args(["--compatibility", MANYLINUX, "--out"])
            .arg(out)
            .envs(BUILD_ENV)
            .env(linker_var(), linker)
            // Zip entries dated by this, not by the files' modification times: same input, same
            // bytes.
            .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
            .env("PATH", prepend_path(bin)),
        "maturin build",
    )
}

/// A pure-Python project's wheel (the shim's, nrtsim-nki's), by pip with the build environment's
/// hatchling (no isolation: no download).
fn pure_python(root: &Path, python: &Path, out: &Path, project: &str) -> Result<()> {
    crate::run(
        Command::new(python)
            .current_dir(root)
            .args(["-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps"])
            .args(["--no-build-isolation", "--wheel-dir"])
            .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
            .arg(out)
            .arg(root.join(project)),
        &format!("pip wheel {project}"),
    )
}

/// nrtsim-nki's run dependencies as wheels in `deps`, at the pins of `pyref/requirements.txt`.
fn nki_dependencies(root: &Path, python: &Path, deps: &Path) -> Result<()> {
    let pins = fs::read_to_string(root.join(crate::test::REQUIREMENTS))
        .with_context(|| format!("reading {}", crate::test::REQUIREMENTS))?;
    let wanted = nki_pins(&pins)?;
    crate::run(
        Command::new(python)
            .args(["-m", "pip", "download", "--quiet", "--disable-pip-version-check"])
            .args(["--only-binary", ":all:", "--dest"])
            .arg(deps)
            .args(&wanted),
        "pip download nrtsim-nki's dependencies",
    )
}

/// The pinned requirement of each of nrtsim-nki's dependencies in a requirements file.
pub(crate) fn nki_pins(requirements: &str) -> Result<Vec<String>> {
    NKI_DEPENDENCIES
        .iter()
        .map(|name| {
            requirements
                .lines()
                .map(str::trim)
                .find(|line| line.split("==").next() == Some(*name))
                .map(str::to_owned)
                .with_context(|| format!("{} pins no {name}", crate::test::REQUIREMENTS))
        })
        .collect()
}

/// `PATH` with `dir` first.
fn prepend_path(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(paths).unwrap_or_else(|_| dir.as_os_str().to_owned())
}

/// The one wheel in `out` whose name starts with `prefix`.
fn find_wheel(out: &Path, prefix: &str) -> Result<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(out).with_context(|| format!("reading {}", out.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with(prefix) && name.ends_with(".whl") {
            found.push(path);
        }
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => bail!("expected one {prefix}*.whl in {}, found {found:?}", out.display()),
    }
}

/// The platform tags of a wheel's file name (`NAME-VERSION-PY-ABI-PLATFORM.whl`, the platform
/// possibly several tags joined by dots).
pub(crate) fn platform_tags(wheel_name: &str) -> Vec<&str> {
    wheel_name
        .strip_suffix(".whl")
        .and_then(|stem| stem.rsplit('-').next())
        .map(|platform| platform.split('.').collect())
        .unwrap_or_default()
}

/// The PEP 600 spelling of a legacy manylinux tag (PEP 599's `manylinux2014` is
/// `manylinux_2_17`, PEP 571's `manylinux2010` is `manylinux_2_12`, PEP 513's `manylinux1` is
/// `manylinux_2_5`); any other tag as it is.
pub(crate) fn pep600_tag(tag: &str) -> String {
    for (legacy, glibc) in
        [("manylinux2014", "2_17"), ("manylinux2010", "2_12"), ("manylinux1", "2_5")]
    {
        if let Some(arch) = tag.strip_prefix(legacy).and_then(|rest| rest.strip_prefix('_')) {
            return format!("manylinux_{glibc}_{arch}");
        }
    }
    tag.to_owned()
}

/// Whether `auditwheel show`'s report confirms `tag`: it names the tag (in its PEP 600
/// spelling) among the ones the wheel is consistent with.
pub(crate) fn audit_confirms(report: &str, tag: &str) -> bool {
    let tag = pep600_tag(tag);
    let report = report.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some((_, consistent)) = report.split_once("consistent with the following platform tag")
    else {
        return false;
    };
    consistent.contains(&format!("\"{tag}\"")) || consistent.contains(&format!("{tag}."))
}

/// Runs `auditwheel show` on the wheel and fails unless it confirms every platform tag.
fn audit(bin: &Path, wheel: &Path) -> Result<()> {
    let output = Command::new(bin.join("auditwheel"))
        .arg("show")
        .arg(wheel)
        .output()
        .context("running auditwheel show")?;
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!("auditwheel show failed: {report}{}", String::from_utf8_lossy(&output.stderr));
    }
    let name = wheel.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    for tag in platform_tags(name) {
        if tag.starts_with("manylinux") && !audit_confirms(&report, tag) {
            bail!("auditwheel does not confirm the tag {tag} of {name}:\n{report}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_tags_are_read_from_the_wheel_name() {
        assert_eq!(
            platform_tags("nrtsim-0.1.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
            ["manylinux_2_17_x86_64", "manylinux2014_x86_64"]
        );
        assert_eq!(platform_tags("nrtsim_neuronx_cc-0.1.0-py3-none-any.whl"), ["any"]);
    }

    #[test]
    fn auditwheel_confirms_a_tag_only_in_its_consistent_with_sentence() {
        let report = "nrtsim-0.1.0-py3-none-manylinux_2_17_x86_64.whl is consistent with the\n\
                      following platform tag: \"manylinux_2_17_x86_64\".\n\n\
                      The wheel references external versioned symbols in these system-provided\n\
                      shared libraries: libc.so.6 with versions {'GLIBC_2.2.5'}";
        assert!(audit_confirms(report, "manylinux_2_17_x86_64"));
        assert!(!audit_confirms(report, "manylinux_2_5_x86_64"));
        assert!(audit_confirms(report, "manylinux2014_x86_64"), "the PEP 599 name of 2_17");
        assert!(!audit_confirms(report, "manylinux1_x86_64"), "the PEP 513 name of 2_5");
        let newer =
            "x.whl is consistent with the following platform tag: \"manylinux_2_34_x86_64\".";
        assert!(!audit_confirms(newer, "manylinux_2_17_x86_64"));
    }

    #[test]
    fn the_shim_pins_the_nrtsim_version_it_is_built_with() {
        let root = crate::workspace_root();
        let pyproject = fs::read_to_string(root.join(SHIM_PROJECT).join("pyproject.toml")).unwrap();
        let version = env!("CARGO_PKG_VERSION");
        assert!(pyproject.contains(&format!("\nversion = \"{version}\"\n")), "{pyproject}");
        assert!(
            pyproject.contains(&format!("dependencies = [\"nrtsim=={version}\"]")),
            "{pyproject}"
        );
    }

    #[test]
    fn ci_builds_the_wheels_and_runs_the_smoke_checks_on_them() {
        let ci = fs::read_to_string(crate::workspace_root().join(".ci/run")).unwrap();
        let lines: Vec<&str> = ci.lines().map(str::trim).collect();
        let wheel = lines.iter().position(|l| *l == "cargo xtask wheel");
        let smoke = lines.iter().position(|l| *l == "python3 python/tests/smoke.py target/wheels");
        assert!(matches!((wheel, smoke), (Some(w), Some(s)) if w < s), "{ci}");
    }

    #[test]
    fn nrtsim_nki_dependencies_are_taken_at_the_cross_checks_pins() {
        let pins = "# comment\nnumpy==2.4.6\njax==1\nml_dtypes==0.6.0\n";
        assert_eq!(nki_pins(pins).unwrap(), ["numpy==2.4.6", "ml_dtypes==0.6.0"]);
        assert!(nki_pins("numpy==1\n").unwrap_err().to_string().contains("ml_dtypes"));
    }

    #[test]
    fn every_build_tool_is_pinned_in_one_file() {
        let root = crate::workspace_root();
        let pins = fs::read_to_string(root.join(REQUIREMENTS)).unwrap();
        for tool in ["maturin", "ziglang", "hatchling", "auditwheel"] {
            let pinned = pins.lines().any(|l| {
                l.split_once("==")
                    .is_some_and(|(name, version)| name == tool && !version.is_empty())
            });
            assert!(pinned, "{tool} is not pinned in {REQUIREMENTS}");
        }
        let shim = fs::read_to_string(root.join(SHIM_PROJECT).join("pyproject.toml")).unwrap();
        let hatchling = pins.lines().find(|l| l.starts_with("hatchling==")).unwrap();
        assert!(shim.contains(&format!("requires = [\"{hatchling}\"]")), "the shim's backend pin");
    }
}
