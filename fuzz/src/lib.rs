//! The bodies of the fuzz targets that are not the HLO parsers' (those are mirrored in
//! `hlo/tests/fuzz.rs`): one function per target, taking the fuzzer's bytes, returning whatever
//! the input, and panicking only when the code under test breaks a promise (a panic of its own,
//! or a differential check that fails). Each `fuzz_targets/*.rs` calls one of them, and
//! `tests/bodies.rs` runs every one on stable over seeds and their mutations, so a body is
//! written once.
#![forbid(unsafe_code)]

use std::sync::OnceLock;

use abi::metaneff::view::MetaneffView;
use abi::metaneff::{Decoded, MetaNeff, MetaneffLimits};
use abi::runtime::prelude::*;
use prost::Message as _;

/// The `nrtsim run --weights` reader, compiled here as a module of its own: it lives in the
/// `nrtsim` binary, which has no library to depend on.
#[path = "../../cli/src/safetensors.rs"]
#[allow(dead_code, unreachable_pub)]
mod safetensors_reader;

/// The bytes as the argument list of a command line: NUL-separated, each argument read as UTF-8
/// with invalid sequences replaced (a command line of a Rust program arrives as `String`s).
pub fn argv_of(bytes: &[u8]) -> Vec<String> {
    if bytes.is_empty() {
        return Vec::new();
    }
    bytes.split(|&b| b == 0).map(|arg| String::from_utf8_lossy(arg).into_owned()).collect()
}

/// neuronx-cc's command line (`compile::parse_neuronx_cc_args`): a usage error or an
/// invocation, and a compile invocation's lnc fits its target.
pub fn compile_args(bytes: &[u8]) {
    let argv = argv_of(bytes);
    match compile::parse_neuronx_cc_args(&argv) {
        Ok(compile::Invocation::Compile { options, .. }) => {
            assert!(options.lnc <= options.target.max_lnc(), "lnc {} accepted", options.lnc);
            assert_eq!(options.argv, argv, "the NEFF records the whole argument list");
        }
        Ok(compile::Invocation::Help { command }) => {
            let _ = compile::help_text("neuronx-cc", command.as_deref());
        }
        Ok(_) | Err(_) => {}
    }
}

/// One simulator for the whole run: a load, then its unload, for each compiled module.
fn simulator() -> &'static sim::SimRuntime {
    static RUNTIME: OnceLock<sim::SimRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let config = sim::SimConfig {
            n_cores: 1,
            hbm_bytes_per_core: 1 << 30,
            warnings_to_stderr: false,
            ..sim::SimConfig::default()
        };
        let runtime = sim::SimRuntime::new(config).expect("the simulator starts");
        runtime.init(abi::runtime::Framework::NoFw, "", "").expect("nrt_init");
        runtime
    })
}

/// The compile target on any module (`compile::compile`, default options): a NEFF or a typed
/// error. A NEFF it writes, the simulator loads: the compile target refuses what a load would.
pub fn compile_module(bytes: &[u8]) {
    let options = compile::CompileOptions::new(compile::Target::Trn1);
    let Ok(neff) = compile::compile(bytes, &options) else { return };
    let runtime = simulator();
    match runtime.load(&neff, 0, 1) {
        Ok(model) => runtime.unload(model).expect("a loaded model unloads"),
        Err(error) => panic!("compile wrote a NEFF the simulator refuses to load: {error:?}"),
    }
}

/// `metaneff from-hlo` (`check::from_hlo`) on any module: a metaneff or a typed error, and
/// the metaneff it writes decodes.
pub fn from_hlo(bytes: &[u8]) {
    let options = check::from_hlo::FromHloOptions::default();
    if let Ok(metaneff) = check::from_hlo::metaneff_from_hlo(bytes, &options) {
        let limits = MetaneffLimits { max_tensors: usize::MAX, max_shape_dims: usize::MAX };
        Decoded::decode_with_limits(&metaneff, &limits).expect("from-hlo's metaneff decodes");
    }
}

