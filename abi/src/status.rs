//! libnrt status codes (`NRT_STATUS`, a 4-byte C enum) and their classification.
//!
//! Every code of docs/abi-facts.md §3 has a variant; codes from newer libraries survive as
//! [`NrtStatus::Unknown`] and never cause a panic. [`NrtStatus::name`] is what
//! `nrt_get_status_as_str` returns: the bare C identifier.
//!
//! Discrepancy (docs/libtorchneuron.md §1): the disassembly notes call 1003 "pending/async". It is
//! `NRT_EXEC_COMPLETED_WITH_NUM_ERR`: the launch completed, outputs are written, and some hold a
//! NaN. The binding layer tolerates it (as libtorchneuron does), so [`StatusClass`] puts it in a class
//! of its own, [`StatusClass::CompletedWithWarning`]. The real "pending, poll again" code is 1100.

use std::fmt;

/// Declares the status enum, its code table and its identifier table in one place, so the three
/// can never disagree.
macro_rules! nrt_statuses {
    ($($(#[$doc:meta])* $variant:ident = $code:literal => $ident:literal,)*) => {
        /// A libnrt status code.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum NrtStatus {
            $($(#[$doc])* $variant,)*
            /// A code this table does not know, kept as the number the library returned.
            Unknown(u32),
        }

        impl NrtStatus {
            /// Every known status, in code order.
            pub const ALL: &'static [NrtStatus] = &[$(NrtStatus::$variant,)*];

            /// The status for a raw code; unknown codes become [`NrtStatus::Unknown`].
            pub fn from_code(code: u32) -> NrtStatus {
                match code {
                    $($code => NrtStatus::$variant,)*
                    other => NrtStatus::Unknown(other),
                }
            }

            /// The raw C value (a `const fn`, so the FFI crates name their constants by it).
            pub const fn code(self) -> u32 {
                match self {
                    $(NrtStatus::$variant => $code,)*
                    NrtStatus::Unknown(code) => code,
                }
            }

            /// The C identifier, as `nrt_get_status_as_str` returns it; `None` for unknown codes.
            pub fn identifier(self) -> Option<&'static str> {
                match self {
                    $(NrtStatus::$variant => Some($ident),)*
                    NrtStatus::Unknown(_) => None,
                }
            }
        }
    };
}

nrt_statuses! {
    /// The call succeeded.
    Success = 0 => "NRT_SUCCESS",
    /// A non-specific failure (also: a name missing from a tensor set).
    Failure = 1 => "NRT_FAILURE",
    /// An invalid argument, NEFF or configuration.
    Invalid = 2 => "NRT_INVALID",
    /// An invalid handle.
    InvalidHandle = 3 => "NRT_INVALID_HANDLE",
    /// Out of a resource (device memory, for instance).
    Resource = 4 => "NRT_RESOURCE",
    /// An operation timed out.
    Timeout = 5 => "NRT_TIMEOUT",
    /// A hardware failure.
    HwError = 6 => "NRT_HW_ERROR",
    /// The execution queue is full.
    QueueFull = 7 => "NRT_QUEUE_FULL",
    /// Not enough free NeuronCores to load the model.
    LoadNotEnoughNc = 9 => "NRT_LOAD_NOT_ENOUGH_NC",
    /// The NEFF's packager or format version, or a feature bit, is not supported.
    UnsupportedNeffVersion = 10 => "NRT_UNSUPPORTED_NEFF_VERSION",
    /// Host memory allocation failed (deprecated).
    FailHostMemAlloc = 11 => "NRT_FAIL_HOST_MEM_ALLOC",
    /// Called before `nrt_init`.
    Uninitialized = 13 => "NRT_UNINITIALIZED",
    /// Called after `nrt_close`.
    Closed = 14 => "NRT_CLOSED",
    /// The queue is empty.
    QueueEmpty = 15 => "NRT_QUEUE_EMPTY",
    /// The execution unit is in an unrecoverable state.
    ExecUnitUnrecoverable = 101 => "NRT_EXEC_UNIT_UNRECOVERABLE",
    /// Bad input to an execution.
    ExecBadInput = 1002 => "NRT_EXEC_BAD_INPUT",
    /// Execution completed, but produced numerical errors (NaN); outputs are written.
    ExecCompletedWithNumErr = 1003 => "NRT_EXEC_COMPLETED_WITH_NUM_ERR",
    /// Execution completed with other errors.
    ExecCompletedWithErr = 1004 => "NRT_EXEC_COMPLETED_WITH_ERR",
    /// The NeuronCore is busy.
    ExecNcBusy = 1005 => "NRT_EXEC_NC_BUSY",
    /// An out-of-bounds access during execution.
    ExecOob = 1006 => "NRT_EXEC_OOB",
    /// A collective operation is pending: poll again.
    CollPending = 1100 => "NRT_COLL_PENDING",
    /// A hardware error in collectives.
    ExecHwErrCollectives = 1200 => "NRT_EXEC_HW_ERR_COLLECTIVES",
    /// An uncorrectable HBM error.
    ExecHwErrHbmUe = 1201 => "NRT_EXEC_HW_ERR_HBM_UE",
    /// An uncorrectable NeuronCore error.
    ExecHwErrNcUe = 1202 => "NRT_EXEC_HW_ERR_NC_UE",
    /// A DMA abort.
    ExecHwErrDmaAbort = 1203 => "NRT_EXEC_HW_ERR_DMA_ABORT",
    /// The software notification queue overflowed.
    ExecSwNqOverflow = 1204 => "NRT_EXEC_SW_NQ_OVERFLOW",
    /// A repairable uncorrectable HBM error.
    ExecHwErrRepairableHbmUe = 1205 => "NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE",
    /// The network proxy failed.
    NetworkProxyFailure = 1206 => "NRT_NETWORK_PROXY_FAILURE",
}

/// How a caller should treat a status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusClass {
    /// The call did what was asked.
    Success,
    /// The call completed and its results are valid, with a warning (1003: NaN in outputs).
    CompletedWithWarning,
    /// The work is not done yet: poll again (1100).
    Pending,
    /// The call failed.
    Error,
}

impl NrtStatus {
    /// The class of this status.
    pub fn class(self) -> StatusClass {
        match self {
            NrtStatus::Success => StatusClass::Success,
            NrtStatus::ExecCompletedWithNumErr => StatusClass::CompletedWithWarning,
            NrtStatus::CollPending => StatusClass::Pending,
            _ => StatusClass::Error,
        }
    }

    /// Whether the results of the call are valid (success, or completed with a warning).
    pub fn is_completed(self) -> bool {
        matches!(self.class(), StatusClass::Success | StatusClass::CompletedWithWarning)
    }

    /// The identifier, or `NRT_STATUS_<code>` for a code this table does not know. Total, so it
    /// can name any status in a trace or a message.
    pub fn name(self) -> String {
        match self.identifier() {
            Some(ident) => ident.to_owned(),
            None => format!("NRT_STATUS_{}", self.code()),
        }
    }

    /// The status whose identifier is `ident` (with or without the `NRT_` prefix), or whose
    /// decimal code is `ident`.
    pub fn from_name(ident: &str) -> Option<NrtStatus> {
        if let Ok(code) = ident.parse::<u32>() {
            return Some(NrtStatus::from_code(code));
        }
        let full =
            if ident.starts_with("NRT_") { ident.to_owned() } else { format!("NRT_{ident}") };
        if let Some(code) = full.strip_prefix("NRT_STATUS_").and_then(|c| c.parse::<u32>().ok()) {
            return Some(NrtStatus::from_code(code));
        }
        NrtStatus::ALL.iter().copied().find(|s| s.identifier() == Some(full.as_str()))
    }
}

impl fmt::Display for NrtStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_and_identifiers_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for &status in NrtStatus::ALL {
            assert_eq!(NrtStatus::from_code(status.code()), status);
            let ident = status.identifier().expect("known statuses have identifiers");
            assert!(seen.insert(ident), "duplicate identifier {ident}");
            assert_eq!(NrtStatus::from_name(ident), Some(status));
        }
        assert_eq!(NrtStatus::ALL.len(), 28);
    }

    #[test]
    fn codes_match_the_abi_facts_table() {
        let table = [
            (0, "NRT_SUCCESS"),
            (1, "NRT_FAILURE"),
            (2, "NRT_INVALID"),
            (3, "NRT_INVALID_HANDLE"),
            (4, "NRT_RESOURCE"),
            (9, "NRT_LOAD_NOT_ENOUGH_NC"),
            (10, "NRT_UNSUPPORTED_NEFF_VERSION"),
            (13, "NRT_UNINITIALIZED"),
            (14, "NRT_CLOSED"),
            (1002, "NRT_EXEC_BAD_INPUT"),
            (1003, "NRT_EXEC_COMPLETED_WITH_NUM_ERR"),
            (1100, "NRT_COLL_PENDING"),
            (1206, "NRT_NETWORK_PROXY_FAILURE"),
        ];
        for (code, ident) in table {
            assert_eq!(NrtStatus::from_code(code).identifier(), Some(ident), "code {code}");
        }
    }

    #[test]
    fn never_defined_and_newer_codes_survive_as_numbers() {
        for code in [8, 12, 16, 1001, 9999, u32::MAX] {
            let status = NrtStatus::from_code(code);
            assert_eq!(status, NrtStatus::Unknown(code));
            assert_eq!(status.code(), code);
            assert_eq!(status.identifier(), None);
            assert_eq!(status.name(), format!("NRT_STATUS_{code}"));
            assert_eq!(status.class(), StatusClass::Error);
            assert_eq!(NrtStatus::from_name(&status.name()), Some(status));
        }
    }

    /// Discrepancy (docs/libtorchneuron.md §1: the disassembly notes call 1003 "pending/async"):
    /// 1003 is a completed launch with a numerical-error warning, and 1100 is the pending code.
    #[test]
    fn seed_discrepancy_1003_is_completed_with_warning_not_pending() {
        let s = NrtStatus::from_code(1003);
        assert_eq!(s.class(), StatusClass::CompletedWithWarning);
        assert!(s.is_completed());
        assert_eq!(NrtStatus::from_code(1100).class(), StatusClass::Pending);
        assert!(!NrtStatus::from_code(1100).is_completed());
        assert_eq!(NrtStatus::Success.class(), StatusClass::Success);
        assert_eq!(NrtStatus::Invalid.class(), StatusClass::Error);
    }

    #[test]
    fn names_parse_with_or_without_prefix() {
        assert_eq!(NrtStatus::from_name("INVALID"), Some(NrtStatus::Invalid));
        assert_eq!(NrtStatus::from_name("NRT_INVALID"), Some(NrtStatus::Invalid));
        assert_eq!(NrtStatus::from_name("1003"), Some(NrtStatus::ExecCompletedWithNumErr));
        assert_eq!(NrtStatus::from_name("NOT_A_STATUS"), None);
        assert_eq!(NrtStatus::Closed.to_string(), "NRT_CLOSED (14)");
    }
}
