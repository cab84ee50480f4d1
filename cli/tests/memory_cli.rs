//! What `nrtsim hlo run` holds in memory: an input too large for the address space is an error
//! naming its size (not an abort of the process), and a large input is read once, straight into
//! the array the interpreter uses, so the peak resident memory stays within the inputs, the
//! live intermediates and the outputs plus a small constant.

#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod support;
use support::{nrtsim, nrtsim_exe, scratch, stderr};

/// What the process holds besides the arrays: the binary, its libraries, the allocator's and
/// the reader's buffers, stacks (measured at about 14 MiB).
const BASELINE: u64 = 48 << 20;

/// Writes a C-order f32 `.npy` of `n` elements whose element `i` is `i`, streaming, so the test
/// itself holds no copy of it.
fn arange_npy(path: &Path, n: usize) {
    let header = abi::neff::npy::encode_header("<f4", &[n as u64], 4 * n as u64).unwrap();
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    file.write_all(&header).unwrap();
    for i in 0..n {
        file.write_all(&(i as f32).to_le_bytes()).unwrap();
    }
    file.flush().unwrap();
}

/// A `.npy` header for f32[n] followed by a hole: the file's length is real, its blocks are not
/// stored, so the test writes no gigabytes.
fn sparse_f32_npy(path: &Path, n: usize) {
    let header = abi::neff::npy::encode_header("<f4", &[n as u64], 4 * n as u64).unwrap();
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(&header).unwrap();
    file.set_len(header.len() as u64 + 4 * n as u64).unwrap();
}

/// `x * x`, of which the first four elements are the result.
fn square_then_slice(n: usize) -> String {
    format!(
        "HloModule square\n\nENTRY main {{\n  x = f32[{n}] parameter(0)\n  y = f32[{n}] multiply(x, x)\n  ROOT r = f32[4] slice(y), slice={{[0:4]}}\n}}\n"
    )
}

fn s(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 scratch path")
}

/// `nrtsim args…` under an address-space limit of `kib` KiB (`ulimit -v`, set in the child's
/// shell before it becomes `nrtsim`).
fn nrtsim_under_address_limit(kib: u64, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(nrtsim_exe())
        .args(args)
        .output()
        .expect("run sh")
}

