//! Malformed modules never panic: every case module is mutated thousands of times (shapes,
//! operands, attributes, literals, called computations) and evaluated on zero arguments built
//! from its parameters. Each evaluation must return, with a value or a typed error.
//!
//! The mutations are deterministic (a fixed LCG per case), so a failure names a reproducible
//! case and seed.

mod corpus;

use hlo::eval::{Array, EvalOptions, evaluate};
use hlo::proto::{self, HloModuleProto, PrimitiveType};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    /// A small signed value in -1..=max.
    fn small(&mut self, max: i64) -> i64 {
        self.below((max + 2) as u64) as i64 - 1
    }
    fn list(&mut self, max: i64) -> Vec<i64> {
        (0..self.below(4)).map(|_| self.small(max)).collect()
    }
}

fn mutate(module: &mut HloModuleProto, rng: &mut Rng) {
    let n_comps = module.computations.len() as u64;
    let comp_ids: Vec<i64> = module.computations.iter().map(|c| c.id).collect();
    let c = rng.below(n_comps) as usize;
    let computation = &mut module.computations[c];
    let ids: Vec<i64> = computation.instructions.iter().map(|i| i.id).collect();
    let n = computation.instructions.len() as u64;
    if n == 0 {
        return;
    }
    let ins = &mut computation.instructions[rng.below(n) as usize];
    match rng.below(18) {
        0 => {
            if let Some(shape) = ins.shape.as_mut() {
                if shape.dimensions.is_empty() || rng.below(4) == 0 {
                    shape.dimensions.push(rng.small(4));
                } else {
                    let k = rng.below(shape.dimensions.len() as u64) as usize;
                    shape.dimensions[k] = rng.small(5);
                }
            }
        }
        1 => {
            if !ins.operand_ids.is_empty() {
                let k = rng.below(ins.operand_ids.len() as u64) as usize;
                ins.operand_ids[k] = if rng.below(5) == 0 {
                    rng.small(1000)
                } else {
                    ids[rng.below(ids.len() as u64) as usize]
                };
            } else {
                ins.operand_ids.push(ids[rng.below(ids.len() as u64) as usize]);
            }
        }
        2 => ins.dimensions = rng.list(4),
        3 => ins.tuple_index = rng.small(4),
        4 => {
            for s in &mut ins.slice_dimensions {
                s.start = rng.small(5);
                s.limit = rng.small(6);
                s.stride = rng.small(3);
            }
        }
        5 => {
            if let Some(w) = ins.window.as_mut() {
                for d in &mut w.dimensions {
                    d.size = rng.small(4);
                    d.stride = rng.small(3);
                    d.padding_low = rng.small(3) - 1;
                    d.padding_high = rng.small(3) - 1;
                    d.base_dilation = rng.small(3);
                    d.window_dilation = rng.small(3);
                }
            }
        }
        6 => {
            if let Some(shape) = ins.shape.as_mut() {
                shape.element_type = rng.small(35) as i32;
            }
        }
        7 => {
            if let Some(l) = ins.literal.as_mut() {
                l.f32s.pop();
                l.s32s.push(1);
                l.preds.clear();
                l.bf16s.push(0);
            }
        }
        8 => {
            let d = ins.dot_dimension_numbers.get_or_insert_with(Default::default);
            d.lhs_contracting_dimensions = rng.list(3);
            d.rhs_contracting_dimensions = rng.list(3);
            d.lhs_batch_dimensions = rng.list(3);
            d.rhs_batch_dimensions = rng.list(3);
        }
        9 => {
            if let Some(g) = ins.gather_dimension_numbers.as_mut() {
                g.offset_dims = rng.list(3);
                g.collapsed_slice_dims = rng.list(3);
                g.start_index_map = rng.list(3);
                g.index_vector_dim = rng.small(3);
                g.operand_batching_dims = rng.list(2);
                g.start_indices_batching_dims = rng.list(2);
            }
            ins.gather_slice_sizes = rng.list(4);
            if let Some(s) = ins.scatter_dimension_numbers.as_mut() {
                s.update_window_dims = rng.list(3);
                s.inserted_window_dims = rng.list(3);
                s.scatter_dims_to_operand_dims = rng.list(3);
                s.index_vector_dim = rng.small(3);
            }
        }
        10 => {
            if let Some(p) = ins.padding_config.as_mut() {
                for d in &mut p.dimensions {
                    d.edge_padding_low = rng.small(4) - 2;
                    d.edge_padding_high = rng.small(4) - 2;
                    d.interior_padding = rng.small(2);
                }
            }
        }
        11 => {
            if !ins.called_computation_ids.is_empty() {
                let k = rng.below(ins.called_computation_ids.len() as u64) as usize;
                ins.called_computation_ids[k] = comp_ids[rng.below(comp_ids.len() as u64) as usize];
            }
        }
        12 => ins.parameter_number = rng.small(3),
        13 => ins.dynamic_slice_sizes = rng.list(5),
        14 => {
            ins.feature_group_count = rng.small(3);
            ins.batch_group_count = rng.small(3);
        }
        15 => ins.comparison_direction = ["LT", "XX", "", "ge"][rng.below(4) as usize].into(),
        16 => ins.k = rng.small(5),
        _ => {
            ins.exponent_bits = rng.small(40) as i32;
            ins.mantissa_bits = rng.small(40) as i32;
        }
    }
}

