//! The libnrt functions, declared once: [`LibnrtFunction`] and its [`FunctionInfo`].
//!
//! Every layer that needs to know which libnrt functions exist derives it from the table in
//! `functions/table.rs` ([`for_each_libnrt_function!`](crate::for_each_libnrt_function)): the
//! fault-plan names (typed, so a typo is refused
//! when the plan is parsed), the trace names, the `nrt` backend's symbol table, the simulator's C
//! exports and their signature checks, the ELF test's expected symbols, and the reference page
//! `docs/libnrt-functions.md` ([`reference_page`], committed, with a freshness test).
//!
//! Design choices:
//! - **A declarative macro, not a data file.** The table is Rust tokens, so the typed form of a
//!   signature (`fn(tensor: *const nrt_tensor_t) -> usize`) is checked by the compiler wherever
//!   it is expanded, with no build step and no generated Rust to keep fresh. The C text is
//!   derived from the typed form ([`c_type`]), and the headers are tested against it.
//! - **Variants carry the C names** (`LibnrtFunction::nrt_tensor_allocate`): the identifier a
//!   reader greps for is the one in the headers.
//! - **The pre-init rule is data** ([`PreInit`]), read from the public header comments, and the
//!   simulator's one lifecycle gate reads it.

#![allow(non_camel_case_types)]

use std::fmt::Write as _;

mod table;
pub mod trampoline;

/// The public header that declares a function (`<nrt/NAME.h>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Header {
    /// `nrt/nrt.h`.
    nrt,
    /// `nrt/nrt_experimental.h`.
    nrt_experimental,
    /// `nrt/nrt_async.h`.
    nrt_async,
    /// `nrt/nrt_profile.h`.
    nrt_profile,
    /// `nrt/nrt_sys_trace.h`.
    nrt_sys_trace,
    /// `nrt/nrt_async_sendrecv.h`.
    nrt_async_sendrecv,
    /// `nrt/ndebug_stream.h` (public since 2026-01, runtime 2.28).
    ndebug_stream,
    /// `nrt/nrt_version.h`.
    nrt_version,
    /// `nrt/nrt_status.h`.
    nrt_status,
}

impl Header {
    /// Every header, in the order of the table.
    pub const ALL: &'static [Header] = &[
        Header::nrt,
        Header::nrt_experimental,
        Header::nrt_async,
        Header::nrt_profile,
        Header::nrt_sys_trace,
        Header::nrt_async_sendrecv,
        Header::ndebug_stream,
        Header::nrt_version,
        Header::nrt_status,
    ];

    /// The include path, such as `nrt/nrt_async.h`.
    pub fn path(self) -> &'static str {
        match self {
            Header::nrt => "nrt/nrt.h",
            Header::nrt_experimental => "nrt/nrt_experimental.h",
            Header::nrt_async => "nrt/nrt_async.h",
            Header::nrt_profile => "nrt/nrt_profile.h",
            Header::nrt_sys_trace => "nrt/nrt_sys_trace.h",
            Header::nrt_async_sendrecv => "nrt/nrt_async_sendrecv.h",
            Header::ndebug_stream => "nrt/ndebug_stream.h",
            Header::nrt_version => "nrt/nrt_version.h",
            Header::nrt_status => "nrt/nrt_status.h",
        }
    }
}

/// What a function does when it is called before `nrt_init` (or after `nrt_close`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PreInit {
    /// Refused: `NRT_UNINITIALIZED` before `nrt_init`, `NRT_CLOSED` after `nrt_close`.
    Gated,
    /// Documented as callable before `nrt_init` (a header comment, or docs/abi-facts.md §4 for
    /// `nrt_get_version`); it works in every lifecycle state.
    Allowed,
    /// Documented as callable only before `nrt_init` (`nrt_set_pool_eng_ucode`).
    Required,
    /// Not a runtime call: releases, status strings and the option objects of the profiling and
    /// trace APIs touch no runtime state, so no lifecycle applies (our reading; the headers say
    /// nothing).
    Ungated,
}

/// Whether a fault plan may name the function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Faults {
    /// A rule may make calls of it fail.
    Faults,
    /// Refused by the fault-plan parser (releases, pure helpers, interfaces a simulator lacks).
    NoFaults,
}

/// Whether every libnrt release the harness supports exports the function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Availability {
    /// In every supported release (the API subset of docs/abi-facts.md §4): a library without it is
    /// refused by the `nrt` backend.
    Always,
    /// In recent releases only: a missing symbol is tolerated, and calling it is an error.
    Optional,
}

