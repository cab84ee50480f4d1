//! Device NEFFs: each vector's HLO compiled by `neuronx-cc` for a target, stored beside the
//! vector with a manifest, and chosen by the `nrt` backend for the instance it runs on.
//!
//! `vectors/<area>/<name>/device/<target>/model.neff` is what
//! `neuronx-cc compile --framework XLA model.hlo.pb --target <target> --output model.neff` wrote
//! from the vector's `model.hlo.pb`; `manifest.json` beside it records the compiler's version
//! line, the flags and the SHA-256 of the `model.hlo.pb` it was given, so a device NEFF whose HLO
//! has changed since is refused as stale, naming the command that remakes it.
//!
//! Design choices:
//! - **The vector's `[neff]` damage applies on top.** Header overrides, XOR corruption and
//!   truncation are applied to the device NEFF's bytes for the device run, so a load-gate vector
//!   checks the same gate on the compiler's NEFF (a header override re-seals the payload hash, as
//!   the NEFF writer does for the simulated NEFF).
//! - **Missing is a failure, never a skip.** A vector that has a `[neff]` and runs on `nrt` but
//!   has no fresh device NEFF fails with the command to make one.
//! - **The trace stays comparable.** The device NEFF's bytes differ from `model.neff` by nature,
//!   so the runner writes the `load` argument of the vector's own `model.neff` in the trace.
//! - The compiler is whatever `--compiler` names (default `neuronx-cc` on the `PATH`); tests use
//!   `nrtsim` run as `neuronx-cc` (the simulator's compile target, the package
//!   `nrtsim-compile`), whose NEFFs say they are simulator NEFFs.

use std::path::{Path, PathBuf};
use std::process::Command;

use abi::neff::{NeffError, NeffHeader};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::spec::{HeaderField, NeffModel};
use crate::vector::{self, HLO_FILE, Vector, VectorError};

/// The targets a device NEFF is compiled for.
pub const TARGETS: [&str; 3] = ["trn1", "trn2", "inf2"];
/// The folder of a vector's device NEFFs.
pub const DEVICE_DIR: &str = "device";
/// The manifest beside each device NEFF.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The environment variable naming the instance's target for the `nrt` backend (else it is read
/// from the EC2 instance type in `/sys/devices/virtual/dmi/id/product_name`).
pub const TARGET_ENV: &str = "NRTSIM_DEVICE_TARGET";

/// What `manifest.json` records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The first line the compiler printed for `--version`.
    pub compiler_version: String,
    /// The arguments after the compiler's name, with the input and output as file names.
    pub flags: Vec<String>,
    /// The target.
    pub target: String,
    /// The SHA-256 (hex) of the `model.hlo.pb` compiled.
    pub hlo_sha256: String,
}

/// The command that (re)makes the device NEFFs of a target.
pub fn compile_command(target: &str) -> String {
    format!("cargo xtask vectors compile --target {target}")
}

fn sha256_hex(bytes: &[u8]) -> String {
    abi::hex::to_hex(&Sha256::digest(bytes))
}

