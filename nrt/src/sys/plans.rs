//! [`plan`]: how the recorder records each function of the table, by the entry its header's
//! file gives it (`sys/<stem>.rs`, module `recorded`; see [`super::record`]). Apart from the
//! shared vocabulary, so that the headers' entries and what they import do not depend on one
//! another both ways.

use abi::functions::LibnrtFunction;

use super::record::Plan;

/// Every function's plan fn, from its header's file.
mod entries {
    pub(super) use super::super::async_exec::recorded::*;
    pub(super) use super::super::experimental::recorded::*;
    pub(super) use super::super::nrt::recorded::*;
    pub(super) use super::super::profile::recorded::*;
    pub(super) use super::super::status::recorded::*;
    pub(super) use super::super::sys_trace::recorded::*;
    pub(super) use super::super::version::recorded::*;
    pub(super) use super::headers_without_calls::*;
}

macro_rules! define_plan {
    ($($name:ident = $header:ident [$($rules:ident),*] fn $args:tt $(-> $ret:ty)?;)*) => {
        /// How `function` is recorded: every function of the table, by its header's entry.
        pub fn plan(function: LibnrtFunction) -> Plan {
            match function {
                $(LibnrtFunction::$name => entries::$name(),)*
            }
        }
    };
}

abi::for_each_libnrt_function!(define_plan);

/// The headers this crate makes no call of: recorded by name only, as a replay has no method
/// to re-issue them with.
mod headers_without_calls {
    use super::super::record::{Read::Nothing, by_name, plans};

    plans! {
        // `nrt_async_sendrecv.h` and `ndebug_stream.h`.
        nrt_async_sendrecv_get_max_num_communicators_per_lnc
        | nrt_async_sendrecv_get_max_num_pending_request
        | nrt_async_sendrecv_init
        | nrt_async_sendrecv_close
        | nrt_async_sendrecv_connect
        | nrt_async_sendrecv_accept
        | nrt_async_sendrecv_test_comm
        | nrt_async_sendrecv_send_tensor
        | nrt_async_sendrecv_recv_tensor
        | nrt_async_sendrecv_test_request
        | nrt_async_sendrecv_flush
        | nrt_debug_client_connect
        | nrt_debug_client_connect_close
        | nrt_debug_client_read_one_event => by_name(Nothing),
    }
}

#[cfg(test)]
mod tests {
    use abi::functions::LibnrtFunction;

    use super::super::record::Read;
    use super::plan;

    /// Every argument index a plan names is one of its function's C parameters, of the kind the
    /// plan reads there: a pointer where it must not be NULL or is read through, a size beside
    /// an input buffer, a `T **` for a release's handle.
    #[test]
    fn every_plan_names_parameters_its_function_has_of_the_kind_it_reads() {
        let mut decoded = 0;
        for &function in LibnrtFunction::ALL {
            let parameters = function.info().parameters;
            let kind = |index: usize| {
                let parameter = parameters.get(index).unwrap_or_else(|| {
                    panic!("{function}: argument {index} of {}", parameters.len())
                });
                // The type as the table's tokens print: `* mut * mut nrt_tensor_t`.
                parameter.rust_type.replace(' ', "")
            };
            let plan = plan(function);
            match plan.read {
                Read::Nothing | Read::Sync => {}
                Read::Word => assert!(kind(0).starts_with("*mut*mut"), "{function}: {}", kind(0)),
                Read::Input { pointer, size } => {
                    assert!(kind(pointer).starts_with("*const"), "{function}: {}", kind(pointer));
                    assert!(
                        matches!(kind(size).as_str(), "usize" | "u64"),
                        "{function}: {}",
                        kind(size)
                    );
                }
            }
            if let Some((nonzero, _)) = plan.detail {
                decoded += 1;
                for &index in nonzero {
                    assert!(kind(index).starts_with('*'), "{function}: {index} is {}", kind(index));
                }
            }
        }
        // The calls a replay re-issues (lifecycle, loading, sets, tensors, launches, counts).
        assert_eq!(decoded, 38);
    }
}
