//! `nrtsim compile` and `nrtsim` run as `neuronx-cc` from the outside: the command lines real
//! producers use, the refusals and their exit statuses, the NEFF's header, names and members, and
//! the NEFF running on the simulator with numbers worked by hand.

use std::io::Write as _;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use abi::neff::{Neff, ReadOptions, SIMULATOR_TARGET_FEATURE_BIT, SIMULATOR_TARGET_MEMBER};
use abi::runtime::prelude::*;
use abi::runtime::{Framework, ModelId, Placement, SetId, TensorId};
use abi::status::NrtStatus;
use serde_json::Value;
use sim::{SimConfig, SimRuntime};

mod support;
use support::{Scratch, nrtsim, nrtsim_exe, text};

/// `b - a` and `(b - a) * a`, with nkipy's names on parameters given as `b`, then `a` (so the
/// name order differs from the parameter order) and on the two results.
const NAMED: &str = "HloModule named\n\nENTRY main {\n  b = f32[4] parameter(0), frontend_attributes={neff_input_names=\"b\"}\n  a = f32[4] parameter(1), frontend_attributes={neff_input_names=\"a\"}\n  d = f32[4] subtract(b, a)\n  p = f32[4] multiply(d, a)\n  ROOT r = (f32[4], f32[4]) tuple(d, p), frontend_attributes={neff_output_names=\"output0,output1\"}\n}\n";

/// The same computation without attributes: the compiler's default names.
const PLAIN: &str = "HloModule plain\n\nENTRY main {\n  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)\n  d = f32[4] subtract(x, y)\n  ROOT p = f32[4] multiply(d, y)\n}\n";

/// nkipy's in-place update: parameter `a_input.must_alias_input` is aliased to output `a_input`.
const ALIASED: &str = "HloModule aliased, input_output_alias={ {1}: (0, {}, must-alias) }\n\nENTRY main {\n  a = f32[4] parameter(0), frontend_attributes={neff_input_names=\"a_input.must_alias_input\"}\n  b = f32[4] parameter(1), frontend_attributes={neff_input_names=\"b_input\"}\n  s = f32[4] add(a, b)\n  t = f32[4] multiply(s, b)\n  ROOT r = (f32[4], f32[4]) tuple(t, s), frontend_attributes={neff_output_names=\"output0,a_input\"}\n}\n";

/// A scratch folder with `neuronx-cc`, a symbolic link to the built `nrtsim`, in it.
fn with_neuronx_cc(label: &str) -> (Scratch, PathBuf) {
    let scratch = Scratch::new(label);
    let link = scratch.join("bin").join("neuronx-cc");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    symlink(nrtsim_exe(), &link).unwrap();
    (scratch, link)
}

fn run_in(program: &Path, dir: &Path, args: &[&str]) -> Output {
    Command::new(program).current_dir(dir).args(args).output().unwrap()
}

/// The module as a binary `HloModuleProto`, as nkipy writes `hlo_module.pb`.
fn binary(hlo_text: &str) -> Vec<u8> {
    hlo::encode_module(&hlo::load_module(hlo_text.as_bytes()).unwrap())
}

fn parse(path: &Path) -> Neff {
    Neff::parse(&std::fs::read(path).unwrap(), &ReadOptions::loader()).unwrap()
}

fn compile_json(neff: &Neff) -> Value {
    serde_json::from_slice(neff.members[SIMULATOR_TARGET_MEMBER].bytes()).unwrap()
}

fn names(neff: &Neff) -> (Vec<String>, Vec<String>) {
    let signature = &neff.signature;
    (
        signature.inputs.iter().map(|t| t.name.clone()).collect(),
        signature.outputs.iter().map(|t| t.name.clone()).collect(),
    )
}

