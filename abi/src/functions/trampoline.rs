//! The one definition of an exported C symbol as a trampoline, for the two libraries that export
//! libnrt's functions (the simulator's `libnrt.so.1` and the recorder).
//!
//! Why a trampoline: rustc gives a cdylib an anonymous version script listing every
//! `#[no_mangle]` function, and such a symbol stays unversioned whatever a second script says.
//! The Rust functions are therefore ordinary (mangled, not exported), and the C names exist only
//! in `global_asm!`, where rustc's script does not see them; each library's linker script then
//! versions them (`NRT_2.0.0`) and makes everything else local. Unlike `--defsym` aliases, each
//! symbol is a real function with a type and a size in `.dynsym`, and no internal name leaks.
//!
//! The macro expands in the crate that calls it, so this crate stays free of assembly and of
//! `unsafe`.

/// The tail jump of a trampoline to its `{target}` operand, on this architecture.
#[doc(hidden)]
#[cfg(target_arch = "x86_64")]
#[macro_export]
macro_rules! __trampoline_jump {
    () => {
        "jmp {target}"
    };
}

/// The tail jump of a trampoline to its `{target}` operand, on this architecture.
#[doc(hidden)]
#[cfg(target_arch = "aarch64")]
#[macro_export]
macro_rules! __trampoline_jump {
    () => {
        "b {target}"
    };
}

/// Defines the global C symbol `$name` as a function of its own whose one instruction jumps to
/// the Rust function `$target` (a path), on Linux on x86-64 and aarch64; elsewhere it defines
/// nothing. See the [module documentation](self) for why.
#[macro_export]
macro_rules! c_trampoline {
    ($name:ident => $target:path) => {
        #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
        core::arch::global_asm!(
            ".text",
            concat!(".globl ", stringify!($name)),
            concat!(".type ", stringify!($name), ", %function"),
            ".p2align 4",
            concat!(stringify!($name), ":"),
            $crate::__trampoline_jump!(),
            concat!(".size ", stringify!($name), ", . - ", stringify!($name)),
            target = sym $target,
        );
    };
}
