//! What the arguments of each call mean, and the line recorded for it.
//!
//! The calls a replay re-issues (the lifecycle, loading, tensors, sets, launches, counts) are
//! written exactly as `abi::trace::TracingRuntime` writes the same `Runtime` call; every other
//! function is written `name(…) -> STATUS` (name and result only), and a replay checks it
//! against nothing but its position.

use std::ffi::{CStr, c_char};

use abi::c_layout::c_types::nrt_version_t;
use abi::c_layout::{INFO_ARRAY_HEADER, NrtTensorInfoC};
use abi::dtype::{DtypeNumbering, NrtDtype};
use abi::functions::LibnrtFunction;
use abi::runtime::{Framework, Placement, TensorInfo, TensorUsage};
use abi::status::NrtStatus;
use abi::trace::{
    COMPLETED_PREFIX, INLINE_BYTES, UNRECORDED_ARGS, buffer_text, call_line, format_bytes,
    framework_name, name_text, placement_name, tensor_info_text,
};

use crate::sink::{Kind, Part, record};

fn status_name(code: u64) -> String {
    NrtStatus::from_code(code as u32).name()
}

/// A C string argument as `TracingRuntime` shows a `&str` (NULL as empty).
///
/// # Safety
/// `pointer` is NULL or a NUL-terminated string.
unsafe fn c_str(pointer: u64) -> String {
    if pointer == 0 {
        return "\"\"".to_owned();
    }
    // SAFETY: the caller's contract.
    let text = unsafe { CStr::from_ptr(pointer as usize as *const c_char) };
    format!("{:?}", text.to_string_lossy())
}

/// A C string argument as a trace name (NULL as empty).
///
/// # Safety
/// As [`c_str`].
unsafe fn c_name(pointer: u64) -> String {
    if pointer == 0 {
        return name_text(b"");
    }
    // SAFETY: the caller's contract.
    let text = unsafe { CStr::from_ptr(pointer as usize as *const c_char) };
    name_text(text.to_bytes())
}

/// `size` bytes at `pointer` (NULL or 0: empty).
///
/// # Safety
/// `pointer` is valid for reads of `size` bytes.
unsafe fn bytes<'a>(pointer: u64, size: u64) -> &'a [u8] {
    if pointer == 0 || size == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(pointer as usize as *const u8, size as usize) }
}

/// Input bytes as traced; kept beside the trace when too long to be inline.
pub(crate) fn input_bytes(bytes: &[u8]) -> String {
    let shown = format_bytes(bytes);
    if bytes.len() > INLINE_BYTES {
        crate::sink::keep_blob(bytes, &shown);
    }
    shown
}

/// The word an output pointer points to (0 for NULL).
///
/// # Safety
/// `pointer` is NULL or valid for reading a pointer-sized word.
unsafe fn out_word(pointer: u64) -> u64 {
    if pointer == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { (pointer as usize as *const usize).read_unaligned() as u64 }
}

/// The `u64` an output pointer points to (0 for NULL).
///
/// # Safety
/// As [`out_word`], for 8 bytes.
unsafe fn out_u64(pointer: u64) -> u64 {
    if pointer == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { (pointer as usize as *const u64).read_unaligned() }
}

/// An optional error tracker argument: `-` for NULL.
fn tracker(pointer: u64) -> Part {
    if pointer == 0 { text("-") } else { Part::Handle(Kind::Tracker, pointer) }
}

