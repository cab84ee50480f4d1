//! `nrtsim run`: one launch of a NEFF on the simulator, `.npy` files in and out.
//!
//! Design choices:
//! - **The program is HLO, and it must exist.** It comes from the NEFF's `sim/model.hlo.pb`
//!   member, else `--hlo FILE` (an error with a NEFF that has the member, since it would be
//!   ignored; a FILE that is not HLO is an error naming it), else the metaneff's
//!   `serialized_graph_def` (where torch-neuronx stores the module). With none, the outputs
//!   would be zeros, which is a wrong answer, so it is an error unless `--allow-opaque` says
//!   zeros are what the caller wants.
//! - **Inputs are checked against the NEFF's signature** before anything runs: every input named
//!   once, no name the NEFF lacks, and each file's dtype (npy `descr`) and shape equal to the
//!   signature's. Messages name the input, the file and both sides.
//! - **Through the `Runtime` trait**, as a client of libnrt would: init, load, tensors, sets,
//!   execute, read. NaN in an output with `NEURON_FAIL_ON_NAN=1` is status 1003: the outputs are
//!   still written and the status is reported.
//! - bfloat16 and fp8 have no numpy dtype; their files use the raw void descrs (`<V2`, `|V1`)
//!   that ml_dtypes arrays are saved with.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use abi::dtype::{Dltype, NpyType};
use abi::neff::npy;
use abi::runtime::prelude::*;
use abi::runtime::{Framework, Placement};
use abi::status::NrtStatus;
use anyhow::{Context, Result, anyhow, bail};
use sim::{SimConfig, SimRuntime};

use crate::input;
use crate::limits::{HloLimitArgs, MetaneffLimitArgs, NeffLimitArgs};

/// Arguments of `nrtsim run`.
#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// The NEFF to run.
    pub(crate) neff: PathBuf,
    /// The metaneff (its `serialized_graph_def` is the program when the NEFF carries none).
    #[arg(long)]
    pub(crate) metaneff: Option<PathBuf>,
    /// An HLO module (binary `HloModuleProto` or HLO text) for a NEFF that carries none (given
    /// with a NEFF that carries one, it is an error).
    #[arg(long)]
    pub(crate) hlo: Option<PathBuf>,
    /// An input, `NAME=FILE.npy`, once per input of the NEFF's signature; with --metaneff also
    /// `FILE.npy`, filling the metaneff's user inputs in order.
    #[arg(long = "input", value_name = "[NAME=]FILE.npy")]
    pub(crate) inputs: Vec<String>,
    /// Where to write one `<output name>.npy` per output (created if missing).
    #[arg(long, default_value = ".")]
    pub(crate) output_dir: PathBuf,
    /// Run a NEFF without any program (its outputs are zeros).
    #[arg(long)]
    pub(crate) allow_opaque: bool,
    /// With --metaneff: states and weights by `checkpoint_key` from a `.safetensors` file.
    #[arg(long, value_name = "FILE.safetensors")]
    pub(crate) weights: Option<PathBuf>,
    /// With --metaneff: print one summary line per output (dtype, shape, min, max, mean) instead
    /// of writing `.npy` files.
    #[arg(long)]
    pub(crate) print: bool,
    /// With --metaneff: launch this many times (states carry over); the outputs are the last
    /// launch's.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) repeat: u64,
    /// The largest file read (the NEFF, the metaneff, `--hlo`, each `.npy` and `.safetensors`),
    /// in bytes; each is held in memory whole, except a `.npy` input without --metaneff, which
    /// is copied into its device tensor in chunks.
    #[arg(long, value_name = "BYTES", default_value_t = input::DEFAULT_MAX_RUN_BYTES)]
    pub(crate) max_input_bytes: u64,
    /// The execution timeout of one launch in seconds of device time, or `none` (overrides
    /// NEURON_RT_EXEC_TIMEOUT; default 30): a launch no NeuronCore could finish within it, even
    /// at its peak rates, fails with NRT_TIMEOUT.
    #[arg(long, value_name = "SECS|none", value_parser = crate::hlo::parse_exec_timeout)]
    pub(crate) exec_timeout: Option<crate::hlo::ExecTimeout>,
    /// The work one launch may do, in element-operations, or `none` (overrides
    /// NRTSIM_WORK_BUDGET; default: no limit); a launch over it fails with NRT_TIMEOUT.
    #[arg(long, value_name = "N|none", value_parser = crate::hlo::parse_work_budget)]
    pub(crate) work_budget: Option<crate::hlo::WorkBudget>,
    /// The wall-clock limit of one launch in milliseconds (overrides NRTSIM_LAUNCH_TIMEOUT_MS;
    /// default none); a launch over it fails with NRT_TIMEOUT.
    #[arg(long, value_name = "MS")]
    pub(crate) launch_timeout_ms: Option<u64>,
    /// After the launch, print the process's peak resident memory (Linux's VmHWM) to standard
    /// error: device memory holds the inputs and outputs, the interpreter one more copy of each
    /// and its live intermediates.
    #[arg(long)]
    pub(crate) report_peak_rss: bool,
    /// The NEFF's count limits (they override NRTSIM_MAX_NEFF_MEMBERS and
    /// NRTSIM_MAX_NEFF_VARS).
    #[command(flatten)]
    pub(crate) neff_limits: NeffLimitArgs,
    /// The metaneff's count limits.
    #[command(flatten)]
    pub(crate) metaneff_limits: MetaneffLimitArgs,
    /// The count limits of the program's HLO module, wherever it comes from (they override
    /// NRTSIM_MAX_HLO_COMPUTATIONS and NRTSIM_MAX_HLO_INSTRUCTIONS).
    #[command(flatten)]
    pub(crate) hlo_limits: HloLimitArgs,
}

