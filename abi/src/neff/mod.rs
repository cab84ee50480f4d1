//! The NEFF container: read real NEFFs as libnrt does, and write small deterministic ones.
//!
//! A NEFF is a 1024-byte little-endian header followed by a payload: one gzip stream over a tar
//! (package version 2) or a plain tar (package version 1). The tar holds JSON metadata
//! (`neff.json`, `kelf-N.json`, per-subgraph `sgNN/def.json`), engine programs and `.npy`
//! constants. This module turns those bytes into a [`Neff`]: the header, every member, each
//! graph's variable table and the I/O signature (docs/abi-facts.md §5).
//!
//! Design choices:
//! - **Every gate maps to the status libnrt returns.** [`NeffError::status`] is total, so the
//!   simulator's `nrt_load` can return exactly what the real loader would: version and feature
//!   gates give `NRT_UNSUPPORTED_NEFF_VERSION`, everything malformed gives `NRT_INVALID`.
//! - **Bounded reading.** Decompression goes through a byte budget
//!   ([`ReadOptions::max_payload_bytes`], 1 GiB by default); each tar entry's declared size is
//!   charged against the budget before anything is allocated for it, so a gzip bomb or a lying
//!   tar header ends in [`NeffError::PayloadTooLarge`], not in an exhausted machine. Counts are
//!   capped too ([`ReadOptions::max_members`], [`ReadOptions::max_vars`], [`MAX_GRAPHS`]), so
//!   a file of many tiny entries cannot cost more bookkeeping than a real model needs.
//! - **Members are shared, not copied.** Each member is read once into its own buffer, held by an
//!   [`std::sync::Arc`]; handing a large constant to a simulator is a reference-count increment.
//! - **Lenient where real files vary, strict where the loader is.** Unknown members and unknown
//!   JSON keys are kept or ignored, never fatal. An unknown `def.json` variable type is an error
//!   naming it in the loader's mode ([`ReadOptions::strict_var_types`]) and is listed with
//!   `mr_type: None` otherwise, so `nrtsim inspect` can show a NEFF from a newer compiler. The
//!   loader invariants (dense var_ids per graph, at least one output in the NEFF) are always
//!   checked, because libnrt refuses to load a NEFF that breaks them.
//! - **One place for the type mapping.** `def.json` type ↔ [`MrType`] lives only in
//!   [`MrType::from_def_type`] and [`MrType::def_type`].
//! - **The simulator-target mark.** A NEFF from the simulator's compile target sets
//!   [`SIMULATOR_TARGET_FEATURE_BIT`], a bit every real version-2 loader refuses, and holds the
//!   [`SIMULATOR_TARGET_MEMBER`]. This reader accepts the bit only with the member, so the mark
//!   cannot be set by accident on a file our simulator would then run, and is refused exactly as
//!   a real loader refuses it otherwise (the check runs after the payload is read, because it
//!   needs the member list).
//! - **Deterministic writing.** [`write_neff`] gives the same bytes for the same [`NeffSpec`] on
//!   every machine: sorted members, PAX tar with owner `nobody` and mtime 0, gzip with a zero
//!   timestamp and a fixed level, a uuid derived from the name. It does not check the loader
//!   invariants, so tests can build NEFFs that break them on purpose.

mod archive;
mod header;
mod json;
mod mr_type;
pub mod npy;
mod signature;
mod vars;
mod writer;

use std::collections::BTreeMap;

use crate::status::NrtStatus;

pub use archive::{Member, write_payload};
pub use header::{
    FORBIDDEN_FEATURE_BITS_V2, HEADER_LEN, MAX_VERSION_MAJOR, NeffHeader,
    SIMULATOR_TARGET_FEATURE_BIT, assemble_neff,
};

/// The member that the simulator's compile target writes into every NEFF it makes (its command
/// line, target and version, as JSON). A NEFF with [`SIMULATOR_TARGET_FEATURE_BIT`] set must
/// hold it, or it is refused as a real loader refuses the bit.
pub const SIMULATOR_TARGET_MEMBER: &str = "sim/compile.json";
pub use mr_type::MrType;
pub use signature::{Signature, TensorSignature};
pub use vars::{Graph, MAX_GRAPHS, Var};
pub use writer::{COMPILED_NODE, ConstantSpec, GraphSpec, NeffSpec, SignatureForm, write_neff};

