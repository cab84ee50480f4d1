//! Code generation for the protobuf schemas (the metaneff of `abi`, XLA's HLO subset of `hlo`),
//! and, from the function table of `abi::functions`, the libnrt function reference page and the
//! prototype block of each C header of `sim/capi/include`; run by `cargo xtask codegen
//! [--check]`.
//!
//! It is a package of its own so that protox and prost-build (and what they pull in: a regex
//! engine, a graph library, a Rust pretty-printer) are built only when code is generated, not for
//! `cargo xtask conformance`, a newcomer's first command.
//!
//! Each proto file is compiled with protox into a `FileDescriptorSet`; prost-build turns it into
//! Rust (maps as `BTreeMap`, so encoding is deterministic). For the metaneff the descriptor set,
//! stripped of source locations, is also written beside the code so prost-reflect can print and
//! parse text format and JSON at run time; the HLO crate needs no reflection, so it gets only the
//! Rust. All outputs are committed. Generation is a pure function of the proto files, so `--check`
//! (and the test below) can compare it with what is committed.
#![forbid(unsafe_code)]

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use prost::Message;

/// One schema to compile; paths are relative to the workspace root.
struct Schema {
    /// The proto file.
    proto: &'static str,
    /// The directory imports are resolved against.
    include: &'static str,
    /// The generated Rust module.
    rust_out: &'static str,
    /// The encoded descriptor set, for schemas read by reflection at run time.
    descriptor_out: Option<&'static str>,
    /// Proto types declared by hand in Rust instead of generated: (proto path, Rust path).
    extern_paths: &'static [(&'static str, &'static str)],
    /// Message fields held in a `Box` rather than inline (proto paths).
    boxed: &'static [&'static str],
}

/// Every schema of the workspace.
const SCHEMAS: &[Schema] = &[
    Schema {
        proto: "abi/proto/metaneff.proto",
        include: "abi/proto",
        rust_out: "abi/src/metaneff/generated.rs",
        descriptor_out: Some("abi/src/metaneff/metaneff.fds.bin"),
        // The element type enum is part of the contract that is built without prost (`nrt` and
        // the recorder use the dtype tables), so `abi::dtype` declares it and the messages
        // refer to it.
        extern_paths: &[(".metaneff.MetaTensor.DataType", "crate::dtype::DataType")],
        boxed: &[],
    },
    Schema {
        proto: "hlo/proto/hlo.proto",
        include: "hlo/proto",
        rust_out: "hlo/src/proto/generated.rs",
        descriptor_out: None,
        extern_paths: &[],
        // prost holds an optional sub-message inline, so every instruction paid for all of them
        // (2.4 KB, the literal alone 888 bytes) though most instructions have one or two. These
        // are the large ones; the shape, which nearly every instruction has, and the small ones
        // stay inline.
        boxed: &[
            ".xla.HloInstructionProto.literal",
            ".xla.HloInstructionProto.metadata",
            ".xla.HloInstructionProto.convolution_dimension_numbers",
            ".xla.HloInstructionProto.dot_dimension_numbers",
            ".xla.HloInstructionProto.gather_dimension_numbers",
            ".xla.HloInstructionProto.scatter_dimension_numbers",
            ".xla.HloInstructionProto.precision_config",
            ".xla.HloInstructionProto.collective_device_list",
            ".xla.HloInstructionProto.iota_replica_group_list",
        ],
    },
];

/// The reference page of the libnrt function table, relative to the workspace root.
const FUNCTIONS_PAGE: &str = "docs/libnrt-functions.md";

/// Our C headers, relative to the workspace root; each function's prototype is in the block
/// between [`abi::functions::PROTOTYPES_BEGIN`] and its end line.
const HEADERS_DIR: &str = "sim/capi/include";

/// One generated file: where it goes and what it holds.
struct Output {
    path: PathBuf,
    contents: Vec<u8>,
}

/// `xtask-codegen [--check]`.
fn main() -> Result<()> {
    let mut check = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--check" => check = true,
            other => bail!("unexpected argument {other:?}: expected nothing or --check"),
        }
    }
    run(&workspace_root(), check)
}

/// The workspace root: two levels above this package's manifest directory (`xtask/codegen`).
fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.ancestors().nth(2).map(PathBuf::from).unwrap_or(manifest_dir)
}

/// Regenerates (or, with `check`, verifies) the committed outputs.
fn run(root: &Path, check: bool) -> Result<()> {
    let mut outputs = Vec::new();
    for schema in SCHEMAS {
        outputs.extend(generate(root, schema)?);
    }
    outputs.push(Output {
        path: root.join(FUNCTIONS_PAGE),
        contents: abi::functions::reference_page().into_bytes(),
    });
    for &header in abi::functions::Header::ALL {
        let path = root.join(HEADERS_DIR).join(header.path());
        let source =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let contents = with_prototypes(&source, &abi::functions::header_prototypes(header))
            .with_context(|| format!("in {}", path.display()))?;
        outputs.push(Output { path, contents: contents.into_bytes() });
    }
    let mut stale = Vec::new();
    for output in &outputs {
        let current = fs::read(&output.path).ok();
        if current.as_deref() == Some(output.contents.as_slice()) {
            continue;
        }
        if check {
            stale.push(output.path.display().to_string());
        } else {
            fs::write(&output.path, &output.contents)
                .with_context(|| format!("writing {}", output.path.display()))?;
            eprintln!("wrote {}", output.path.display());
        }
    }
    if !stale.is_empty() {
        bail!(
            "generated code is stale: {} (run `cargo xtask codegen` and commit the result)",
            stale.join(", ")
        );
    }
    Ok(())
}