impl RunArgs {
    /// The flags' launch limits applied over `config` (which the environment gave).
    pub(crate) fn apply_limits(&self, config: &mut SimConfig) {
        if let Some(crate::hlo::ExecTimeout(timeout)) = self.exec_timeout {
            config.exec_timeout = timeout;
        }
        if let Some(crate::hlo::WorkBudget(budget)) = self.work_budget {
            config.work_budget = budget;
        }
        if let Some(ms) = self.launch_timeout_ms {
            config.launch_timeout = Some(std::time::Duration::from_millis(ms));
        }
        config.load_limits = crate::limits::load_limits(&self.neff_limits, &self.hlo_limits);
    }

    /// The NEFF parsed as the simulator's loader parses it, under the flags' limits, and
    /// described for it.
    pub(crate) fn describe_neff(&self, neff: &[u8]) -> Result<sim::ModelDescription> {
        let limits = crate::limits::load_limits(&self.neff_limits, &self.hlo_limits);
        let parsed = abi::neff::Neff::parse(neff, &limits.neff_read_options()).map_err(|err| {
            let hint = NeffLimitArgs::flag_for(&err)
                .map_or(String::new(), |flag| format!("; pass a larger {flag} to read it"));
            anyhow!("{}: {err} ({}){hint}", self.neff.display(), err.status().name())
        })?;
        sim::neff_load::describe(&parsed).map_err(|err| {
            anyhow!("{}: {} ({})", self.neff.display(), err.detail, err.status.name())
        })
    }

    /// The metaneff decoded under the flags' limits; a refusal names the flag.
    pub(crate) fn decode_metaneff(
        &self,
        path: &Path,
        bytes: Vec<u8>,
    ) -> Result<abi::metaneff::Decoded> {
        // The bytes are ours: decoding shares them instead of copying the graph.
        abi::metaneff::Decoded::decode_owned_with_limits(
            bytes.into(),
            &self.metaneff_limits.limits(),
        )
        .map_err(|err| {
            let hint = err
                .exceeded
                .map(MetaneffLimitArgs::flag_for)
                .map_or(String::new(), |flag| format!("; pass a larger {flag} to read it"));
            anyhow!("{}: {err}{hint}", path.display())
        })
    }
}

/// A simulator error as `what: detail (STATUS)`, naming the flag that raises a count limit the
/// loader refused with.
pub(crate) fn nrt_error(what: &str, err: &abi::runtime::NrtError) -> anyhow::Error {
    let detail = crate::limits::with_flag_for_loader_limit(&err.detail);
    anyhow!("{what}: {detail} ({})", err.status.name())
}

