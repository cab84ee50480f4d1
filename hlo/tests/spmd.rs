//! Collectives across ranks: values worked out by hand for 2 and 4 ranks, one rank failing
//! making the whole launch fail (and not hang), and one rank being the identity.

use hlo::eval::{Array, EvalError, EvalOptions, Value, evaluate, evaluate_spmd};

fn module(body: &str) -> hlo::proto::HloModuleProto {
    let text = format!(
        "HloModule m\n\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}}\n\nENTRY main {{\n{body}\n}}\n"
    );
    hlo::text::parse_module(&text).expect("module parses")
}

fn values(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.to_f64().expect("values"),
        Value::Tuple(_) => panic!("expected an array"),
    }
}

fn ranks(inputs: &[&[f32]]) -> Vec<Vec<Array>> {
    inputs.iter().map(|v| vec![Array::from_f32(&[v.len() as i64], v)]).collect()
}

#[test]
fn all_reduce_sums_over_every_rank() {
    let m = module(
        "  x = f32[2] parameter(0)\n  ROOT r = f32[2] all-reduce(x), replica_groups={}, to_apply=add",
    );
    let out = evaluate_spmd(
        &m,
        &ranks(&[&[1.0, 2.0], &[10.0, 20.0], &[100.0, 200.0]]),
        &EvalOptions::default(),
    )
    .expect("runs");
    for v in &out {
        assert_eq!(values(v), vec![111.0, 222.0]);
    }
}

#[test]
fn all_reduce_respects_replica_groups() {
    let m = module(
        "  x = f32[1] parameter(0)\n  ROOT r = f32[1] all-reduce(x), replica_groups={{0,2},{1,3}}, to_apply=add",
    );
    let out = evaluate_spmd(&m, &ranks(&[&[1.0], &[2.0], &[4.0], &[8.0]]), &EvalOptions::default())
        .expect("runs");
    let got: Vec<Vec<f64>> = out.iter().map(values).collect();
    assert_eq!(got, vec![vec![5.0], vec![10.0], vec![5.0], vec![10.0]]);
}

#[test]
fn all_gather_and_reduce_scatter() {
    let gather = module(
        "  x = f32[2] parameter(0)\n  ROOT g = f32[4] all-gather(x), dimensions={0}, replica_groups={}",
    );
    let out = evaluate_spmd(&gather, &ranks(&[&[1.0, 2.0], &[3.0, 4.0]]), &EvalOptions::default())
        .expect("runs");
    assert_eq!(values(&out[1]), vec![1.0, 2.0, 3.0, 4.0]);
    let scatter = module(
        "  x = f32[4] parameter(0)\n  ROOT s = f32[2] reduce-scatter(x), dimensions={0}, replica_groups={}, to_apply=add",
    );
    let out = evaluate_spmd(
        &scatter,
        &ranks(&[&[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 30.0, 40.0]]),
        &EvalOptions::default(),
    )
    .expect("runs");
    // Sum [11,22,33,44]; rank 0 keeps the first half, rank 1 the second.
    assert_eq!(values(&out[0]), vec![11.0, 22.0]);
    assert_eq!(values(&out[1]), vec![33.0, 44.0]);
}

#[test]
fn all_to_all_and_collective_permute() {
    let a2a = module(
        "  x = f32[2] parameter(0)\n  ROOT a = f32[2] all-to-all(x), dimensions={0}, replica_groups={}",
    );
    let out = evaluate_spmd(&a2a, &ranks(&[&[1.0, 2.0], &[3.0, 4.0]]), &EvalOptions::default())
        .expect("runs");
    // Rank r receives chunk r of every rank, in rank order.
    assert_eq!(values(&out[0]), vec![1.0, 3.0]);
    assert_eq!(values(&out[1]), vec![2.0, 4.0]);
    let permute = module(
        "  x = f32[1] parameter(0)\n  ROOT p = f32[1] collective-permute(x), source_target_pairs={{0,1},{1,2}}",
    );
    let out = evaluate_spmd(&permute, &ranks(&[&[1.0], &[2.0], &[3.0]]), &EvalOptions::default())
        .expect("runs");
    // Rank 0 is no pair's target and receives zeros.
    let got: Vec<Vec<f64>> = out.iter().map(values).collect();
    assert_eq!(got, vec![vec![0.0], vec![1.0], vec![2.0]]);
}

#[test]
fn a_failing_rank_fails_the_launch_without_hanging() {
    // Rank 1 gets an argument of the wrong shape and fails before the all-reduce; rank 0 waits in
    // the exchange and must be released with an error.
    let m = module(
        "  x = f32[2] parameter(0)\n  ROOT r = f32[2] all-reduce(x), replica_groups={}, to_apply=add",
    );
    let args = vec![
        vec![Array::from_f32(&[2], &[1.0, 2.0])],
        vec![Array::from_f32(&[3], &[1.0, 2.0, 3.0])],
    ];
    match evaluate_spmd(&m, &args, &EvalOptions::default()) {
        Err(EvalError::Rank { rank, source }) => {
            assert_eq!(rank, 1);
            assert!(matches!(*source, EvalError::Argument { index: 0, .. }), "{source}");
        }
        other => panic!("expected a rank error, got {other:?}"),
    }
}

#[test]
fn one_rank_collectives_are_the_identity() {
    let m = module(
        "  x = f32[2] parameter(0)\n  ROOT r = f32[2] all-reduce(x), replica_groups={}, to_apply=add",
    );
    let out =
        evaluate(&m, &[Array::from_f32(&[2], &[3.0, 4.0])], &EvalOptions::default()).expect("runs");
    assert_eq!(values(&out), vec![3.0, 4.0]);
}

#[test]
fn a_compiled_program_can_be_shared_between_threads() {
    // The simulator compiles once at load and runs per launch, possibly from several threads.
    fn shareable<T: Send + Sync>(_: &T) {}
    let m = module("  x = f32[1] parameter(0)\n  ROOT n = f32[1] negate(x)");
    let program = hlo::eval::Program::compile(&m, &EvalOptions::default()).expect("compiles");
    shareable(&program);
    let out = std::thread::scope(|s| {
        let handle = s.spawn(|| program.run(&[Array::from_f32(&[1], &[2.0])]));
        handle.join().expect("thread")
    })
    .expect("runs");
    assert_eq!(values(&out), vec![-2.0]);
}