/// The flags given to the compiler for `target` (input and output as file names).
pub fn flags(target: &str) -> Vec<String> {
    ["compile", "--framework", "XLA", HLO_FILE, "--target", target, "--output", "model.neff"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

/// The folder of `vector`'s device NEFF for `target`.
pub fn device_dir(vector: &Vector, target: &str) -> PathBuf {
    vector.dir.join(DEVICE_DIR).join(target)
}

/// Whether `vector` needs a device NEFF: it has a `[neff]` and runs on the `nrt` backend.
pub fn needs_device_neff(vector: &Vector) -> bool {
    vector.case.neff.is_some() && vector.runs_on("nrt")
}

/// Why a device NEFF cannot be compiled or used.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// A target this project does not compile for.
    #[error("target {target:?} is not one of {}", TARGETS.join(", "))]
    UnknownTarget {
        /// The target given.
        target: String,
    },
    /// The vector's inputs cannot be generated.
    #[error(transparent)]
    Vector(#[from] VectorError),
    /// A vector without a device program.
    #[error(
        "vector {vector} has no {}: a device NEFF is compiled from its HLO",
        vector::HLO_TEXT_FILE
    )]
    NoHlo {
        /// The vector.
        vector: String,
    },
    /// `model.hlo.pb` is not what `model.hlo` gives now.
    #[error("{} is stale or missing: run `cargo xtask vectors --bless` first", .path.display())]
    StaleHlo {
        /// The encoded module's path.
        path: PathBuf,
    },
    /// The compiler cannot be started.
    #[error(
        "cannot run the compiler {}: {source}{}",
        .compiler.display(),
        if *.hint { " (give its path with --compiler)" } else { "" }
    )]
    CompilerNotRun {
        /// The compiler's path.
        compiler: PathBuf,
        /// Whether to say how to give another one.
        hint: bool,
        /// The cause.
        source: std::io::Error,
    },
    /// The compiler ran and failed.
    #[error("{} {what} failed ({status}): {stderr}", .compiler.display())]
    CompilerFailed {
        /// The compiler's path.
        compiler: PathBuf,
        /// What it was asked (`--version`, or `compile for <vector> (<target>)`).
        what: String,
        /// How it exited.
        status: std::process::ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A file cannot be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A manifest that cannot be read or written as JSON.
    #[error("{}: {source}: {remake}", .path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        source: serde_json::Error,
        /// How to make it again.
        remake: String,
    },
    /// No device NEFF for the target.
    #[error("vector {vector} has no device NEFF for {target} ({}): {remake}", .path.display())]
    Missing {
        /// The vector.
        vector: String,
        /// The target.
        target: String,
        /// Where the NEFF would be.
        path: PathBuf,
        /// How to make it.
        remake: String,
    },
    /// A device NEFF compiled from another program or with other flags.
    #[error("the device NEFF of {vector} for {target} is stale ({why}): {remake}")]
    Stale {
        /// The vector.
        vector: String,
        /// The target.
        target: String,
        /// What changed.
        why: &'static str,
        /// How to make it again.
        remake: String,
    },
    /// A device NEFF whose header cannot be read or rewritten.
    #[error("device NEFF: {0}")]
    Neff(#[source] NeffError),
    /// A header override too large for its 32-bit field.
    #[error("header.{field} = {value} does not fit 32 bits")]
    HeaderValue {
        /// The field.
        field: HeaderField,
        /// The value given.
        value: u64,
    },
    /// A corruption past the end of the file.
    #[error("corrupt offset {offset} is past the end of the {length}-byte device NEFF")]
    CorruptPastEnd {
        /// The offset given.
        offset: u64,
        /// The file's length.
        length: usize,
    },
    /// Neither the environment nor the machine tells the target.
    #[error(
        "cannot tell this instance's target (product name {product:?}): set {TARGET_ENV} to one \
         of {}",
        TARGETS.join(", ")
    )]
    UnknownInstance {
        /// The EC2 product name read.
        product: String,
    },
}

fn check_target(target: &str) -> Result<(), DeviceError> {
    if TARGETS.contains(&target) {
        Ok(())
    } else {
        Err(DeviceError::UnknownTarget { target: target.to_owned() })
    }
}

/// The encoded HLO of `vector`, as generated now from its `model.hlo`.
fn current_hlo(vector: &Vector) -> Result<Vec<u8>, DeviceError> {
    let files = vector::generate_inputs(vector)?;
    files.get(HLO_FILE).cloned().ok_or_else(|| DeviceError::NoHlo { vector: vector.name.clone() })
}

/// The error for an IO failure on `path`.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DeviceError + use<> {
    let path = path.to_path_buf();
    move |source| DeviceError::Io { path, source }
}

