//! Seeded fault injection: make chosen calls fail with a chosen status, deterministically.
//!
//! Design choices:
//! - **Rules name C functions** (`nrt_execute`), so a plan reads the same whether it drives the
//!   simulator directly or through the C ABI. A rule holds an [`LibnrtFunction`] of the one
//!   function table, so a name that is not a libnrt function, or one the table marks as not
//!   faultable, is refused when the plan is parsed.
//! - **Deterministic per function.** Each rule counts only the calls of its own function and draws
//!   from its own splitmix64 stream (seeded from the plan's seed and the rule's position), so the
//!   outcome of the Nth `nrt_execute` does not depend on how many tensors were written between.
//! - **Injection happens after the lifecycle gate**: an injected status replaces the real work of
//!   a call that would otherwise run; a call made before `nrt_init` still says UNINITIALIZED.
//! - **First matching rule wins**; every rule of the function counts the call either way.
//! - No `rand` dependency: splitmix64 is a few lines and its stream is stable across versions.

use std::sync::{Mutex, PoisonError};

use abi::functions::LibnrtFunction;
use abi::runtime::NrtError;
use abi::status::NrtStatus;

/// When a rule fires.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultTrigger {
    /// On the Nth call of the function (1-based), once.
    Nth(u64),
    /// On each call with this probability (0.0 ..= 1.0), drawn from the seeded stream.
    Fraction(f64),
}

/// One rule: calls of `function` that match `trigger` return `status`.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRule {
    /// The C function, such as `nrt_execute`; one the table marks as faultable.
    pub function: LibnrtFunction,
    /// Which calls fail.
    pub trigger: FaultTrigger,
    /// The status they return.
    pub status: NrtStatus,
}

/// A set of rules and the seed of their random streams.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct FaultPlan {
    /// The seed of every [`FaultTrigger::Fraction`] stream.
    pub seed: u64,
    /// The rules, first match wins.
    pub rules: Vec<FaultRule>,
}

/// Why a fault plan was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FaultPlanError {
    /// An item is not `function:trigger=STATUS` or `seed=N`.
    #[error(
        "fault rule {item:?} is malformed, expected `nrt_function:N=STATUS`, `nrt_function:pF=STATUS` or `seed=N`"
    )]
    Malformed {
        /// The item.
        item: String,
    },
    /// The name is not a libnrt function.
    #[error("fault rule names {function:?}, expected one of the faultable libnrt functions ({known})", known = faultable_names())]
    UnknownFunction {
        /// The name found.
        function: String,
    },
    /// The function exists, but the table says faults may not be injected into it.
    #[error("fault rule names {function}, which is not faultable, expected one of ({known})", known = faultable_names())]
    NotFaultable {
        /// The function found.
        function: LibnrtFunction,
    },
    /// The trigger is neither a positive integer nor `p` and a fraction in 0..=1.
    #[error(
        "fault trigger {trigger:?} of {function} is invalid, expected a call number >= 1 or `p` and a fraction in 0..=1"
    )]
    InvalidTrigger {
        /// The function of the rule.
        function: String,
        /// The trigger text.
        trigger: String,
    },
    /// The status is not a known identifier or a number.
    #[error(
        "fault status {status:?} of {function} is unknown, expected a status name such as EXEC_BAD_INPUT or a code"
    )]
    UnknownStatus {
        /// The function of the rule.
        function: String,
        /// The status text.
        status: String,
    },
    /// The seed is not an unsigned integer.
    #[error("fault seed {seed:?} is invalid, expected an unsigned integer")]
    InvalidSeed {
        /// The seed text.
        seed: String,
    },
}