fn f32s_of_npy(path: &PathBuf) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    let header = abi::neff::npy::parse_header("output", &bytes).unwrap();
    bytes[header.data_offset..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn an_input_larger_than_the_address_space_allows_is_an_error_naming_its_size() {
    let dir = scratch("memory-limit");
    let n = 1 << 29; // 2 GiB of f32 under a 1 GiB address-space limit.
    let input = dir.join("big.npy");
    sparse_f32_npy(&input, n);
    let module = dir.join("m.hlo");
    std::fs::write(&module, square_then_slice(n)).unwrap();
    let out_dir = dir.join("out");
    let output = nrtsim_under_address_limit(
        1 << 20,
        &[
            "hlo",
            "run",
            s(&module),
            "--input",
            s(&input),
            "--output-dir",
            s(&out_dir),
            "--max-input-bytes",
            "4294967296",
        ],
    );
    let message = stderr(&output);
    // An abort (`memory allocation of … failed`) ends the process by a signal, with no code.
    assert_eq!(output.status.code(), Some(1), "expected a clean failure, got: {message}");
    let expected = "allocation of 2147483648 bytes for f32[536870912] failed";
    assert!(message.contains(expected), "expected {expected:?} in: {message}");
}

#[test]
fn a_large_input_is_held_once_and_the_peak_stays_within_the_arrays_plus_a_constant() {
    let dir = scratch("memory-peak");
    let n = 50_000_000; // 200 MB of f32.
    let input = dir.join("x.npy");
    arange_npy(&input, n);
    let module = dir.join("m.hlo");
    std::fs::write(&module, square_then_slice(n)).unwrap();
    let out_dir = dir.join("out");
    let output = nrtsim(&[
        "hlo",
        "run",
        s(&module),
        "--input",
        s(&input),
        "--output-dir",
        s(&out_dir),
        "--report-peak-rss",
    ]);
    let message = stderr(&output);
    assert!(output.status.success(), "{message}");
    assert_eq!(f32s_of_npy(&out_dir.join("output0.npy")), [0.0, 1.0, 4.0, 9.0]);
    let peak: u64 = message
        .lines()
        .find_map(|line| line.strip_prefix("peak RSS: "))
        .and_then(|rest| rest.strip_suffix(" bytes"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS line in: {message}"));
    // The input, then the product while the input is still live: two arrays of 4n bytes at
    // most. Reading the file into a byte buffer first, or copying it again to bind it, would
    // add a third or a fourth.
    let arrays = 2 * 4 * n as u64;
    assert!(
        peak <= arrays + BASELINE,
        "peak RSS {peak} bytes, expected at most {arrays} of arrays plus {BASELINE}"
    );
}

/// The f16 bits of the small integers -2..=2.
const F16_OF: [u16; 5] = [0xc000, 0xbc00, 0x0000, 0x3c00, 0x4000];

/// `y[k, n]` of the scaled weight matmul: a small integer, so every sum is exact in f16.
fn weight(k: usize, n: usize) -> i64 {
    ((k + 2 * n) % 5) as i64 - 2
}

#[test]
fn a_weight_matmul_through_nrt_execute_holds_each_array_at_most_twice() {
    // The scaled form of `tests/python/weight_matmul.py`'s x f16[128,32768] @ y f16[32768,65536]
    // (y 4 GiB): y is 128 MiB, so a third copy of it would not hide in the constant.
    let (m, k, n) = (2, 8192, 8192);
    let dir = scratch("memory-matmul");
    let module = dir.join("matmul.hlo");
    std::fs::write(
        &module,
        format!(
            "HloModule weight_matmul\n\nENTRY main {{\n  x = f16[{m},{k}] parameter(0)\n  y = f16[{k},{n}] parameter(1)\n  ROOT out = f16[{m},{n}] dot(x, y), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}\n"
        ),
    )
    .unwrap();
    let neff = dir.join("matmul.neff");
    let compiled = nrtsim(&[
        "compile",
        "--framework",
        "XLA",
        s(&module),
        "--target",
        "trn1",
        "--output",
        s(&neff),
    ]);
    assert!(compiled.status.success(), "{}", stderr(&compiled));
    // x row 0 is all ones, row 1 is 1 at odd k: the sums of y's column and of its odd rows.
    let x_path = dir.join("x.npy");
    let x: Vec<u8> = (0..m * k)
        .flat_map(|i| if i / k == 0 || (i % k) % 2 == 1 { 0x3c00u16 } else { 0 }.to_le_bytes())
        .collect();
    std::fs::write(&x_path, abi::neff::npy::encode("<f2", &[m as u64, k as u64], &x).unwrap())
        .unwrap();
    let y_path = dir.join("y.npy");
    let header = abi::neff::npy::encode_header("<f2", &[k as u64, n as u64], 2 * (k * n) as u64);
    let mut file = std::io::BufWriter::new(std::fs::File::create(&y_path).unwrap());
    file.write_all(&header.unwrap()).unwrap();
    for row in 0..k {
        for col in 0..n {
            file.write_all(&F16_OF[(weight(row, col) + 2) as usize].to_le_bytes()).unwrap();
        }
    }
    file.flush().unwrap();
    drop(file);
    let out_dir = dir.join("out");
    let x_input = format!("input0={}", s(&x_path));
    let y_input = format!("input1={}", s(&y_path));
    let output = nrtsim(&[
        "run",
        s(&neff),
        "--input",
        &x_input,
        "--input",
        &y_input,
        "--output-dir",
        s(&out_dir),
        "--report-peak-rss",
    ]);
    let message = stderr(&output);
    assert!(output.status.success(), "{message}");
    let bytes = std::fs::read(out_dir.join("output0.npy")).unwrap();
    let header = abi::neff::npy::parse_header("output", &bytes).unwrap();
    let got: Vec<u16> = bytes[header.data_offset..]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    for col in [0, 1, 2, 3, 4, 777, n - 1] {
        let all: i64 = (0..k).map(|row| weight(row, col)).sum();
        let odd: i64 = (1..k).step_by(2).map(|row| weight(row, col)).sum();
        for (row, want) in [(0, all), (1, odd)] {
            let value = f16_value(got[row * n + col]);
            assert_eq!(value, want as f32, "out[{row},{col}]");
        }
    }
    let peak: u64 = message
        .lines()
        .find_map(|line| line.strip_prefix("peak RSS: "))
        .and_then(|rest| rest.strip_suffix(" bytes"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS line in: {message}"));
    // Device memory holds the inputs and the output; the interpreter one more copy of the
    // inputs, its result, and the copy read back for the file.
    let inputs = 2 * (m * k + k * n) as u64;
    let outputs = 2 * (m * n) as u64;
    let bound = 2 * inputs + 3 * outputs + BASELINE;
    assert!(peak <= bound, "peak RSS {peak} bytes, expected at most {bound}");
}

/// An f16's value, decoded by hand (normal numbers and zero, which is all this test makes).
fn f16_value(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f32::from(bits & 0x3ff);
    if exponent == 0 {
        return sign * mantissa * 2f32.powi(-24);
    }
    sign * (1.0 + mantissa / 1024.0) * 2f32.powi(exponent - 15)
}