/// Compiles `vector`'s HLO for `target` with `compiler`; returns the device NEFF's path.
///
/// # Errors
/// A [`DeviceError`] for a vector without HLO or with a stale `model.hlo.pb` (bless first), a
/// compiler that cannot be run or fails (with its stderr), or files that cannot be written.
pub fn compile(vector: &Vector, target: &str, compiler: &Path) -> Result<PathBuf, DeviceError> {
    check_target(target)?;
    let hlo = current_hlo(vector)?;
    let hlo_path = vector.dir.join(HLO_FILE);
    if std::fs::read(&hlo_path).ok().as_deref() != Some(hlo.as_slice()) {
        return Err(DeviceError::StaleHlo { path: hlo_path });
    }
    let version = Command::new(compiler).arg("--version").output().map_err(|source| {
        DeviceError::CompilerNotRun { compiler: compiler.to_path_buf(), hint: true, source }
    })?;
    if !version.status.success() {
        return Err(DeviceError::CompilerFailed {
            compiler: compiler.to_path_buf(),
            what: "--version".to_owned(),
            status: version.status,
            stderr: String::from_utf8_lossy(&version.stderr).trim().to_owned(),
        });
    }
    let compiler_version =
        String::from_utf8_lossy(&version.stdout).lines().next().unwrap_or("").trim().to_owned();
    let dir = device_dir(vector, target);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let out = dir.join("model.neff");
    let _ = std::fs::remove_file(&out);
    let output = Command::new(compiler)
        .args(["compile", "--framework", "XLA"])
        .arg(&hlo_path)
        .args(["--target", target, "--output"])
        .arg(&out)
        .current_dir(&dir)
        .output()
        .map_err(|source| DeviceError::CompilerNotRun {
            compiler: compiler.to_path_buf(),
            hint: false,
            source,
        })?;
    if !output.status.success() || !out.is_file() {
        return Err(DeviceError::CompilerFailed {
            compiler: compiler.to_path_buf(),
            what: format!("compile for {} ({target})", vector.name),
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    let manifest = Manifest {
        compiler_version,
        flags: flags(target),
        target: target.to_owned(),
        hlo_sha256: sha256_hex(&hlo),
    };
    let path = dir.join(MANIFEST_FILE);
    let text = serde_json::to_string_pretty(&manifest).map_err(|source| DeviceError::Manifest {
        path: path.clone(),
        source,
        remake: String::new(),
    })? + "\n";
    crate::output_file::write(&path, text.as_bytes()).map_err(io(&path))?;
    Ok(out)
}

/// The bytes the `nrt` backend loads for `vector` on `target`: its fresh device NEFF with the
/// `[neff]` header overrides, corruption and truncation applied.
///
/// # Errors
/// A [`DeviceError`] naming the command to run when the device NEFF is missing or stale, or
/// why the overrides cannot be applied.
pub fn device_neff(vector: &Vector, target: &str) -> Result<Vec<u8>, DeviceError> {
    check_target(target)?;
    let dir = device_dir(vector, target);
    let remake = || {
        format!(
            "run `{}` on a host with neuronx-cc (the Neuron pip repository), then commit {}",
            compile_command(target),
            dir.display()
        )
    };
    let neff_path = dir.join("model.neff");
    let manifest_path = dir.join(MANIFEST_FILE);
    if !neff_path.is_file() || !manifest_path.is_file() {
        return Err(DeviceError::Missing {
            vector: vector.name.clone(),
            target: target.to_owned(),
            path: neff_path,
            remake: remake(),
        });
    }
    let bytes = std::fs::read(&manifest_path).map_err(io(&manifest_path))?;
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|source| {
        DeviceError::Manifest { path: manifest_path.clone(), source, remake: remake() }
    })?;
    let hlo = current_hlo(vector)?;
    let stale = if manifest.hlo_sha256 != sha256_hex(&hlo) {
        Some("its model.hlo has changed since it was compiled")
    } else if manifest.flags != flags(target) || manifest.target != target {
        Some("it was compiled with other flags")
    } else {
        None
    };
    if let Some(why) = stale {
        return Err(DeviceError::Stale {
            vector: vector.name.clone(),
            target: target.to_owned(),
            why,
            remake: remake(),
        });
    }
    let bytes = std::fs::read(&neff_path).map_err(io(&neff_path))?;
    match &vector.case.neff {
        Some(model) => apply_overrides(bytes, model),
        None => Ok(bytes),
    }
}

/// Applies a `[neff]` table's header overrides, corruption and truncation to NEFF bytes.
fn apply_overrides(bytes: Vec<u8>, model: &NeffModel) -> Result<Vec<u8>, DeviceError> {
    let mut bytes = bytes;
    if !model.header.is_empty() {
        let mut header = NeffHeader::parse(&bytes).map_err(DeviceError::Neff)?;
        let payload = header.payload(&bytes).map_err(DeviceError::Neff)?.to_vec();
        for (&field, &value) in &model.header {
            let small =
                || u32::try_from(value).map_err(|_| DeviceError::HeaderValue { field, value });
            match field {
                HeaderField::PkgVersion => header.pkg_version = value,
                HeaderField::VersionMajor => header.version_major = value,
                HeaderField::VersionMinor => header.version_minor = value,
                HeaderField::FeatureBits => header.feature_bits = value,
                HeaderField::NumTpb => header.num_tpb = small()?,
                HeaderField::LncSize => header.lnc_size = small()?,
            }
        }
        bytes = abi::neff::assemble_neff(&header, &payload).map_err(DeviceError::Neff)?;
    }
    for &[offset, mask] in &model.corrupt {
        let length = bytes.len();
        let byte = usize::try_from(offset)
            .ok()
            .and_then(|o| bytes.get_mut(o))
            .ok_or(DeviceError::CorruptPastEnd { offset, length })?;
        *byte ^= mask as u8;
    }
    if let Some(length) = model.truncate {
        bytes.truncate(length);
    }
    Ok(bytes)
}

/// The instance's target: [`TARGET_ENV`], else the EC2 instance type's family.
///
/// # Errors
/// [`DeviceError::UnknownInstance`], saying how to set it, when neither tells.
pub fn instance_target() -> Result<String, DeviceError> {
    if let Ok(target) = std::env::var(TARGET_ENV) {
        check_target(target.trim())?;
        return Ok(target.trim().to_owned());
    }
    let product =
        std::fs::read_to_string("/sys/devices/virtual/dmi/id/product_name").unwrap_or_default();
    TARGETS
        .iter()
        .find(|target| product.trim().starts_with(&format!("{target}.")))
        .map(|target| (*target).to_owned())
        .ok_or_else(|| DeviceError::UnknownInstance { product: product.trim().to_owned() })
}
