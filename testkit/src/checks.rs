//! Backend-independent checks of the libnrt contract, written against `&dyn Runtime`.
//!
//! These are the bodies of the simulator's behaviour tests, kept in the test-support crate so
//! that any backend (the simulator, the simulator behind the C ABI, the real libnrt) can run the
//! same checks and no product crate exports them; they only use the [`Runtime`] trait. Only
//! what vector steps cannot express lives here, and each check says why it is not data.
//!
//! Conventions:
//! - Each check takes a **fresh, uninitialized** runtime, initializes it, and closes it at the
//!   end. Checks that need a model take a [`LoadModel`] function, so the caller decides how the
//!   model is made (a NEFF for `nrt_load`, or a description for the simulator).
//! - A check returns `Err(CheckFailure)` saying what was expected and what came, instead of
//!   panicking, so a harness can report every failing check.
//! - Statuses are compared, never messages, except where the message must name a range.

use std::sync::Arc;

use abi::runtime::prelude::*;
use abi::runtime::{
    ExternalBuffer, Framework, ModelId, NrtError, Placement, SharedBuffer, TensorId, TensorUsage,
};
use abi::status::NrtStatus;

/// A failed check: what was expected and what came.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CheckFailure(pub String);

/// The result of a check.
pub type CheckResult = Result<(), CheckFailure>;

/// Loads the check's model on NeuronCore `vnc` (`-1`: the first free one).
pub type LoadModel<'a> = &'a dyn Fn(&dyn Runtime, i32) -> Result<ModelId, NrtError>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(CheckFailure(format!($($fmt)*)));
        }
    };
}

/// `Ok(value)` of a call that must succeed, or a failure naming the call.
fn ok<T>(what: &str, result: Result<T, NrtError>) -> Result<T, CheckFailure> {
    result.map_err(|err| CheckFailure(format!("{what}: expected success, got {err}")))
}

/// Checks that a call failed with `status`.
fn fails_with<T: std::fmt::Debug>(
    what: &str,
    result: Result<T, NrtError>,
    status: NrtStatus,
) -> Result<NrtError, CheckFailure> {
    match result {
        Err(err) if err.status == status => Ok(err),
        Err(err) => Err(CheckFailure(format!("{what}: expected {status}, got {err}"))),
        Ok(value) => Err(CheckFailure(format!("{what}: expected {status}, got success {value:?}"))),
    }
}

fn init(runtime: &dyn Runtime) -> CheckResult {
    ok("nrt_init", runtime.init(Framework::NoFw, "", ""))
}

fn read_all(runtime: &dyn Runtime, tensor: TensorId) -> Result<Vec<u8>, CheckFailure> {
    let size = ok("nrt_tensor_get_size", runtime.tensor_get_size(tensor))?;
    let mut out = vec![0u8; size];
    ok("nrt_tensor_read", runtime.tensor_read(tensor, 0, &mut out))?;
    Ok(out)
}

/// Not data: the version's numbers (major at least 2) are no vector step's expectation (the
/// lifecycle gates themselves are `vectors/lifecycle/`, e.g.
/// `tensor_set_allocation_is_uninitialized_before_init_and_closed_after_close`).
///
/// The version before init is release 2 or later.
pub fn version_before_init_is_release_2_or_later(runtime: &dyn Runtime) -> CheckResult {
    let version = ok("nrt_get_version before init", runtime.get_version())?;
    ensure!(version.major >= 2, "version major {} is below 2", version.major);
    init(runtime)?;
    runtime.close();
    Ok(())
}

/// Not data: a tensor handle that never existed cannot be named by a step, which only names
/// tensors an earlier step made (what sets do is `vectors/tensor_set/`, non-UTF-8 keys
/// included: `keys_are_exact_bytes_not_necessarily_utf8`).
///
/// Adding a handle no call returned is INVALID_HANDLE.
pub fn sets_refuse_a_tensor_handle_that_never_existed(runtime: &dyn Runtime) -> CheckResult {
    init(runtime)?;
    let set = ok("allocate set", runtime.allocate_tensor_set())?;
    fails_with(
        "add unknown tensor",
        runtime.add_tensor_to_tensor_set(set, b"x", TensorId(u64::MAX)),
        NrtStatus::InvalidHandle,
    )?;
    ok("destroy set", runtime.destroy_tensor_set(set))?;
    runtime.close();
    Ok(())
}

