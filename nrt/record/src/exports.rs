//! One forwarding function and one exported symbol per function of the table.
//!
//! The forwarder looks the real function up ([`crate::real`]), captures its arguments as raw
//! words, calls it, and hands arguments and result to [`crate::lines`]. The symbols are
//! trampolines (`abi::c_trampoline!`, as the simulator's library defines its own), versioned by
//! the linker script.

#![allow(non_camel_case_types, unused_imports, clippy::too_many_arguments)]

use abi::c_layout::c_types::*;
use abi::functions::LibnrtFunction;
use std::ffi::c_void;

/// A C value as one raw word, for [`crate::lines`].
pub(crate) trait Raw {
    /// The value's bits, zero-extended.
    fn raw(&self) -> u64;
}

macro_rules! raw_int {
    ($($ty:ty),*) => {$(
        impl Raw for $ty {
            fn raw(&self) -> u64 {
                *self as u64
            }
        }
    )*};
}
raw_int!(u32, i32, u64, i64, usize);

impl Raw for bool {
    fn raw(&self) -> u64 {
        u64::from(*self)
    }
}

impl<T> Raw for *const T {
    fn raw(&self) -> u64 {
        *self as usize as u64
    }
}

impl<T> Raw for *mut T {
    fn raw(&self) -> u64 {
        *self as usize as u64
    }
}

impl Raw for NRT_ASYNC_EXEC_STATUS_CALLBACK {
    fn raw(&self) -> u64 {
        self.map_or(0, |callback| callback as usize as u64)
    }
}

impl Raw for () {
    fn raw(&self) -> u64 {
        0
    }
}

/// What a forwarder returns when the real library lacks the function (or could not be found):
/// `NRT_FAILURE`, NULL, 0.
pub(crate) trait Missing {
    /// The value.
    fn missing() -> Self;
}

impl Missing for u32 {
    fn missing() -> u32 {
        1
    }
}

impl Missing for usize {
    fn missing() -> usize {
        0
    }
}

impl<T> Missing for *mut T {
    fn missing() -> *mut T {
        std::ptr::null_mut()
    }
}

impl<T> Missing for *const T {
    fn missing() -> *const T {
        std::ptr::null()
    }
}

impl Missing for () {
    fn missing() {}
}

thread_local! {
    /// Whether this thread is inside a recorded call.
    static RECORDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The mark of the outermost libnrt call on this thread; nested calls (the real library calling
/// an exported name, which the preloaded recorder interposes) are forwarded unrecorded, and the
/// recorder's locks are never taken twice on one thread.
pub(crate) struct Outermost(());

impl Outermost {
    /// `None` inside a recorded call.
    pub(crate) fn enter() -> Option<Outermost> {
        RECORDING.with(|inside| (!inside.replace(true)).then_some(Outermost(())))
    }
}

impl Drop for Outermost {
    fn drop(&mut self) {
        RECORDING.with(|inside| inside.set(false));
    }
}

/// `()` for `void`, else the return type.
macro_rules! ret_or_unit {
    () => {
        ()
    };
    ($ret:ty) => {
        $ret
    };
}

/// The name every recorder exports, so that a recorder never forwards to another one (another
/// build, or a copy under another path, which the address check of `real` would not catch).
pub(crate) const MARKER: &[u8] = b"nrtsim_record_marker\0";

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
core::arch::global_asm!(
    ".section .rodata",
    ".globl nrtsim_record_marker",
    ".type nrtsim_record_marker, %object",
    "nrtsim_record_marker:",
    ".byte 1",
    ".size nrtsim_record_marker, 1",
    ".text",
);

macro_rules! forward_functions {
    ($(
        $name:ident = $header:ident [$pre:ident, $fault:ident, $avail:ident]
            fn($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;
    )*) => {
        /// The real library's functions, each `None` when it lacks the symbol.
        #[derive(Clone, Copy)]
        pub(crate) struct RealFunctions {
            $(pub(crate) $name: Option<unsafe extern "C" fn($($ty),*) $(-> $ret)?>,)*
        }

        impl RealFunctions {
            /// Looks every function up in `library`.
            pub(crate) fn resolve(library: &libloading::Library) -> RealFunctions {
                RealFunctions {$(
                    // SAFETY: the symbol, when present, is the libnrt function of this name,
                    // whose C signature is the table's.
                    $name: unsafe {
                        library
                            .get::<unsafe extern "C" fn($($ty),*) $(-> $ret)?>(
                                concat!(stringify!($name), "\0").as_bytes(),
                            )
                            .ok()
                            .map(|symbol| *symbol)
                    },
                )*}
            }
        }

        /// The address of this library's own `nrt_init` symbol; a candidate whose `nrt_init`
        /// is at this address is the recorder itself.
        pub(crate) fn own_nrt_init() -> usize {
            unsafe extern "C" {
                #[link_name = "nrt_init"]
                safe static OWN_NRT_INIT: u8;
            }
            std::ptr::addr_of!(OWN_NRT_INIT) as usize
        }

        mod forwarders {
            use super::*;
            $(
                /// Forwards to the real function and records the call.
                ///
                /// # Safety
                /// The C contract of the libnrt function of this name.
                pub(crate) unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
                    let function = LibnrtFunction::$name;
                    let Some(real) = crate::real::functions().and_then(|all| all.$name) else {
                        crate::lines::missing(function);
                        return <ret_or_unit!($($ret)?) as Missing>::missing();
                    };
                    let Some(_outermost) = Outermost::enter() else {
                        // A call the real library makes to its own exported functions while
                        // serving the client's: forwarded, not the client's, not recorded.
                        // SAFETY: the caller's contract is the real function's.
                        return unsafe { real($($arg),*) };
                    };
                    let args: &[u64] = &[$(Raw::raw(&$arg)),*];
                    // A panic in the recorder must not cross into C (that aborts the client):
                    // the call is still forwarded, the line is lost.
                    let before = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        // SAFETY: reading what the caller passes before the call is within the
                        // C contract the caller keeps (buffers valid for the sizes it gives).
                        unsafe { crate::lines::before(function, args) }
                    }))
                    .unwrap_or_default();
                    // SAFETY: the caller's contract is the real function's; arguments pass
                    // through unchanged.
                    let result = unsafe { real($($arg),*) };
                    let raw = Raw::raw(&result);
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        // SAFETY: as for `before`; outputs are used only after success.
                        unsafe { crate::lines::after(function, args, raw, before) }
                    }));
                    result
                }

                abi::c_trampoline!($name => $name);
            )*
        }
    };
}

abi::for_each_libnrt_function!(forward_functions);
