//! How each argument and each returned value of a runtime call is written in a trace line:
//! [`TraceArg`] and [`TraceResult`], implemented once per type, and the few stand-ins a
//! declaration names where a method's line differs from what its types would give.
//!
//! [`TracingRuntime`](super::TracingRuntime)'s methods are derived from the trait declarations
//! (`runtime/declare.rs`): each argument is written by its type's [`TraceArg`], the value of a
//! success by its type's [`TraceResult`]. A type that implements neither is a compile error in
//! the declaration, so a new method cannot be traced by a guess: its declaration either uses
//! types that have a form here or says how the line differs (`address: usize as
//! Opaque("<address>")`).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::{
    Names, buffer_text, format_bytes, framework_name, name_text, path_arg, placement_name,
    tensor_info_text,
};
use crate::runtime::{
    Framework, InspectConfig, InstanceInfo, ModelId, NrtVersion, Placement, SeqId, SetId,
    SysTraceConfig, SysTraceFetch, TensorId, TensorInfo, TensorReadBatch, TensorWriteBatch,
    TrackerId, VncMemoryStats,
};
use crate::status::NrtStatus;

/// An argument as it appears between the parentheses of a call line.
pub(crate) trait TraceArg {
    /// Appends this argument's pieces to `args`: usually one, none for an argument the trace
    /// leaves out, one per element for a list the C call spreads over its arguments. Handles
    /// are named through `names`, in the order the pieces are written.
    fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>);
}

/// The value of a successful call, as it appears after ` -> `.
pub(crate) trait TraceResult {
    /// The value's text, written before the status; `None` when the line shows the status only.
    fn shown(&self, names: &mut Names<'_>) -> Option<String>;

    /// The status the line ends with: [`NrtStatus::Success`] but for a completed launch, whose
    /// value is its status.
    fn status(&self) -> NrtStatus {
        NrtStatus::Success
    }
}

impl<T: TraceArg + ?Sized> TraceArg for &T {
    fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>) {
        (**self).trace_arg(names, args);
    }
}

impl<T: TraceResult + ?Sized> TraceResult for &T {
    fn shown(&self, names: &mut Names<'_>) -> Option<String> {
        (**self).shown(names)
    }

    fn status(&self) -> NrtStatus {
        (**self).status()
    }
}

impl<T: TraceResult + ?Sized> TraceResult for &mut T {
    fn shown(&self, names: &mut Names<'_>) -> Option<String> {
        (**self).shown(names)
    }

    fn status(&self) -> NrtStatus {
        (**self).status()
    }
}

/// Numbers and flags are written as Rust prints them.
macro_rules! displayed {
    ($($ty:ty),*) => {$(
        impl TraceArg for $ty {
            fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
                args.push(self.to_string());
            }
        }
    )*};
}

displayed!(bool, i32, u32, i64, u64, usize);

/// Counts and sizes are written as numbers.
macro_rules! counted {
    ($($ty:ty),*) => {$(
        impl TraceResult for $ty {
            fn shown(&self, _: &mut Names<'_>) -> Option<String> {
                Some(self.to_string())
            }
        }
    )*};
}

counted!(u32, usize);

/// Handles are renamed in order of first appearance, as arguments and as results alike.
macro_rules! handle {
    ($($ty:ty => $name:ident),*) => {$(
        impl TraceArg for $ty {
            fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>) {
                args.push(names.$name(*self));
            }
        }

        impl TraceResult for $ty {
            fn shown(&self, names: &mut Names<'_>) -> Option<String> {
                Some(names.$name(*self))
            }
        }
    )*};
}

handle!(TensorId => tensor, SetId => set, ModelId => model, SeqId => seq, TrackerId => tracker);

/// An optional tracker: its name, or `-` for none.
impl TraceArg for Option<TrackerId> {
    fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(names.maybe_tracker(*self));
    }
}

/// Bytes the call moves (a NEFF, tensor data): inline hex or a digest, see
/// [`format_bytes`](super::format_bytes). Names, also bytes, are written with [`Name`].
impl TraceArg for [u8] {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(format_bytes(self));
    }
}

/// A version string, quoted.
impl TraceArg for str {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(format!("{self:?}"));
    }
}

// The owned forms a typed call holds (`runtime::call`, which writes its own byte types) are
// written as the borrowed forms the methods take.

impl TraceArg for String {
    fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>) {
        self.as_str().trace_arg(names, args);
    }
}

impl TraceArg for PathBuf {
    fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>) {
        self.as_path().trace_arg(names, args);
    }
}

impl TraceArg for Option<PathBuf> {
    fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>) {
        self.as_deref().trace_arg(names, args);
    }
}

impl TraceArg for Vec<TensorReadBatch> {
    fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>) {
        self.as_slice().trace_arg(names, args);
    }
}