/// The `u32` an output pointer points to.
///
/// # Safety
/// As [`out_word`], for 4 bytes.
unsafe fn out_u32(pointer: u64) -> Option<u32> {
    if pointer == 0 {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(unsafe { (pointer as usize as *const u32).read_unaligned() })
}

/// What is read before the call: the handle a release will clear, and input bytes (which the
/// call may overwrite when they alias its destination).
#[derive(Default)]
pub(crate) struct Before {
    word: u64,
    input: Option<String>,
}

/// Reads what must be read before the call.
///
/// # Safety
/// The C contract of `function` for `args`.
pub(crate) unsafe fn before(function: LibnrtFunction, args: &[u64]) -> Before {
    use LibnrtFunction as F;
    let word = |word| Before { word, input: None };
    let input = |shown| Before { word: 0, input: Some(shown) };
    match function {
        // SAFETY: the argument is `T **`, NULL or valid.
        F::nrt_tensor_free | F::nrt_destroy_tensor_set => word(unsafe { out_word(args[0]) }),
        F::nrt_load | F::nrt_load_collectives => {
            // SAFETY: the NEFF is valid for `size` bytes.
            let neff = unsafe { bytes(args[0], args[1]) };
            input(input_bytes(neff))
        }
        // SAFETY: the buffer is valid for `size` bytes.
        F::nrt_tensor_write => input(input_bytes(unsafe { bytes(args[1], args[3]) })),
        // SAFETY: the buffer is valid for `size` bytes (and stays so until completion).
        F::nrta_tensor_write => input(input_bytes(unsafe { bytes(args[1], args[3]) })),
        F::nrt_execute
        | F::nrt_execute_repeat
        | F::nrt_tensor_read
        | F::nrt_tensor_copy
        | F::nrta_execute_schedule
        | F::nrta_tensor_read
        | F::nrta_tensor_copy => {
            crate::exposed::sync();
            Before::default()
        }
        _ => Before::default(),
    }
}

fn text(text: impl Into<std::borrow::Cow<'static, str>>) -> Part {
    Part::Text(text.into())
}

/// Records the call. `result` is the status (or value) returned, `before` what [`before`] read.
///
/// # Safety
/// The C contract of `function` for `args`, after a call that returned `result`.
pub(crate) unsafe fn after(function: LibnrtFunction, args: &[u64], result: u64, before: Before) {
    let Before { word: before, input } = before;
    let input = input.unwrap_or_default();
    if !representable(function, args, before) {
        record(generic(function, result));
        return;
    }
    use LibnrtFunction as F;
    // Joined by hand: `format!` costs more than the rest of a small call's line.
    let call = |rest: &str| {
        let name = function.trace_name();
        let mut head = String::with_capacity(name.len() + 1 + rest.len());
        head.push_str(name);
        head.push('(');
        head.push_str(rest);
        text(head)
    };
    let ok = result == 0;
    let mut exposes = None;
    // `call -> STATUS` for a call without output, `call -> out NRT_SUCCESS` on success.
    let status = || match NrtStatus::from_code(result as u32).identifier() {
        Some("NRT_SUCCESS") => text(") -> NRT_SUCCESS"),
        _ => text(format!(") -> {}", status_name(result))),
    };
    let with_output = |mut parts: Vec<Part>, output: Part| {
        if ok {
            parts.push(text(") -> "));
            parts.push(output);
            parts.push(text(" NRT_SUCCESS"));
        } else {
            parts.push(status());
        }
        parts
    };
    // SAFETY: the reads below keep the C contract of each function: strings are NUL-terminated,
    // buffers are valid for the sizes passed, output pointers are NULL or valid (their values
    // are used only on success).
    let parts = unsafe {
        match function {
            F::nrt_init => {
                let framework = Framework::from_code(args[0] as u32).map_or_else(
                    || format!("{}", args[0] as u32),
                    |f| framework_name(f).to_owned(),
                );
                vec![
                    call(&format!("{framework}, {}, {}", c_str(args[1]), c_str(args[2]))),
                    status(),
                ]
            }
            F::nrt_close => vec![text(call_line(function.trace_name(), "", None))],
            F::nrt_load => {
                let head = call(&format!("{input}, {}, {}", args[2] as i32, args[3] as i32));
                with_output(vec![head], Part::New(Kind::Model, out_word(args[4])))
            }
            F::nrt_load_collectives => {
                let head = call(&format!(
                    "{input}, {}, {}, {}, {}",
                    args[2] as i32, args[3] as i32, args[4] as u32, args[5] as u32
                ));
                with_output(vec![head], Part::New(Kind::Model, out_word(args[6])))
            }
            F::nrt_unload => {
                // A released model's address may come back for the next load.
                let model = if ok {
                    Part::Released(Kind::Model, args[0])
                } else {
                    Part::Handle(Kind::Model, args[0])
                };
                vec![call(""), model, status()]
            }
            F::nrt_execute | F::nrt_execute_repeat => {
                let mut parts = vec![
                    call(""),
                    Part::Handle(Kind::Model, args[0]),
                    text(", "),
                    Part::Handle(Kind::Set, args[1]),
                    text(", "),
                    Part::Handle(Kind::Set, args[2]),
                ];
                if function == F::nrt_execute_repeat {
                    parts.push(text(format!(", {}", args[3] as i32)));
                }
                parts.push(status());
                parts
            }
            F::nrt_allocate_tensor_set => {
                with_output(vec![call("")], Part::New(Kind::Set, out_word(args[0])))
            }
            F::nrt_destroy_tensor_set => {
                vec![call(""), Part::Released(Kind::Set, before), text(") -> NRT_SUCCESS")]
            }
            F::nrt_add_tensor_to_tensor_set => vec![
                call(""),
                Part::Handle(Kind::Set, args[0]),
                text(format!(", {}, ", c_name(args[1]))),
                Part::Handle(Kind::Tensor, args[2]),
                status(),
            ],
            F::nrt_get_tensor_from_tensor_set => with_output(
                vec![
                    call(""),
                    Part::Handle(Kind::Set, args[0]),
                    text(format!(", {}", c_name(args[1]))),
                ],
                Part::Handle(Kind::Tensor, out_word(args[2])),
            ),
            F::nrt_tensor_allocate => {
                let placement = Placement::from_code(args[0] as u32).map_or_else(
                    || format!("{}", args[0] as u32),
                    |p| placement_name(p).to_owned(),
                );
                let head = call(&format!(
                    "{placement}, {}, {}, {}",
                    args[1] as i32,
                    args[2],
                    c_name(args[3])
                ));
                with_output(vec![head], Part::New(Kind::Tensor, out_word(args[4])))
            }
            F::nrt_tensor_free => {
                crate::exposed::forget(before);
                vec![call(""), Part::Released(Kind::Tensor, before), text(") -> NRT_SUCCESS")]
            }
            F::nrt_tensor_allocate_empty => with_output(
                vec![call(&c_name(args[0]))],
                Part::New(Kind::Tensor, out_word(args[1])),
            ),
            F::nrt_tensor_attach_buffer => {
                let parts = vec![
                    call(""),
                    Part::Handle(Kind::Tensor, args[0]),
                    text(format!(", {}", buffer_text(args[2]))),
                    status(),
                ];
                if ok {
                    exposes = Some(args[0]);
                }
                parts
            }
            F::nrt_tensor_get_va => {
                let head = vec![call(""), Part::Handle(Kind::Tensor, args[0])];
                if result == 0 {
                    let mut parts = head;
                    parts.push(text(") -> NRT_INVALID"));
                    parts
                } else {
                    let mut parts = head;
                    parts.push(text(") -> <va> NRT_SUCCESS"));
                    exposes = Some(args[0]);
                    parts
                }
            }
            F::nrt_get_model_tensor_info => {
                let head = vec![call(""), Part::Handle(Kind::Model, args[0])];
                if ok {
                    with_output(head, text(tensor_info(out_word(args[1]))))
                } else {
                    let mut parts = head;
                    parts.push(status());
                    parts
                }
            }
            F::nrt_tensor_read => {
                let head = vec![
                    call(""),
                    Part::Handle(Kind::Tensor, args[0]),
                    text(format!(", {}, {}", args[2], args[3])),
                ];
                let shown = if ok { format_bytes(bytes(args[1], args[3])) } else { String::new() };
                with_output(head, text(shown))
            }
            F::nrt_tensor_write => {
                let offset = args[2].to_string();
                let mut rest = String::with_capacity(4 + offset.len() + input.len());
                rest.push_str(", ");
                rest.push_str(&offset);
                rest.push_str(", ");
                rest.push_str(&input);
                vec![call(""), Part::Handle(Kind::Tensor, args[0]), text(rest), status()]
            }
            F::nrt_tensor_copy => vec![
                call(""),
                Part::Handle(Kind::Tensor, args[0]),
                text(format!(", {}, ", args[1])),
                Part::Handle(Kind::Tensor, args[2]),
                text(format!(", {}, {}", args[3], args[4])),
                status(),
            ],
            F::nrt_tensor_memset => vec![
                call(""),
                Part::Handle(Kind::Tensor, args[0]),
                text(format!(", {}, {}, {}", args[1], args[2] as i32, args[3])),
                status(),
            ],
            F::nrt_tensor_get_size => vec![
                call(""),
                Part::Handle(Kind::Tensor, args[0]),
                text(format!(") -> {result} NRT_SUCCESS")),
            ],
            F::nrt_get_version => with_output(vec![call("")], text("<version>")),
            F::nrt_get_total_nc_count | F::nrt_get_visible_nc_count => {
                let count = out_u32(args[0]).unwrap_or(0);
                with_output(vec![call("")], text(count.to_string()))
            }
            F::nrt_get_model_nc_count
            | F::nrt_get_model_vnc_count
            | F::nrt_get_model_instance_count => {
                let count = out_u32(args[1]).unwrap_or(0);
                with_output(
                    vec![call(""), Part::Handle(Kind::Model, args[0])],
                    text(count.to_string()),
                )
            }
            F::nrt_tensor_allocate_slice => with_output(
                vec![
                    call(""),
                    Part::Handle(Kind::Tensor, args[0]),
                    text(format!(", {}, {}, {}", args[1], args[2], c_name(args[3]))),
                ],
                Part::New(Kind::Tensor, out_word(args[4])),
            ),
            F::nrt_async_drain_queued_execs => {
                vec![call(&format!("{}", args[0] as i32)), status()]
            }
            F::nrta_error_tracker_create => with_output(
                vec![call(&format!("{}", args[0] as u32))],
                Part::New(Kind::Tracker, out_word(args[1])),
            ),
            F::nrta_error_tracker_destroy => {
                vec![call(""), Part::Released(Kind::Tracker, args[0]), text(") -> NRT_SUCCESS")]
            }
            F::nrta_tensor_write => {
                let mut parts = vec![
                    call(""),
                    Part::Handle(Kind::Tensor, args[0]),
                    text(format!(", {}, {input}, {}, ", args[2], args[4] as i32)),
                ];
                parts.push(tracker(args[5]));
                with_output(parts, Part::New(Kind::Seq, out_u64(args[6])))
            }
            F::nrta_tensor_read => {
                let mut parts = vec![
                    call(""),
                    Part::Handle(Kind::Tensor, args[1]),
                    text(format!(", {}, {}, {}, ", args[2], args[3], args[4] as i32)),
                ];
                parts.push(tracker(args[5]));
                with_output(parts, Part::New(Kind::Seq, out_u64(args[6])))
            }
            F::nrta_execute_schedule => {
                let mut parts = vec![
                    call(""),
                    Part::Handle(Kind::Model, args[0]),
                    text(", "),
                    Part::Handle(Kind::Set, args[1]),
                    text(", "),
                    Part::Handle(Kind::Set, args[2]),
                    text(format!(", {}, ", args[3] as i32)),
                ];
                parts.push(tracker(args[4]));
                with_output(parts, Part::New(Kind::Seq, out_u64(args[5])))
            }
            F::nrta_is_completed => {
                // Not a trace line (polls depend on timing, as in TracingRuntime): the first
                // `true` for a request is a `# completed` line, where a replay waits for it.
                let done = args[1] != 0 && (args[1] as usize as *const u8).read() != 0;
                if ok && done && crate::sink::known(Kind::Seq, args[0]) {
                    vec![text(COMPLETED_PREFIX), Part::Released(Kind::Seq, args[0])]
                } else {
                    return;
                }
            }
            F::nrt_get_total_vnc_count | F::nrt_get_visible_vnc_count => {
                let count = out_u32(args[0]).unwrap_or(0);
                with_output(vec![call("")], text(count.to_string()))
            }
            _ => generic(function, result),
        }
    };
    record(parts);
    if let Some(tensor) = exposes {
        crate::exposed::expose(tensor);
    }
    if ok {
        match function {
            F::nrt_tensor_write | F::nrt_tensor_memset => crate::exposed::refresh(args[0]),
            F::nrt_tensor_copy => crate::exposed::refresh(args[2]),
            _ => {}
        }
    }
}

/// The text of a tensor info array the real library filled.
///
/// # Safety
/// `array` is NULL or an `nrt_tensor_info_array_t` the library made.
unsafe fn tensor_info(array: u64) -> String {
    if array == 0 {
        return "[]".to_owned();
    }
    let base = array as usize as *const u8;
    // SAFETY: the array starts with its `uint64_t` count, then the entries.
    let count = unsafe { (base as *const u64).read_unaligned() };
    let numbering = version().map_or(DtypeNumbering::Legacy, |(major, minor)| {
        DtypeNumbering::for_runtime_version(major, minor)
    });
    let mut entries = Vec::new();
    for index in 0..count as usize {
        // SAFETY: entry `index` of `count`, after the header.
        let entry: NrtTensorInfoC = unsafe {
            (base.add(INFO_ARRAY_HEADER + index * size_of::<NrtTensorInfoC>())
                as *const NrtTensorInfoC)
                .read_unaligned()
        };
        let name_bytes: Vec<u8> =
            entry.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        let shape = if entry.shape.is_null() {
            Vec::new()
        } else {
            // SAFETY: `ndim` dimensions, owned by the array.
            unsafe { std::slice::from_raw_parts(entry.shape, entry.ndim as usize) }.to_vec()
        };
        entries.push(TensorInfo {
            name: String::from_utf8_lossy(&name_bytes).into_owned(),
            usage: TensorUsage::from_code(entry.usage).unwrap_or(TensorUsage::Output),
            size: entry.size,
            dtype: NrtDtype::from_code(numbering, entry.dtype),
            shape,
        });
    }
    tensor_info_text(&entries)
}

/// Whether the `Runtime` call a replay makes can express these arguments: no NULL handle,
/// output or string (a replay passes real ones), and `nrt_version_t`'s own size. Other calls
/// are recorded by name and status only.
fn representable(function: LibnrtFunction, args: &[u64], before: u64) -> bool {
    use LibnrtFunction as F;
    let nonzero = |indices: &[usize]| indices.iter().all(|&index| args[index] != 0);
    match function {
        F::nrt_get_version => args[0] != 0 && args[1] == size_of::<nrt_version_t>() as u64,
        F::nrt_get_total_vnc_count
        | F::nrt_get_visible_vnc_count
        | F::nrt_get_total_nc_count
        | F::nrt_get_visible_nc_count => nonzero(&[0]),
        F::nrt_get_model_nc_count
        | F::nrt_get_model_vnc_count
        | F::nrt_get_model_instance_count => nonzero(&[0, 1]),
        F::nrt_tensor_allocate_slice => nonzero(&[0, 3, 4]),
        F::nrta_error_tracker_create => nonzero(&[1]),
        F::nrta_error_tracker_destroy => nonzero(&[0]),
        F::nrta_tensor_write => nonzero(&[0, 1, 6]),
        F::nrta_tensor_read => nonzero(&[0, 1, 6]),
        F::nrta_execute_schedule => nonzero(&[0, 1, 2, 5]),
        F::nrta_is_completed => nonzero(&[1]),
        F::nrt_init => nonzero(&[1, 2]) && Framework::from_code(args[0] as u32).is_some(),
        F::nrt_load => nonzero(&[0, 4]),
        F::nrt_load_collectives => nonzero(&[0, 6]),
        F::nrt_unload | F::nrt_tensor_get_size | F::nrt_tensor_get_va | F::nrt_tensor_memset => {
            nonzero(&[0])
        }
        F::nrt_execute | F::nrt_execute_repeat => nonzero(&[0, 1, 2]),
        F::nrt_allocate_tensor_set => nonzero(&[0]),
        F::nrt_destroy_tensor_set | F::nrt_tensor_free => args[0] != 0 && before != 0,
        F::nrt_add_tensor_to_tensor_set => nonzero(&[0, 1, 2]),
        F::nrt_get_tensor_from_tensor_set => nonzero(&[0, 1, 2]),
        F::nrt_tensor_allocate => {
            nonzero(&[3, 4]) && Placement::from_code(args[0] as u32).is_some()
        }
        F::nrt_tensor_allocate_empty => nonzero(&[0, 1]),
        F::nrt_tensor_attach_buffer => nonzero(&[0, 1]),
        F::nrt_tensor_read | F::nrt_tensor_write => nonzero(&[0, 1]),
        F::nrt_tensor_copy => nonzero(&[0, 2]),
        F::nrt_get_model_tensor_info => nonzero(&[0, 1]),
        _ => true,
    }
}

/// `name(…) -> STATUS` (or `-> VALUE` / nothing for functions without a status).
fn generic(function: LibnrtFunction, result: u64) -> Vec<Part> {
    let status = function.returns_status().then(|| status_name(result));
    vec![text(call_line(function.trace_name(), UNRECORDED_ARGS, status.as_deref()))]
}

/// A function the real library lacks (or no real library): recorded, with the status the
/// caller got.
pub(crate) fn missing(function: LibnrtFunction) {
    let status = function.returns_status().then(|| status_name(1));
    let call = call_line(function.trace_name(), UNRECORDED_ARGS, status.as_deref());
    let line = format!("{call} # missing in the real library");
    record(vec![text(line)]);
}

/// The real library's major and minor version, read once.
fn version() -> Option<(u64, u64)> {
    static VERSION: std::sync::OnceLock<Option<(u64, u64)>> = std::sync::OnceLock::new();
    *VERSION.get_or_init(|| {
        let text = runtime_version();
        let mut numbers = text.split('.').map(str::parse::<u64>);
        match (numbers.next(), numbers.next()) {
            (Some(Ok(major)), Some(Ok(minor))) => Some((major, minor)),
            _ => None,
        }
    })
}

/// The real library's version (`MAJOR.MINOR.PATCH.MAINT`), for the header.
pub(crate) fn runtime_version() -> String {
    let Some(get_version) = crate::real::functions().and_then(|all| all.nrt_get_version) else {
        return "unknown".to_owned();
    };
    let mut version = std::mem::MaybeUninit::<nrt_version_t>::zeroed();
    // SAFETY: `version` is a zeroed `nrt_version_t` of the size passed; `nrt_get_version` is
    // callable before `nrt_init`.
    let status = unsafe { get_version(version.as_mut_ptr(), size_of::<nrt_version_t>()) };
    if status != 0 {
        return format!("unknown ({})", status_name(u64::from(status)));
    }
    // SAFETY: written by the library (and zero-initialised before).
    let version = unsafe { version.assume_init() };
    format!("{}.{}.{}.{}", version.major, version.minor, version.patch, version.maintenance)
}