/// One parameter of a C function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parameter {
    /// The name in the headers.
    pub name: &'static str,
    /// The type as written in the table (`* mut nrt_tensor_t`), see [`c_type`].
    pub rust_type: &'static str,
}

/// Everything the table says about one function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionInfo {
    /// The C name, such as `nrt_tensor_allocate`.
    pub name: &'static str,
    /// The header that declares it.
    pub header: Header,
    /// Its pre-init rule.
    pub pre_init: PreInit,
    /// Whether faults may be injected.
    pub faults: Faults,
    /// Whether every supported release has it.
    pub availability: Availability,
    /// Parameters, in order.
    pub parameters: &'static [Parameter],
    /// The return type as written in the table; `None` for `void`.
    pub returns: Option<&'static str>,
}

/// `None` for `void`, else the return type's text.
macro_rules! return_type {
    () => {
        None
    };
    ($ret:ty) => {
        Some(stringify!($ret))
    };
}

macro_rules! define_functions {
    ($(
        $name:ident = $header:ident [$pre:ident, $fault:ident, $avail:ident]
            fn($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;
    )*) => {
        /// A libnrt function of the public headers.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum LibnrtFunction {
            $(
                #[doc = concat!("`", stringify!($name), "` (`", stringify!($header), ".h`).")]
                $name,
            )*
        }

        impl LibnrtFunction {
            /// Every function, in table order (header by header).
            pub const ALL: &'static [LibnrtFunction] = &[$(LibnrtFunction::$name,)*];

            /// What the table says about this function.
            pub fn info(self) -> &'static FunctionInfo {
                match self {
                    $(LibnrtFunction::$name => &FunctionInfo {
                        name: stringify!($name),
                        header: Header::$header,
                        pre_init: PreInit::$pre,
                        faults: Faults::$fault,
                        availability: Availability::$avail,
                        parameters: &[$(Parameter {
                            name: stringify!($arg),
                            rust_type: stringify!($ty),
                        },)*],
                        returns: return_type!($($ret)?),
                    },)*
                }
            }
        }
    };
}

crate::for_each_libnrt_function!(define_functions);

/// Why a name is not a libnrt function (or not one a fault plan may name).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FunctionNameError {
    /// No function of the table has this name.
    #[error(
        "{name:?} is not a libnrt function, expected a name of the public headers such as nrt_execute"
    )]
    Unknown {
        /// The name found.
        name: String,
    },
}

impl LibnrtFunction {
    /// The C name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The name in canonical traces: the C name without its `nrt_` prefix (`tensor_allocate`);
    /// `nrta_` functions keep their prefix.
    pub fn trace_name(self) -> &'static str {
        let name = self.name();
        name.strip_prefix("nrt_").unwrap_or(name)
    }

    /// The function with this C name.
    ///
    /// # Errors
    /// [`FunctionNameError::Unknown`] for a name that is not in the table.
    pub fn from_name(name: &str) -> Result<LibnrtFunction, FunctionNameError> {
        LibnrtFunction::ALL
            .iter()
            .copied()
            .find(|function| function.name() == name)
            .ok_or_else(|| FunctionNameError::Unknown { name: name.to_owned() })
    }

    /// Whether the function returns `NRT_STATUS`.
    pub fn returns_status(self) -> bool {
        self.info().returns == Some("NRT_STATUS")
    }

    /// Whether a fault plan may name it.
    pub fn is_faultable(self) -> bool {
        self.info().faults == Faults::Faults
    }

    /// The functions a fault plan may name, in table order.
    pub fn faultable() -> impl Iterator<Item = LibnrtFunction> {
        LibnrtFunction::ALL.iter().copied().filter(|function| function.is_faultable())
    }

    /// The functions `header` declares, in table order.
    pub fn in_header(header: Header) -> impl Iterator<Item = LibnrtFunction> {
        LibnrtFunction::ALL.iter().copied().filter(move |function| function.info().header == header)
    }
}

impl std::fmt::Display for LibnrtFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The C spelling of a type written in the table: `* const c_char` → `const char *`,
/// `* mut * mut nrt_model_t` → `nrt_model_t **`, `usize` → `size_t`.
///
/// Only the pointee of the innermost pointer may be `const` (the table has no `T *const`).
pub fn c_type(rust_type: &str) -> String {
    let mut rest = rust_type.trim();
    let mut stars = 0usize;
    let mut innermost_const = false;
    while let Some(after) = rest.strip_prefix('*') {
        let after = after.trim_start();
        if let Some(after) = after.strip_prefix("const ") {
            innermost_const = true;
            rest = after.trim_start();
        } else if let Some(after) = after.strip_prefix("mut ") {
            innermost_const = false;
            rest = after.trim_start();
        } else {
            rest = after;
        }
        stars += 1;
    }
    let base = match rest {
        "c_char" => "char",
        "c_int" => "int",
        "c_void" => "void",
        "u8" => "uint8_t",
        "u16" => "uint16_t",
        "u32" => "uint32_t",
        "u64" => "uint64_t",
        "i32" => "int32_t",
        "i64" => "int64_t",
        "usize" => "size_t",
        other => other,
    };
    let mut text = String::new();
    if innermost_const {
        text.push_str("const ");
    }
    text.push_str(base);
    if stars > 0 {
        text.push(' ');
        text.push_str(&"*".repeat(stars));
    }
    text
}

