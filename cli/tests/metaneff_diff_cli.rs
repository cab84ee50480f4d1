//! `nrtsim metaneff diff` run as the built binary: exit status, the review-diff output, and a
//! malformed input named by its file.

use std::path::PathBuf;
use std::process::{Command, Output};

use abi::metaneff::text;

mod support;
use support::{Scratch, nrtsim_exe};

fn diff(a: &PathBuf, b: &PathBuf, extra: &[&str]) -> Output {
    Command::new(nrtsim_exe())
        .args(["metaneff", "diff"])
        .arg(a)
        .arg(b)
        .args(extra)
        .output()
        .expect("run nrtsim")
}

fn metaneff(shape: &str) -> Vec<u8> {
    text::from_text(&format!(
        r#"input_tensors {{ name: "x" shape: {shape} data_type: FLOAT type: USER_INPUT }}"#
    ))
    .expect("metaneff")
}

#[test]
fn equal_files_exit_zero_and_print_nothing() {
    let dir = Scratch::new("diff-equal");
    let a = dir.write("a.pb", &metaneff("[4]"));
    let output = diff(&a, &a, &[]);
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty());
}

#[test]
fn different_files_exit_one_with_a_review_diff() {
    let dir = Scratch::new("diff-different");
    let a = dir.write("a.pb", &metaneff("[4]"));
    let b = dir.write("b.pb", &metaneff("[2, 4]"));
    let output = diff(&a, &b, &[]);
    assert_eq!(output.status.code(), Some(1));
    let expected = format!(
        "--- {}\n+++ {}\n-input_tensors[\"x\"].shape: [4]\n+input_tensors[\"x\"].shape: [2, 4]\n",
        a.display(),
        b.display()
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
}

#[test]
fn a_malformed_second_file_is_named_with_offset_and_field() {
    let dir = Scratch::new("diff-malformed");
    let a = dir.write("a.pb", &metaneff("[4]"));
    let b = dir.write("broken.pb", &[0x0a, 0x05, 0x0a]);
    let output = diff(&a, &b, &[]);
    assert_eq!(output.status.code(), Some(1));
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("broken.pb: invalid metaneff at byte 1 (MetaNeff)"), "{message}");
}

#[test]
fn an_oversized_file_names_the_limit() {
    let dir = Scratch::new("diff-oversized");
    let a = dir.write("a.pb", &metaneff("[4]"));
    let output = diff(&a, &a, &["--max-input-bytes", "4"]);
    assert_eq!(output.status.code(), Some(1));
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("a.pb is larger than --max-input-bytes (4 bytes)"), "{message}");
}
