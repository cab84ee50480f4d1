//! `nrtsim metaneff` from the outside: exit codes, outputs and error messages.

mod support;
use support::{nrtsim, scratch, stderr};

#[test]
fn text_encodes_to_the_seed_example_bytes_and_decodes_back() {
    let dir = scratch("seed");
    let text = r#"
        input_tensors { name: "input0" shape: [1, 1, 1, 32] data_type: FLOAT type: USER_INPUT }
        output_tensors { name: "output0" shape: [1, 1, 1, 32] data_type: FLOAT type: UNDEFINED_TYPE }
        model_config { return_aliases: true }
        output_aliases_to { key: 0 value: 0 }
    "#;
    let txt = dir.join("m.txtpb");
    let pb = dir.join("m.pb");
    std::fs::write(&txt, text).unwrap();
    let out = nrtsim(&["metaneff", "encode", txt.to_str().unwrap(), "-o", pb.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut expected = vec![0x0a, 0x12, 0x0a, 0x06];
    expected.extend(b"input0");
    expected.extend([0x12, 0x04, 1, 1, 1, 0x20, 0x18, 0x01, 0x38, 0x01, 0x12, 0x11, 0x0a, 0x07]);
    expected.extend(b"output0");
    expected.extend([0x12, 0x04, 1, 1, 1, 0x20, 0x18, 0x01, 0x1a, 0x02, 0x30, 0x01]);
    expected.extend([0x32, 0x04, 0x08, 0x00, 0x10, 0x00]);
    assert_eq!(std::fs::read(&pb).unwrap(), expected);

    let out = nrtsim(&["metaneff", "decode", pb.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(printed.contains("name: \"input0\""), "{printed}");
    assert!(printed.contains("return_aliases: true"), "{printed}");
    assert!(!printed.contains("UNDEFINED_TYPE"), "defaults are not printed: {printed}");
}

#[test]
fn a_truncated_metaneff_fails_with_the_byte_offset() {
    let dir = scratch("truncated");
    let pb = dir.join("t.pb");
    std::fs::write(&pb, [0x0a, 0x12, 0x0a, 0x06, b'i']).unwrap();
    let out = nrtsim(&["metaneff", "decode", pb.to_str().unwrap()]);
    assert!(!out.status.success());
    let message = stderr(&out);
    assert!(message.contains("at byte 1 (MetaNeff)"), "{message}");
    assert!(message.contains("length prefix says 18 bytes, 3 left"), "{message}");
}

#[test]
fn bad_text_fails_with_line_and_column() {
    let dir = scratch("badtext");
    let txt = dir.join("bad.txtpb");
    std::fs::write(&txt, "input_tensors {\n  data_type: FLAOT\n}\n").unwrap();
    let out = nrtsim(&["metaneff", "encode", txt.to_str().unwrap(), "-o", "-"]);
    assert!(!out.status.success());
    let message = stderr(&out);
    assert!(message.contains("line 2, column"), "{message}");
    assert!(out.stdout.is_empty(), "nothing written on error");
}

#[test]
fn a_missing_file_is_named() {
    let out = nrtsim(&["metaneff", "decode", "/nonexistent/m.pb"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("reading /nonexistent/m.pb"), "{}", stderr(&out));
}

#[test]
fn help_lists_the_subcommands() {
    let out = nrtsim(&["metaneff", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("decode") && help.contains("encode"), "{help}");
}

#[test]
fn edit_keeps_unknown_fields_and_changes_only_what_it_is_asked() {
    let dir = scratch("edit");
    let input = dir.join("in.pb");
    let output = dir.join("out.pb");
    // input0 with an unknown field 20, then an unknown top-level field 99.
    let mut bytes = vec![0x0a, 0x0b, 0x0a, 0x06];
    bytes.extend(b"input0");
    bytes.extend([0xa0, 0x01, 0x07, 0x98, 0x06, 0x2a]);
    std::fs::write(&input, &bytes).unwrap();
    let out = nrtsim(&[
        "metaneff",
        "edit",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "--lazy-load",
        "true",
        "--dynamic-batching",
        "true",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut expected = vec![0x0a, 0x0d, 0x0a, 0x06];
    expected.extend(b"input0");
    expected.extend([0x28, 0x01, 0xa0, 0x01, 0x07, 0x1a, 0x02, 0x28, 0x01, 0x98, 0x06, 0x2a]);
    assert_eq!(std::fs::read(&output).unwrap(), expected);
}

#[test]
fn encode_is_canonical_and_preserve_order_keeps_the_text_order() {
    let dir = scratch("order");
    let txt = dir.join("aliases.txtpb");
    std::fs::write(
        &txt,
        "output_aliases_to { key: 3 value: 1 }\noutput_aliases_to { key: 0 value: 2 }\n",
    )
    .unwrap();
    let canonical = dir.join("canonical.pb");
    let out =
        nrtsim(&["metaneff", "encode", txt.to_str().unwrap(), "-o", canonical.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ascending = [0x32, 0x04, 0x08, 0x00, 0x10, 0x02, 0x32, 0x04, 0x08, 0x03, 0x10, 0x01];
    assert_eq!(std::fs::read(&canonical).unwrap(), ascending);

    let preserved = dir.join("preserved.pb");
    let out = nrtsim(&[
        "metaneff",
        "encode",
        "--preserve-order",
        txt.to_str().unwrap(),
        "-o",
        preserved.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let as_written = [0x32, 0x04, 0x08, 0x03, 0x10, 0x01, 0x32, 0x04, 0x08, 0x00, 0x10, 0x02];
    assert_eq!(std::fs::read(&preserved).unwrap(), as_written);

    // JSON objects have no order to preserve.
    let out =
        nrtsim(&["metaneff", "encode", "--preserve-order", "--format", "json", "x", "-o", "-"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--preserve-order needs text format"), "{}", stderr(&out));
}

/// An endless input is an error naming the limit and the flag that raises it, with the default
/// limit and with a lowered one; every subcommand that reads a file is capped.
#[test]
fn an_endless_input_is_refused_at_the_input_limit() {
    let out = nrtsim(&["metaneff", "decode", "/dev/zero"]);
    assert!(!out.status.success());
    let message = stderr(&out);
    assert!(message.contains(&format!("--max-input-bytes ({} bytes)", 256 << 20)), "{message}");
    assert!(message.contains("--max-input-bytes"), "{message}");
    for command in [
        &["decode", "/dev/zero"][..],
        &["edit", "/dev/zero", "-o", "-"],
        &["encode", "/dev/zero", "-o", "-"],
    ] {
        let mut args = vec!["metaneff"];
        args.extend_from_slice(command);
        args.extend_from_slice(&["--max-input-bytes", "4096"]);
        let out = nrtsim(&args);
        assert!(!out.status.success(), "{command:?}");
        assert!(
            stderr(&out).contains("--max-input-bytes (4096 bytes)"),
            "{command:?}: {}",
            stderr(&out)
        );
    }
}

/// A regular file one byte over the limit is refused before it is read; at the limit it is read.
#[test]
fn a_file_over_the_input_limit_is_refused_and_one_at_it_is_read() {
    let dir = scratch("limit");
    let pb = dir.join("m.pb");
    // `name: "abc"`: five bytes.
    std::fs::write(&pb, [0x2a, 0x03, b'a', b'b', b'c']).unwrap();
    let out = nrtsim(&["metaneff", "decode", pb.to_str().unwrap(), "--max-input-bytes", "4"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--max-input-bytes (4 bytes)"), "{}", stderr(&out));
    let out = nrtsim(&["metaneff", "decode", pb.to_str().unwrap(), "--max-input-bytes", "5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("name: \"abc\""));
}

/// One more input tensor than the default limit (`abi::metaneff::DEFAULT_MAX_TENSORS`): each
/// tensor empty, two bytes on the wire.
fn over_the_tensor_limit() -> (Vec<u8>, String) {
    let count = abi::metaneff::DEFAULT_MAX_TENSORS + 1;
    let bytes: Vec<u8> = std::iter::repeat_n([0x0a, 0x00], count).flatten().collect();
    let text = "input_tensors {\n}\n".repeat(count);
    (bytes, text)
}

/// The refusal of the view decoder for that metaneff: the list and the limit.
fn tensor_limit_message() -> String {
    let limit = abi::metaneff::DEFAULT_MAX_TENSORS;
    format!("more than {limit} input_tensors, expected at most {limit} (the tensor limit)")
}

/// Every metaneff command applies the count limits, as `check` and `diff` do: a metaneff with
/// one tensor past the limit is refused by decode (text and JSON), edit and encode, with the
/// decoder's error, and nothing is written.
#[test]
fn every_command_refuses_a_metaneff_past_the_tensor_limit() {
    let dir = scratch("over-limit");
    let (bytes, text) = over_the_tensor_limit();
    let pb = dir.join("many.pb");
    std::fs::write(&pb, &bytes).unwrap();
    let txt = dir.join("many.txtpb");
    std::fs::write(&txt, &text).unwrap();
    let json = dir.join("many.json");
    let tensors = vec!["{}"; abi::metaneff::DEFAULT_MAX_TENSORS + 1].join(",");
    std::fs::write(&json, format!("{{\"input_tensors\": [{tensors}]}}")).unwrap();
    let out = dir.join("out.pb");
    let (pb, txt, json, out_s) = (
        pb.to_str().unwrap(),
        txt.to_str().unwrap(),
        json.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let commands: [&[&str]; 7] = [
        &["metaneff", "decode", pb],
        &["metaneff", "decode", pb, "--format", "json"],
        &["metaneff", "edit", pb, "--async-load", "true", "-o", out_s],
        &["metaneff", "encode", txt, "-o", out_s],
        &["metaneff", "encode", json, "--format", "json", "-o", out_s],
        &["metaneff", "diff", pb, pb],
        &["metaneff", "edit", pb, "--dynamic-batching", "true", "-o", "-"],
    ];
    for args in commands {
        let output = nrtsim(args);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {}", stderr(&output));
        let message = stderr(&output);
        assert!(message.contains(&tensor_limit_message()), "{args:?}: {message}");
        assert!(output.stdout.is_empty(), "{args:?}: printed {} bytes", output.stdout.len());
        assert!(!out.exists(), "{args:?} wrote {out_s}");
    }
}