/// `type name`, with the pointer stars against the name as C headers write it.
fn c_declarator(rust_type: &str, name: &str) -> String {
    let ty = c_type(rust_type);
    if ty.ends_with('*') { format!("{ty}{name}") } else { format!("{ty} {name}") }
}

impl FunctionInfo {
    /// The C prototype without the trailing `;`, in one line:
    /// `size_t nrt_tensor_get_size(const nrt_tensor_t *tensor)`; `(void)` for no parameter.
    pub fn c_declaration(&self) -> String {
        let parameters = if self.parameters.is_empty() {
            "void".to_owned()
        } else {
            self.parameters
                .iter()
                .map(|parameter| c_declarator(parameter.rust_type, parameter.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let call = format!("{}({parameters})", self.name);
        c_declarator(self.returns.unwrap_or("c_void"), &call)
    }
}

/// The line that opens the block of function prototypes in each of our C headers
/// (`sim/capi/include/nrt/*.h`); `cargo xtask codegen` writes the block from the table.
pub const PROTOTYPES_BEGIN: &str =
    "/* Generated from abi/src/functions/table.rs by `cargo xtask codegen`; do not edit. */";

/// The line that closes the block [`PROTOTYPES_BEGIN`] opens.
pub const PROTOTYPES_END: &str = "/* End of the generated prototypes. */";

/// The prototypes of `header`'s functions, one line each in table order, as the block between
/// [`PROTOTYPES_BEGIN`] and [`PROTOTYPES_END`] holds them.
pub fn header_prototypes(header: Header) -> String {
    let mut block = String::new();
    for function in LibnrtFunction::in_header(header) {
        let _ = writeln!(block, "{};", function.info().c_declaration());
    }
    block
}

/// The reference page `docs/libnrt-functions.md`: one table per header, generated from the
/// function table (a test keeps the committed page fresh).
pub fn reference_page() -> String {
    let mut page = String::new();
    page.push_str("<!-- Generated from abi/src/functions/table.rs by `cargo xtask codegen`; do not edit. -->\n");
    page.push_str("# The libnrt functions\n\n");
    let _ = writeln!(
        page,
        "{} functions, as the public libnrt headers declare them, and what the simulator's \
         `libnrt.so.1` and the `nrt` backend know about each. Columns:\n",
        LibnrtFunction::ALL.len()
    );
    page.push_str(
        "- **before init**: `gated` calls return NRT_UNINITIALIZED before `nrt_init` and \
         NRT_CLOSED after `nrt_close`; `allowed` calls work in any state (a header comment says \
         so); `required` calls only make sense before `nrt_init`; `ungated` calls touch no \
         runtime state (releases, status strings, option objects).\n",
    );
    page.push_str(
        "- **faults**: whether an `NRTSIM_FAULTS` rule may name the function.\n\
         - **releases**: `all` if every supported libnrt exports it (the `nrt` backend refuses a \
         library without it), `recent` otherwise.\n\n",
    );
    for &header in Header::ALL {
        let _ = writeln!(page, "## `{}`\n", header.path());
        page.push_str("| function | declaration | before init | faults | releases |\n");
        page.push_str("|---|---|---|---|---|\n");
        for function in LibnrtFunction::in_header(header) {
            let info = function.info();
            let pre_init = match info.pre_init {
                PreInit::Gated => "gated",
                PreInit::Allowed => "allowed",
                PreInit::Required => "required",
                PreInit::Ungated => "ungated",
            };
            let faults = if info.faults == Faults::Faults { "yes" } else { "no" };
            let releases = if info.availability == Availability::Always { "all" } else { "recent" };
            let _ = writeln!(
                page,
                "| `{}` | `{};` | {pre_init} | {faults} | {releases} |",
                info.name,
                info.c_declaration()
            );
        }
        page.push('\n');
    }
    page
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn the_table_has_the_126_functions_of_the_public_headers() {
        let per_header: Vec<(Header, usize)> =
            Header::ALL.iter().map(|&h| (h, LibnrtFunction::in_header(h).count())).collect();
        assert_eq!(
            per_header,
            vec![
                (Header::nrt, 42),
                (Header::nrt_experimental, 13),
                (Header::nrt_async, 12),
                (Header::nrt_profile, 25),
                (Header::nrt_sys_trace, 18),
                (Header::nrt_async_sendrecv, 11),
                (Header::ndebug_stream, 3),
                (Header::nrt_version, 1),
                (Header::nrt_status, 1),
            ]
        );
        let names: HashSet<&str> = LibnrtFunction::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), 126, "names are unique");
    }

    #[test]
    fn the_abi_facts_subset_is_always_available() {
        let always: Vec<&str> = LibnrtFunction::ALL
            .iter()
            .filter(|f| f.info().availability == Availability::Always)
            .map(|f| f.name())
            .collect();
        assert_eq!(always.len(), 28, "{always:?}");
        for name in ["nrt_init", "nrt_execute_repeat", "nrt_get_status_as_str"] {
            assert!(always.contains(&name), "{name}");
        }
    }

    #[test]
    fn pre_init_rules_follow_the_header_comments() {
        let allowed: Vec<&str> = LibnrtFunction::ALL
            .iter()
            .filter(|f| f.info().pre_init == PreInit::Allowed)
            .map(|f| f.name())
            .collect();
        assert_eq!(
            allowed,
            [
                "nrt_init",
                "nrt_get_total_nc_count",
                "nrt_get_total_vnc_count",
                "nrt_get_visible_nc_count",
                "nrt_get_visible_vnc_count",
                "nrt_get_version"
            ]
        );
        assert_eq!(LibnrtFunction::nrt_set_pool_eng_ucode.info().pre_init, PreInit::Required);
        assert_eq!(LibnrtFunction::nrt_execute.info().pre_init, PreInit::Gated);
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_typed_errors() {
        for &function in LibnrtFunction::ALL {
            assert_eq!(LibnrtFunction::from_name(function.name()), Ok(function));
        }
        let err = LibnrtFunction::from_name("nrt_exec").unwrap_err();
        assert_eq!(err, FunctionNameError::Unknown { name: "nrt_exec".into() });
        assert!(err.to_string().contains("\"nrt_exec\""), "{err}");
        assert_eq!(LibnrtFunction::nrt_tensor_allocate.trace_name(), "tensor_allocate");
        assert_eq!(LibnrtFunction::nrta_is_completed.trace_name(), "nrta_is_completed");
    }

    #[test]
    fn c_types_are_spelled_as_in_c() {
        let cases = [
            ("* const c_char", "const char *"),
            ("*mut *mut nrt_model_t", "nrt_model_t **"),
            ("* mut * mut * const c_char", "const char ***"),
            ("usize", "size_t"),
            ("i32", "int32_t"),
            ("c_int", "int"),
            ("bool", "bool"),
            ("NRT_STATUS", "NRT_STATUS"),
        ];
        for (rust, c) in cases {
            assert_eq!(c_type(rust), c, "{rust}");
        }
    }

    #[test]
    fn declarations_read_as_c() {
        let cases = [
            (LibnrtFunction::nrt_close, "void nrt_close(void)"),
            (
                LibnrtFunction::nrt_tensor_get_size,
                "size_t nrt_tensor_get_size(const nrt_tensor_t *tensor)",
            ),
            (
                LibnrtFunction::nrt_tensor_get_va,
                "void *nrt_tensor_get_va(const nrt_tensor_t *tensor)",
            ),
            (
                LibnrtFunction::nrt_get_status_as_str,
                "const char *nrt_get_status_as_str(NRT_STATUS status)",
            ),
            (
                LibnrtFunction::nrt_sys_trace_get_event_types,
                "NRT_STATUS nrt_sys_trace_get_event_types(const char ***event_types, size_t *count)",
            ),
        ];
        for (function, expected) in cases {
            assert_eq!(function.info().c_declaration(), expected);
        }
        assert!(LibnrtFunction::nrt_execute.returns_status());
        assert!(!LibnrtFunction::nrt_tensor_free.returns_status());
    }

    #[test]
    fn releases_and_pure_helpers_are_not_faultable() {
        for function in [
            LibnrtFunction::nrt_close,
            LibnrtFunction::nrt_free_model_tensor_info,
            LibnrtFunction::nrt_get_status_as_str,
            LibnrtFunction::nrt_sys_trace_buffer_free,
        ] {
            assert!(!function.is_faultable(), "{function}");
        }
        assert!(LibnrtFunction::faultable().any(|f| f == LibnrtFunction::nrt_execute));
    }
}
