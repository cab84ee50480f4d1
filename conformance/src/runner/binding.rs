//! Binding-level steps: libtorchneuron's `Model` and `SpmdModel` through `abi::bind`, and the
//! lossless metaneff edits.

use abi::bind::{BindError, HostTensor, LoadStatus, Model, ModelOptions, SpmdModel};
use abi::metaneff::edit::{self, ConfigFlag};
use abi::status::NrtStatus;
use abi::trace::{Trace, format_bytes};

use super::values::{check_tensor, hex, host_tensor, parse_hex, scalar_type};
use super::{Context, StepResult, expect_status, label, variant_snake_name};
use crate::spec::{
    ExpectedError, MetaneffBytesStep, MetaneffEditStep, ModelForwardStep, ModelLoadStatusStep,
    ModelLoadStep, ModelNewStep, ModelSetStep, SpmdForwardStep,
};
use crate::vector::{METANEFF_FILE, NEFF_FILE};

/// The kind of a binding error, as vectors name it.
fn error_kind(error: &BindError) -> String {
    if let Some(validate) = error.as_validate() {
        return validate.kind.name().to_owned();
    }
    if error.as_runtime().is_some() {
        return "runtime".to_owned();
    }
    match variant_snake_name(&format!("{error:?}")).as_str() {
        // Not to be confused with the validate check of the same name.
        "dtype" => "unsupported_dtype".to_owned(),
        other => other.to_owned(),
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
            if let Some(status) = &want.status {
                expect_status(
                    error.as_runtime().map_or(NrtStatus::Success, |(_, e)| e.status),
                    &Some(status.clone()),
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
        let result = match action.as_deref().unwrap_or("load") {
            "load" => model.load(),
            "blocking_load" => model.blocking_load(),
            "unload" => model.unload(),
            other => {
                return Err(format!(
                    "unknown action {other:?}: expected load, blocking_load or unload"
                ));
            }
        };
        check_bind(&trace, result, expect_error).map(|_| ())
    }

    /// The `model_set` step.
    pub(super) fn model_set(&mut self, step: &ModelSetStep) -> StepResult {
        let ModelSetStep { model, setter, value, inputs, outputs, expect_error } = step;
        let trace = self.trace.clone();
        let model = self.model(model)?;
        let flag = || value.ok_or_else(|| format!("{setter} needs `value`"));
        let result = match setter.as_str() {
            "set_async_load" => model.set_async_load(flag()?),
            "set_lazy_load" => model.set_lazy_load(flag()?),
            "set_dynamic_batching" => model.set_dynamic_batching(flag()?),
            "set_dynamic_batching_mixed" => model.set_dynamic_batching_mixed(
                inputs.as_deref().unwrap_or_default(),
                outputs.as_deref().unwrap_or_default(),
            ),
            other => return Err(format!("unknown setter {other:?}")),
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
                    scalar_type(&value.dtype)?,
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
            LoadStatus::Unloaded => "unloaded",
            LoadStatus::Loading => "loading",
            LoadStatus::Loaded => "loaded",
        };
        self.trace.record(format!("model {model} {got}"));
        if !["unloaded", "loading", "loaded"].contains(&expect.as_str()) {
            return Err(format!(
                "unknown load status {expect:?}: expected unloaded, loading or loaded"
            ));
        }
        if got == expect { Ok(()) } else { Err(format!("model is {got}, expected {expect}")) }
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
        let edited = match which.as_str() {
            "set_async_load" => edit::set_config_flag(&bytes, ConfigFlag::AsyncLoad, *value),
            "set_lazy_load" => edit::set_config_flag(&bytes, ConfigFlag::LazyLoad, *value),
            "set_return_aliases" => {
                edit::set_config_flag(&bytes, ConfigFlag::ReturnAliases, *value)
            }
            "set_dynamic_batching" => {
                edit::set_allow_dynamic_batch_size(&bytes, |_, _| Some(*value))
            }
            other => return Err(format!("unknown edit {other:?}")),
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
