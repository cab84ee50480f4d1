//! Raw steps of the system trace (`nrt_sys_trace_*`).

use super::{Context, StepResult, check_status};
use crate::spec::{
    SysTraceFetchEventsStep, SysTraceGetEventTypesStep, SysTraceStartStep, SysTraceStopStep,
};

impl Context<'_> {
    /// The `sys_trace_get_event_types` step.
    pub(super) fn sys_trace_get_event_types(
        &mut self,
        step: &SysTraceGetEventTypesStep,
    ) -> StepResult {
        let rt = self.runtime.clone();
        let SysTraceGetEventTypesStep { expect_includes, expect } = step;
        let types = rt.sys_trace_get_event_types();
        check_status(&types, expect)?;
        match types {
            Ok(types) => match expect_includes.iter().find(|want| !types.contains(want)) {
                Some(missing) => {
                    Err(format!("event types {types:?}, expected them to include {missing:?}"))
                }
                None => Ok(()),
            },
            Err(_) => Ok(()),
        }
    }

    /// The `sys_trace_start` step.
    pub(super) fn sys_trace_start(&mut self, step: &SysTraceStartStep) -> StepResult {
        let rt = self.runtime.clone();
        let SysTraceStartStep { max_events_per_nc, disable_ncs, disable_event_types, expect } =
            step;
        let config = abi::runtime::SysTraceConfig {
            max_events_per_nc: *max_events_per_nc,
            disabled_ncs: disable_ncs.clone(),
            disabled_event_types: disable_event_types.clone(),
        };
        check_status(&rt.sys_trace_start(&config), expect)
    }

    /// The `sys_trace_fetch_events` step.
    pub(super) fn sys_trace_fetch_events(&mut self, step: &SysTraceFetchEventsStep) -> StepResult {
        let rt = self.runtime.clone();
        let SysTraceFetchEventsStep {
            max_events_per_nc,
            nc,
            expect_event_counts,
            expect_paired_on_core,
            expect,
        } = step;
        let fetch = abi::runtime::SysTraceFetch { max_events_per_nc: *max_events_per_nc, nc: *nc };
        let fetched = rt.sys_trace_fetch_events(&fetch);
        check_status(&fetched, expect)?;
        let Ok(json) = fetched else { return Ok(()) };
        if expect_event_counts.is_empty() && expect_paired_on_core.is_empty() {
            return Ok(());
        }
        let value: serde_json::Value = serde_json::from_str(&json)
            .map_err(|err| format!("fetched events are not JSON ({err}): {json}"))?;
        let events = value["events"]
            .as_array()
            .ok_or_else(|| format!("fetched JSON has no events array, expected one: {json}"))?;
        for (kind, want) in expect_event_counts {
            let got = events
                .iter()
                .filter(|event| event["event_type"] == kind.as_str() && event["phase"] == "start")
                .count();
            if got != *want {
                return Err(format!("{got} {kind} events fetched, expected {want}"));
            }
        }
        for kind in expect_paired_on_core {
            check_paired_on_core(events, kind)?;
        }
        Ok(())
    }

    /// The `sys_trace_stop` step.
    pub(super) fn sys_trace_stop(&mut self, step: &SysTraceStopStep) -> StepResult {
        let rt = self.runtime.clone();
        let SysTraceStopStep { expect } = step;
        check_status(&rt.sys_trace_stop(), expect)
    }
}

/// Checks that the `kind` records of a fetch pair up as spike pairs them: a `start` and a
/// `stop` per `tracking_id`, each with `data.nc_timestamp_ns`, the stop not before the start.
fn check_paired_on_core(events: &[serde_json::Value], kind: &str) -> StepResult {
    let mut starts: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    let mut stops: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for event in events.iter().filter(|event| event["event_type"] == kind) {
        let (Some(id), Some(at)) =
            (event["tracking_id"].as_u64(), event["data"]["nc_timestamp_ns"].as_u64())
        else {
            return Err(format!(
                "{kind} record {event}, expected an integer tracking_id and data.nc_timestamp_ns"
            ));
        };
        let side = match event["phase"].as_str() {
            Some("start") => &mut starts,
            Some("stop") => &mut stops,
            _ => return Err(format!("{kind} record {event}, expected phase start or stop")),
        };
        if side.insert(id, at).is_some() {
            return Err(format!(
                "{kind} tracking_id {id} has two {} records, expected one",
                event["phase"]
            ));
        }
    }
    if starts.keys().ne(stops.keys()) {
        return Err(format!(
            "{kind} starts have tracking ids {:?} and stops {:?}, expected the same",
            starts.keys().collect::<Vec<_>>(),
            stops.keys().collect::<Vec<_>>()
        ));
    }
    if let Some((id, start)) = starts.iter().find(|(id, start)| stops[*id] < **start) {
        return Err(format!(
            "{kind} tracking_id {id} stops at {} before its start at {start}, expected not before",
            stops[id]
        ));
    }
    Ok(())
}
