//! The `libnrt` step: any libnrt function with a `Runtime` method, its arguments read back from
//! their trace form into the function's typed call (`abi::runtime::call::Call`) and issued on
//! the traced runtime. A function needs no step, and no code here, to be called from a vector;
//! handles are the labels of earlier steps, and a handle the call makes takes the step's `as`.

use abi::runtime::call::{Call, CallError, MadeHandle, Resolve};
use abi::runtime::{ModelId, SeqId, SetId, TensorId, TrackerId};
use abi::status::NrtStatus;
use abi::trace::parse::{Bytes, parse_bytes};

use super::{Context, StepResult, expect_status, label};
use crate::spec::LibnrtStep;

/// The handles of a step's arguments, by label.
struct Labels<'c, 'v> {
    context: &'c Context<'v>,
}

/// A label no earlier step gave.
fn unknown(message: String) -> CallError {
    CallError::Resolve(message.into())
}

impl Resolve for Labels<'_, '_> {
    fn tensor(&mut self, name: &str) -> Result<TensorId, CallError> {
        label(&self.context.tensors, name, "tensor").map_err(unknown)
    }

    fn set(&mut self, name: &str) -> Result<SetId, CallError> {
        label(&self.context.sets, name, "tensor set").map_err(unknown)
    }

    fn model(&mut self, name: &str) -> Result<ModelId, CallError> {
        label(&self.context.models, name, "model").map_err(unknown)
    }

    fn seq(&mut self, name: &str) -> Result<SeqId, CallError> {
        label(&self.context.requests.seqs, name, "request").map_err(unknown)
    }

    fn tracker(&mut self, name: &str) -> Result<TrackerId, CallError> {
        label(&self.context.requests.trackers, name, "error tracker").map_err(unknown)
    }

    /// Inline bytes only: a step has no recording to keep long ones beside.
    fn bytes(&mut self, text: &str) -> Result<Vec<u8>, CallError> {
        match parse_bytes(0, text)? {
            Bytes::Inline(bytes) => Ok(bytes),
            Bytes::Digest { .. } => {
                Err(unknown(format!("bytes {text} are a digest, expected them inline (`[00 ff]`)")))
            }
        }
    }
}

impl Context<'_> {
    /// The `libnrt` step.
    pub(super) fn libnrt(&mut self, step: &LibnrtStep) -> StepResult {
        let LibnrtStep { function, args, label: as_name, expect } = step;
        let parsed = Call::parse(*function, 0, args, &mut Labels { context: self });
        let call = parsed
            .map_err(|error| error.to_string().trim_start_matches("line 0: ").to_owned())?
            .ok_or_else(|| format!("{function} has no Runtime method, so no step can call it"))?;
        let issued = call.issue(self.runtime.as_ref());
        expect_status(
            issued.error.as_ref().map_or(NrtStatus::Success, |error| error.status),
            expect,
        )?;
        match (issued.made, as_name) {
            (Some(made), Some(name)) => {
                let name = name.clone();
                match made {
                    MadeHandle::Tensor(id) => self.tensors.insert(name, id).map(drop),
                    MadeHandle::Set(id) => self.sets.insert(name, id).map(drop),
                    MadeHandle::Model(id) => self.models.insert(name, id).map(drop),
                    MadeHandle::Seq(id) => self.requests.seqs.insert(name, id).map(drop),
                    MadeHandle::Tracker(id) => self.requests.trackers.insert(name, id).map(drop),
                };
                Ok(())
            }
            (None, Some(name)) if issued.error.is_none() => {
                Err(format!("{function} made no handle to label {name:?}"))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::run_on;
    use crate::spec::CaseSpec;
    use crate::vector::Vector;

    /// Runs `steps` (the `[[step]]` tables of a case) on a fresh simulator: the trace after
    /// `init`, and the failure.
    fn run(steps: &str) -> (Vec<String>, Option<String>) {
        let case: CaseSpec =
            toml::from_str(&format!("description = \"d\"\n{steps}")).expect("the case reads");
        let vector =
            Vector { name: "test/libnrt".into(), dir: std::env::temp_dir(), case, recorded: false };
        let sim = sim::SimRuntime::new_shared(sim::SimConfig::default()).expect("a simulator");
        let output = run_on(&vector, sim);
        (output.trace[1..].to_vec(), output.failure)
    }

    fn step(function: &str, args: &str, rest: &str) -> String {
        format!("[[step]]\ncall = \"libnrt\"\nfunction = \"{function}\"\nargs = {args}\n{rest}\n")
    }

    #[test]
    fn a_call_made_through_the_step_is_traced_as_the_call_and_labels_its_handle() {
        let steps = [
            step("nrt_allocate_tensor_set", "[]", "as = \"s\""),
            step("nrt_tensor_allocate", r#"["HOST", "0", "4", '"x"']"#, "as = \"x\""),
            step("nrt_add_tensor_to_tensor_set", r#"["s", '"in"', "x"]"#, ""),
            step("nrt_tensor_write", r#"["x", "0", "[01 02 03 04]"]"#, ""),
            step("nrt_tensor_read", r#"["x", "1", "2"]"#, ""),
            step("nrt_tensor_read", r#"["x", "3", "2"]"#, "expect = \"NRT_INVALID\""),
        ];
        let (trace, failure) = run(&steps.concat());
        assert_eq!(failure, None);
        let calls: Vec<&str> =
            trace.iter().map(String::as_str).filter(|line| !line.starts_with("==")).collect();
        assert_eq!(
            calls,
            [
                "allocate_tensor_set() -> s1 NRT_SUCCESS",
                r#"tensor_allocate(HOST, 0, 4, "x") -> t1 NRT_SUCCESS"#,
                r#"add_tensor_to_tensor_set(s1, "in", t1) -> NRT_SUCCESS"#,
                "tensor_write(t1, 0, [01 02 03 04]) -> NRT_SUCCESS",
                "tensor_read(t1, 1, 2) -> [02 03] NRT_SUCCESS",
                "tensor_read(t1, 3, 2) -> NRT_INVALID",
            ]
        );
    }

    #[test]
    fn a_step_that_cannot_be_made_says_why() {
        let failure = |steps: &str| run(steps).1.expect("the step fails");
        assert_eq!(
            failure(&step("nrt_get_status_as_str", "[\"0\"]", "")),
            "step 1 (libnrt): nrt_get_status_as_str has no Runtime method, so no step can call it"
        );
        assert_eq!(
            failure(&step("nrt_tensor_free", "[\"t\"]", "")),
            "step 1 (libnrt): no tensor labelled \"t\" in an earlier step"
        );
        assert_eq!(
            failure(&step("nrt_async_drain_queued_execs", "[\"0\", \"1\"]", "")),
            "step 1 (libnrt): expected the recorded number of arguments, found \"async_drain_queued_execs(0, 1)\""
        );
        assert_eq!(
            failure(&step("nrt_get_total_vnc_count", "[]", "as = \"n\"")),
            "step 1 (libnrt): nrt_get_total_vnc_count made no handle to label \"n\""
        );
        assert_eq!(
            failure(&step("nrt_allocate_tensor_set", "[]", "expect = \"NRT_INVALID\"")),
            "step 1 (libnrt): expected NRT_INVALID, got NRT_SUCCESS"
        );
    }
}