/// The default decompression budget: 1 GiB, larger than any single-model NEFF seen so far and
/// small enough that a hostile file cannot take the machine down.
pub const DEFAULT_MAX_PAYLOAD_BYTES: u64 = 1 << 30;

/// The default cap on a NEFF's tar members ([`ReadOptions::max_members`]). A compiled NEFF holds
/// a few JSON files per subgraph, its engine programs and one `.npy` per constant: tens to a few
/// thousand members. 65 536 is far above that, and each member costs a buffer and a map entry
/// (about a hundred bytes besides its data), so the cap keeps the bookkeeping of a file of tiny
/// members under ten megabytes.
pub const DEFAULT_MAX_MEMBERS: usize = 65_536;

/// The default cap on a NEFF's device variables, over all its graphs
/// ([`ReadOptions::max_vars`]). Real NEFFs have hundreds to a few thousand variables (one per
/// input, output, weight, state and constant, plus the scratch buffers; the NEFFs of large
/// language models with per-layer weights as inputs stay in the low thousands). 100 000 is
/// far above that; a parsed variable and its JSON tree cost about a kilobyte, so the cap keeps a
/// variable table under about 100 MB.
pub const DEFAULT_MAX_VARS: usize = 100_000;

/// How to read a NEFF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Check the payload hash (libnrt does so only when `NEURON_RT_VALIDATE_HASH` is set).
    pub verify_hash: bool,
    /// The most payload bytes to decompress (the sum of all tar entries, headers included).
    pub max_payload_bytes: u64,
    /// Refuse `def.json` variable types that have no [`MrType`] (the loader's mode); when false,
    /// such variables are kept with `mr_type: None`.
    pub strict_var_types: bool,
    /// The most tar members (regular files) to read ([`NeffError::TooManyMembers`]).
    pub max_members: usize,
    /// The most device variables over all graphs ([`NeffError::TooManyVars`]).
    pub max_vars: usize,
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            verify_hash: false,
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            strict_var_types: false,
            max_members: DEFAULT_MAX_MEMBERS,
            max_vars: DEFAULT_MAX_VARS,
        }
    }
}

impl ReadOptions {
    /// The options of libnrt's loader: unknown variable types are errors.
    pub fn loader() -> ReadOptions {
        ReadOptions { strict_var_types: true, ..ReadOptions::default() }
    }
}