/// Files in `dir` whose name is not in `expected`: a compile leaves nothing behind.
fn leftovers(dir: &Path, expected: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !expected.contains(&name.as_str()))
        .collect();
    names.sort();
    names
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn f32_values(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

struct Loaded {
    sim: std::sync::Arc<SimRuntime>,
    model: ModelId,
    inputs: SetId,
    outputs: SetId,
}

impl Loaded {
    fn new(neff: &[u8]) -> Loaded {
        let sim = SimRuntime::new_shared(SimConfig::default()).unwrap();
        sim.init(Framework::NoFw, "", "").unwrap();
        let model = sim.load(neff, 0, 1).unwrap();
        let inputs = sim.allocate_tensor_set().unwrap();
        let outputs = sim.allocate_tensor_set().unwrap();
        Loaded { sim, model, inputs, outputs }
    }

    fn tensor(&self, name: &str, values: &[f32]) -> TensorId {
        let bytes = f32_bytes(values);
        let tensor =
            self.sim.tensor_allocate(Placement::Device, 0, bytes.len(), name.as_bytes()).unwrap();
        self.sim.tensor_write(tensor, 0, &bytes).unwrap();
        tensor
    }

    fn input(&self, name: &str, values: &[f32]) -> TensorId {
        let tensor = self.tensor(name, values);
        self.sim.add_tensor_to_tensor_set(self.inputs, name.as_bytes(), tensor).unwrap();
        tensor
    }

    fn output(&self, name: &str, tensor: TensorId) {
        self.sim.add_tensor_to_tensor_set(self.outputs, name.as_bytes(), tensor).unwrap();
    }

    fn execute(&self) {
        assert_eq!(self.sim.execute(self.model, self.inputs, self.outputs), Ok(NrtStatus::Success));
    }

    fn read(&self, tensor: TensorId) -> Vec<f32> {
        let mut bytes = vec![0u8; self.sim.tensor_get_size(tensor).unwrap()];
        self.sim.tensor_read(tensor, 0, &mut bytes).unwrap();
        f32_values(&bytes)
    }
}

#[test]
fn nkipys_command_line_through_a_neuronx_cc_link_writes_file_neff_in_the_working_directory() {
    let (scratch, neuronx_cc) = with_neuronx_cc("nkipy");
    let work = scratch.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let module = work.join("hlo_module.pb");
    std::fs::write(&module, binary(NAMED)).unwrap();
    let args = [
        "compile",
        "--framework",
        "XLA",
        module.to_str().unwrap(),
        "--pipeline",
        "compile",
        "SaveTemps",
        "--target",
        "trn2",
        "--output=file.neff",
        "--lnc",
        "1",
        "--internal-tensorizer-opt-level=2",
    ];
    let out = run_in(&neuronx_cc, &work, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(leftovers(&work, &["hlo_module.pb", "file.neff"]), Vec::<String>::new());

    let neff = parse(&work.join("file.neff"));
    assert_eq!(neff.header.name, "file.neff");
    assert_eq!((neff.header.num_tpb, neff.header.lnc_size), (1, 1));
    assert_eq!((neff.header.version_major, neff.header.pkg_version), (2, 2));
    assert!(neff.header.build_version.starts_with("nrtsim "), "{}", neff.header.build_version);
    assert_eq!(neff.header.feature_bits, SIMULATOR_TARGET_FEATURE_BIT);
    let recorded = compile_json(&neff);
    assert_eq!(recorded["target"], "trn2");
    assert_eq!(recorded["lnc"], 1);
    assert_eq!(recorded["pipeline"], serde_json::json!(["compile", "SaveTemps"]));
    assert_eq!(recorded["argv"], serde_json::json!(args));
    assert_eq!(
        recorded["ignored_flags"],
        serde_json::json!([{ "flag": "--internal-tensorizer-opt-level", "value": "2" }])
    );
    assert_eq!(recorded["simulator_target"], true);
    // The module travels as given.
    assert_eq!(neff.members["sim/model.hlo.pb"].bytes(), binary(NAMED).as_slice());
}

#[test]
fn neff_json_has_the_compilers_form_and_the_var_table_its_sizes() {
    let scratch = Scratch::new("form");
    let module = scratch.write("m.hlo", NAMED.as_bytes());
    let output = scratch.join("file.neff");
    let out = nrtsim(&[
        "compile",
        module.to_str().unwrap(),
        "--framework",
        "XLA",
        "--target",
        "trn2",
        "--output",
        output.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let neff = parse(&output);
    let json: Value = serde_json::from_slice(neff.members["neff.json"].bytes()).unwrap();
    // Outputs only in the graph form, heads at the compiled node, as real NEFFs have them.
    assert_eq!(json["metadata"]["signatures"]["default"]["outputs"], serde_json::json!({}));
    assert_eq!(json["metadata"]["signatures"]["default"]["inputs"]["b"]["id"], 0);
    assert_eq!(json["metadata"]["signatures"]["default"]["inputs"]["a"]["id"], 1);
    assert_eq!(json["nodes"][2]["name"], "sg_coreV10");
    assert_eq!(json["nodes"][2]["op"], "tvm_op");
    assert_eq!(json["nodes"][2]["output_names"], serde_json::json!(["output0", "output1"]));
    assert_eq!(json["heads"], serde_json::json!([[2, 0, 0], [2, 1, 0]]));
    assert_eq!(json["node_row_ptr"], serde_json::json!([0, 1, 2, 4]));
    assert_eq!(json["arg_nodes"], serde_json::json!([0, 1]));
    // The reader takes the outputs from the graph form.
    assert_eq!(
        names(&neff),
        (vec!["b".into(), "a".into()], vec!["output0".into(), "output1".into()])
    );
    assert_eq!(neff.signature.outputs[1].dtype, "float32");
    assert_eq!(neff.signature.outputs[1].shape, [4]);
    let vars: Vec<(String, u32, String, Option<u64>)> = neff.graphs[0]
        .vars
        .iter()
        .map(|v| (v.name.clone(), v.var_id, v.kind.clone(), v.size))
        .collect();
    let expected = [
        ("SB", 0, "state-buffer", None),
        ("b", 1, "input", Some(16)),
        ("a", 2, "input", Some(16)),
        ("output0", 3, "output", Some(16)),
        ("output1", 4, "output", Some(16)),
    ];
    let expected: Vec<(String, u32, String, Option<u64>)> = expected
        .iter()
        .map(|(n, id, kind, size)| (n.to_string(), *id, kind.to_string(), *size))
        .collect();
    assert_eq!(vars, expected);
    let kelf: Value = serde_json::from_slice(neff.members["kelf-0.json"].bytes()).unwrap();
    assert_eq!(kelf["graphs"][0]["definition"], "sg00/def.json");
    // trn2 without --lnc: the documented default of 2.
    assert_eq!(neff.header.lnc_size, 2);
}

#[test]
fn names_in_non_alphabetical_order_bind_to_the_right_parameters() {
    launch_named(NAMED, ["b", "a"], ["output0", "output1"]);
}

/// Compiles a module of [`NAMED`]'s computation whose parameters `b`, `a` and results
/// `b - a`, `(b - a) * a` carry `names`, launches it by those names on the simulator and checks
/// the results, worked by hand.
fn launch_named(hlo: &str, [b, a]: [&str; 2], [difference, product]: [&str; 2]) {
    let options = compile::CompileOptions::new(compile::Target::Trn2);
    let neff = compile::compile(hlo.as_bytes(), &options).unwrap();
    let loaded = Loaded::new(&neff);
    loaded.input(b, &[1.0, 2.0, 3.0, 4.0]);
    loaded.input(a, &[10.0, 20.0, 30.0, 40.0]);
    let difference_tensor = loaded.tensor(difference, &[0.0; 4]);
    let product_tensor = loaded.tensor(product, &[0.0; 4]);
    loaded.output(difference, difference_tensor);
    loaded.output(product, product_tensor);
    loaded.execute();
    assert_eq!(loaded.read(difference_tensor), [-9.0, -18.0, -27.0, -36.0]);
    assert_eq!(loaded.read(product_tensor), [-90.0, -360.0, -810.0, -1440.0]);
}

#[test]
fn without_attributes_the_names_are_input_i_and_output_j() {
    let options = compile::CompileOptions::new(compile::Target::Trn1);
    let neff_bytes = compile::compile(PLAIN.as_bytes(), &options).unwrap();
    let neff = Neff::parse(&neff_bytes, &ReadOptions::loader()).unwrap();
    assert_eq!(names(&neff), (vec!["input0".into(), "input1".into()], vec!["output0".into()]));
    assert_eq!(neff.header.lnc_size, 1);
    let loaded = Loaded::new(&neff_bytes);
    loaded.input("input0", &[5.0, 6.0, 7.0, 8.0]);
    loaded.input("input1", &[1.0, 2.0, 3.0, 4.0]);
    let result = loaded.tensor("output0", &[0.0; 4]);
    loaded.output("output0", result);
    loaded.execute();
    // (x - y) * y.
    assert_eq!(loaded.read(result), [4.0, 8.0, 12.0, 16.0]);
}

#[test]
fn an_aliased_parameter_keeps_nkipys_names_and_updates_in_place() {
    let options = compile::CompileOptions::new(compile::Target::Trn2);
    let neff_bytes = compile::compile(ALIASED.as_bytes(), &options).unwrap();
    let neff = Neff::parse(&neff_bytes, &ReadOptions::loader()).unwrap();
    assert_eq!(
        names(&neff),
        (
            vec!["a_input.must_alias_input".into(), "b_input".into()],
            vec!["output0".into(), "a_input".into()]
        )
    );
    assert_eq!(
        compile_json(&neff)["aliases"],
        serde_json::json!([{ "input": "a_input.must_alias_input", "output": "a_input" }])
    );
    // nkipy passes the input's tensor as the aliased output.
    let loaded = Loaded::new(&neff_bytes);
    let a = loaded.input("a_input.must_alias_input", &[1.0, 2.0, 3.0, 4.0]);
    loaded.input("b_input", &[2.0, 2.0, 2.0, 2.0]);
    let t = loaded.tensor("output0", &[0.0; 4]);
    loaded.output("output0", t);
    loaded.output("a_input", a);
    loaded.execute();
    assert_eq!(loaded.read(a), [3.0, 4.0, 5.0, 6.0]);
    assert_eq!(loaded.read(t), [6.0, 8.0, 10.0, 12.0]);
}

#[test]
fn the_same_module_and_command_line_give_the_same_bytes() {
    let scratch = Scratch::new("determinism");
    let module = scratch.write("m.pb", &binary(NAMED));
    let mut written = Vec::new();
    for dir in ["one", "two"] {
        let work = scratch.join(dir);
        std::fs::create_dir_all(&work).unwrap();
        let args = ["compile", module.to_str().unwrap(), "--framework=XLA", "--target=trn2"];
        let out = Command::new(nrtsim_exe()).current_dir(&work).args(args).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        written.push(std::fs::read(work.join("file.neff")).unwrap());
    }
    assert_eq!(written[0], written[1]);
}

#[test]
fn lnc_2_is_the_headers_lnc_size_and_refused_on_trn1() {
    let scratch = Scratch::new("lnc");
    let module = scratch.write("m.hlo", PLAIN.as_bytes());
    let out = nrtsim(&[
        "compile",
        "--framework",
        "XLA",
        module.to_str().unwrap(),
        "--target",
        "trn2",
        "--lnc=2",
        &format!("--output={}", scratch.join("two.neff").display()),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let neff = parse(&scratch.join("two.neff"));
    assert_eq!(neff.header.lnc_size, 2);
    assert_eq!(neff.header.name, "two.neff");

    let out = nrtsim(&[
        "compile",
        module.to_str().unwrap(),
        "--framework",
        "XLA",
        "--target",
        "trn1",
        "-lnc",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--lnc 2 is not available on trn1"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_unknown_flag_is_a_usage_error_naming_it() {
    let scratch = Scratch::new("unknown");
    let module = scratch.write("m.hlo", PLAIN.as_bytes());
    let out = Command::new(nrtsim_exe())
        .current_dir(scratch.path())
        .args(["compile", "m.hlo", "--framework", "XLA", "--target", "trn2", "--fast-math", "none"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("\"--fast-math\""), "{}", text(&out.stderr));
    assert_eq!(leftovers(scratch.path(), &["m.hlo"]), Vec::<String>::new());
    drop(module);
}

/// `--output --lnc=1`: the flag after `--output` is not its value, so no NEFF named `--lnc=1` is
/// written and the usage error names `--output`.
#[test]
fn a_flag_after_output_is_not_taken_as_the_output_path() {
    let scratch = Scratch::new("output-flag");
    scratch.write("m.hlo", PLAIN.as_bytes());
    let out = Command::new(nrtsim_exe())
        .current_dir(scratch.path())
        .args(["compile", "m.hlo", "--framework", "XLA", "--target", "trn2", "--output", "--lnc=1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("flag --output expects a value PATH"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(leftovers(scratch.path(), &["m.hlo"]), Vec::<String>::new());
}

/// A symbolic link planted at the temporary name beside the output (the old `.NAME.PID.partial`
/// and the first names of the current scheme) is neither followed nor removed: the link's target
/// keeps its bytes and the NEFF lands at the output. The module comes on standard input, so the
/// links are in place, with the compiler's process id, before it writes.
#[test]
fn a_link_planted_at_the_temporary_name_is_not_followed() {
    let scratch = Scratch::new("planted");
    let target = scratch.write("target", b"precious");
    let mut child = Command::new(nrtsim_exe())
        .current_dir(scratch.path())
        .args(["compile", "-", "--framework", "XLA", "--target", "trn2", "--output", "out.neff"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut planted = vec![format!(".out.neff.{pid}.partial")];
    planted.extend((0..4).map(|n| format!(".out.neff.{pid}.{n}.partial")));
    for name in &planted {
        symlink(&target, scratch.join(name)).unwrap();
    }
    child.stdin.take().unwrap().write_all(PLAIN.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(&target).unwrap() == b"precious", "the link's target was written");
    assert_eq!(parse(&scratch.join("out.neff")).header.name, "out.neff");
    for name in &planted {
        let metadata = std::fs::symlink_metadata(scratch.join(name)).unwrap();
        assert!(metadata.file_type().is_symlink(), "{name}");
    }
    let mut expected: Vec<&str> = planted.iter().map(String::as_str).collect();
    expected.extend(["target", "out.neff"]);
    assert_eq!(leftovers(scratch.path(), &expected), Vec::<String>::new());
}

/// An output path holding a symbolic link or a FIFO is refused (exit 1, naming what is there),
/// and the node stays as it was: the rename would have replaced it.
#[test]
fn an_output_path_that_is_a_link_or_a_fifo_is_refused() {
    let scratch = Scratch::new("output-kinds");
    scratch.write("m.hlo", PLAIN.as_bytes());
    let target = scratch.write("target", b"precious");
    symlink(&target, scratch.join("link.neff")).unwrap();
    let made = Command::new("mkfifo").arg(scratch.join("fifo.neff")).status().unwrap();
    assert!(made.success());
    for (name, kind) in [("link.neff", "symbolic link"), ("fifo.neff", "FIFO")] {
        let out = Command::new(nrtsim_exe())
            .current_dir(scratch.path())
            .args(["compile", "m.hlo", "--framework", "XLA", "--target", "trn2", "--output", name])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!("{name} is a {kind}, expected a regular file")),
            "{stderr}"
        );
    }
    let link = std::fs::symlink_metadata(scratch.join("link.neff")).unwrap();
    assert!(link.file_type().is_symlink());
    let fifo = std::fs::symlink_metadata(scratch.join("fifo.neff")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&fifo.file_type()));
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    let expected = ["m.hlo", "target", "link.neff", "fifo.neff"];
    assert_eq!(leftovers(scratch.path(), &expected), Vec::<String>::new());
}

#[test]
fn an_unsupported_opcode_fails_naming_the_opcode_and_the_instruction() {
    let scratch = Scratch::new("unsupported");
    let hlo = "HloModule m\n\nENTRY main {\n  x = f32[4,4] parameter(0)\n  ROOT factor = f32[4,4] cholesky(x), lower=true\n}\n";
    scratch.write("m.hlo", hlo.as_bytes());
    let out = Command::new(nrtsim_exe())
        .current_dir(scratch.path())
        .args(["compile", "m.hlo", "--framework", "XLA", "--target", "trn2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error:"), "{stderr}");
    assert!(stderr.contains("instruction factor"), "{stderr}");
    assert!(stderr.contains("unsupported opcode cholesky"), "{stderr}");
    assert_eq!(leftovers(scratch.path(), &["m.hlo"]), Vec::<String>::new());
}

#[test]
fn an_nki_kernel_compiled_for_a_device_is_refused_as_device_code() {
    let scratch = Scratch::new("nki");
    let hlo = "HloModule m\n\nENTRY main {\n  x = f32[4] parameter(0)\n  ROOT kernel = f32[4] custom-call(x), custom_call_target=\"AwsNeuronCustomNativeKernel\"\n}\n";
    scratch.write("m.hlo", hlo.as_bytes());
    let out = Command::new(nrtsim_exe())
        .current_dir(scratch.path())
        .args(["compile", "m.hlo", "--framework", "XLA", "--target", "trn2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("instruction kernel"), "{stderr}");
    assert!(
        stderr.contains("AwsNeuronCustomNativeKernel is an NKI kernel compiled for a device"),
        "{stderr}"
    );
    assert!(stderr.contains("device code"), "{stderr}");
}

/// `x + x` by an NKI kernel nrtsim's NKI traced (one load, one add on the vector engine, one
/// store), as a framework emits it: the custom call's `backend_config` is the program.
const TRACED_KERNEL: &str = r#"{"format":"nrtsim-nki-program","version":1,"kernel":{"name":"double","file":"k.py","line":1},"target":"trn2","grid":[],"seed":0,"files":["k.py"],"tensors":[{"name":"x","dtype":"float32","shape":[4],"buffer":"shared_hbm","loc":[0,1]},{"name":"out","dtype":"float32","shape":[4],"buffer":"shared_hbm","loc":[0,2]},{"name":"t","dtype":"float32","shape":[4],"buffer":"sbuf","loc":[0,3]}],"inputs":[0],"outputs":[1],"instructions":[{"op":"dma","engine":"dma","loc":[0,3],"dst":{"t":2,"off":0,"ap":[[1,4]]},"src":{"t":0,"off":0,"ap":[[1,4]]}},{"op":"tensor_tensor","engine":"vector","loc":[0,4],"dst":{"t":2,"off":0,"ap":[[1,4]]},"a":{"t":2,"off":0,"ap":[[1,4]]},"b":{"t":2,"off":0,"ap":[[1,4]]},"alu_op":"add"},{"op":"dma","engine":"dma","loc":[0,5],"dst":{"t":1,"off":0,"ap":[[1,4]]},"src":{"t":2,"off":0,"ap":[[1,4]]}}]}"#;

#[test]
fn an_nki_kernel_nrtsim_traced_compiles_and_runs() {
    let scratch = Scratch::new("nki-traced");
    let config = TRACED_KERNEL.replace('\\', "\\\\").replace('"', "\\\"");
    let hlo = format!(
        "HloModule m\n\nENTRY main {{\n  x = f32[4] parameter(0)\n  ROOT kernel = f32[4] custom-call(x), custom_call_target=\"AwsNeuronCustomNativeKernel\", backend_config=\"{config}\"\n}}\n"
    );
    scratch.write("m.hlo", hlo.as_bytes());
    let out = Command::new(nrtsim_exe())
        .current_dir(scratch.path())
        .args(["compile", "m.hlo", "--framework", "XLA", "--target", "trn2", "--output", "m.neff"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The NEFF runs on the simulator: [1, 2, 3, 4] doubled.
    let input = npy_f32(&[4], &[1.0, 2.0, 3.0, 4.0]);
    scratch.write("x.npy", &input);
    let run = Command::new(nrtsim_exe())
        .current_dir(scratch.path())
        .args(["run", "m.neff", "--input", "input0=x.npy", "--output-dir", "out"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let result = std::fs::read(scratch.path().join("out/output0.npy")).unwrap();
    let (_, shape, values) = testkit::model_fixture::npy_values("output0", &result).unwrap();
    assert_eq!((shape, values), (vec![4], vec![2.0, 4.0, 6.0, 8.0]));
}

/// A version 1.0 `.npy` of little-endian float32 values.
fn npy_f32(shape: &[usize], values: &[f32]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let mut header =
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}", dims.join(", "));
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    out
}

#[test]
fn the_personality_answers_version_help_and_list_operators() {
    let (scratch, neuronx_cc) = with_neuronx_cc("personality");
    let version = run_in(&neuronx_cc, scratch.path(), &["--version"]);
    assert!(version.status.success());
    let line = text(&version.stdout);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.contains("nrtsim") && line.contains("simulator compile target"), "{line}");
    assert!(line.contains(env!("CARGO_PKG_VERSION")), "{line}");

    let help = run_in(&neuronx_cc, scratch.path(), &["compile", "--help"]);
    assert!(help.status.success());
    let help = text(&help.stdout);
    assert!(help.contains("Accepted and ignored"), "{help}");
    for flag in
        ["--auto-cast", "--optlevel", "--model-type", "--enable-saturate-infinity", "--internal-"]
    {
        assert!(help.contains(flag), "{flag} missing from\n{help}");
    }

    let operators = run_in(&neuronx_cc, scratch.path(), &["list-operators", "--framework", "XLA"]);
    assert!(operators.status.success());
    let operators = text(&operators.stdout);
    let listed: Vec<&str> = operators.lines().collect();
    for opcode in ["add", "dot", "convolution", "reduce", "while", "parameter"] {
        assert!(listed.contains(&opcode), "{opcode}");
    }
    for opcode in ["custom-call", "fft", "rng-bit-generator"] {
        assert!(!listed.contains(&opcode), "{opcode}");
    }
    let (opcodes, calls) = listed.split_at(hlo::eval::EVALUATED_OPCODES.len());
    assert_eq!(opcodes, hlo::eval::EVALUATED_OPCODES);
    // NKI kernels run when nrtsim's NKI traced them (their configuration is the program).
    assert_eq!(
        calls,
        [
            "custom-call AwsNeuronCustomNativeKernel",
            "custom-call AwsNeuronTopK",
            "custom-call TopK"
        ]
    );

    // Without a command: a usage error, as neuronx-cc gives.
    let bare = run_in(&neuronx_cc, scratch.path(), &[]);
    assert_eq!(bare.status.code(), Some(2));
}

#[test]
fn inspect_says_simulator_target() {
    let scratch = Scratch::new("inspect");
    let module = scratch.write("m.hlo", PLAIN.as_bytes());
    let output = scratch.join("file.neff");
    let out = nrtsim(&[
        "compile",
        module.to_str().unwrap(),
        "--framework",
        "XLA",
        "--target",
        "inf2",
        "--output",
        output.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = nrtsim(&["inspect", output.to_str().unwrap()]);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    assert!(text(&shown.stdout).contains("simulator target"), "{}", text(&shown.stdout));
    let shown = nrtsim(&["inspect", "--json", output.to_str().unwrap()]);
    let report: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(report["header"]["simulator_target"], true);
}

#[test]
fn the_simulator_loads_the_mark_only_with_its_member() {
    let options = compile::CompileOptions::new(compile::Target::Trn2);
    let bytes = compile::compile(PLAIN.as_bytes(), &options).unwrap();
    let neff = Neff::parse(&bytes, &ReadOptions::loader()).unwrap();
    let members: Vec<(&str, &[u8])> = neff
        .members
        .iter()
        .filter(|(name, _)| name.as_str() != SIMULATOR_TARGET_MEMBER)
        .map(|(name, member)| (name.as_str(), member.bytes()))
        .collect();
    let payload = abi::neff::write_payload(2, &members).unwrap();
    let stripped = abi::neff::assemble_neff(&neff.header, &payload).unwrap();
    let sim = SimRuntime::new_shared(SimConfig::default()).unwrap();
    sim.init(Framework::NoFw, "", "").unwrap();
    let refused = sim.load(&stripped, 0, 1).unwrap_err();
    assert_eq!(refused.status, NrtStatus::UnsupportedNeffVersion, "{refused}");
    sim.load(&bytes, 0, 1).unwrap();
}

#[test]
fn names_that_look_like_the_defaults_are_still_names() {
    // Parameter 0 is named `input1` and parameter 1 `input0`: the NEFF binds by its signature
    // order (parameter order), not by the number in the name.
    let hlo = NAMED
        .replace("neff_input_names=\"b\"", "neff_input_names=\"input1\"")
        .replace("neff_input_names=\"a\"", "neff_input_names=\"input0\"")
        .replace("output0,output1", "output1,output0");
    launch_named(&hlo, ["input1", "input0"], ["output1", "output0"]);
}

#[test]
fn a_boolean_result_is_a_uint8_output_holding_0_or_1() {
    let hlo = "HloModule cmp\n\nENTRY main {\n  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)\n  ROOT gt = pred[4] compare(x, y), direction=GT\n}\n";
    let options = compile::CompileOptions::new(compile::Target::Trn1);
    let bytes = compile::compile(hlo.as_bytes(), &options).unwrap();
    let neff = Neff::parse(&bytes, &ReadOptions::loader()).unwrap();
    assert_eq!(neff.signature.outputs[0].dtype, "uint8");
    assert_eq!(neff.graphs[0].var("output0").unwrap().size, Some(4));
    let loaded = Loaded::new(&bytes);
    loaded.input("input0", &[1.0, 5.0, -2.0, 7.0]);
    loaded.input("input1", &[2.0, 4.0, -3.0, 7.0]);
    let result = loaded.sim.tensor_allocate(Placement::Device, 0, 4, b"output0").unwrap();
    loaded.output("output0", result);
    loaded.execute();
    let mut flags = [9u8; 4];
    loaded.sim.tensor_read(result, 0, &mut flags).unwrap();
    assert_eq!(flags, [0, 1, 1, 0]);
    let info = loaded.sim.get_model_tensor_info(loaded.model).unwrap();
    let output = info.iter().find(|entry| entry.name == "output0").unwrap();
    assert_eq!(output.dtype, abi::dtype::NrtDtype::Uint8);
}

#[test]
fn a_zero_element_result_is_left_out_and_the_rest_still_binds() {
    let hlo = "HloModule empty\n\nENTRY main {\n  x = f32[4] parameter(0)\n  none = f32[0] slice(x), slice={[4:4]}\n  twice = f32[4] add(x, x)\n  ROOT r = (f32[0], f32[4]) tuple(none, twice)\n}\n";
    let options = compile::CompileOptions::new(compile::Target::Trn2);
    let bytes = compile::compile(hlo.as_bytes(), &options).unwrap();
    let neff = Neff::parse(&bytes, &ReadOptions::loader()).unwrap();
    assert_eq!(names(&neff), (vec!["input0".into()], vec!["output1".into()]));
    let loaded = Loaded::new(&bytes);
    loaded.input("input0", &[1.0, 2.0, 3.0, 4.0]);
    let twice = loaded.tensor("output1", &[0.0; 4]);
    loaded.output("output1", twice);
    loaded.execute();
    assert_eq!(loaded.read(twice), [2.0, 4.0, 6.0, 8.0]);
}

#[test]
fn two_modules_compiled_to_file_neff_have_different_uuids() {
    let options = compile::CompileOptions::new(compile::Target::Trn2);
    let uuid = |hlo: &str| {
        let bytes = compile::compile(hlo.as_bytes(), &options).unwrap();
        Neff::parse(&bytes, &ReadOptions::loader()).unwrap().header.uuid
    };
    assert_ne!(uuid(PLAIN), uuid(NAMED));
    assert_eq!(uuid(PLAIN), uuid(PLAIN));
    assert_ne!(uuid(PLAIN), [0; 16]);
}

#[test]
fn the_model_file_is_read_under_a_cap() {
    let scratch = Scratch::new("cap");
    scratch.write("m.hlo", PLAIN.as_bytes());
    let out = Command::new(nrtsim_exe())
        .current_dir(scratch.path())
        .env("NRTSIM_COMPILE_MAX_INPUT_BYTES", "16")
        .args(["compile", "m.hlo", "--framework", "XLA", "--target", "trn2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("NRTSIM_COMPILE_MAX_INPUT_BYTES (16 bytes)"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(leftovers(scratch.path(), &["m.hlo"]), Vec::<String>::new());
}

/// `nrtsim compile MODEL --framework XLA --target trn1 --output NEFF`.
fn compile_for_trn1(model: &Path, neff: &Path) -> Output {
    nrtsim(&[
        "compile",
        model.to_str().unwrap(),
        "--framework",
        "XLA",
        "--target",
        "trn1",
        "--output",
        neff.to_str().unwrap(),
    ])
}

/// neuronx-cc's model folder, as torch-neuronx writes it: the weight (parameter 1, by number)
/// is folded into the program, so the NEFF has one input, `x`, and computes `x * w`.
#[test]
fn a_model_folder_folds_its_weights_into_the_neff() {
    let scratch = support::scratch("model-folder");
    std::fs::create_dir_all(scratch.path().join("model/weights")).unwrap();
    let hlo = "HloModule m\n\nENTRY main {\n  x = f32[3] parameter(0)\n  w = f32[3] parameter(1)\n  ROOT r = f32[3] multiply(x, w)\n}\n";
    scratch.write("model/graph.hlo", hlo.as_bytes());
    scratch.write("model/weights/1.npy", &npy_f32(&[3], &[2.0, -1.0, 0.5]));
    scratch.write(
        "model/metadata.json",
        br#"{"model_files": "graph.hlo", "version": "1.0", "weights": {"1": "weights/1.npy"}}"#,
    );
    let model = scratch.path().join("model");
    let neff_path = scratch.path().join("graph.neff");
    let output = compile_for_trn1(&model, &neff_path);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let neff_bytes = std::fs::read(&neff_path).unwrap();
    let neff = Neff::parse(&neff_bytes, &ReadOptions::loader()).unwrap();
    assert_eq!(names(&neff), (vec!["input0".into()], vec!["output0".into()]));
    let loaded = Loaded::new(&neff_bytes);
    loaded.input("input0", &[1.0, 2.0, 3.0]);
    let result = loaded.tensor("output0", &[0.0; 3]);
    loaded.output("output0", result);
    loaded.execute();
    assert_eq!(loaded.read(result), [2.0, -2.0, 1.5]);

    // A weight of the wrong size names the weight, the parameter and both sizes.
    scratch.write("model/weights/1.npy", &npy_f32(&[2], &[2.0, -1.0]));
    let output = compile_for_trn1(&model, &neff_path);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("weight 1: parameter 1 (w): 8 bytes, expected 12"),
        "{}",
        text(&output.stderr)
    );
    // A folder without metadata.json says what a model folder holds.
    std::fs::remove_file(model.join("metadata.json")).unwrap();
    let output = compile_for_trn1(&model, &neff_path);
    assert!(!output.status.success());
    assert!(text(&output.stderr).contains("must hold metadata.json"), "{}", text(&output.stderr));
}
