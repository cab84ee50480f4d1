//! `cargo xtask libnrt [--dest DIR]`: builds the simulator's `libnrt.so.1` and installs it with
//! what a C or C++ build needs beside it: the `libnrt.so` link for `-lnrt` and `nrt.pc` for
//! `pkg-config --cflags --libs nrt` (include path: `sim/capi/include`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The `nrt.pc` template, relative to the workspace root.
const PC_TEMPLATE: &str = "sim/capi/nrt.pc.in";

/// `nrt.pc` for a library in `libdir` and headers in `includedir`.
pub(crate) fn pkg_config(template: &str, libdir: &Path, includedir: &Path) -> String {
    template
        .replace("@LIBDIR@", &libdir.display().to_string())
        .replace("@INCLUDEDIR@", &includedir.display().to_string())
}

/// Builds `nrtsim-capi` and installs into `dest` (default `target/debug/libnrt`).
pub(crate) fn run(root: &Path, dest: Option<PathBuf>) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .current_dir(root)
        .args(["build", "--quiet", "--package", "nrtsim-capi"])
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build --package nrtsim-capi failed");
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let built = target.join("debug/libnrtsim_capi.so");
    let dest = dest.unwrap_or_else(|| target.join("debug/libnrt"));
    fs::create_dir_all(&dest).with_context(|| format!("creating {}", dest.display()))?;
    let dest = dest.canonicalize().with_context(|| format!("resolving {}", dest.display()))?;
    fs::copy(&built, dest.join("libnrt.so.1"))
        .with_context(|| format!("copying {} to {}", built.display(), dest.display()))?;
    let link = dest.join("libnrt.so");
    if fs::symlink_metadata(&link).is_err() {
        std::os::unix::fs::symlink("libnrt.so.1", &link)
            .with_context(|| format!("linking {}", link.display()))?;
    }
    let template = fs::read_to_string(root.join(PC_TEMPLATE))
        .with_context(|| format!("reading {PC_TEMPLATE}"))?;
    let pc = pkg_config(&template, &dest, &root.join("sim/capi/include"));
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
        let template = fs::read_to_string(crate::workspace_root().join(PC_TEMPLATE)).unwrap();
        let pc = pkg_config(&template, Path::new("/opt/sim/lib"), Path::new("/opt/sim/include"));
        assert!(pc.contains("libdir=/opt/sim/lib\n"), "{pc}");
        assert!(pc.contains("includedir=/opt/sim/include\n"), "{pc}");
        assert!(pc.contains("Libs: -L${libdir} -Wl,-rpath,${libdir} -lnrt"), "{pc}");
        assert!(!pc.contains('@'), "every placeholder is filled: {pc}");
    }
}
