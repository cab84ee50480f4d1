//! What the simulator loads: a model described in memory, independent of the NEFF parser.
//!
//! Design choices:
//! - **The loader works on a [`ModelDescription`]**, not on NEFF bytes: the variable table, the
//!   I/O signature, the constants and the optional device program. `nrt_load` parses the NEFF with
//!   `abi::neff` and converts it ([`crate::neff_load`]); tests can also build descriptions directly,
//!   which keeps the simulator testable without the container format.
//! - **[`SlotKind`] mirrors `kbin_mr_type`** one to one; the conversion from the parser's `MrType`
//!   is a single `match`. What each kind becomes at load lives in the runtime's loader.
//! - **Names are unique** within a description: the runtime binds by name, so a duplicate is an
//!   `NRT_INVALID` at load.

use std::sync::Arc;

use abi::dtype::{Dltype, n_bytes_with_item_size};

/// The kind of memory reference a variable becomes (`kbin_mr_type`, docs/abi-facts.md §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SlotKind {
    /// On-chip state buffer (MR_SB); the simulator stages it in device memory.
    Sb,
    /// A runtime-staged buffer (MR_BUFFER_STAGED).
    BufferStaged,
    /// A constant from the NEFF, staged at load (MR_BUFFER).
    Buffer,
    /// Scratch memory, staged at load (MR_TMP_BUF).
    TmpBuf,
    /// A model input, resolved at execute by name (MR_INPUT).
    Input,
    /// A model output, resolved at execute by name (MR_OUTPUT).
    Output,
    /// A pointer to another variable (MR_PTR); not addressable by the sim program.
    Ptr,
    /// A window in a shared scratchpad, staged at load (MR_VIRTUAL_TMP_BUF).
    VirtualTmpBuf,
    /// A list (MR_LIST); not addressable by the sim program.
    List,
    /// A table of variable addresses (MR_PTR_TABLE); not addressable by the sim program.
    PtrTable,
    /// Memory on another device (MR_REMOTE); not addressable by the sim program.
    Remote,
}

impl SlotKind {
    /// Whether the simulator gives the variable device memory the program can address.
    pub fn is_addressable(self) -> bool {
        !matches!(self, SlotKind::Ptr | SlotKind::List | SlotKind::PtrTable | SlotKind::Remote)
    }
}

/// One variable of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDescription {
    /// The variable name (the tensor-set key for inputs and outputs).
    pub name: String,
    /// The dense id.
    pub var_id: u32,
    /// What it becomes on the device.
    pub kind: SlotKind,
    /// Its size in bytes (0 when the NEFF does not say).
    pub size: u64,
    /// Its alignment in bytes, if the NEFF asks for one.
    pub alignment: Option<u64>,
    /// For [`SlotKind::VirtualTmpBuf`]: the offset in the shared scratchpad.
    pub backing_variable_off: Option<u64>,
    /// For [`SlotKind::Buffer`]: the constant's bytes.
    pub constant: Option<Arc<Vec<u8>>>,
}

impl VarDescription {
    /// A variable with no alignment, window or constant.
    pub fn new(name: &str, var_id: u32, kind: SlotKind, size: u64) -> VarDescription {
        VarDescription {
            name: name.to_owned(),
            var_id,
            kind,
            size,
            alignment: None,
            backing_variable_off: None,
            constant: None,
        }
    }
}

/// One entry of the I/O signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoDescription {
    /// The variable name.
    pub name: String,
    /// The element type, when the NEFF says and the string is known.
    pub dltype: Option<Dltype>,
    /// The shape (negative dimensions as written).
    pub shape: Vec<i64>,
}

impl IoDescription {
    /// Checks the shape the way tensor info reports it: every dimension non-negative and at
    /// most `u32::MAX` (`nrt_tensor_info_t` holds `uint32_t` dimensions), and the byte size,
    /// when the element type is known, a `u64` computed with `abi::dtype`'s checked arithmetic.
    /// Returns that byte size.
    ///
    /// # Errors
    /// An [`IoShapeError`] naming the variable and what is wrong with its shape.
    pub fn check(&self) -> Result<Option<u64>, IoShapeError> {
        let (name, shape) = (|| self.name.clone(), || self.shape.clone());
        if let Some((index, &dim)) =
            self.shape.iter().enumerate().find(|(_, dim)| u32::try_from(**dim).is_err())
        {
            return Err(IoShapeError::Dimension { name: name(), shape: shape(), index, dim });
        }
        match self.dltype {
            Some(dltype) => n_bytes_with_item_size(&self.shape, dltype.item_size(), None)
                .map(Some)
                .map_err(|source| IoShapeError::Size { name: name(), shape: shape(), source }),
            None => Ok(None),
        }
    }
}