/// Not data: a raw call's message (raw steps judge statuses only) and an offset past what a
/// `case.toml` integer holds (the bytes and the bounds themselves are
/// `vectors/memory/{device,host,virtual}_tensor_bytes_stay_in_bounds`, the addresses
/// `vectors/memory/tensor_addresses_are_not_null_and_stable_on_every_placement`).
///
/// On each placement: an out-of-range read's message gives the range, and a write at offset
/// `usize::MAX` is INVALID (no overflow).
pub fn tensor_memory_and_bounds(runtime: &dyn Runtime) -> CheckResult {
    init(runtime)?;
    for placement in [Placement::Device, Placement::Host, Placement::Virtual] {
        let t = ok("allocate", runtime.tensor_allocate(placement, 0, 64, b"t"))?;
        let err = fails_with(
            "read past end",
            runtime.tensor_read(t, 60, &mut [0u8; 8]),
            NrtStatus::Invalid,
        )?;
        ensure!(
            err.detail.contains("60..68"),
            "message {:?} does not give the range 60..68",
            err.detail
        );
        fails_with(
            "write overflow",
            runtime.tensor_write(t, usize::MAX, &[1]),
            NrtStatus::Invalid,
        )?;
        ok("free", runtime.tensor_free(t))?;
    }
    runtime.close();
    Ok(())
}

/// Not data: the caller's side of the buffer (its writes, and reads of what the tensor wrote) and
/// the tensor's address are no step; vector steps attach a buffer the runner owns (sizes, reads,
/// writes and the refused attach to an owning tensor are
/// `vectors/memory/empty_tensor_takes_an_attached_buffer_but_an_owning_one_does_not`).
///
/// `allocate_empty` + `attach_buffer`: the caller's buffer is the storage, both ways, at the
/// buffer's own address, and freeing the tensor leaves the buffer to the caller.
pub fn attached_buffers_are_caller_memory(runtime: &dyn Runtime) -> CheckResult {
    init(runtime)?;
    let tensor = ok("allocate empty", runtime.tensor_allocate_empty(b"ext"))?;
    let buffer = Arc::new(SharedBuffer::from_vec((0u8..32).collect()));
    ok("attach", runtime.tensor_attach_buffer(tensor, buffer.clone()))?;
    ensure!(ok("va", runtime.tensor_get_va(tensor))? == buffer.address(), "va is not the buffer's");
    ok("write", runtime.tensor_write(tensor, 30, &[0xaa, 0xbb]))?;
    ensure!(buffer.to_vec()[30..] == [0xaa, 0xbb], "write did not reach the caller's buffer");
    buffer.write_at(0, &[0x55]);
    let mut first = [0u8; 1];
    ok("read", runtime.tensor_read(tensor, 0, &mut first))?;
    ensure!(first == [0x55], "caller's write not visible through the tensor");
    ok("free", runtime.tensor_free(tensor))?;
    ensure!(buffer.to_vec().len() == 32, "freeing the tensor touched the caller's buffer");
    runtime.close();
    Ok(())
}

/// An input or output value for [`canonical_client_flow`]: name and bytes.
pub type NamedBytes<'a> = (&'a str, &'a [u8]);