impl FaultPlan {
    /// Parses the compact form: comma-separated items, each `function:N=STATUS` (the Nth call),
    /// `function:pF=STATUS` (a fraction F of calls) or `seed=N`. Statuses are identifiers with or
    /// without `NRT_`, or codes. The empty string is the empty plan.
    ///
    /// # Errors
    /// A [`FaultPlanError`] naming the first bad item.
    pub fn parse(text: &str) -> Result<FaultPlan, FaultPlanError> {
        let mut plan = FaultPlan::default();
        for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            if let Some(seed) = item.strip_prefix("seed=") {
                plan.seed = seed
                    .trim()
                    .parse()
                    .map_err(|_| FaultPlanError::InvalidSeed { seed: seed.to_owned() })?;
                continue;
            }
            let malformed = || FaultPlanError::Malformed { item: item.to_owned() };
            let (function, rest) = item.split_once(':').ok_or_else(malformed)?;
            let (trigger_text, status_text) = rest.split_once('=').ok_or_else(malformed)?;
            let function_name = function.trim();
            let function = LibnrtFunction::from_name(function_name).map_err(|_| {
                FaultPlanError::UnknownFunction { function: function_name.to_owned() }
            })?;
            let trigger = parse_trigger(trigger_text.trim()).ok_or_else(|| {
                FaultPlanError::InvalidTrigger {
                    function: function_name.to_owned(),
                    trigger: trigger_text.to_owned(),
                }
            })?;
            let status = NrtStatus::from_name(status_text.trim()).ok_or_else(|| {
                FaultPlanError::UnknownStatus {
                    function: function_name.to_owned(),
                    status: status_text.to_owned(),
                }
            })?;
            plan.rules.push(FaultRule { function, trigger, status });
        }
        plan.validate()?;
        Ok(plan)
    }

    /// Checks every rule: a faultable function and a valid trigger.
    ///
    /// # Errors
    /// [`FaultPlanError::NotFaultable`] or [`FaultPlanError::InvalidTrigger`].
    pub fn validate(&self) -> Result<(), FaultPlanError> {
        for rule in &self.rules {
            if !rule.function.is_faultable() {
                return Err(FaultPlanError::NotFaultable { function: rule.function });
            }
            let valid = match rule.trigger {
                FaultTrigger::Nth(n) => n >= 1,
                FaultTrigger::Fraction(p) => (0.0..=1.0).contains(&p),
            };
            if !valid {
                return Err(FaultPlanError::InvalidTrigger {
                    function: rule.function.name().to_owned(),
                    trigger: format!("{:?}", rule.trigger),
                });
            }
        }
        Ok(())
    }
}

impl std::fmt::Display for FaultPlan {
    /// The compact form [`FaultPlan::parse`] reads: `seed=N` (when not 0), then one
    /// `function:N=STATUS` or `function:pF=STATUS` per rule, comma-separated; the empty plan is
    /// the empty string. Fractions print in Rust's shortest round-trip form, so parsing the text
    /// gives back the same plan.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut items = Vec::new();
        if self.seed != 0 {
            items.push(format!("seed={}", self.seed));
        }
        for rule in &self.rules {
            let trigger = match rule.trigger {
                FaultTrigger::Nth(n) => n.to_string(),
                FaultTrigger::Fraction(p) => format!("p{p}"),
            };
            items.push(format!("{}:{trigger}={}", rule.function.name(), rule.status.name()));
        }
        f.write_str(&items.join(","))
    }
}

/// The faultable functions' names, for error messages.
fn faultable_names() -> String {
    LibnrtFunction::faultable().map(LibnrtFunction::name).collect::<Vec<_>>().join(", ")
}

fn parse_trigger(text: &str) -> Option<FaultTrigger> {
    if let Some(fraction) = text.strip_prefix('p') {
        let p: f64 = fraction.parse().ok()?;
        return (0.0..=1.0).contains(&p).then_some(FaultTrigger::Fraction(p));
    }
    let n: u64 = text.parse().ok()?;
    (n >= 1).then_some(FaultTrigger::Nth(n))
}

/// One step of splitmix64: advances `state` and returns the next output.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct RuleState {
    calls: u64,
    rng: u64,
}

/// A plan in action: counts calls and decides which fail.
pub(crate) struct FaultInjector {
    rules: Vec<(FaultRule, Mutex<RuleState>)>,
}

impl FaultInjector {
    pub(crate) fn new(plan: &FaultPlan) -> FaultInjector {
        let rules = plan
            .rules
            .iter()
            .enumerate()
            .map(|(idx, rule)| {
                let mut rng = plan.seed ^ (idx as u64).wrapping_mul(0xA076_1D64_78BD_642F);
                splitmix64(&mut rng);
                (rule.clone(), Mutex::new(RuleState { calls: 0, rng }))
            })
            .collect();
        FaultInjector { rules }
    }

