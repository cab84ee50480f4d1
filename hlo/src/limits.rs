//! The count limits a module is loaded under, which the binary reader and the text parser
//! both enforce: a leaf, so that neither form's reader depends on the other.

/// The default cap on a module's computations. A computation is the entry, or a callee: a
/// fusion, a reducer, a loop body. Large compiled models have a few thousand; 100 000 is far
/// above that.
pub const DEFAULT_MAX_COMPUTATIONS: usize = 100_000;

/// The default cap on a module's instructions over all its computations. The HLO of a large
/// transformer's training step has tens to a few hundred thousand; 500 000 is above that. The
/// cap is the bound on memory: a decoded instruction costs 880 bytes whatever its size on the
/// wire (the prost message holds its small optional sub-messages inline and boxes the large
/// ones, so even an empty one, two bytes on the wire, is that large), and a parsed text
/// instruction about 1.7 KB with its text. At the cap a binary module costs about 0.45 GB
/// (`docs/limits.md`); a caller that needs less passes its own [`LoadLimits`].
pub const DEFAULT_MAX_INSTRUCTIONS: usize = 500_000;

/// The count limits a module is loaded under ([`crate::load_module_with_limits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadLimits {
    /// The most computations.
    pub max_computations: usize,
    /// The most instructions, over all computations.
    pub max_instructions: usize,
}

impl Default for LoadLimits {
    fn default() -> LoadLimits {
        LoadLimits {
            max_computations: DEFAULT_MAX_COMPUTATIONS,
            max_instructions: DEFAULT_MAX_INSTRUCTIONS,
        }
    }
}