/// Not data: the loader is a parameter, and the simulator's tests run it on in-memory
/// descriptions (`SimRuntime::load_description`), which no vector can load.
///
/// The canonical client of docs/abi-facts.md §4: init → load → tensor info → one tensor per info entry
/// of `info.size` (on `placement`) → sets by name → write → execute → read → free → destroy sets
/// → unload → close. Checks the launch status and that each listed output reads back as given.
pub fn canonical_client_flow(
    runtime: &dyn Runtime,
    load: LoadModel<'_>,
    placement: Placement,
    inputs: &[NamedBytes<'_>],
    expected_outputs: &[NamedBytes<'_>],
    expected_status: NrtStatus,
) -> CheckResult {
    init(runtime)?;
    let model = ok("load", load(runtime, -1))?;
    let info = ok("nrt_get_model_tensor_info", runtime.get_model_tensor_info(model))?;
    let first_output = info.iter().position(|entry| entry.usage == TensorUsage::Output);
    ensure!(
        first_output
            .is_some_and(|first| info[first..].iter().all(|e| e.usage == TensorUsage::Output)),
        "tensor info does not list inputs first, then outputs: {info:?}"
    );
    let input_set = ok("allocate set", runtime.allocate_tensor_set())?;
    let output_set = ok("allocate set", runtime.allocate_tensor_set())?;
    let mut tensors = Vec::new();
    for entry in &info {
        let tensor = ok(
            "allocate",
            runtime.tensor_allocate(placement, 0, entry.size, entry.name.as_bytes()),
        )?;
        let set = if entry.usage == TensorUsage::Input { input_set } else { output_set };
        ok("add", runtime.add_tensor_to_tensor_set(set, entry.name.as_bytes(), tensor))?;
        tensors.push((entry.name.clone(), tensor));
    }
    let find = |name: &str| tensors.iter().find(|(n, _)| n == name).map(|(_, t)| *t);
    for (name, bytes) in inputs {
        let tensor =
            find(name).ok_or_else(|| CheckFailure(format!("no model input named {name:?}")))?;
        ok("write input", runtime.tensor_write(tensor, 0, bytes))?;
    }
    let status = ok("nrt_execute", runtime.execute(model, input_set, output_set))?;
    ensure!(status == expected_status, "execute returned {status}, expected {expected_status}");
    for (name, expected) in expected_outputs {
        let tensor =
            find(name).ok_or_else(|| CheckFailure(format!("no model output named {name:?}")))?;
        let got = read_all(runtime, tensor)?;
        ensure!(got.as_slice() == *expected, "output {name:?} is {got:?}, expected {expected:?}");
    }
    for (_, tensor) in tensors {
        ok("free", runtime.tensor_free(tensor))?;
    }
    ok("destroy", runtime.destroy_tensor_set(input_set))?;
    ok("destroy", runtime.destroy_tensor_set(output_set))?;
    drop(info);
    ok("unload", runtime.unload(model))?;
    fails_with(
        "execute after unload",
        runtime.execute(model, input_set, output_set),
        NrtStatus::InvalidHandle,
    )?;
    runtime.close();
    Ok(())
}

/// Not data: the loader is a parameter (in-memory descriptions in the simulator's tests), and
/// the body derives its cases from the model's tensor info, whatever the model.
///
/// The I/O contract at execute: a missing name, a too-small tensor and a device tensor on
/// another core are each INVALID; the model's own-core device tensors work in place. `load`
/// must give a model whose inputs and outputs are all at least 1 byte; needs 2 NeuronCores.
pub fn execute_checks_the_io_contract(runtime: &dyn Runtime, load: LoadModel<'_>) -> CheckResult {
    init(runtime)?;
    let model = ok("load on core 0", load(runtime, 0))?;
    let info = ok("info", runtime.get_model_tensor_info(model))?;
    let build = |vnc: i32, shrink: Option<&str>, skip: Option<&str>| -> Result<_, CheckFailure> {
        let input_set = ok("set", runtime.allocate_tensor_set())?;
        let output_set = ok("set", runtime.allocate_tensor_set())?;
        for entry in &info {
            if skip == Some(entry.name.as_str()) {
                continue;
            }
            let size = if shrink == Some(entry.name.as_str()) {
                entry.size.saturating_sub(1)
            } else {
                entry.size
            };
            let tensor = ok(
                "allocate",
                runtime.tensor_allocate(Placement::Device, vnc, size, entry.name.as_bytes()),
            )?;
            let set = if entry.usage == TensorUsage::Input { input_set } else { output_set };
            ok("add", runtime.add_tensor_to_tensor_set(set, entry.name.as_bytes(), tensor))?;
        }
        Ok((input_set, output_set))
    };
    let (inputs, outputs) = build(0, None, None)?;
    ok("execute with device tensors on the model's core", runtime.execute(model, inputs, outputs))?;
    for entry in &info {
        let (inputs, outputs) = build(0, None, Some(&entry.name))?;
        fails_with(
            &format!("execute without {:?}", entry.name),
            runtime.execute(model, inputs, outputs),
            NrtStatus::Invalid,
        )?;
        let (inputs, outputs) = build(0, Some(&entry.name), None)?;
        fails_with(
            &format!("execute with {:?} one byte short", entry.name),
            runtime.execute(model, inputs, outputs),
            NrtStatus::Invalid,
        )?;
    }
    let (inputs, outputs) = build(1, None, None)?;
    fails_with(
        "execute with tensors on another core",
        runtime.execute(model, inputs, outputs),
        NrtStatus::Invalid,
    )?;
    fails_with(
        "execute_repeat 0 times",
        runtime.execute_repeat(model, inputs, outputs, 0),
        NrtStatus::Invalid,
    )?;
    runtime.close();
    fails_with("execute after close", runtime.execute(model, inputs, outputs), NrtStatus::Closed)?;
    Ok(())
}

/// Not data: the loader is a parameter (in-memory descriptions in the simulator's tests), and
/// the count of loads follows the machine's visible cores.
///
/// Loading with `vnc = -1` takes free cores until none is left: then LOAD_NOT_ENOUGH_NC; an
/// unload frees the core again; a core past the last one is LOAD_NOT_ENOUGH_NC.
pub fn loads_take_free_cores(runtime: &dyn Runtime, load: LoadModel<'_>) -> CheckResult {
    init(runtime)?;
    let total = ok("visible", runtime.get_visible_vnc_count())?;
    let mut models = Vec::new();
    for _ in 0..total {
        models.push(ok("load on a free core", load(runtime, -1))?);
    }
    fails_with("load with no free core", load(runtime, -1), NrtStatus::LoadNotEnoughNc)?;
    fails_with("load past the last core", load(runtime, total as i32), NrtStatus::LoadNotEnoughNc)?;
    let first = models.remove(0);
    ok("unload", runtime.unload(first))?;
    fails_with("unload twice", runtime.unload(first), NrtStatus::InvalidHandle)?;
    models.push(ok("load after unload", load(runtime, -1))?);
    for model in models {
        ok("unload", runtime.unload(model))?;
    }
    runtime.close();
    Ok(())
}