/// Why a NEFF could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NeffError {
    /// The file is shorter than the fixed header.
    #[error("neff is {n_bytes} bytes, expected at least the {HEADER_LEN}-byte header")]
    TooShort {
        /// The file length.
        n_bytes: usize,
    },
    /// The packager version is neither 1 nor 2.
    #[error("unsupported neff package version {pkg_version}, expected 1 or 2")]
    UnsupportedPackageVersion {
        /// The value found.
        pkg_version: u64,
    },
    /// The format major version is newer than the loader knows.
    #[error("unsupported neff version_major {version_major}, expected at most {MAX_VERSION_MAJOR}")]
    UnsupportedVersionMajor {
        /// The value found.
        version_major: u64,
    },
    /// A feature bit the loader refuses is set.
    #[error(
        "neff feature_bits {feature_bits:#x} set forbidden bits {forbidden:#x} (mask {FORBIDDEN_FEATURE_BITS_V2:#x})"
    )]
    ForbiddenFeatureBits {
        /// All feature bits of the header.
        feature_bits: u64,
        /// The ones that are refused.
        forbidden: u64,
    },
    /// `header_size` does not leave room for a payload.
    #[error("neff header_size {header_size} must be smaller than the file length {n_bytes}")]
    HeaderSizeTooLarge {
        /// The header's value.
        header_size: u64,
        /// The file length.
        n_bytes: usize,
    },
    /// `header_size + data_size` runs past the end of the file.
    #[error(
        "neff payload of data_size {data_size} at offset {header_size} does not fit in the file of {n_bytes} bytes"
    )]
    DataSizeTooLarge {
        /// The header's size field.
        header_size: u64,
        /// The header's data size field.
        data_size: u64,
        /// The file length.
        n_bytes: usize,
    },
    /// The payload hash does not match the header.
    #[error("neff payload {algorithm} is {actual}, expected {expected} from the header")]
    HashMismatch {
        /// `md5` or `sha256`.
        algorithm: &'static str,
        /// The digest the header holds, in hex (MD5 words already swapped back).
        expected: String,
        /// The digest of the payload, in hex.
        actual: String,
    },
    /// The gzip stream or the tar inside it is corrupt or truncated.
    #[error("neff payload is not a valid {format}: {detail}")]
    CorruptPayload {
        /// `gzip tar` or `tar`.
        format: &'static str,
        /// What the decoder said.
        detail: String,
    },
    /// Decompression hit [`ReadOptions::max_payload_bytes`].
    #[error("neff payload exceeds the decompression limit of {limit} bytes")]
    PayloadTooLarge {
        /// The limit that was hit.
        limit: u64,
    },
    /// A member name is absolute, contains `..`, or is not UTF-8.
    #[error("neff member name {name:?} is unsafe, expected a relative path without `..`")]
    UnsafeMemberName {
        /// The name, lossily decoded.
        name: String,
    },
    /// Two members have the same name.
    #[error("neff member {name:?} appears twice, expected unique member names")]
    DuplicateMember {
        /// The repeated name.
        name: String,
    },
    /// A member that must be JSON is not.
    #[error("neff member {member:?} is not valid json: {detail}")]
    InvalidJson {
        /// The member name.
        member: String,
        /// What the JSON parser said.
        detail: String,
    },
    /// A JSON field is present but has the wrong shape.
    #[error("neff member {member:?}: field {field} is {found}, expected {expected}")]
    MalformedField {
        /// The member name.
        member: String,
        /// A path to the field, like `var.x.var_id`.
        field: String,
        /// What was expected.
        expected: String,
        /// What came, shortened.
        found: String,
    },
    /// A member named by another one is absent.
    #[error("neff member {member:?} named by {referenced_by:?} is missing")]
    MissingMember {
        /// The absent member.
        member: String,
        /// Who names it.
        referenced_by: String,
    },
    /// A `def.json` variable type has no [`MrType`] (strict mode only).
    #[error(
        "graph {graph:?}: variable {var:?} has unknown type {var_type:?}, expected one of {known}",
        known = MrType::known_def_types()
    )]
    UnknownVarType {
        /// The graph name.
        graph: String,
        /// The variable name.
        var: String,
        /// The type string found.
        var_type: String,
    },
    /// The var_ids of a graph are not exactly `0..count` (libnrt: "Unexpected var_ids set!").
    #[error(
        "graph {graph:?}: var_ids must be dense 0..{count}, missing {missing:?}, repeated {repeated:?}, out of range {out_of_range:?}"
    )]
    VarIdsNotDense {
        /// The graph name.
        graph: String,
        /// The number of variables.
        count: usize,
        /// Ids in `0..count` that no variable has.
        missing: Vec<u32>,
        /// Ids held by more than one variable.
        repeated: Vec<u32>,
        /// Ids at or above `count`.
        out_of_range: Vec<u32>,
    },
    /// The kelf files (or the `*/def.json` members) name more distinct graphs than the reader
    /// accepts.
    #[error("neff lists more than {limit} distinct graphs, expected at most {limit}")]
    TooManyGraphs {
        /// The limit, [`MAX_GRAPHS`].
        limit: usize,
    },
    /// The tar holds more regular files than [`ReadOptions::max_members`].
    #[error("neff has more than {limit} members, expected at most {limit} (the member limit)")]
    TooManyMembers {
        /// The limit that was hit.
        limit: usize,
    },
    /// The graphs' `def.json` files declare more variables than [`ReadOptions::max_vars`].
    #[error(
        "neff declares {count} variables by graph {graph:?}, expected at most {limit} (the variable limit)"
    )]
    TooManyVars {
        /// The graph whose table passed the limit.
        graph: String,
        /// The variables counted up to and including that graph.
        count: usize,
        /// The limit that was hit.
        limit: usize,
    },
    /// No graph has an output variable.
    #[error("neff has no output variable, expected at least one var of type \"output\"")]
    NoOutputs,
    /// A `.npy` array is malformed.
    #[error("npy {context}: {detail}")]
    Npy {
        /// Which array.
        context: String,
        /// What is wrong.
        detail: String,
    },
    /// The writer was given something it cannot encode.
    #[error("cannot write neff: {detail}")]
    InvalidSpec {
        /// What is wrong with the spec.
        detail: String,
    },
}

