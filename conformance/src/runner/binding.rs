//! Binding-level steps: libtorchneuron's `Model` and `SpmdModel` through `bind`, and the
//! lossless metaneff edits.

use abi::metaneff::edit::{self, ConfigFlag};
use abi::status::NrtStatus;
use abi::trace::{Trace, format_bytes};
use bind::{BindError, HostTensor, LoadStatus, Model, ModelOptions, SpmdModel, ValidateKind};

use super::values::{check_tensor, hex, host_tensor, parse_hex};
use super::{Context, StepResult, expect_status, label};
use crate::spec::{
    ErrorKind, ExpectedError, LoadAction, LoadState, MetaneffBytesStep, MetaneffEditKind,
    MetaneffEditStep, ModelForwardStep, ModelLoadStatusStep, ModelLoadStep, ModelNewStep,
    ModelSetStep, Setter, SpmdForwardStep,
};
use crate::vector::{METANEFF_FILE, NEFF_FILE};

/// The kind of a binding error, as vectors name it. Exhaustive, so a new error of the layer
/// needs a kind here before the crate compiles.
fn error_kind(error: &BindError) -> ErrorKind {
    match error {
        BindError::Validate(validate) => match validate.kind {
            ValidateKind::Count => ErrorKind::Count,
            ValidateKind::Dtype => ErrorKind::Dtype,
            ValidateKind::Shape => ErrorKind::Shape,
            ValidateKind::ScalarDynamicBatch => ErrorKind::ScalarDynamicBatch,
            ValidateKind::Ordinal => ErrorKind::Ordinal,
        },
        BindError::Runtime { .. } => ErrorKind::Runtime,
        BindError::Metaneff(_) => ErrorKind::Metaneff,
        BindError::Dtype { .. } => ErrorKind::UnsupportedDtype,
        BindError::UnknownTensorType { .. } => ErrorKind::UnknownTensorType,
        BindError::AliasOutOfRange { .. } => ErrorKind::AliasOutOfRange,
        BindError::MissingCheckpointKey { .. } => ErrorKind::MissingCheckpointKey,
        BindError::MissingWeight { .. } => ErrorKind::MissingWeight,
        BindError::WeightMismatch { .. } => ErrorKind::WeightMismatch,
        BindError::DynamicFlagsLength { .. } => ErrorKind::DynamicFlagsLength,
        BindError::BatchMismatch { .. } => ErrorKind::BatchMismatch,
        BindError::CompiledBatchMismatch { .. } => ErrorKind::CompiledBatchMismatch,
        BindError::DeviceTensorNeedsSlicing { .. } => ErrorKind::DeviceTensorNeedsSlicing,
        BindError::HostTensor(_) => ErrorKind::HostTensor,
        BindError::InvalidRanks { .. } => ErrorKind::InvalidRanks,
        BindError::InvalidRank { .. } => ErrorKind::InvalidRank,
        BindError::InvalidPlacement { .. } => ErrorKind::InvalidPlacement,
        BindError::RankCount { .. } => ErrorKind::RankCount,
        // A rank's validate or runtime error is reported as such (the rank is in the message).
        BindError::Rank { source, .. } => match error_kind(source) {
            kind @ (ErrorKind::Count
            | ErrorKind::Dtype
            | ErrorKind::Shape
            | ErrorKind::ScalarDynamicBatch
            | ErrorKind::Ordinal
            | ErrorKind::Runtime) => kind,
            _ => ErrorKind::Rank,
        },
        BindError::ThreadPanicked { .. } => ErrorKind::ThreadPanicked,
        BindError::OutputTensor { .. } => ErrorKind::OutputTensor,
    }
}

/// Checks a binding-level result against `expect_error`, tracing the error either way.
fn check_bind<T>(
    trace: &Trace,
    result: Result<T, BindError>,
    expected: &Option<ExpectedError>,
) -> Result<Option<T>, String> {
    match (result, expected) {
        (Ok(value), None) => Ok(Some(value)),
        (Ok(_), Some(want)) => Err(format!("expected error kind {}, got success", want.kind)),
        (Err(error), want) => {
            let kind = error_kind(&error);
            let status = error.as_runtime().map(|(_, e)| e.status.name());
            trace.record(format!(
                "error {kind}{}",
                status.as_ref().map(|s| format!(" {s}")).unwrap_or_default()
            ));
            let Some(want) = want else {
                return Err(format!("unexpected error: {error}"));
            };
            if kind != want.kind {
                return Err(format!("expected error kind {}, got {kind}: {error}", want.kind));
            }
            if let Some(message) = &want.message {
                let got = error
                    .as_validate()
                    .map(|v| v.message.to_owned())
                    .or_else(|| error.as_runtime().map(|(m, _)| m.to_owned()));
                if got.as_deref() != Some(message.as_str()) {
                    return Err(format!("expected message {message:?}, got {got:?} ({error})"));
                }
            }
            if let Some(part) = &want.message_contains {
                let rendered = error.to_string();
                if !rendered.contains(part.as_str()) {
                    return Err(format!(
                        "expected the error to contain {part:?}, got {rendered:?}"
                    ));
                }
            }
            if want.status.is_some() {
                expect_status(
                    error.as_runtime().map_or(NrtStatus::Success, |(_, e)| e.status),
                    &want.status,
                )?;
            }
            Ok(None)
        }
    }
}

