//! Non-default layouts at the entry boundary: `run_physical` reads device bytes in each
//! parameter's layout and writes each result in its layout.

use hlo::eval::{Array, EvalOptions, Program, Value};

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

#[test]
fn run_physical_converts_parameters_and_results() {
    // p is f32[2,3] stored column-major ({0,1}); the result is row-major ({1,0}).
    let text = "HloModule m\n\nENTRY main {\n  p = f32[2,3]{0,1} parameter(0)\n  ROOT n = f32[2,3]{1,0} negate(p)\n}\n";
    let module = hlo::text::parse_module(text).unwrap();
    let program = Program::compile(&module, &EvalOptions::default()).unwrap();
    assert_eq!(program.parameter_layouts(), vec![Some(vec![0, 1])]);
    assert_eq!(program.result_layouts(), vec![None]);
    // Logical [[1,2,3],[4,5,6]] in column-major order is 1,4,2,5,3,6.
    let device = Array::from_f32(&[2, 3], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let Value::Array(out) = program.run_physical(&[device]).unwrap() else { panic!("array") };
    assert_eq!(f32s(&out.bytes), vec![-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]);
}

#[test]
fn run_physical_writes_a_column_major_result() {
    let text = "HloModule m\n\nENTRY main {\n  p = f32[2,3]{1,0} parameter(0)\n  ROOT c = f32[2,3]{0,1} copy(p)\n}\n";
    let module = hlo::text::parse_module(text).unwrap();
    let program = Program::compile(&module, &EvalOptions::default()).unwrap();
    let Value::Array(out) =
        program.run_physical(&[Array::from_f32(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])]).unwrap()
    else {
        panic!("array")
    };
    assert_eq!(f32s(&out.bytes), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
}