impl NeffError {
    /// The status libnrt returns for this error.
    pub fn status(&self) -> NrtStatus {
        match self {
            NeffError::UnsupportedPackageVersion { .. }
            | NeffError::UnsupportedVersionMajor { .. }
            | NeffError::ForbiddenFeatureBits { .. } => NrtStatus::UnsupportedNeffVersion,
            NeffError::TooShort { .. }
            | NeffError::HeaderSizeTooLarge { .. }
            | NeffError::DataSizeTooLarge { .. }
            | NeffError::HashMismatch { .. }
            | NeffError::CorruptPayload { .. }
            | NeffError::PayloadTooLarge { .. }
            | NeffError::UnsafeMemberName { .. }
            | NeffError::DuplicateMember { .. }
            | NeffError::InvalidJson { .. }
            | NeffError::MalformedField { .. }
            | NeffError::MissingMember { .. }
            | NeffError::UnknownVarType { .. }
            | NeffError::VarIdsNotDense { .. }
            | NeffError::TooManyGraphs { .. }
            | NeffError::TooManyMembers { .. }
            | NeffError::TooManyVars { .. }
            | NeffError::NoOutputs
            | NeffError::Npy { .. }
            | NeffError::InvalidSpec { .. } => NrtStatus::Invalid,
        }
    }
}

/// A parsed NEFF.
#[derive(Clone, Debug)]
pub struct Neff {
    /// The 1024-byte header.
    pub header: NeffHeader,
    /// Whether the payload hash matches the header (always computed; enforced only with
    /// [`ReadOptions::verify_hash`]).
    pub hash_ok: bool,
    /// Every regular file of the tar, by name (leading `./` stripped).
    pub members: BTreeMap<String, Member>,
    /// The graphs listed by the `kelf-N.json` members, each with its variable table.
    pub graphs: Vec<Graph>,
    /// The I/O signature from `neff.json`.
    pub signature: Signature,
}

impl Neff {
    /// Parses and validates a whole NEFF file.
    ///
    /// # Errors
    /// Every header gate, payload, metadata and loader-invariant failure of docs/abi-facts.md §5, as a
    /// [`NeffError`] whose [`NeffError::status`] is what libnrt returns.
    pub fn parse(bytes: &[u8], options: &ReadOptions) -> Result<Neff, NeffError> {
        let header = NeffHeader::parse(bytes)?;
        let payload = header.payload(bytes)?;
        let hash_check = header.check_hash(payload);
        let hash_ok = hash_check.is_ok();
        if options.verify_hash {
            hash_check?;
        }
        let members = archive::read_payload(
            header.pkg_version,
            payload,
            options.max_payload_bytes,
            options.max_members,
        )?;
        if header.is_simulator_target() && !members.contains_key(SIMULATOR_TARGET_MEMBER) {
            return Err(NeffError::ForbiddenFeatureBits {
                feature_bits: header.feature_bits,
                forbidden: SIMULATOR_TARGET_FEATURE_BIT,
            });
        }
        let graphs = vars::read_graphs(&members, options.strict_var_types, options.max_vars)?;
        vars::check_loader_invariants(&graphs)?;
        let signature = match members.get("neff.json") {
            Some(member) => signature::parse_neff_json("neff.json", member.bytes())?,
            None => Signature::default(),
        };
        Ok(Neff { header, hash_ok, members, graphs, signature })
    }

    /// The member holding a `file` variable's constant. `file_name` is looked up as a tar path
    /// first, then relative to the graph's directory (the folder of its `def.json`), because
    /// public sources do not say which of the two real files use.
    pub fn var_file(&self, graph: &Graph, var: &Var) -> Option<&Member> {
        let file_name = var.file_name.as_deref()?;
        let file_name = file_name.strip_prefix("./").unwrap_or(file_name);
        if let Some(member) = self.members.get(file_name) {
            return Some(member);
        }
        let dir = graph.definition.rsplit_once('/').map(|(dir, _)| dir)?;
        self.members.get(&format!("{dir}/{file_name}"))
    }
}