impl Context<'_> {
    /// The `model_new` step.
    pub(super) fn model_new(&mut self, step: &ModelNewStep) -> StepResult {
        let ModelNewStep { label: as_name, neff, metaneff, weights, expect_error } = step;
        let neff = self.file(neff, NEFF_FILE)?;
        let metaneff = self.file(metaneff, METANEFF_FILE)?;
        let mut options =
            ModelOptions { trace: Some(self.trace.clone()), ..ModelOptions::default() };
        for (key, value) in weights {
            options.weights.insert(key.as_bytes().to_vec(), host_tensor(value)?);
        }
        let result = Model::new(self.raw.clone(), &neff, &metaneff, options);
        if let Some(model) = check_bind(&self.trace, result, expect_error)? {
            self.bind_models.insert(as_name.clone(), model);
        }
        Ok(())
    }

    /// The `model_load` step.
    pub(super) fn model_load(&mut self, step: &ModelLoadStep) -> StepResult {
        let ModelLoadStep { model, action, expect_error } = step;
        let trace = self.trace.clone();
        let model = self.model(model)?;
        let result = match action.unwrap_or(LoadAction::Load) {
            LoadAction::Load => model.load(),
            LoadAction::BlockingLoad => model.blocking_load(),
            LoadAction::Unload => model.unload(),
        };
        check_bind(&trace, result, expect_error).map(|_| ())
    }

    /// The `model_set` step.
    pub(super) fn model_set(&mut self, step: &ModelSetStep) -> StepResult {
        let ModelSetStep { model, setter, value, inputs, outputs, expect_error } = step;
        let trace = self.trace.clone();
        let model = self.model(model)?;
        let flag = || value.ok_or_else(|| format!("{setter} needs `value`"));
        let result = match setter {
            Setter::SetAsyncLoad => model.set_async_load(flag()?),
            Setter::SetLazyLoad => model.set_lazy_load(flag()?),
            Setter::SetDynamicBatching => model.set_dynamic_batching(flag()?),
            Setter::SetDynamicBatchingMixed => model.set_dynamic_batching_mixed(
                inputs.as_deref().unwrap_or_default(),
                outputs.as_deref().unwrap_or_default(),
            ),
        };
        check_bind(&trace, result, expect_error)?;
        trace.record(format!("metaneff after {setter} {}", format_bytes(model.metaneff())));
        Ok(())
    }

    /// The `model_forward` step.
    pub(super) fn model_forward(&mut self, step: &ModelForwardStep) -> StepResult {
        let ModelForwardStep {
            model,
            inputs,
            reuse,
            label: as_name,
            expect_outputs,
            expect_status: want_status,
            expect_error,
            expect_shared,
        } = step;
        let mut tensors = Vec::with_capacity(inputs.len());
        for value in inputs {
            tensors.push(match &value.device {
                Some(tensor) => HostTensor::on_device(
                    value.dtype.0,
                    &value.shape,
                    label(&self.tensors, tensor, "tensor")?,
                )
                .map_err(|e| e.to_string())?,
                None => host_tensor(value)?,
            });
        }
        for (index, source) in reuse {
            let index: usize =
                index.parse().map_err(|_| format!("reuse key {index:?} is not an input index"))?;
            let tensor =
                self.outputs.get(source).ok_or_else(|| format!("no output labelled {source:?}"))?;
            if index > tensors.len() {
                return Err(format!("reuse index {index} past the {} inputs", tensors.len()));
            }
            tensors.insert(index, tensor.clone());
        }
        let result = self.model(model)?.forward(&tensors);
        let Some(forward) = check_bind(&self.trace, result, expect_error)? else {
            return Ok(());
        };
        expect_status(forward.status, want_status)?;
        for (index, output) in forward.outputs.iter().enumerate() {
            self.trace.record(format!(
                "output {index} {} {:?} {}",
                output.scalar_type().name(),
                output.shape(),
                format_bytes(&output.to_bytes())
            ));
            if let Some(as_name) = as_name {
                self.outputs.insert(format!("{as_name}.{index}"), output.clone());
            }
        }
        if let Some(want) = expect_outputs {
            if want.len() != forward.outputs.len() {
                return Err(format!("{} outputs, expected {}", forward.outputs.len(), want.len()));
            }
            for (index, (got, want)) in forward.outputs.iter().zip(want).enumerate() {
                check_tensor(&format!("output {index}"), got, want)?;
            }
        }
        for (output, &input) in expect_shared {
            let output_index: usize = output
                .parse()
                .map_err(|_| format!("expect_shared key {output:?} is not an output index"))?;
            let got = forward
                .outputs
                .get(output_index)
                .ok_or_else(|| format!("no output {output_index}"))?;
            let source = tensors.get(input).ok_or_else(|| format!("no input {input}"))?;
            if !got.shares_storage_with(source) {
                return Err(format!(
                    "output {output_index} does not share storage with input {input}"
                ));
            }
        }
        Ok(())
    }

    /// The `model_load_status` step.
    pub(super) fn model_load_status(&mut self, step: &ModelLoadStatusStep) -> StepResult {
        let ModelLoadStatusStep { model, expect } = step;
        let got = match self.model(model)?.load_status() {
            LoadStatus::Unloaded => LoadState::Unloaded,
            LoadStatus::Loading => LoadState::Loading,
            LoadStatus::Loaded => LoadState::Loaded,
        };
        self.trace.record(format!("model {model} {got}"));
        if got == *expect { Ok(()) } else { Err(format!("model is {got}, expected {expect}")) }
    }

    /// The `spmd_forward` step.
    pub(super) fn spmd_forward(&mut self, step: &SpmdForwardStep) -> StepResult {
        let SpmdForwardStep { local_ranks, world_size, inputs, expect_outputs, expect_error } =
            step;
        let neff = self.file(&None, NEFF_FILE)?;
        let metaneff = self.file(&None, METANEFF_FILE)?;
        let options = ModelOptions { trace: Some(self.trace.clone()), ..ModelOptions::default() };
        // `expect_error` may be met by the construction or by the forward.
        let mut spmd = match SpmdModel::new(
            self.raw.clone(),
            &neff,
            &metaneff,
            *local_ranks,
            *world_size,
            options,
        ) {
            Ok(spmd) => spmd,
            Err(error) => {
                return check_bind::<()>(&self.trace, Err(error), expect_error).map(|_| ());
            }
        };
        let per_rank = inputs
            .iter()
            .map(|rank| rank.iter().map(host_tensor).collect::<Result<Vec<_>, _>>())
            .collect::<Result<Vec<_>, _>>()?;
        let Some(outputs) = check_bind(&self.trace, spmd.forward_ranked(&per_rank), expect_error)?
        else {
            return Ok(());
        };
        if let Some(want) = expect_outputs {
            for (rank, (got, want)) in outputs.iter().zip(want).enumerate() {
                for (index, (got, want)) in got.outputs.iter().zip(want).enumerate() {
                    check_tensor(&format!("rank {rank} output {index}"), got, want)?;
                }
            }
        }
        Ok(())
    }

    /// The `metaneff_edit` step.
    pub(super) fn metaneff_edit(&mut self, step: &MetaneffEditStep) -> StepResult {
        let MetaneffEditStep { edit: which, input_hex, value, expect_hex } = step;
        let bytes = match input_hex {
            Some(text) => parse_hex(text)?,
            None => self.file(&None, METANEFF_FILE)?,
        };
        let edited = match which {
            MetaneffEditKind::SetAsyncLoad => {
                edit::set_config_flag(&bytes, ConfigFlag::AsyncLoad, *value)
            }
            MetaneffEditKind::SetLazyLoad => {
                edit::set_config_flag(&bytes, ConfigFlag::LazyLoad, *value)
            }
            MetaneffEditKind::SetReturnAliases => {
                edit::set_config_flag(&bytes, ConfigFlag::ReturnAliases, *value)
            }
            MetaneffEditKind::SetDynamicBatching => {
                edit::set_allow_dynamic_batch_size(&bytes, |_, _| Some(*value))
            }
        }
        .map_err(|e| e.to_string())?;
        self.trace.record(format!("metaneff {which} {value} -> {}", format_bytes(&edited)));
        let want = parse_hex(expect_hex)?;
        if edited == want {
            Ok(())
        } else {
            Err(format!("edit gave {}, expected {}", hex(&edited), hex(&want)))
        }
    }

    /// The `metaneff_bytes` step.
    pub(super) fn metaneff_bytes(&mut self, step: &MetaneffBytesStep) -> StepResult {
        let MetaneffBytesStep { expect_hex } = step;
        let bytes = self.file(&None, METANEFF_FILE)?;
        self.trace.record(format!("metaneff {}", format_bytes(&bytes)));
        let want = parse_hex(expect_hex)?;
        if bytes == want {
            Ok(())
        } else {
            Err(format!("metaneff.pb is {}, expected {}", hex(&bytes), hex(&want)))
        }
    }
}