    /// The injected status for this call of `function`, if a rule fires.
    pub(crate) fn injected(&self, function: LibnrtFunction) -> Option<NrtStatus> {
        if self.rules.is_empty() {
            return None;
        }
        let mut fired = None;
        for (rule, state) in &self.rules {
            if rule.function != function {
                continue;
            }
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            state.calls += 1;
            let fires = match rule.trigger {
                FaultTrigger::Nth(n) => state.calls == n,
                FaultTrigger::Fraction(p) => {
                    // 53 random bits give a uniform float in [0, 1).
                    let draw = (splitmix64(&mut state.rng) >> 11) as f64 / (1u64 << 53) as f64;
                    draw < p
                }
            };
            if fires && fired.is_none() {
                fired = Some(rule.status);
            }
        }
        fired
    }

    /// `Err` with the injected status when a rule fires for this call of `function`.
    pub(crate) fn check(&self, function: LibnrtFunction) -> Result<(), NrtError> {
        match self.injected(function) {
            Some(status) => Err(NrtError::new(status, format!("injected fault in {function}"))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compact_form_prints_what_parse_reads() {
        let text =
            "seed=7,nrt_execute:3=NRT_EXEC_BAD_INPUT,nrt_tensor_allocate:p0.1=NRT_STATUS_4242";
        let plan = FaultPlan::parse(text).expect("valid plan");
        assert_eq!(plan.to_string(), text);
        assert_eq!(FaultPlan::parse(&plan.to_string()), Ok(plan));
        assert_eq!(FaultPlan::default().to_string(), "");
    }

    #[test]
    fn compact_form_parses_nth_fraction_and_seed() {
        let plan = FaultPlan::parse(
            "seed=7, nrt_execute:3=EXEC_BAD_INPUT,nrt_tensor_allocate:p0.25=RESOURCE",
        )
        .expect("valid plan");
        assert_eq!(plan.seed, 7);
        assert_eq!(
            plan.rules,
            vec![
                FaultRule {
                    function: LibnrtFunction::nrt_execute,
                    trigger: FaultTrigger::Nth(3),
                    status: NrtStatus::ExecBadInput,
                },
                FaultRule {
                    function: LibnrtFunction::nrt_tensor_allocate,
                    trigger: FaultTrigger::Fraction(0.25),
                    status: NrtStatus::Resource,
                },
            ]
        );
        assert_eq!(FaultPlan::parse(""), Ok(FaultPlan::default()));
    }

    #[test]
    fn bad_items_are_named_in_the_error() {
        let cases = [
            ("nrt_execute", "malformed"),
            ("nrt_exec:1=INVALID", "names \"nrt_exec\""),
            ("nrt_close:1=INVALID", "nrt_close, which is not faultable"),
            ("nrt_execute:0=INVALID", "trigger \"0\""),
            ("nrt_execute:p1.5=INVALID", "trigger \"p1.5\""),
            ("nrt_execute:1=NOPE", "status \"NOPE\""),
            ("seed=x", "seed \"x\""),
        ];
        for (text, expected) in cases {
            let err = FaultPlan::parse(text).expect_err(text).to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn nth_fires_once_on_its_own_function_only() {
        let injector = FaultInjector::new(&FaultPlan::parse("nrt_execute:2=1002").unwrap());
        assert_eq!(injector.injected(LibnrtFunction::nrt_tensor_write), None);
        assert_eq!(injector.injected(LibnrtFunction::nrt_execute), None);
        assert_eq!(injector.injected(LibnrtFunction::nrt_tensor_write), None);
        assert_eq!(injector.injected(LibnrtFunction::nrt_execute), Some(NrtStatus::ExecBadInput));
        assert_eq!(injector.injected(LibnrtFunction::nrt_execute), None);
    }

    #[test]
    fn fractions_are_deterministic_per_seed_and_roughly_right() {
        let outcomes = |seed: u64| {
            let plan = FaultPlan {
                seed,
                rules: vec![FaultRule {
                    function: LibnrtFunction::nrt_tensor_read,
                    trigger: FaultTrigger::Fraction(0.25),
                    status: NrtStatus::Timeout,
                }],
            };
            let injector = FaultInjector::new(&plan);
            (0..4000)
                .map(|_| injector.injected(LibnrtFunction::nrt_tensor_read).is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(outcomes(1), outcomes(1));
        assert_ne!(outcomes(1), outcomes(2));
        let hits = outcomes(1).iter().filter(|&&hit| hit).count();
        assert!((800..1200).contains(&hits), "{hits} of 4000");
    }
}