impl TraceArg for Vec<TensorWriteBatch> {
    fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>) {
        self.as_slice().trace_arg(names, args);
    }
}

/// A folder or file of the run: `<path>` (its text differs by run).
impl TraceArg for Path {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push("<path>".to_owned());
    }
}

/// An optional path: `<path>`, or `NULL` for none.
impl TraceArg for Option<&Path> {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(path_arg(*self).to_owned());
    }
}

impl TraceArg for Framework {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(framework_name(*self).to_owned());
    }
}

impl TraceArg for Placement {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(placement_name(*self).to_owned());
    }
}

/// One argument per tensor: `t1 [0+4 8+4]`, its ranges as `offset+size`.
impl TraceArg for [TensorReadBatch] {
    fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>) {
        for batch in self {
            let ranges: Vec<String> =
                batch.ranges.iter().map(|(offset, size)| format!("{offset}+{size}")).collect();
            args.push(format!("{} [{}]", names.tensor(batch.tensor), ranges.join(" ")));
        }
    }
}

/// One argument per tensor: `t1 [0:[00 01]]`, its writes as `offset:bytes`.
impl TraceArg for [TensorWriteBatch] {
    fn trace_arg(&self, names: &mut Names<'_>, args: &mut Vec<String>) {
        for batch in self {
            let ops: Vec<String> = batch
                .ops
                .iter()
                .map(|(offset, bytes)| format!("{offset}:{}", format_bytes(bytes)))
                .collect();
            args.push(format!("{} [{}]", names.tensor(batch.tensor), ops.join(" ")));
        }
    }
}

/// The settings the C setters were called with, by name; the folder as `<path>`.
impl TraceArg for InspectConfig {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(format!(
            "session_id {:?}, output_dir {}, enable_inspect {:?}, enable_inspect_on_fail {:?}",
            self.session_id,
            path_arg(self.output_dir.as_deref()),
            self.enable_inspect,
            self.enable_inspect_on_fail
        ));
    }
}

/// The settings the C setters were called with, by name.
impl TraceArg for SysTraceConfig {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(format!(
            "max_events_per_nc {:?}, disabled_ncs {:?}, disabled_event_types {:?}",
            self.max_events_per_nc, self.disabled_ncs, self.disabled_event_types
        ));
    }
}

/// The fetch options the C setters were called with, by name.
impl TraceArg for SysTraceFetch {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(format!("max_events_per_nc {:?}, nc {:?}", self.max_events_per_nc, self.nc));
    }
}

/// A call that returns nothing shows its status only.
impl TraceResult for () {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        None
    }
}

/// A completed launch shows its own status (success or 1003) and no value.
impl TraceResult for NrtStatus {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        None
    }

    fn status(&self) -> NrtStatus {
        *self
    }
}

/// Bytes a call returns (a read, a gather), as [`format_bytes`](super::format_bytes) writes them.
impl TraceResult for [u8] {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        Some(format_bytes(self))
    }
}

impl TraceResult for Vec<u8> {
    fn shown(&self, names: &mut Names<'_>) -> Option<String> {
        self.as_slice().shown(names)
    }
}

/// The bytes of each range read, separated by spaces; nothing for no range.
impl TraceResult for Vec<Vec<u8>> {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        let read: Vec<String> = self.iter().map(|bytes| format_bytes(bytes)).collect();
        (!read.is_empty()).then(|| read.join(" "))
    }
}

/// A model's tensors, see [`tensor_info_text`](super::tensor_info_text).
impl TraceResult for Vec<TensorInfo> {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        Some(tensor_info_text(self))
    }
}

/// The failed requests of a tracker: `[q1 NRT_EXEC_BAD_INPUT, …]`.
impl TraceResult for Vec<(SeqId, NrtStatus)> {
    fn shown(&self, names: &mut Names<'_>) -> Option<String> {
        let errors: Vec<String> = self
            .iter()
            .map(|&(seq, status)| format!("{} {}", names.seq(seq), status.name()))
            .collect();
        Some(format!("[{}]", errors.join(", ")))
    }
}

/// `<version>`: every backend is a different build.
impl TraceResult for NrtVersion {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        Some("<version>".to_owned())
    }
}

/// `<stats>`: the byte counts differ between backends by nature (allocation granules, what a
/// device reserves).
impl TraceResult for VncMemoryStats {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        Some("<stats>".to_owned())
    }
}

/// The status only: the instance is the machine's on a device and configured on the simulator.
impl TraceResult for InstanceInfo {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        None
    }
}

/// The status only: a descriptor's number is the process's own.
impl TraceResult for OwnedFd {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        None
    }
}

