//! `nrtsim inspect`: a NEFF's header, members, variable tables and signature.
//!
//! Design choices:
//! - The NEFF is read in the lenient mode of [`abi::neff::ReadOptions::default`], its count
//!   limits set by `--max-neff-members` and `--max-neff-vars`: variable types this tool does not
//!   model are listed as `unknown`, never refused, so a NEFF from a newer compiler can still be
//!   looked at. The hash is always computed and shown as `hash_ok`, but a
//!   mismatch is not an error here.
//! - One JSON object (`--json`) built from the parsed [`abi::neff::Neff`], with stable key order
//!   (serde_json's sorted maps), so scripts and golden files can diff it; the text form is for
//!   people and makes no stability promise.
//! - A refused NEFF prints the status libnrt would return beside the reason.

use std::fmt::Write as _;
use std::path::PathBuf;

use abi::hex::to_hex;
use abi::neff::{Graph, Neff, TensorSignature, Var};
use anyhow::{Result, anyhow};
use serde_json::{Value, json};

use crate::input;
use crate::limits::NeffLimitArgs;

/// Arguments of `nrtsim inspect`.
#[derive(clap::Args)]
pub(crate) struct InspectArgs {
    /// The NEFF file to read.
    file: PathBuf,
    /// Print one JSON object instead of text for people.
    #[arg(long)]
    json: bool,
    /// Refuse files larger than this many bytes (a guard against endless inputs such as
    /// `/dev/zero`).
    #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_NEFF_BYTES)]
    max_input_bytes: u64,
    /// The NEFF's count limits.
    #[command(flatten)]
    limits: NeffLimitArgs,
}

/// Runs `nrtsim inspect`.
pub(crate) fn run(args: InspectArgs) -> Result<()> {
    let bytes = input::read_capped(&args.file, args.max_input_bytes)?;
    let neff = Neff::parse(&bytes, &args.limits.read_options()).map_err(|error| {
        let hint = NeffLimitArgs::flag_for(&error)
            .map_or(String::new(), |flag| format!("; pass a larger {flag} to read it"));
        let path = args.file.display();
        anyhow!("{path}: {error} (libnrt would return {}){hint}", error.status().name())
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&to_json(&neff))?);
    } else {
        print!("{}", to_text(&neff));
    }
    Ok(())
}

fn mr_type_name(var: &Var) -> &'static str {
    var.mr_type.map_or("unknown", |mr_type| mr_type.name())
}

fn var_json(var: &Var) -> Value {
    json!({
        "name": var.name,
        "var_id": var.var_id,
        "type": var.kind,
        "mr_type": mr_type_name(var),
        "mr_type_id": var.mr_type.map(|mr_type| mr_type.id()),
        "size": var.size,
        "alignment": var.alignment,
        "file_name": var.file_name,
        "backing_variable_off": var.backing_variable_off,
        "referenced_var_id": var.referenced_var_id,
        "list": var.list,
    })
}

fn tensor_json(tensor: &TensorSignature) -> Value {
    json!({ "name": tensor.name, "dtype": tensor.dtype, "shape": tensor.shape })
}

fn graph_json(graph: &Graph) -> Value {
    json!({
        "name": graph.name,
        "definition": graph.definition,
        "vars": graph.vars.iter().map(var_json).collect::<Vec<_>>(),
    })
}

fn to_json(neff: &Neff) -> Value {
    let header = &neff.header;
    json!({
        "header": {
            "pkg_version": header.pkg_version,
            "header_size": header.header_size,
            "data_size": header.data_size,
            "version_major": header.version_major,
            "version_minor": header.version_minor,
            "build_version": header.build_version,
            "num_tpb": header.num_tpb,
            "name": header.name,
            "uuid": to_hex(&header.uuid),
            "hash": to_hex(&header.stored_digest()),
            "hash_ok": neff.hash_ok,
            "requested_tpb_count": header.requested_tpb_count,
            "feature_bits": header.feature_bits,
            "simulator_target": header.is_simulator_target(),
            "lnc_size": header.lnc_size,
        },
        "members": neff.members.iter().map(|(name, member)| json!({ "name": name, "size": member.size() })).collect::<Vec<_>>(),
        "graphs": neff.graphs.iter().map(graph_json).collect::<Vec<_>>(),
        "signature": {
            "inputs": neff.signature.inputs.iter().map(tensor_json).collect::<Vec<_>>(),
            "outputs": neff.signature.outputs.iter().map(tensor_json).collect::<Vec<_>>(),
        },
    })
}

fn optional(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |value| value.to_string())
}

fn to_text(neff: &Neff) -> String {
    let header = &neff.header;
    let mut out = String::new();
    let format = if header.pkg_version == 2 { "gzip tar, md5" } else { "tar, sha256" };
    // Writing to a String cannot fail, so the results of `writeln!` are ignored throughout.
    let _ = writeln!(out, "header");
    let _ = writeln!(out, "  name           {}", header.name);
    let _ = writeln!(out, "  pkg_version    {} ({format})", header.pkg_version);
    let _ = writeln!(out, "  version        {}.{}", header.version_major, header.version_minor);
    let _ = writeln!(out, "  build_version  {}", header.build_version);
    let _ = writeln!(out, "  header_size    {}", header.header_size);
    let _ = writeln!(out, "  data_size      {}", header.data_size);
    let _ = writeln!(out, "  num_tpb        {}", header.num_tpb);
    let _ = writeln!(out, "  lnc_size       {}", header.lnc_size);
    let _ = writeln!(out, "  feature_bits   {:#x}", header.feature_bits);
    if header.is_simulator_target() {
        let _ = writeln!(
            out,
            "  target         simulator target (nrtsim compile; a real libnrt refuses it at load)"
        );
    }
    let _ = writeln!(out, "  uuid           {}", to_hex(&header.uuid));
    let _ = writeln!(
        out,
        "  hash           {} ({})",
        to_hex(&header.stored_digest()),
        if neff.hash_ok { "ok" } else { "MISMATCH" }
    );
    let _ = writeln!(out, "\nmembers ({})", neff.members.len());
    for (name, member) in &neff.members {
        let _ = writeln!(out, "  {:>12}  {name}", member.size());
    }
    for graph in &neff.graphs {
        let _ = writeln!(
            out,
            "\ngraph {} ({}, {} vars)",
            graph.name,
            graph.definition,
            graph.vars.len()
        );
        let _ = writeln!(
            out,
            "  {:>6}  {:<24} {:<14} {:<22} {:>12}",
            "var_id", "name", "type", "mr_type", "size"
        );
        for var in &graph.vars {
            let mr_type = match var.mr_type {
                Some(mr_type) => format!("{} ({})", mr_type.name(), mr_type.id()),
                None => "unknown".to_owned(),
            };
            let _ = writeln!(
                out,
                "  {:>6}  {:<24} {:<14} {:<22} {:>12}",
                var.var_id,
                var.name,
                var.kind,
                mr_type,
                optional(var.size)
            );
        }
    }
    let _ = writeln!(out, "\nsignature");
    for (title, tensors) in
        [("inputs", &neff.signature.inputs), ("outputs", &neff.signature.outputs)]
    {
        let _ = writeln!(out, "  {title} ({})", tensors.len());
        for tensor in tensors {
            let _ =
                writeln!(out, "    {:<24} {:<10} {:?}", tensor.name, tensor.dtype, tensor.shape);
        }
    }
    out
}
