//! `nrtsim metaneff from-hlo` from the outside: the metaneff it writes for HLO text, the typed
//! errors with their exit status, determinism, and a state chosen with `--state` carried across
//! launches of a module compiled with `nrtsim compile` through `nrtsim run --metaneff`. Expected
//! numbers are worked by hand from the module.

use std::path::{Path, PathBuf};

use abi::metaneff::meta_tensor::{DataType, Type};
use abi::neff::npy;

mod support;
use support::{nrtsim, scratch, stderr, stdout, text};

/// `out = x * w`, `next = acc + x * w`, with `next` aliased to the state `acc`: parameters in
/// the order user input, state, weight.
const COUNTER: &str = "HloModule counter, input_output_alias={ {1}: (1, {}, may-alias) }

ENTRY main {
  x.1 = f32[2] parameter(0)
  acc.1 = f32[2] parameter(1)
  w.1 = f32[2] parameter(2)
  xw = f32[2] multiply(x.1, w.1)
  next = f32[2] add(acc.1, xw)
  ROOT t = (f32[2], f32[2]) tuple(xw, next)
}
";

fn s(path: &Path) -> &str {
    path.to_str().expect("scratch paths are UTF-8")
}

fn f32_npy(values: &[f32]) -> Vec<u8> {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    npy::encode("<f4", &[values.len() as u64], &data).unwrap()
}

/// A safetensors file of f32 tensors, written here byte by byte: the header length, the JSON
/// header, the data.
fn safetensors(tensors: &[(&str, &[f32])]) -> Vec<u8> {
    let mut header = String::from("{");
    let mut data = Vec::new();
    for (i, (key, values)) in tensors.iter().enumerate() {
        let begin = data.len();
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        if i > 0 {
            header.push(',');
        }
        header.push_str(&format!(
            "\"{key}\":{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{begin},{}]}}",
            values.len(),
            data.len()
        ));
    }
    header.push('}');
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&data);
    file
}