/// A name argument (a tensor's, a set entry's): bytes written as [`name_text`] writes them, so a
/// UTF-8 name reads `"input0"`.
pub(crate) struct Name<'a>(pub(crate) &'a [u8]);

impl TraceArg for Name<'_> {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(name_text(self.0));
    }
}

/// A fixed text in place of a value that differs between backends by nature (`<address>`,
/// `<va>`), as an argument or as a result.
pub(crate) struct Opaque(pub(crate) &'static str);

impl TraceArg for Opaque {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(self.0.to_owned());
    }
}

impl TraceResult for Opaque {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        Some(self.0.to_owned())
    }
}

/// Left out of the line: an argument the trace does not show (where a read's bytes will
/// arrive), or a result of which only the status is shown (what the machine alone decides).
pub(crate) struct Untraced;

impl TraceArg for Untraced {
    fn trace_arg(&self, _: &mut Names<'_>, _: &mut Vec<String>) {}
}

impl TraceResult for Untraced {
    fn shown(&self, _: &mut Names<'_>) -> Option<String> {
        None
    }
}

/// A caller-owned buffer of this many bytes: `<N bytes buffer>` (its address differs by run).
/// The declaration measures the buffer before the call takes it.
pub(crate) struct Buffer(pub(crate) usize);

impl TraceArg for Buffer {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(buffer_text(self.0 as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    /// The pieces `args` give in one line, and the text each result gives after them, written
    /// under one lock as a traced call writes them.
    fn written(args: &[&dyn TraceArg], results: &[&dyn TraceResult]) -> String {
        let trace = Trace::new();
        trace.record_with(|names| {
            let mut pieces = Vec::new();
            for arg in args {
                arg.trace_arg(names, &mut pieces);
            }
            for result in results {
                let shown = result.shown(names).unwrap_or_else(|| "-".to_owned());
                pieces.push(format!("{shown} {}", result.status().name()));
            }
            pieces.join(" | ")
        });
        trace.lines().concat()
    }

    fn check(args: &[&dyn TraceArg], results: &[&dyn TraceResult], expected: &str) {
        assert_eq!(written(args, results), expected);
    }

    #[test]
    fn handles_are_named_per_kind_in_the_order_arguments_then_results_show_them() {
        check(
            &[&ModelId(9), &SetId(4), &TensorId(7), &Some(TrackerId(2)), &None::<TrackerId>],
            &[&TensorId(8), &SeqId(1)],
            "m1 | s1 | t1 | e1 | - | t2 NRT_SUCCESS | q1 NRT_SUCCESS",
        );
    }

    #[test]
    fn names_bytes_and_paths_each_have_their_own_form() {
        let bytes: &[u8] = &[0, 0x80];
        let path = Path::new("/tmp/run");
        check(
            &[
                &Name(b"input0"),
                &Name(b"i\xff"),
                &bytes,
                &"2.0",
                &path,
                &Some(path),
                &None::<&Path>,
            ],
            &[],
            r#""input0" | b"i\xff" | [00 80] | "2.0" | <path> | <path> | NULL"#,
        );
    }

    #[test]
    fn an_empty_batch_list_writes_no_argument() {
        let none: &[TensorReadBatch] = &[];
        let reads = [TensorReadBatch { tensor: TensorId(3), ranges: vec![(0, 4), (8, 2)] }];
        let writes = [TensorWriteBatch { tensor: TensorId(3), ops: vec![(4, vec![1])] }];
        check(&[&none, &false], &[], "false");
        check(&[&reads.as_slice(), &writes.as_slice()], &[], "t1 [0+4 8+2] | t1 [4:[01]]");
    }

    #[test]
    fn stand_ins_replace_or_leave_out_what_differs_by_nature() {
        check(
            &[&Opaque("<address>"), &Untraced, &Buffer(16), &7usize],
            &[&Opaque("<va>"), &Untraced, &()],
            "<address> | <16 bytes buffer> | 7 | <va> NRT_SUCCESS | - NRT_SUCCESS | - NRT_SUCCESS",
        );
    }

    #[test]
    fn a_completed_launch_ends_with_its_own_status() {
        check(&[], &[&NrtStatus::ExecCompletedWithNumErr], "- NRT_EXEC_COMPLETED_WITH_NUM_ERR");
    }

    #[test]
    fn returned_lists_show_each_element_and_an_empty_read_shows_nothing() {
        let read: Vec<Vec<u8>> = vec![vec![1], vec![]];
        let none: Vec<Vec<u8>> = Vec::new();
        let errors = vec![(SeqId(5), NrtStatus::Timeout)];
        check(
            &[],
            &[&read, &none, &errors],
            "[01] [] NRT_SUCCESS | - NRT_SUCCESS | [q1 NRT_TIMEOUT] NRT_SUCCESS",
        );
    }
}