/// The metaneff decoders against prost's decode of the generated message: without count
/// limits, the view, `decode` and `Decoded` accept exactly what prost accepts, and read the
/// message prost reads.
pub fn metaneff_view(bytes: &[u8]) {
    let unlimited = MetaneffLimits { max_tensors: usize::MAX, max_shape_dims: usize::MAX };
    let prost = MetaNeff::decode(bytes);
    let view = MetaneffView::decode_with_limits(bytes, &unlimited);
    let decoded = Decoded::decode_with_limits(bytes, &unlimited);
    assert_eq!(view.is_ok(), prost.is_ok(), "view {view:?}, prost {prost:?}");
    assert_eq!(decoded.is_ok(), prost.is_ok(), "Decoded {:?}, prost {prost:?}", decoded.err());
    let (Ok(view), Ok(expected), Ok(decoded)) = (view, prost, decoded) else { return };
    assert_eq!(view.to_owned().expect("memory for the message"), expected, "view");
    let owned = abi::metaneff::decode_with_limits(bytes, &unlimited).expect("decode as the view");
    assert_eq!(owned, expected, "decode");
    assert_same(&decoded, &expected);
}

/// `Decoded` holds the message's values, field by field.
fn assert_same(decoded: &Decoded, message: &MetaNeff) {
    assert_eq!(decoded.name(), &message.name[..], "name");
    assert_eq!(decoded.num_user_inputs(), message.num_user_inputs, "num_user_inputs");
    assert_eq!(decoded.num_states(), message.num_states, "num_states");
    assert_eq!(decoded.num_weights(), message.num_weights, "num_weights");
    assert_eq!(decoded.model_config(), message.model_config.as_ref(), "model_config");
    assert_eq!(decoded.serialized_graph_def(), &message.serialized_graph_def[..], "graph");
    for (list, tensors) in [
        (decoded.input_tensors(), &message.input_tensors),
        (decoded.output_tensors(), &message.output_tensors),
    ] {
        assert_eq!(list.len(), tensors.len(), "tensor count");
        for (got, want) in list.iter().zip(tensors) {
            assert_eq!(got.name(), &want.name[..], "tensor name");
            assert_eq!(got.shape(), &want.shape[..], "shape of {:?}", want.name);
            assert_eq!(got.data_type(), want.data_type, "data_type of {:?}", want.name);
            assert_eq!(got.r#type(), want.r#type, "type of {:?}", want.name);
            assert_eq!(got.checkpoint_key(), want.checkpoint_key.as_deref(), "checkpoint_key");
            assert_eq!(got.user_input_key(), want.user_input_key.as_deref(), "user_input_key");
            assert_eq!(
                got.allow_dynamic_batch_size(),
                want.allow_dynamic_batch_size,
                "allow_dynamic_batch_size"
            );
        }
    }
    for (&output, &input) in &message.output_aliases_to {
        assert_eq!(decoded.alias_of(output), Some(input), "alias of output {output}");
    }
}

/// The conformance report reader (`nrtsim report merge|diff`): a report or a typed error, and
/// what it reads merges, diffs and prints.
pub fn report_json(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let Ok(report) = conformance::report::Report::from_json(text, "fuzz.json") else { return };
    let _ = conformance::report::diff(&report, &report);
    let _ = conformance::report::to_junit(&report.cases);
    let again = conformance::report::Report::from_json(&report.to_json(), "again.json")
        .expect("a report's own JSON reads back");
    assert_eq!(again.cases.len(), report.cases.len(), "cases after a round trip");
    let _ = conformance::report::merge(vec![report, again]);
}

/// The device bundle reader (`conformance::bundle::decode`, `nrtsim vectors settle`), then
/// `settle` of what it reads against the repository's vectors, writing nothing. The first
/// byte chooses (modulo 3): 1, the rest is the `.tar.gz` itself; 0, the rest is the tar,
/// gzipped here, so the fuzzer reaches the archive and its members past the compression; 2,
/// the rest is a report's JSON, bundled here (`bundle::encode`), so `settle` sees well-formed
/// bundles of any report, which mutated archives rarely are.
pub fn bundle(bytes: &[u8]) {
    let Some((&choice, rest)) = bytes.split_first() else { return };
    let archive = match choice % 3 {
        1 => rest.to_vec(),
        0 => gzip(rest),
        _ => {
            let Ok(text) = std::str::from_utf8(rest) else { return };
            let Ok(report) = conformance::report::Report::from_json(text, "fuzz.json") else {
                return;
            };
            let Ok(archive) = conformance::bundle::encode(&report) else { return };
            conformance::bundle::decode(&archive, "fuzz.tar.gz").expect("an encoded bundle reads");
            archive
        }
    };
    let Ok(bundle) = conformance::bundle::decode(&archive, "fuzz.tar.gz") else { return };
    let vectors_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors");
    for backend in ["nrt", "sim"] {
        let options = conformance::settle::SettleOptions {
            vectors_dir: vectors_dir.clone(),
            backend: backend.to_owned(),
            dry_run: true,
        };
        let _ = conformance::settle::settle(&bundle, &options);
    }
}

/// `bytes` gzipped.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("writes to memory");
    encoder.finish().expect("writes to memory")
}