/// The hint for a launch that failed with `NRT_TIMEOUT`: which flags raise the limits.
pub(crate) const LIMIT_HINT: &str = "the launch reached its execution timeout, work budget or time limit: raise it with --exec-timeout SECS, --work-budget N or --launch-timeout-ms MS (each also takes none)";

/// The npy descr written for a dltype (`abi::dtype::NpyType`: bf16 `<V2`, fp8 `|V1`).
pub(crate) fn descr_of(dltype: Dltype) -> &'static str {
    NpyType::from(dltype).descr()
}

/// Where the program comes from, in the order the command looks.
///
/// # Errors
/// When `--hlo` is given for a NEFF that carries a program (the flag would be ignored), when the
/// `--hlo` file is not an HLO module, and when no program is found without `--allow-opaque`.
pub(crate) fn program(args: &RunArgs, neff_has_one: bool) -> Result<Option<(Vec<u8>, String)>> {
    if neff_has_one {
        if let Some(path) = &args.hlo {
            // The simulator runs the NEFF's own program whatever else it is given, so honouring
            // --hlo is impossible here: refusing it is the alternative to ignoring it.
            bail!(
                "--hlo {}: {} carries its own HLO program (its {} member), which is what runs; \
                 expected --hlo only for a NEFF that carries none (drop --hlo to run the NEFF's \
                 program)",
                path.display(),
                args.neff.display(),
                sim::HLO_MEMBER
            );
        }
        return Ok(None);
    }
    if let Some(path) = &args.hlo {
        let bytes = input::read_capped(path, args.max_input_bytes)?;
        // Checked here so that the message names the file and the flag; the simulator reads it
        // again at load.
        let not_hlo = || {
            format!(
                "--hlo {}: not an HLO module, expected a valid binary HloModuleProto or HLO text",
                path.display()
            )
        };
        let module =
            hlo::load_module_with_limits(&bytes, &args.hlo_limits.limits()).map_err(|error| {
                match HloLimitArgs::flag_for(&error) {
                    Some(flag) => anyhow!(
                        "--hlo {}: {error}; pass a larger {flag} to read it",
                        path.display()
                    ),
                    None => anyhow::Error::new(error).context(not_hlo()),
                }
            })?;
        hlo::validate(&module).with_context(not_hlo)?;
        return Ok(Some((bytes, format!("--hlo {}", path.display()))));
    }
    if let Some(path) = &args.metaneff {
        let bytes = input::read_capped(path, args.max_input_bytes)?;
        let message = args.decode_metaneff(path, bytes)?;
        if !message.serialized_graph_def().is_empty() {
            let origin = format!("serialized_graph_def of {}", path.display());
            return Ok(Some((message.serialized_graph_def().to_vec(), origin)));
        }
    }
    if args.allow_opaque {
        return Ok(None);
    }
    bail!(
        "{} carries no HLO program ({} member), and neither --hlo nor a metaneff with a \
         serialized_graph_def gives one: its outputs would be zeros; pass --allow-opaque to run it \
         anyway",
        args.neff.display(),
        sim::HLO_MEMBER
    )
}

/// Where an input's data is: a file's range (read straight into device memory at the write, so
/// a large input is held once, in the tensor) or bytes read whole (standard input, a pipe).
enum InputData {
    File { path: PathBuf, offset: u64, n_bytes: usize },
    Bytes(Vec<u8>),
}

impl InputData {
    fn n_bytes(&self) -> usize {
        match self {
            InputData::File { n_bytes, .. } => *n_bytes,
            InputData::Bytes(bytes) => bytes.len(),
        }
    }
}

/// The bytes one write to a device tensor carries when an input is copied from its file.
const WRITE_CHUNK: usize = 4 << 20;

