//! The C side of the data: struct layouts, caller memory, status strings, and the `malloc`ed
//! string arrays handed to callers (which the public headers let them release with `free`).

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_void};
use std::mem::size_of;
use std::ptr;
use std::sync::OnceLock;

pub(crate) use abi::c_layout::{NrtTensorInfoC, NrtVersionC};
use abi::dtype::DtypeNumbering;
use abi::runtime::{ExternalBuffer, NrtVersion, TensorInfo};
use abi::status::NrtStatus;

use crate::status::SUCCESS;

/// Bytes before the first entry of `nrt_tensor_info_array_t` (the `uint64_t` count).
const INFO_HEADER: usize = abi::c_layout::INFO_ARRAY_HEADER;
const INFO_ENTRY: usize = size_of::<NrtTensorInfoC>();

/// `text` as a NUL-terminated C array, cut to fit.
fn c_array<const N: usize>(text: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    for (slot, &byte) in out.iter_mut().zip(text.as_bytes().iter().take(N - 1)) {
        *slot = byte as c_char;
    }
    out
}

/// The C struct for `version`; text fields are cut to 127 and 63 bytes.
pub(crate) fn version_c(version: &NrtVersion) -> NrtVersionC {
    NrtVersionC {
        major: version.major,
        minor: version.minor,
        patch: version.patch,
        maintenance: version.maintenance,
        detail: c_array(&version.detail),
        git_hash: c_array(&version.git_hash),
    }
}

/// An `nrt_tensor_info_array_t` owned by Rust: the count, the entries, and the shape arrays they
/// point at, alive until `nrt_free_model_tensor_info`.
pub(crate) struct InfoArray {
    /// `u64` words, so the block is 8-byte aligned like the C struct.
    words: Box<[u64]>,
    /// Referenced from the entries; a boxed slice's heap block never moves.
    _shapes: Vec<Box<[u32]>>,
}

impl InfoArray {
    /// The array for `infos` (inputs first, then outputs, as the runtime gives them), with dtypes
    /// numbered as `numbering` says (0 where that numbering has no code).
    pub(crate) fn new(infos: &[TensorInfo], numbering: DtypeNumbering) -> InfoArray {
        let n_bytes = INFO_HEADER + infos.len() * INFO_ENTRY;
        let mut words = vec![0u64; n_bytes / 8].into_boxed_slice();
        words[0] = infos.len() as u64;
        let base = words.as_mut_ptr().cast::<u8>();
        let mut shapes = Vec::with_capacity(infos.len());
        for (i, info) in infos.iter().enumerate() {
            let mut shape = info.shape.clone().into_boxed_slice();
            let entry = NrtTensorInfoC {
                name: c_array(&info.name),
                usage: info.usage.code(),
                size: info.size,
                dtype: info.dtype.code(numbering).unwrap_or(0),
                shape: if shape.is_empty() { ptr::null_mut() } else { shape.as_mut_ptr() },
                ndim: shape.len() as u32,
            };
            // SAFETY: entry `i` occupies bytes `8 + 296 i .. 8 + 296 (i + 1)` of the `n_bytes`
            // block, which is 8-byte aligned like `NrtTensorInfoC` (296 is a multiple of 8).
            unsafe {
                ptr::write(base.add(INFO_HEADER + i * INFO_ENTRY).cast::<NrtTensorInfoC>(), entry)
            };
            shapes.push(shape);
        }
        InfoArray { words, _shapes: shapes }
    }

    /// The address handed to C.
    pub(crate) fn address(&self) -> usize {
        self.words.as_ptr() as usize
    }
}

/// Caller memory attached with `nrt_tensor_attach_buffer`, used in place.
///
/// libnrt's contract: the caller keeps the buffer alive and in place while a tensor uses it.
/// The simulator reaches it only through these methods, after checking the range.
pub(crate) struct CallerBuffer {
    address: usize,
    len: usize,
}

impl CallerBuffer {
    /// # Safety
    /// `address` must point at `len` bytes that stay readable and writable, and in place, for
    /// as long as any tensor uses the buffer (libnrt's contract for attached buffers).
    pub(crate) unsafe fn new(address: usize, len: usize) -> CallerBuffer {
        CallerBuffer { address, len }
    }

    fn fits(&self, offset: usize, n: usize) -> bool {
        offset.checked_add(n).is_some_and(|end| end <= self.len)
    }
}

impl ExternalBuffer for CallerBuffer {
    fn len(&self) -> usize {
        self.len
    }

    fn read_at(&self, offset: usize, out: &mut [u8]) {
        if self.fits(offset, out.len()) {
            // SAFETY: the range is inside the caller's buffer, valid by the contract of
            // `CallerBuffer::new`; `ptr::copy` allows the caller to have attached memory that
            // overlaps `out` (another tensor's storage).
            unsafe { ptr::copy((self.address + offset) as *const u8, out.as_mut_ptr(), out.len()) }
        }
    }

    fn write_at(&self, offset: usize, data: &[u8]) {
        if self.fits(offset, data.len()) {
            // SAFETY: as in `read_at`.
            unsafe { ptr::copy(data.as_ptr(), (self.address + offset) as *mut u8, data.len()) }
        }
    }

    fn address(&self) -> usize {
        self.address
    }
}

/// `size` zero bytes, or `None` when that memory cannot be had (a size from a caller must never
/// abort the process).
pub(crate) fn zeroed(size: usize) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(size).ok()?;
    bytes.resize(size, 0);
    Some(bytes)
}

