//! Every module jax lowered for the fixtures (hlo/tests/fixtures/<name>/jax.pb, written by
//! export.py) compiles into an interpreter plan and runs on zero arguments: the interpreter
//! covers what jax emits for these programs (MLP, conv, pool, gather/scatter, sort, while, ...).
//! Fixtures using element types outside the metaneff set are a reviewed list: they must fail
//! with an "unsupported element type" error, and an unexpected success is a failure too.

mod corpus;

/// Fixture → the element type it uses that the interpreter does not evaluate.
const KNOWN_UNSUPPORTED: &[(&str, &str)] =
    &[("float_formats", "element type F8E4M3FNUZ"), ("sub_byte", "element type S4")];

use hlo::eval::{Array, EvalOptions, Program};

#[test]
fn every_jax_fixture_compiles_and_runs() {
    let mut failures = Vec::new();
    for case in corpus::cases("fixtures") {
        let name = &case.name;
        let known =
            KNOWN_UNSUPPORTED.iter().find(|(f, _)| *f == name.as_str()).map(|(_, what)| *what);
        let path = case.file("jax.pb");
        let module =
            hlo::decode_module(&std::fs::read(&path).expect("fixture")).expect("fixture decodes");
        let program = match (Program::compile(&module, &EvalOptions::default()), known) {
            (Ok(_), Some(what)) => {
                failures
                    .push(format!("{name}: compiles, but is listed as using unsupported {what}"));
                continue;
            }
            (Ok(p), None) => p,
            (Err(e), Some(what)) if e.to_string().contains(&format!("unsupported {what}")) => {
                continue;
            }
            (Err(e), _) => {
                failures.push(format!("{name}: compile: {e}"));
                continue;
            }
        };
        let entry = module
            .computations
            .iter()
            .find(|c| c.id == module.entry_computation_id)
            .expect("entry");
        let mut params: Vec<_> =
            entry.instructions.iter().filter(|i| i.opcode == "parameter").collect();
        params.sort_by_key(|i| i.parameter_number);
        let args: Vec<Array> = params
            .iter()
            .map(|i| {
                let shape = i.shape.as_ref().expect("shape");
                let ty = hlo::proto::PrimitiveType::try_from(shape.element_type).expect("type");
                let size = hlo::dtype::ElementType::from_primitive(ty as i32)
                    .expect("evaluated type")
                    .item_size();
                let n: i64 = shape.dimensions.iter().product();
                Array { ty, dims: shape.dimensions.clone(), bytes: vec![0; n as usize * size] }
            })
            .collect();
        if let Err(e) = program.run(&args) {
            failures.push(format!("{}: run: {e}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