fn read_f32_npy(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let header = npy::parse_header("output", &bytes).unwrap();
    bytes[header.data_offset..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn ok(args: &[&str]) -> std::process::Output {
    let output = nrtsim(args);
    assert!(
        output.status.success(),
        "nrtsim {}: {}{}",
        args.join(" "),
        stdout(&output),
        stderr(&output)
    );
    output
}

#[test]
fn the_metaneff_of_hlo_text_has_the_producers_names_types_keys_and_aliases() {
    let dir = scratch("from-hlo-text");
    let module = dir.write("counter.hlo", COUNTER.as_bytes());
    let metaneff = dir.join("m.metaneff");
    ok(&[
        "metaneff",
        "from-hlo",
        s(&module),
        "-o",
        s(&metaneff),
        "--state",
        "acc.1",
        "--weight",
        "2=scale",
    ]);
    let meta = abi::metaneff::decode(&std::fs::read(&metaneff).unwrap()).unwrap();
    type Input<'a> = (&'a [u8], i32, i32, Option<&'a [u8]>);
    let inputs: Vec<Input> = meta
        .input_tensors
        .iter()
        .map(|t| (&t.name[..], t.data_type, t.r#type, t.checkpoint_key.as_deref()))
        .collect();
    let float = DataType::Float as i32;
    assert_eq!(
        inputs,
        [
            (&b"input0"[..], float, Type::UserInput as i32, None),
            (&b"input1"[..], float, Type::InputState as i32, Some(&b"acc.1"[..])),
            (&b"input2"[..], float, Type::InputWeight as i32, Some(&b"scale"[..])),
        ]
    );
    let outputs: Vec<&[u8]> = meta.output_tensors.iter().map(|t| &t.name[..]).collect();
    assert_eq!(outputs, [&b"output0"[..], b"output1"]);
    assert_eq!(meta.output_aliases_to.into_iter().collect::<Vec<_>>(), [(1, 1)]);

    // Same module and choices, same bytes.
    let again = dir.join("again.metaneff");
    ok(&[
        "metaneff",
        "from-hlo",
        s(&module),
        "-o",
        s(&again),
        "--state",
        "1=acc.1",
        "--weight",
        "w.1=scale",
    ]);
    assert_eq!(std::fs::read(&metaneff).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn a_state_chosen_with_from_hlo_is_carried_across_launches_of_the_compiled_module() {
    let dir = scratch("from-hlo-state");
    let module = dir.write("counter.hlo", COUNTER.as_bytes());
    ok(&[
        "compile",
        "--framework",
        "XLA",
        s(&module),
        "--target",
        "trn2",
        "--output",
        s(&dir.join("counter.neff")),
    ]);
    let neff = dir.join("counter.neff");
    let metaneff = dir.join("m.metaneff");
    ok(&[
        "metaneff",
        "from-hlo",
        s(&module),
        "-o",
        s(&metaneff),
        "--state",
        "1=acc",
        "--weight",
        "2=w",
    ]);
    let returned = dir.join("returned.metaneff");
    ok(&["metaneff", "edit", s(&metaneff), "-o", s(&returned), "--return-aliases", "true"]);
    let checked = ok(&["check", s(&neff), s(&returned)]);
    assert!(stdout(&checked).contains("0 error(s), 0 warning(s)"), "{}", stdout(&checked));
    let weights =
        dir.write("w.safetensors", &safetensors(&[("acc", &[10.0, 20.0]), ("w", &[2.0, 3.0])]));
    let x = dir.write("x.npy", &f32_npy(&[1.0, 1.0]));
    let out: PathBuf = dir.join("out");
    ok(&[
        "run",
        s(&neff),
        "--metaneff",
        s(&returned),
        "--weights",
        s(&weights),
        "--input",
        s(&x),
        "--repeat",
        "3",
        "--output-dir",
        s(&out),
    ]);
    // Each launch: out = x * w = [2, 3]; acc = acc + [2, 3], from [10, 20] to [16, 29] after 3.
    assert_eq!(read_f32_npy(&out.join("output0.npy")), [2.0, 3.0]);
    assert_eq!(read_f32_npy(&out.join("output1.npy")), [16.0, 29.0]);
}

#[test]
fn each_refusal_exits_1_and_says_what_was_expected() {
    let dir = scratch("from-hlo-errors");
    let module = dir.write("counter.hlo", COUNTER.as_bytes());
    let out = dir.join("m.metaneff");
    for (args, message) in [
        (
            vec!["--weight", "3"],
            "--weight 3: no such parameter, expected a number below 3 or one of the names [\"x.1\", \"acc.1\", \"w.1\"]",
        ),
        (vec!["--weight", "0"], "parameter 1 `acc.1` is a user input after the weight parameter 0"),
        (vec!["--weight", "2=k", "--state", "1=k"], "both have checkpoint_key \"k\""),
    ] {
        let mut full = vec!["metaneff", "from-hlo", s(&module), "-o", s(&out)];
        full.extend(args);
        let output = nrtsim(&full);
        assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
        assert!(stderr(&output).contains(message), "{}", stderr(&output));
        assert!(!out.exists(), "no metaneff is written on an error");
    }
    // A binary module without a program shape names the way to add one.
    let mut parsed = hlo::text::parse_module(COUNTER).unwrap();
    parsed.host_program_shape = None;
    let bare = dir.write("bare.pb", &hlo::encode_module(&parsed));
    let output = nrtsim(&["metaneff", "from-hlo", s(&bare), "-o", s(&out)]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("has no host_program_shape"), "{}", stderr(&output));
    assert!(stderr(&output).contains("nrtsim hlo encode"), "{}", stderr(&output));
    // A choice that does not parse is a usage error.
    let output = nrtsim(&["metaneff", "from-hlo", s(&module), "-o", s(&out), "--state", "=k"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

/// from-hlo names by position, as `hlo2metaneff` does, while the compile target names a NEFF's
/// variables by the module's `neff_input_names`/`neff_output_names`: for a module with those
/// attributes the two disagree, and `nrtsim check` refuses the pair by name (documented in
/// docs/metaneff-from-hlo.md).
#[test]
fn a_module_that_names_its_tensors_gets_a_metaneff_check_refuses_for_its_compiled_neff() {
    let dir = scratch("from-hlo-named");
    let module = dir.write(
        "named.hlo",
        b"HloModule named

ENTRY main {
  a = f32[2] parameter(0), frontend_attributes={neff_input_names=\"a\"}
  ROOT r = f32[2] negate(a), frontend_attributes={neff_output_names=\"r\"}
}
",
    );
    let neff = dir.join("named.neff");
    let metaneff = dir.join("named.metaneff");
    ok(&["compile", "--framework", "XLA", s(&module), "--target", "trn2", "--output", s(&neff)]);
    ok(&["metaneff", "from-hlo", s(&module), "-o", s(&metaneff)]);
    let check = nrtsim(&["check", s(&neff), s(&metaneff)]);
    assert_eq!(check.status.code(), Some(1), "{}", stdout(&check));
    let report = stdout(&check);
    assert!(report.contains("E001 unknown-input-name] input 0 \"input0\""), "{report}");
    assert!(report.contains("expected one of [a]"), "{report}");
    assert!(report.contains("E002 unknown-output-name] output 0 \"output0\""), "{report}");
}

/// The compile target writes the 8-bit floats' NEFF variables as `int8` (spike's carrier), and
/// from-hlo writes their metaneff dtype as INT8 (`hlo2metaneff`'s rule that fp8 storage is int8),
/// so the pair they make for one module passes `nrtsim check` for every 8-bit float.
#[test]
fn the_neff_and_metaneff_of_an_8_bit_float_module_check_together() {
    let dir = scratch("from-hlo-f8");
    for ty in ["f8e4m3fn", "f8e5m2"] {
        let text = format!(
            "HloModule eight_bit

ENTRY main {{
  a = {ty}[4] parameter(0)
  ROOT r = {ty}[4] negate(a)
}}
"
        );
        let module = dir.write(&format!("{ty}.hlo"), text.as_bytes());
        let neff = dir.join(format!("{ty}.neff"));
        let metaneff = dir.join(format!("{ty}.metaneff"));
        ok(&[
            "compile",
            "--framework",
            "XLA",
            s(&module),
            "--target",
            "trn2",
            "--output",
            s(&neff),
        ]);
        ok(&["metaneff", "from-hlo", s(&module), "-o", s(&metaneff)]);
        let check = nrtsim(&["check", s(&neff), s(&metaneff)]);
        let report = stdout(&check);
        assert_eq!(check.status.code(), Some(0), "{ty}: {report}{}", stderr(&check));
        assert!(report.contains("0 error(s), 0 warning(s)"), "{ty}: {report}");
    }
}