/// Reads the `--input` files' headers, checked against the signature, in signature order.
fn read_inputs(
    args: &RunArgs,
    signature: &[sim::IoDescription],
) -> Result<Vec<(String, InputData)>> {
    let mut given: BTreeMap<String, PathBuf> = BTreeMap::new();
    for item in &args.inputs {
        let (name, file) = item
            .split_once('=')
            .ok_or_else(|| anyhow!("--input {item:?}: expected NAME=FILE.npy"))?;
        if given.insert(name.to_owned(), PathBuf::from(file)).is_some() {
            bail!("--input {name:?} is given twice");
        }
    }
    let expected: Vec<&str> = signature.iter().map(|io| io.name.as_str()).collect();
    if let Some(name) = given.keys().find(|name| !expected.contains(&name.as_str())) {
        bail!("--input {name:?}: the NEFF has no input of that name, expected one of {expected:?}");
    }
    let mut inputs = Vec::with_capacity(signature.len());
    for io in signature {
        let path = given.get(&io.name).ok_or_else(|| {
            anyhow!("input {:?} is missing: give --input {}=FILE.npy (the NEFF's inputs are {expected:?})", io.name, io.name)
        })?;
        inputs.push((io.name.clone(), open_npy(&io.name, path, io, args.max_input_bytes)?));
    }
    Ok(inputs)
}

/// Checks an input file's header against the signature; a regular file's data stays in it.
fn open_npy(name: &str, path: &Path, io: &sim::IoDescription, limit: u64) -> Result<InputData> {
    let context = format!("input {name:?} ({})", path.display());
    match input::open_npy(path, &context, limit)? {
        input::OpenedNpy::Whole { header, mut bytes } => {
            check_npy(&context, io, &header)?;
            bytes.drain(..header.data_offset);
            Ok(InputData::Bytes(bytes))
        }
        input::OpenedNpy::File { header, len, .. } => {
            check_npy(&context, io, &header)?;
            let offset = header.data_offset as u64;
            let n_bytes =
                usize::try_from(len - offset).context("the input does not fit in memory")?;
            Ok(InputData::File { path: path.to_owned(), offset, n_bytes })
        }
    }
}

/// Checks an input file's dtype and shape against the signature.
fn check_npy(context: &str, io: &sim::IoDescription, header: &npy::NpyHeader) -> Result<()> {
    if let Some(dltype) = io.dltype {
        let expected = descr_of(dltype);
        if !NpyType::from(dltype).accepts(&header.descr) {
            bail!(
                "{context}: dtype {:?}, expected {expected:?} ({} in the NEFF's signature)",
                header.descr,
                dltype.name()
            );
        }
    }
    if header.fortran_order {
        bail!("{context}: the array is in Fortran order, expected C order");
    }
    let shape: Vec<i64> = header.shape.iter().map(|&d| i64::try_from(d).unwrap_or(-1)).collect();
    if shape != io.shape {
        bail!("{context}: shape {shape:?}, expected {:?} from the NEFF's signature", io.shape);
    }
    Ok(())
}

/// Writes an input's data into its device tensor: a file in chunks, through one small buffer.
fn write_input(
    runtime: &SimRuntime,
    tensor: abi::runtime::TensorId,
    data: &InputData,
) -> Result<()> {
    let nrt = |err: abi::runtime::NrtError| anyhow!("{} ({})", err.detail, err.status.name());
    match data {
        InputData::Bytes(bytes) => runtime.tensor_write(tensor, 0, bytes).map_err(nrt),
        InputData::File { path, offset, n_bytes } => {
            let mut file =
                std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
            std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(*offset))?;
            let mut chunk = vec![0u8; WRITE_CHUNK.min(*n_bytes)];
            let mut done = 0;
            while done < *n_bytes {
                let step = chunk.len().min(n_bytes - done);
                file.read_exact(&mut chunk[..step])
                    .with_context(|| format!("reading {}", path.display()))?;
                runtime.tensor_write(tensor, done, &chunk[..step]).map_err(nrt)?;
                done += step;
            }
            Ok(())
        }
    }
}

/// Says on stderr how much memory the run took at its peak, when `--report-peak-rss` asks.
pub(crate) fn report_peak_rss(args: &RunArgs) {
    if args.report_peak_rss {
        match input::peak_rss_bytes() {
            Some(bytes) => eprintln!("peak RSS: {bytes} bytes"),
            None => eprintln!("peak RSS: unavailable (no VmHWM in /proc/self/status)"),
        }
    }
}