/// Zero arguments for the entry computation's parameters (or none when they cannot be built).
fn zero_args(module: &HloModuleProto) -> Vec<Array> {
    let Some(entry) = module.computations.iter().find(|c| c.id == module.entry_computation_id)
    else {
        return Vec::new();
    };
    let mut params: Vec<(i64, Array)> = Vec::new();
    for ins in entry.instructions.iter().filter(|i| i.opcode == "parameter") {
        let Some(shape) = &ins.shape else { continue };
        let Ok(ty) = PrimitiveType::try_from(shape.element_type) else { continue };
        let Some(et) = hlo::dtype::ElementType::from_primitive(ty as i32) else { continue };
        let n = shape
            .dimensions
            .iter()
            .try_fold(1i64, |n, &d| if d < 0 { None } else { n.checked_mul(d) });
        let Some(n) = n.filter(|&n| n <= 1 << 16) else { continue };
        let bytes = vec![0u8; n as usize * et.item_size()];
        params.push((ins.parameter_number, Array { ty, dims: shape.dimensions.clone(), bytes }));
    }
    params.sort_by_key(|(n, _)| *n);
    params.into_iter().map(|(_, a)| a).collect()
}

#[test]
fn mutated_case_modules_never_panic() {
    let paths: Vec<_> = corpus::cases("cases").iter().map(|case| case.file("module.hlo")).collect();
    let options = EvalOptions {
        budget_bytes: 1 << 20,
        max_while_iterations: Some(1000),
        ..EvalOptions::default()
    };
    let mut evaluated = 0;
    let mut failed = 0;
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("case text");
        let original = hlo::text::parse_module(&text).expect("case parses");
        for seed in 0..1000u64 {
            let mut rng =
                Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ path.as_os_str().len() as u64);
            let mut module = original.clone();
            for _ in 0..=rng.below(3) {
                mutate(&mut module, &mut rng);
            }
            let args = zero_args(&module);
            if std::env::var_os("HLO_ROBUSTNESS_TIMES").is_some() {
                eprintln!("start {} seed {seed}", path.display());
            }
            let started = std::time::Instant::now();
            let outcome = std::panic::catch_unwind(|| evaluate(&module, &args, &options));
            if std::env::var_os("HLO_ROBUSTNESS_TIMES").is_some()
                && started.elapsed().as_millis() > 200
            {
                eprintln!("{} seed {seed}: {:?}", path.display(), started.elapsed());
            }
            match outcome {
                Ok(result) => {
                    evaluated += 1;
                    if result.is_err() {
                        failed += 1;
                    }
                }
                Err(_) => panic!("{} seed {seed}: evaluate panicked", path.display()),
            }
        }
    }
    eprintln!("{evaluated} mutated modules evaluated, {failed} refused with a typed error");
    // The mutations must reach the checks: most mutated modules are refused, some still run.
    assert!(failed > evaluated / 4, "only {failed} of {evaluated} mutated modules were refused");
    assert!(failed < evaluated, "every mutated module was refused");
    let _ = proto::HloModuleProto::default();
}