/// What `nrt_get_status_as_str` returns for a code no table knows.
pub(crate) const UNKNOWN_STATUS: &CStr = c"NRT_STATUS_UNKNOWN";

/// The static identifier of `code` (`"NRT_EXEC_COMPLETED_WITH_NUM_ERR"`), or
/// [`UNKNOWN_STATUS`].
pub(crate) fn status_text(code: u32) -> &'static CStr {
    static TABLE: OnceLock<HashMap<u32, CString>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        NrtStatus::ALL
            .iter()
            .filter_map(|status| {
                let ident = status.identifier()?;
                Some((status.code(), CString::new(ident).ok()?))
            })
            .collect()
    });
    table.get(&code).map_or(UNKNOWN_STATUS, CString::as_c_str)
}

unsafe extern "C" {
    pub(crate) fn malloc(size: usize) -> *mut c_void;
    pub(crate) fn free(pointer: *mut c_void);
}

/// `items` as a `malloc`ed array of `malloc`ed C strings; NULL when memory runs out.
pub(crate) fn c_strings(items: &[&str]) -> *mut *const c_char {
    // SAFETY: `malloc` of at least one pointer; checked for NULL below.
    let array =
        unsafe { malloc(size_of::<*const c_char>() * items.len().max(1)) }.cast::<*const c_char>();
    if array.is_null() {
        return ptr::null_mut();
    }
    for (i, item) in items.iter().enumerate() {
        // SAFETY: `malloc` of the string and its NUL; checked for NULL.
        let copy = unsafe { malloc(item.len() + 1) }.cast::<u8>();
        if copy.is_null() {
            free_strings(array, i);
            return ptr::null_mut();
        }
        // SAFETY: `copy` has `len + 1` bytes; `array` has room for `items.len()` pointers.
        unsafe {
            ptr::copy_nonoverlapping(item.as_ptr(), copy, item.len());
            *copy.add(item.len()) = 0;
            *array.add(i) = copy.cast::<c_char>();
        }
    }
    array
}

/// Frees the first `count` strings of `array` and the array.
pub(crate) fn free_strings(array: *mut *const c_char, count: usize) {
    if array.is_null() {
        return;
    }
    for i in 0..count {
        // SAFETY: `array` holds `count` pointers from `malloc` (or from the caller's own, as
        // the public header allows the caller to free them either way).
        unsafe { free((*array.add(i)).cast_mut().cast::<c_void>()) };
    }
    // SAFETY: the array itself came from `malloc`.
    unsafe { free(array.cast::<c_void>()) };
}

/// Writes a string array and its count through the caller's pointers.
///
/// # Safety
/// Both pointers were checked non-NULL and are the caller's variables.
pub(crate) unsafe fn put_strings(
    items: &[&str],
    out: *mut *mut *const c_char,
    count: *mut usize,
) -> u32 {
    let array = c_strings(items);
    if array.is_null() {
        return crate::status::RESOURCE;
    }
    // SAFETY: by this function's contract.
    unsafe {
        *out = array;
        *count = items.len();
    }
    SUCCESS
}

#[cfg(test)]
mod tests {
    use abi::dtype::NrtDtype;
    use abi::runtime::TensorUsage;

    use super::*;

    #[test]
    fn status_text_is_the_bare_identifier_and_unknown_codes_survive() {
        assert_eq!(status_text(1003).to_str().unwrap(), "NRT_EXEC_COMPLETED_WITH_NUM_ERR");
        assert_eq!(status_text(0).to_str().unwrap(), "NRT_SUCCESS");
        assert_eq!(status_text(8), UNKNOWN_STATUS);
        assert_eq!(status_text(u32::MAX), UNKNOWN_STATUS);
    }

    #[test]
    fn info_array_lays_out_count_entries_and_shapes() {
        let infos = [
            TensorInfo {
                name: "x".repeat(300),
                usage: TensorUsage::Input,
                size: 16,
                dtype: NrtDtype::Float32,
                shape: vec![2, 2],
            },
            TensorInfo {
                name: "output0".into(),
                usage: TensorUsage::Output,
                size: 4,
                dtype: NrtDtype::Float32,
                shape: vec![],
            },
        ];
        let array = InfoArray::new(&infos, DtypeNumbering::Legacy);
        let words = &array.words;
        assert_eq!(words[0], 2);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let entry = |i: usize| &bytes[8 + 296 * i..8 + 296 * (i + 1)];
        assert_eq!(&entry(0)[..255], "x".repeat(255).as_bytes());
        assert_eq!(entry(0)[255], 0, "the name is cut and NUL-terminated");
        assert_eq!(u32::from_le_bytes(entry(1)[256..260].try_into().unwrap()), 1, "usage OUTPUT");
        assert_eq!(u64::from_le_bytes(entry(0)[264..272].try_into().unwrap()), 16);
        assert_eq!(u32::from_le_bytes(entry(0)[272..276].try_into().unwrap()), 1, "legacy FLOAT32");
        assert_eq!(u32::from_le_bytes(entry(0)[288..292].try_into().unwrap()), 2);
        assert_eq!(u64::from_le_bytes(entry(1)[280..288].try_into().unwrap()), 0, "no shape: NULL");
        let shape = u64::from_le_bytes(entry(0)[280..288].try_into().unwrap()) as usize;
        assert_eq!(shape, array._shapes[0].as_ptr() as usize);
    }
}
