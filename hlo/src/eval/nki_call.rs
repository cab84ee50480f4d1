//! NKI kernels inside graphs: the custom call `AwsNeuronCustomNativeKernel` whose
//! `backend_config` is a program traced by nrtsim's NKI (`docs/nki-program.md`), run by the `nki`
//! crate when the instruction executes.
//!
//! The operands are the kernel's inputs in order (its tensor arguments, then any constants the
//! frontend added); the result is its outputs, one array or a tuple in order. Both are checked
//! against the program's tensors when the module is compiled, so a kernel traced for other
//! shapes is an error naming the operand, never a run over the wrong bytes. A configuration
//! AWS's NKI compiled (device code for a real NeuronCore) is not a program nrtsim can run: the
//! error says so.

use std::sync::Arc;

use super::error::Fail;
use super::op_context::OpContext;
use super::plan::NkiCall;
use super::plan::Op;
use super::shape::Shape;
use crate::dtype::ElementType;

/// The custom call target of NKI kernels in HLO.
pub(crate) const TARGET: &str = "AwsNeuronCustomNativeKernel";

/// Whether a custom call's `backend_config` is a program nrtsim's NKI traced (its `format`
/// field names the program format), rather than a configuration AWS's NKI compiled.
pub fn carries_nki_program(config: &[u8]) -> bool {
    const FORMAT: &[u8] = b"\"nrtsim-nki-program\"";
    config.windows(FORMAT.len()).any(|window| window == FORMAT)
}

/// The element type holding an NKI dtype in HLO, where one exists.
fn element_type(dtype: nki::Dtype) -> Option<ElementType> {
    use nki::Dtype as D;
    Some(match dtype {
        D::Float32 | D::Tfloat32 => ElementType::F32,
        D::Bfloat16 => ElementType::Bf16,
        D::Float16 => ElementType::F16,
        D::Float8E4m3 => ElementType::F8e4m3,
        D::Float8E5m2 => ElementType::F8e5m2,
        D::Int8 => ElementType::S8,
        D::Uint8 => ElementType::U8,
        D::Int16 => ElementType::S16,
        D::Uint16 => ElementType::U16,
        D::Int32 => ElementType::S32,
        D::Uint32 => ElementType::U32,
        D::Int64 => ElementType::S64,
        D::Uint64 => ElementType::U64,
        D::Bool => ElementType::Pred,
    })
}

fn describe(ty: ElementType, dims: &[usize]) -> String {
    format!("{}{dims:?}", ty.name())
}

/// Compiles the custom call: the program from `backend_config`, checked against the operands
/// and the result shape.
pub(crate) fn compile(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let config = &cx.ins.backend_config;
    let looks_like_ours =
        config.windows(b"nrtsim-nki-program".len()).any(|w| w == b"nrtsim-nki-program");
    if !looks_like_ours {
        return Err(Fail::Unsupported(format!(
            "custom call {TARGET} with a backend_config nrtsim's NKI did not trace ({} bytes): \
             a kernel compiled by AWS's NKI is device code; trace it with nrtsim's nki package",
            config.len()
        )));
    }
    let program = nki::Program::from_json(config)
        .map_err(|e| Fail::Invalid(format!("custom call {TARGET}: its NKI program: {e}")))?;
    let tensor_type = |id: usize| -> Result<(ElementType, Vec<usize>), Fail> {
        let tensor = &program.tensors[id];
        let ty = element_type(tensor.dtype).ok_or_else(|| {
            Fail::Unsupported(format!("NKI dtype {} in a graph", tensor.dtype.name()))
        })?;
        let dims = tensor
            .shape
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| Fail::Invalid(format!("dimension {d}"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((ty, dims))
    };
    if program.inputs.len() != cx.operands.len() {
        return Err(Fail::Invalid(format!(
            "custom call {TARGET}: the kernel `{}` takes {} inputs, the call has {} operands",
            program.kernel.name,
            program.inputs.len(),
            cx.operands.len()
        )));
    }
    for (k, (&id, operand)) in program.inputs.iter().zip(cx.operands).enumerate() {
        let (ty, dims) = tensor_type(id)?;
        let got = operand.array()?;
        if got.ty != ty || got.dims != dims {
            return Err(Fail::Invalid(format!(
                "custom call {TARGET}: operand {k} is {}, the kernel `{}` was traced for {} ({})",
                describe(got.ty, &got.dims),
                program.kernel.name,
                describe(ty, &dims),
                program.tensors[id].name
            )));
        }
    }
    let outputs =
        program.outputs.iter().map(|&id| tensor_type(id)).collect::<Result<Vec<_>, _>>()?;
    let results: Vec<(ElementType, Vec<usize>)> = match cx.shape {
        Shape::Array(a) => vec![(a.ty, a.dims.clone())],
        Shape::Tuple(items) => items
            .iter()
            .map(|s| s.array().map(|a| (a.ty, a.dims.clone())))
            .collect::<Result<_, _>>()?,
        Shape::Token => return Err(Fail::Invalid(format!("custom call {TARGET} returns a token"))),
    };
    if results != outputs {
        let show = |list: &[(ElementType, Vec<usize>)]| {
            list.iter().map(|(t, d)| describe(*t, d)).collect::<Vec<_>>().join(", ")
        };
        return Err(Fail::Invalid(format!(
            "custom call {TARGET}: the result is ({}), the kernel `{}` returns ({})",
            show(&results),
            program.kernel.name,
            show(&outputs)
        )));
    }
    Ok(Op::NkiKernel(Arc::new(NkiCall { program, outputs })))
}

/// Runs the kernel on the operands' bytes; returns each output's bytes.
pub(crate) fn run(call: &NkiCall, inputs: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, Fail> {
    let views: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let result = nki::run(&call.program, &views, &nki::RunOptions::default())
        .map_err(|e| Fail::Invalid(format!("NKI kernel `{}`: {e}", call.program.kernel.name)))?;
    Ok(result.outputs)
}
