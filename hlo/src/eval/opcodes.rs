//! What the interpreter evaluates: the opcodes (the evaluated column of the crate's one opcode
//! table, `crate::opcodes`) and the custom-call targets.
//!
//! [`Program::compile`](super::Program::compile) refuses an opcode or target that is not listed
//! as unsupported before it looks for an evaluator, and the compile target's `list-operators`
//! prints these lists, so the two cannot disagree. Adding an evaluator means marking its opcode
//! evaluated there; a test checks that every listed opcode reaches an evaluator. `custom-call`
//! is not listed among the opcodes: whether a custom call runs depends on its target, and the
//! targets that run are [`EVALUATED_CUSTOM_CALLS`], checked the same way.

/// Every opcode [`Program::compile`](super::Program::compile) accepts, sorted: the evaluated
/// column of the crate's one opcode table, which the text parser reads too.
pub const EVALUATED_OPCODES: &[&str] = &crate::opcodes::EVALUATED;

/// Every `custom_call_target` [`Program::compile`](super::Program::compile) evaluates, sorted:
/// NKI kernels (`AwsNeuronCustomNativeKernel`, when nrtsim's NKI traced them), XLA CPU's `TopK`
/// and Neuron's `AwsNeuronTopK` (what nkipy's `topk` writes).
pub const EVALUATED_CUSTOM_CALLS: &[&str] =
    &["AwsNeuronCustomNativeKernel", "AwsNeuronTopK", "TopK"];

/// Whether [`EVALUATED_CUSTOM_CALLS`] lists `target`.
pub fn is_evaluated_custom_call(target: &str) -> bool {
    EVALUATED_CUSTOM_CALLS.binary_search(&target).is_ok()
}

/// Whether [`EVALUATED_OPCODES`] lists `opcode`.
pub fn is_evaluated(opcode: &str) -> bool {
    crate::opcodes::support(opcode) == Some(crate::opcodes::Support::Evaluated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{EvalError, EvalOptions, Program};
    use crate::proto::{
        HloComputationProto, HloInstructionProto, HloModuleProto, PrimitiveType, ShapeProto,
    };

    /// A module whose entry is one instruction of `opcode` without operands or attributes.
    fn lone(opcode: &str) -> HloModuleProto {
        lone_call(opcode, "")
    }

    /// As [`lone`], with a custom-call target.
    fn lone_call(opcode: &str, target: &str) -> HloModuleProto {
        let instruction = HloInstructionProto {
            name: "lone".to_owned(),
            opcode: opcode.to_owned(),
            custom_call_target: target.to_owned(),
            id: 1,
            shape: Some(ShapeProto {
                element_type: PrimitiveType::F32 as i32,
                ..ShapeProto::default()
            }),
            ..HloInstructionProto::default()
        };
        HloModuleProto {
            name: "m".to_owned(),
            entry_computation_name: "main".to_owned(),
            entry_computation_id: 1,
            computations: vec![HloComputationProto {
                name: "main".to_owned(),
                id: 1,
                root_id: 1,
                instructions: vec![instruction],
                ..HloComputationProto::default()
            }],
            ..HloModuleProto::default()
        }
    }

    fn unsupported_opcode(opcode: &str) -> bool {
        matches!(
            Program::compile(&lone(opcode), &EvalOptions::default()),
            Err(EvalError::Unsupported { what, .. }) if what == format!("opcode {opcode}")
        )
    }

    fn unsupported_custom_call(target: &str) -> bool {
        matches!(
            Program::compile(&lone_call("custom-call", target), &EvalOptions::default()),
            Err(EvalError::Unsupported { what, .. }) if what == format!("custom call {target}")
        )
    }

    #[test]
    fn the_table_is_sorted_and_free_of_duplicates() {
        assert!(EVALUATED_CUSTOM_CALLS.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn every_listed_custom_call_reaches_an_evaluator_and_no_other_does() {
        let missing: Vec<&str> = EVALUATED_CUSTOM_CALLS
            .iter()
            .copied()
            .filter(|target| unsupported_custom_call(target))
            .collect();
        assert_eq!(missing, Vec::<&str>::new());
        for target in ["Sharding", "AwsNeuronCustomCall", "topk", ""] {
            assert!(!is_evaluated_custom_call(target));
            assert!(unsupported_custom_call(target), "{target:?}");
        }
    }

    #[test]
    fn every_listed_opcode_reaches_an_evaluator() {
        // Without operands most evaluators refuse the instruction, but as invalid, not as an
        // unsupported opcode: that refusal comes only from the table or a missing evaluator.
        let missing: Vec<&str> =
            EVALUATED_OPCODES.iter().copied().filter(|opcode| unsupported_opcode(opcode)).collect();
        assert_eq!(missing, Vec::<&str>::new());
    }

    #[test]
    fn an_unlisted_opcode_is_unsupported() {
        for opcode in ["rng-bit-generator", "cholesky", "fft", "no-such-op"] {
            assert!(!is_evaluated(opcode));
            assert!(unsupported_opcode(opcode), "{opcode}");
        }
    }
}
