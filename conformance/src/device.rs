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
//! - The compiler is whatever `--compiler` names (default `neuronx-cc` on the `PATH`); tests use a
//!   stand-in (`conformance/tests/standin/neuronx-cc`) that checks its arguments and writes a NEFF
//!   with our writer, and say so.

use std::path::{Path, PathBuf};
use std::process::Command;

use abi::neff::NeffHeader;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::vector::{self, HLO_FILE, Vector};

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

fn check_target(target: &str) -> Result<(), String> {
    if TARGETS.contains(&target) {
        Ok(())
    } else {
        Err(format!("target {target:?} is not one of {}", TARGETS.join(", ")))
    }
}

/// The encoded HLO of `vector`, as generated now from its `model.hlo`.
fn current_hlo(vector: &Vector) -> Result<Vec<u8>, String> {
    let files = vector::generate_inputs(vector).map_err(|e| e.to_string())?;
    files.get(HLO_FILE).cloned().ok_or_else(|| {
        format!(
            "vector {} has no {}: a device NEFF is compiled from its HLO",
            vector.name,
            vector::HLO_TEXT_FILE
        )
    })
}

/// Compiles `vector`'s HLO for `target` with `compiler`; returns the device NEFF's path.
///
/// # Errors
/// A message for a vector without HLO or with a stale `model.hlo.pb` (bless first), a compiler
/// that cannot be run or fails (with its stderr), or files that cannot be written.
pub fn compile(vector: &Vector, target: &str, compiler: &Path) -> Result<PathBuf, String> {
    check_target(target)?;
    let hlo = current_hlo(vector)?;
    let hlo_path = vector.dir.join(HLO_FILE);
    if std::fs::read(&hlo_path).ok().as_deref() != Some(hlo.as_slice()) {
        return Err(format!(
            "{} is stale or missing: run `cargo xtask vectors --bless` first",
            hlo_path.display()
        ));
    }
    let version = Command::new(compiler).arg("--version").output().map_err(|e| {
        format!(
            "cannot run the compiler {}: {e} (give its path with --compiler)",
            compiler.display()
        )
    })?;
    if !version.status.success() {
        return Err(format!(
            "{} --version failed ({}): {}",
            compiler.display(),
            version.status,
            String::from_utf8_lossy(&version.stderr).trim()
        ));
    }
    let compiler_version =
        String::from_utf8_lossy(&version.stdout).lines().next().unwrap_or("").trim().to_owned();
    let dir = device_dir(vector, target);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = dir.join("model.neff");
    let _ = std::fs::remove_file(&out);
    let output = Command::new(compiler)
        .args(["compile", "--framework", "XLA"])
        .arg(&hlo_path)
        .args(["--target", target, "--output"])
        .arg(&out)
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("cannot run the compiler {}: {e}", compiler.display()))?;
    if !output.status.success() || !out.is_file() {
        return Err(format!(
            "{} compile for {} ({target}) failed ({}): {}",
            compiler.display(),
            vector.name,
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let manifest = Manifest {
        compiler_version,
        flags: flags(target),
        target: target.to_owned(),
        hlo_sha256: sha256_hex(&hlo),
    };
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())? + "\n";
    let path = dir.join(MANIFEST_FILE);
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(out)
}

/// The bytes the `nrt` backend loads for `vector` on `target`: its fresh device NEFF with the
/// `[neff]` header overrides, corruption and truncation applied.
///
/// # Errors
/// A message naming the command to run when the device NEFF is missing or stale, or when the
/// overrides cannot be applied.
pub fn device_neff(vector: &Vector, target: &str) -> Result<Vec<u8>, String> {
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
        return Err(format!(
            "vector {} has no device NEFF for {target} ({}): {}",
            vector.name,
            neff_path.display(),
            remake()
        ));
    }
    let manifest: Manifest = std::fs::read(&manifest_path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()))
        .map_err(|e| format!("{}: {e}: {}", manifest_path.display(), remake()))?;
    let hlo = current_hlo(vector)?;
    let stale = if manifest.hlo_sha256 != sha256_hex(&hlo) {
        Some("its model.hlo has changed since it was compiled")
    } else if manifest.flags != flags(target) || manifest.target != target {
        Some("it was compiled with other flags")
    } else {
        None
    };
    if let Some(why) = stale {
        return Err(format!(
            "the device NEFF of {} for {target} is stale ({why}): {}",
            vector.name,
            remake()
        ));
    }
    let bytes = std::fs::read(&neff_path).map_err(|e| format!("{}: {e}", neff_path.display()))?;
    match &vector.case.neff {
        Some(model) => apply_overrides(bytes, model),
        None => Ok(bytes),
    }
}

/// Applies a `[neff]` table's header overrides, corruption and truncation to NEFF bytes.
fn apply_overrides(bytes: Vec<u8>, model: &crate::spec::NeffModel) -> Result<Vec<u8>, String> {
    let mut bytes = bytes;
    if !model.header.is_empty() {
        let mut header = NeffHeader::parse(&bytes).map_err(|e| format!("device NEFF: {e}"))?;
        let payload = header.payload(&bytes).map_err(|e| format!("device NEFF: {e}"))?.to_vec();
        for (field, &value) in &model.header {
            let small = || {
                u32::try_from(value)
                    .map_err(|_| format!("header.{field} = {value} does not fit 32 bits"))
            };
            match field.as_str() {
                "pkg_version" => header.pkg_version = value,
                "version_major" => header.version_major = value,
                "version_minor" => header.version_minor = value,
                "feature_bits" => header.feature_bits = value,
                "num_tpb" => header.num_tpb = small()?,
                "lnc_size" => header.lnc_size = small()?,
                other => return Err(format!("unknown header field {other:?}")),
            }
        }
        bytes = abi::neff::assemble_neff(&header, &payload).map_err(|e| e.to_string())?;
    }
    for &[offset, mask] in &model.corrupt {
        let length = bytes.len();
        let byte =
            usize::try_from(offset).ok().and_then(|o| bytes.get_mut(o)).ok_or_else(|| {
                format!("corrupt offset {offset} is past the end of the {length}-byte device NEFF")
            })?;
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
/// A message saying how to set it when neither tells.
pub fn instance_target() -> Result<String, String> {
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
        .ok_or_else(|| {
            format!(
                "cannot tell this instance's target (product name {:?}): set {TARGET_ENV} to one of {}",
                product.trim(),
                TARGETS.join(", ")
            )
        })
}