/// `source` with the lines between its prototype block's first and last line replaced by
/// `block`; an error if the header lacks either line or has them out of order.
fn with_prototypes(source: &str, block: &str) -> Result<String> {
    use abi::functions::{PROTOTYPES_BEGIN, PROTOTYPES_END};
    let line_end = |marker: &str| {
        source
            .match_indices(marker)
            .find(|(at, _)| *at == 0 || source[..*at].ends_with('\n'))
            .map(|(at, _)| at + marker.len())
            .and_then(|end| source[end..].starts_with('\n').then_some(end + 1))
    };
    let Some(begin) = line_end(PROTOTYPES_BEGIN) else {
        bail!("expected a line {PROTOTYPES_BEGIN:?} before the prototypes, found none");
    };
    let Some(end) = line_end(PROTOTYPES_END).map(|end| end - PROTOTYPES_END.len() - 1) else {
        bail!("expected a line {PROTOTYPES_END:?} after the prototypes, found none");
    };
    if end < begin {
        bail!("the line {PROTOTYPES_END:?} comes before {PROTOTYPES_BEGIN:?}");
    }
    Ok(format!("{}{block}{}", &source[..begin], &source[end..]))
}

/// Compiles one proto file and returns its outputs, without touching the file system beyond
/// reading the proto.
fn generate(root: &Path, schema: &Schema) -> Result<Vec<Output>> {
    let proto = schema.proto;
    let mut fds = protox::compile([root.join(proto)], [root.join(schema.include)])
        .with_context(|| format!("compiling {proto}"))?;

    let requests = fds
        .file
        .iter()
        .map(|file| (prost_build::Module::from_protobuf_package_name(file.package()), file.clone()))
        .collect();
    let mut config = prost_build::Config::new();
    for (proto_path, rust_path) in schema.extern_paths {
        config.extern_path(*proto_path, *rust_path);
    }
    for field in schema.boxed {
        config.boxed(field);
    }
    let modules = config
        .btree_map(["."])
        // Every metaneff `bytes` field is `bytes::Bytes`: decoded, the HLO module (tens of
        // megabytes) and the names and keys of hundreds of tensors share the one input buffer
        // instead of each being copied into an allocation of its own
        // (`abi::metaneff::decode_owned`).
        .bytes([".metaneff"])
        .generate(requests)
        .context("generating Rust code with prost-build")?;
    let [(_, code)]: [_; 1] =
        modules.into_iter().collect::<Vec<_>>().try_into().map_err(|m: Vec<_>| {
            anyhow::anyhow!("expected one generated module, got {}", m.len())
        })?;
    let rust = format!(
        "// @generated by `cargo xtask codegen` from {proto}; do not edit.\n{}",
        code.trim_start_matches("// This file is @generated by prost-build.\n")
    );

    let mut outputs =
        vec![Output { path: root.join(schema.rust_out), contents: rust.into_bytes() }];
    if let Some(descriptor_out) = schema.descriptor_out {
        // The embedded descriptor needs no source locations: they only make it larger.
        for file in &mut fds.file {
            file.source_code_info = None;
        }
        outputs.push(Output { path: root.join(descriptor_out), contents: fds.encode_to_vec() });
    }
    Ok(outputs)
}

#[cfg(test)]
mod tests {
    use super::with_prototypes;
    use abi::functions::{PROTOTYPES_BEGIN, PROTOTYPES_END};

    /// The block between the two lines is replaced; the text around it is kept.
    #[test]
    fn the_prototype_block_is_replaced_and_the_rest_kept() {
        let source = format!("a\n{PROTOTYPES_BEGIN}\nold;\n{PROTOTYPES_END}\nb\n");
        let want = format!("a\n{PROTOTYPES_BEGIN}\nnew;\n{PROTOTYPES_END}\nb\n");
        assert_eq!(with_prototypes(&source, "new;\n").unwrap(), want);
    }

    /// A header without the lines, or with them swapped, is an error that names the line.
    #[test]
    fn a_header_without_its_block_is_refused() {
        let err = with_prototypes("int x;\n", "").unwrap_err().to_string();
        assert!(err.contains("before the prototypes, found none"), "{err}");
        let swapped = format!("{PROTOTYPES_END}\n{PROTOTYPES_BEGIN}\n");
        let err = with_prototypes(&swapped, "").unwrap_err().to_string();
        assert!(err.contains("comes before"), "{err}");
    }

    /// The committed generated code must match the proto files.
    #[test]
    fn committed_generated_code_is_fresh() {
        super::run(&crate::workspace_root(), true).unwrap();
    }
}
