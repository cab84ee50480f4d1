//! Every opcode of XLA's HLO that this crate knows, once: the text form's vocabulary and what the
//! interpreter evaluates are two columns of one table, so the parser and the interpreter cannot
//! disagree on an opcode's spelling.
//!
//! The spellings are XLA's (`HloOpcodeString`, what its text printer writes and its proto
//! carries), for example `opt-barrier` for what jax calls `optimization_barrier`.

/// What this crate does with an instruction of an opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Support {
    /// Parsed, printed and evaluated.
    Evaluated,
    /// Parsed and printed; the interpreter refuses it as unsupported.
    Parsed,
    /// `custom-call`: whether it is evaluated depends on its target
    /// ([`crate::eval::EVALUATED_CUSTOM_CALLS`]).
    ByTarget,
}

use Support::{ByTarget, Evaluated, Parsed};

/// Every opcode XLA's text form knows, sorted (for binary search), with what this crate does with
/// it.
const OPCODES: &[(&str, Support)] = &[
    ("abs", Evaluated),
    ("add", Evaluated),
    ("add-dependency", Evaluated),
    ("after-all", Evaluated),
    ("all-gather", Evaluated),
    ("all-gather-done", Parsed),
    ("all-gather-start", Parsed),
    ("all-reduce", Evaluated),
    ("all-reduce-done", Parsed),
    ("all-reduce-start", Parsed),
    ("all-to-all", Evaluated),
    ("and", Evaluated),
    ("async-done", Parsed),
    ("async-start", Parsed),
    ("async-update", Parsed),
    ("atan2", Evaluated),
    ("batch-norm-grad", Parsed),
    ("batch-norm-inference", Evaluated),
    ("batch-norm-training", Evaluated),
    ("bitcast", Evaluated),
    ("bitcast-convert", Evaluated),
    ("broadcast", Evaluated),
    ("call", Evaluated),
    ("cbrt", Evaluated),
    ("ceil", Evaluated),
    ("cholesky", Parsed),
    ("clamp", Evaluated),
    ("collective-broadcast", Parsed),
    ("collective-permute", Evaluated),
    ("collective-permute-done", Parsed),
    ("collective-permute-start", Parsed),
    ("compare", Evaluated),
    ("complex", Parsed),
    ("concatenate", Evaluated),
    ("conditional", Evaluated),
    ("constant", Evaluated),
    ("convert", Evaluated),
    ("convolution", Evaluated),
    ("copy", Evaluated),
    ("copy-done", Parsed),
    ("copy-start", Parsed),
    ("cosine", Evaluated),
    ("count-leading-zeros", Evaluated),
    ("custom-call", ByTarget),
    ("divide", Evaluated),
    ("domain", Parsed),
    ("dot", Evaluated),
    ("dynamic-reshape", Parsed),
    ("dynamic-slice", Evaluated),
    ("dynamic-update-slice", Evaluated),
    ("erf", Evaluated),
    ("exponential", Evaluated),
    ("exponential-minus-one", Evaluated),
    ("fft", Parsed),
    ("floor", Evaluated),
    ("fusion", Evaluated),
    ("gather", Evaluated),
    ("get-dimension-size", Parsed),
    ("get-tuple-element", Evaluated),
    ("imag", Parsed),
    ("infeed", Parsed),
    ("iota", Evaluated),
    ("is-finite", Evaluated),
    ("log", Evaluated),
    ("log-plus-one", Evaluated),
    ("logistic", Evaluated),
    ("map", Evaluated),
    ("maximum", Evaluated),
    ("minimum", Evaluated),
    ("multiply", Evaluated),
    ("negate", Evaluated),
    ("not", Evaluated),
    ("opt-barrier", Evaluated),
    ("or", Evaluated),
    ("outfeed", Parsed),
    ("pad", Evaluated),
    ("parameter", Evaluated),
    ("partition-id", Evaluated),
    ("popcnt", Evaluated),
    ("power", Evaluated),
    ("ragged-all-to-all", Parsed),
    ("ragged-dot", Parsed),
    ("real", Parsed),
    ("recv", Parsed),
    ("recv-done", Parsed),
    ("reduce", Evaluated),
    ("reduce-precision", Evaluated),
    ("reduce-scatter", Evaluated),
    ("reduce-window", Evaluated),
    ("remainder", Evaluated),
    ("replica-id", Evaluated),
    ("reshape", Evaluated),
    ("reverse", Evaluated),
    ("rng", Parsed),
    ("rng-bit-generator", Parsed),
    ("rng-get-and-update-state", Parsed),
    ("round-nearest-afz", Evaluated),
    ("round-nearest-even", Evaluated),
    ("rsqrt", Evaluated),
    ("scatter", Evaluated),
    ("select", Evaluated),
    ("select-and-scatter", Evaluated),
    ("send", Parsed),
    ("send-done", Parsed),
    ("set-dimension-size", Parsed),
    ("shift-left", Evaluated),
    ("shift-right-arithmetic", Evaluated),
    ("shift-right-logical", Evaluated),
    ("sign", Evaluated),
    ("sine", Evaluated),
    ("slice", Evaluated),
    ("sort", Evaluated),
    ("sqrt", Evaluated),
    ("stochastic-convert", Parsed),
    ("subtract", Evaluated),
    ("tan", Evaluated),
    ("tanh", Evaluated),
    ("topk", Evaluated),
    ("transpose", Evaluated),
    ("triangular-solve", Parsed),
    ("tuple", Evaluated),
    ("while", Evaluated),
    ("xor", Evaluated),
];

/// What this crate does with `opcode`, or `None` when XLA's text form does not know it (an
/// instruction with such an opcode is a parse error that names it: the attributes of an
/// instruction are read according to its opcode, so guessing at an unknown one could silently
/// mean the wrong thing).
pub(crate) fn support(opcode: &str) -> Option<Support> {
    OPCODES.binary_search_by(|(name, _)| (*name).cmp(opcode)).ok().map(|at| OPCODES[at].1)
}

/// How many opcodes are [`Support::Evaluated`].
const EVALUATED_COUNT: usize = {
    let mut count = 0;
    let mut i = 0;
    while i < OPCODES.len() {
        if matches!(OPCODES[i].1, Evaluated) {
            count += 1;
        }
        i += 1;
    }
    count
};

/// The [`Support::Evaluated`] opcodes, in the table's order, made when the crate compiles.
pub(crate) const EVALUATED: [&str; EVALUATED_COUNT] = {
    let mut out = [""; EVALUATED_COUNT];
    let (mut i, mut j) = (0, 0);
    while i < OPCODES.len() {
        if matches!(OPCODES[i].1, Evaluated) {
            out[j] = OPCODES[i].0;
            j += 1;
        }
        i += 1;
    }
    out
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_free_of_duplicates() {
        assert!(OPCODES.windows(2).all(|pair| pair[0].0 < pair[1].0));
    }

    #[test]
    fn the_evaluated_column_is_what_the_list_holds() {
        let evaluated: Vec<&str> =
            OPCODES.iter().filter(|(_, s)| *s == Evaluated).map(|(name, _)| *name).collect();
        assert_eq!(EVALUATED.as_slice(), evaluated.as_slice());
        assert_eq!(support("opt-barrier"), Some(Evaluated));
        assert_eq!(support("custom-call"), Some(ByTarget));
        assert_eq!(support("fft"), Some(Parsed));
        assert_eq!(support("optimization-barrier"), None, "jax's name, not XLA's opcode");
    }
}