/// `nrtsim run` of a NEFF without a metaneff; returns whether the launch succeeded (1003
/// counts as a failure of the command, after the outputs are written).
pub(crate) fn run_neff(args: &RunArgs) -> Result<bool> {
    if args.weights.is_some() || args.print || args.repeat != 1 {
        bail!(
            "--weights, --print and --repeat need --metaneff (they run through the binding layer)"
        );
    }
    let neff = input::read_capped(&args.neff, args.max_input_bytes)?;
    let mut description = args.describe_neff(&neff)?;
    if let Some((hlo, origin)) = program(args, description.hlo.is_some())? {
        description.hlo = Some(hlo);
        description.hlo_origin = origin;
    }
    let inputs = read_inputs(args, &description.inputs)?;
    let mut config = SimConfig { warnings_to_stderr: !args.allow_opaque, ..SimConfig::from_env()? };
    args.apply_limits(&mut config);
    let runtime = SimRuntime::new(config).map_err(|err| anyhow!("{err}"))?;
    let nrt = |what: &str, err: abi::runtime::NrtError| nrt_error(what, &err);
    runtime.init(Framework::NoFw, "", "").map_err(|e| nrt("nrt_init", e))?;
    let model = runtime
        .load_description(&description, -1, 1)
        .map_err(|e| nrt(&format!("loading {}", args.neff.display()), e))?;
    let info = runtime.get_model_tensor_info(model).map_err(|e| nrt("tensor info", e))?;
    let input_set = runtime.allocate_tensor_set().map_err(|e| nrt("tensor set", e))?;
    let output_set = runtime.allocate_tensor_set().map_err(|e| nrt("tensor set", e))?;
    for (name, data) in &inputs {
        let tensor = runtime
            .tensor_allocate(Placement::Device, 0, data.n_bytes(), name.as_bytes())
            .map_err(|e| nrt(&format!("input {name:?}"), e))?;
        write_input(&runtime, tensor, data).with_context(|| format!("input {name:?}"))?;
        runtime
            .add_tensor_to_tensor_set(input_set, name.as_bytes(), tensor)
            .map_err(|e| nrt(&format!("input {name:?}"), e))?;
    }
    let mut outputs = Vec::new();
    for io in &description.outputs {
        let size = info
            .iter()
            .find(|t| t.name == io.name && t.usage == abi::runtime::TensorUsage::Output)
            .map_or(0, |t| t.size);
        let tensor = runtime
            .tensor_allocate(Placement::Device, 0, size, io.name.as_bytes())
            .map_err(|e| nrt(&format!("output {:?}", io.name), e))?;
        runtime
            .add_tensor_to_tensor_set(output_set, io.name.as_bytes(), tensor)
            .map_err(|e| nrt(&format!("output {:?}", io.name), e))?;
        outputs.push((io, tensor, size));
    }
    let status = runtime.execute(model, input_set, output_set).map_err(|e| {
        let timed_out = e.status == NrtStatus::Timeout;
        let error = nrt("nrt_execute", e);
        if timed_out { error.context(LIMIT_HINT) } else { error }
    })?;
    std::fs::create_dir_all(&args.output_dir)
        .with_context(|| format!("creating {}", args.output_dir.display()))?;
    for (io, tensor, size) in outputs {
        let mut data = Vec::new();
        data.try_reserve_exact(size)
            .map_err(|_| anyhow!("output {:?}: {size} bytes do not fit in memory", io.name))?;
        data.resize(size, 0);
        runtime.tensor_read(tensor, 0, &mut data).map_err(|e| nrt("reading an output", e))?;
        let shape: Vec<u64> = io.shape.iter().map(|&d| d.max(0) as u64).collect();
        let descr = io.dltype.map_or("|u1", descr_of);
        let (descr, shape) =
            if io.dltype.is_some() { (descr, shape) } else { (descr, vec![size as u64]) };
        let header = npy::encode_header(descr, &shape, data.len() as u64)
            .map_err(|err| anyhow!("output {:?}: {err}", io.name))?;
        let path = args.output_dir.join(format!("{}.npy", io.name));
        conformance::output_file::write_with(&path, |file| {
            file.write_all(&header)?;
            file.write_all(&data)
        })
        .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    match status {
        NrtStatus::Success => Ok(true),
        other => {
            eprintln!(
                "nrtsim: the launch returned {} ({}); outputs written",
                other.name(),
                other.code()
            );
            Ok(false)
        }
    }
}