/// Why a signature entry's shape cannot be a tensor's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IoShapeError {
    /// A dimension is negative or does not fit tensor info's `uint32_t`.
    #[error(
        "signature entry {name:?} has shape {shape:?}: dimension {index} is {dim}, expected a value in 0..={max}",
        max = u32::MAX
    )]
    Dimension {
        /// The variable.
        name: String,
        /// Its shape.
        shape: Vec<i64>,
        /// Which dimension.
        index: usize,
        /// Its value.
        dim: i64,
    },
    /// The byte size does not fit a `u64`.
    #[error("signature entry {name:?} has shape {shape:?}: {source}")]
    Size {
        /// The variable.
        name: String,
        /// Its shape.
        shape: Vec<i64>,
        /// What the size computation found.
        source: abi::dtype::DtypeError,
    },
}

/// A model as the simulator loads it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ModelDescription {
    /// The model's name (for messages).
    pub name: String,
    /// Every variable.
    pub vars: Vec<VarDescription>,
    /// Signature inputs, in declared order.
    pub inputs: Vec<IoDescription>,
    /// Signature outputs, in declared order.
    pub outputs: Vec<IoDescription>,
    /// The device program: an HLO module (encoded `HloModuleProto` or HLO text), if the NEFF
    /// carries one (see [`crate::device_program`]).
    pub hlo: Option<Vec<u8>>,
    /// Where [`ModelDescription::hlo`] came from, for messages (empty: the NEFF member).
    pub hlo_origin: String,
    /// How the device program's parameters and results find their variables.
    pub binding: crate::device_program::Binding,
}

impl ModelDescription {
    /// An empty description named `name`.
    pub fn new(name: &str) -> ModelDescription {
        ModelDescription { name: name.to_owned(), ..ModelDescription::default() }
    }

    fn next_var_id(&self) -> u32 {
        self.vars.len() as u32
    }

    fn typed_var(mut self, kind: SlotKind, name: &str, dltype: Dltype, shape: &[i64]) -> Self {
        // A shape without a byte size (a negative dimension, an overflowing product) gets size 0
        // here; loading the description refuses it ([`IoDescription::check`]).
        let size = n_bytes_with_item_size(shape, dltype.item_size(), None).unwrap_or(0);
        self.vars.push(VarDescription::new(name, self.next_var_id(), kind, size));
        let io =
            IoDescription { name: name.to_owned(), dltype: Some(dltype), shape: shape.to_vec() };
        match kind {
            SlotKind::Input => self.inputs.push(io),
            _ => self.outputs.push(io),
        }
        self
    }

    /// Adds an input variable and its signature entry; the size follows from type and shape.
    pub fn with_input(self, name: &str, dltype: Dltype, shape: &[i64]) -> Self {
        self.typed_var(SlotKind::Input, name, dltype, shape)
    }

    /// Adds an output variable and its signature entry; the size follows from type and shape.
    pub fn with_output(self, name: &str, dltype: Dltype, shape: &[i64]) -> Self {
        self.typed_var(SlotKind::Output, name, dltype, shape)
    }

    /// Adds a variable of any kind.
    pub fn with_var(mut self, var: VarDescription) -> Self {
        self.vars.push(var);
        self
    }

    /// Adds a constant ([`SlotKind::Buffer`]) holding `bytes`.
    pub fn with_constant(mut self, name: &str, bytes: Vec<u8>) -> Self {
        let mut var =
            VarDescription::new(name, self.next_var_id(), SlotKind::Buffer, bytes.len() as u64);
        var.constant = Some(Arc::new(bytes));
        self.vars.push(var);
        self
    }

    /// Sets the device program: an HLO module, binary or text.
    pub fn with_hlo(mut self, hlo: impl Into<Vec<u8>>) -> Self {
        self.hlo = Some(hlo.into());
        self
    }

    /// The signature entry of `name`.
    pub(crate) fn io(&self, name: &str) -> Option<&IoDescription> {
        self.inputs.iter().chain(&self.outputs).find(|io| io.name == name)
    }
}