/// The `nrtsim run --weights` reader against the `safetensors` crate: both accept the same
/// files (apart from the differences the reader documents, checked here one by one) and read
/// the same tensors.
pub fn safetensors(bytes: &[u8]) {
    let ours = safetensors_reader::parse("fuzz.safetensors", bytes);
    let theirs = ::safetensors::SafeTensors::deserialize(bytes);
    match (&ours, &theirs) {
        (Ok(ours), Ok(theirs)) => {
            assert_eq!(ours.len(), theirs.len(), "tensor count");
            for (name, view) in theirs.tensors() {
                let tensor = ours.get(name.as_bytes()).unwrap_or_else(|| panic!("no {name:?}"));
                let shape: Vec<i64> = view.shape().iter().map(|&d| d as i64).collect();
                assert_eq!(tensor.shape(), &shape[..], "shape of {name:?}");
                assert_eq!(tensor.to_bytes(), view.data(), "data of {name:?}");
                assert_eq!(
                    tensor.scalar_type().name(),
                    scalar_name(view.dtype()),
                    "dtype of {name:?}"
                );
            }
        }
        (Err(_), Err(_)) => {}
        (Ok(_), Err(error)) => panic!("ours reads a file the crate refuses: {error:?}"),
        (Err(error), Ok(theirs)) => {
            // The differences the reader documents: a name given twice (the crate keeps one of
            // the two entries), a dtype torch-neuronx cannot hold, a dimension past int64 (the
            // crate's shapes are `usize`, torch's int64).
            let twice = matches!(error, safetensors_reader::SafetensorsError::DuplicateName { .. });
            let documented = twice
                || theirs.tensors().iter().any(|(_, view)| {
                    safetensors_reader::UNSUPPORTED_DTYPES
                        .contains(&format!("{:?}", view.dtype()).as_str())
                        || view.shape().iter().any(|&d| i64::try_from(d).is_err())
                });
            assert!(documented, "the crate reads a file ours refuses: {error}");
        }
    }
}

/// The torch scalar type name our reader gives a safetensors dtype.
fn scalar_name(dtype: ::safetensors::Dtype) -> &'static str {
    use ::safetensors::Dtype;
    match dtype {
        Dtype::F64 => abi::dtype::ScalarType::Double.name(),
        Dtype::F32 => abi::dtype::ScalarType::Float.name(),
        Dtype::F16 => abi::dtype::ScalarType::Half.name(),
        Dtype::BF16 => abi::dtype::ScalarType::BFloat16.name(),
        Dtype::I64 => abi::dtype::ScalarType::Long.name(),
        Dtype::I32 => abi::dtype::ScalarType::Int.name(),
        Dtype::I16 => abi::dtype::ScalarType::Short.name(),
        Dtype::I8 => abi::dtype::ScalarType::Char.name(),
        Dtype::U8 => abi::dtype::ScalarType::Byte.name(),
        Dtype::U16 => abi::dtype::ScalarType::UInt16.name(),
        Dtype::BOOL => abi::dtype::ScalarType::Bool.name(),
        Dtype::F8_E4M3 => abi::dtype::ScalarType::Float8E4m3fn.name(),
        Dtype::F8_E5M2 => abi::dtype::ScalarType::Float8E5m2.name(),
        _ => "a dtype our reader refuses",
    }
}
