//! System trace and profiling: the simulator's real events, captured into bounded ring buffers
//! per NeuronCore (`nrt_sys_trace_*`) and recorded per model for profiles (`nrt_profile_*`,
//! `nrt_inspect_*`).
//!
//! Design choices:
//! - **One event stream.** The runtime records what it does (a model loaded or unloaded, a
//!   launch running on a core with its start and end, a DMA to or from a device tensor) in one
//!   place, [`EventLog::record`]; a capture and the profilers are consumers of that stream, so
//!   a trace and a profile of the same run agree.
//! - **Bounded.** Each core's ring keeps at most `max_events_per_nc` events; older ones are
//!   dropped and counted, and the count is in the fetched JSON. A profile keeps at most
//!   [`MAX_PROFILE_EXECUTIONS`] executions.
//! - **Fetched once.** [`EventLog::fetch`] removes what it returns, as the public header says.
//! - **A fetch speaks the format real clients parse** (`docs/sim-trace-format.md`): every
//!   recorded span becomes a `start` and a `stop` record sharing a `tracking_id`, with the
//!   NeuronCore time in `data.nc_timestamp_ns`, because that is what nkipy's spike pairs to time
//!   a launch. The rest of the JSON (the profiles, `format`, `dropped`) is ours and documented.
//! - **A ring holds whole spans.** A start and its stop are stored and dropped together, so a
//!   full ring never hands a client a `stop` without its `start`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use serde::Serialize;

/// The event types the simulator records, in the order `nrt_sys_trace_get_event_types` lists.
pub const EVENT_TYPES: &[&str] =
    &["model_load", "model_unload", "nc_exec_running", "dma_to_device", "dma_from_device"];

/// The activity types of inspect profiling.
pub const ACTIVITY_TYPES: &[&str] =
    &["system_profile", "device_profile", "host_memory", "cpu_util"];

/// Default ring size per NeuronCore.
pub const DEFAULT_MAX_EVENTS_PER_NC: u64 = 100_000;

/// The most executions one profile keeps.
pub const MAX_PROFILE_EXECUTIONS: usize = 100_000;

/// One event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// One of [`EVENT_TYPES`].
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The NeuronCore.
    pub nc: u32,
    /// Nanoseconds since the runtime was made, at the start.
    pub start_ns: u64,
    /// Nanoseconds since the runtime was made, at the end.
    pub end_ns: u64,
    /// The model, for model and launch events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<u64>,
    /// Bytes moved, for DMA events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The launch's status name, for `nc_exec_running`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Options of a capture (`nrt_sys_trace_config_t`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureConfig {
    /// Ring size per NeuronCore.
    pub max_events_per_nc: u64,
    /// NeuronCores whose capture is switched off.
    pub disabled_ncs: BTreeSet<u32>,
    /// Event types switched off.
    pub disabled_types: BTreeSet<&'static str>,
}

impl Default for CaptureConfig {
    fn default() -> CaptureConfig {
        CaptureConfig {
            max_events_per_nc: DEFAULT_MAX_EVENTS_PER_NC,
            disabled_ncs: BTreeSet::new(),
            disabled_types: BTreeSet::new(),
        }
    }
}

/// Why an event type name was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "event type {0:?} is unknown, expected one of model_load, model_unload, nc_exec_running, dma_to_device, dma_from_device"
)]
pub struct UnknownEventType(pub String);

impl CaptureConfig {
    /// Switches capture of `event_type` on or off.
    ///
    /// # Errors
    /// [`UnknownEventType`] for a name not in [`EVENT_TYPES`].
    pub fn set_event_type(
        &mut self,
        event_type: &str,
        enabled: bool,
    ) -> Result<(), UnknownEventType> {
        let known = EVENT_TYPES
            .iter()
            .copied()
            .find(|known| *known == event_type)
            .ok_or_else(|| UnknownEventType(event_type.to_owned()))?;
        if enabled {
            self.disabled_types.remove(known);
        } else {
            self.disabled_types.insert(known);
        }
        Ok(())
    }

    /// The event types this capture records, in [`EVENT_TYPES`] order.
    pub fn enabled_event_types(&self) -> Vec<&'static str> {
        EVENT_TYPES.iter().copied().filter(|kind| !self.disabled_types.contains(kind)).collect()
    }
}

/// Options of a fetch (`nrt_sys_trace_fetch_options_t`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FetchOptions {
    /// At most this many events per NeuronCore (oldest first); all when `None`.
    pub max_events_per_nc: Option<u64>,
    /// Only this NeuronCore; all when `None`.
    pub nc: Option<u64>,
}

struct Capture {
    config: CaptureConfig,
    /// Each core's spans with their tracking ids.
    rings: BTreeMap<u32, VecDeque<(u64, Event)>>,
    dropped: BTreeMap<u32, u64>,
}

/// A profile being recorded: the launches of one model, or of every model.
struct Profile {
    model: Option<u64>,
    executions: Vec<Event>,
    dropped: u64,
}

/// Why a capture or profile call was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// `start` while a capture runs.
    #[error("a system trace capture is already running, expected nrt_sys_trace_stop first")]
    AlreadyCapturing,
    /// `stop` or `fetch` without a capture.
    #[error("no system trace capture is running, expected nrt_sys_trace_start first")]
    NotCapturing,
    /// A profile start while one runs.
    #[error("a profile is already being recorded, expected it stopped first")]
    AlreadyProfiling,
    /// A profile stop without a start.
    #[error("no profile is being recorded, expected a start first")]
    NotProfiling,
}

/// The event stream of one runtime and its consumers.
pub struct EventLog {
    epoch: Instant,
    capture: Mutex<Option<Capture>>,
    profile: Mutex<Option<Profile>>,
    /// The latest launch per core, for continuous profiling's save.
    latest: Mutex<BTreeMap<u32, Event>>,
    /// The tracking id the next captured span gets.
    next_tracking_id: AtomicU64,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog").finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A profile as written to disk.
#[derive(Serialize)]
struct ProfileFile<'a> {
    format: &'static str,
    model: Option<u64>,
    executions: &'a [Event],
    dropped_executions: u64,
}

/// A fetch as returned to C.
#[derive(Serialize)]
struct FetchFile<'a> {
    format: &'static str,
    events: Vec<FetchedRecord<'a>>,
    dropped: BTreeMap<u32, u64>,
}

/// One half of a span as a fetch returns it: the fields nkipy's spike reads (`event_type`,
/// `phase`, `tracking_id`, `data.nc_timestamp_ns`) and the simulator's own (`lnc_idx`,
/// `timestamp_ns` and the rest of `data`).
#[derive(Serialize)]
struct FetchedRecord<'a> {
    event_type: &'static str,
    phase: &'static str,
    tracking_id: u64,
    lnc_idx: u32,
    timestamp_ns: u64,
    data: FetchedData<'a>,
}

/// The event-specific fields of a fetched record.
#[derive(Serialize)]
struct FetchedData<'a> {
    /// The NeuronCore's clock, on the events that run on the core (`nc_exec_running`); the
    /// simulator has one clock, so it equals `timestamp_ns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    nc_timestamp_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<u64>,
    /// The launch's status, on the `stop` record only: it is known when the launch ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a str>,
}

/// The event types that run on a NeuronCore and so carry the core's timestamp.
const HARDWARE_EVENT_TYPES: &[&str] = &["nc_exec_running"];

/// The `start` and `stop` records of one captured span.
fn span_records(tracking_id: u64, event: &Event) -> [FetchedRecord<'_>; 2] {
    let on_core = HARDWARE_EVENT_TYPES.contains(&event.kind);
    let record = |phase, at, status| FetchedRecord {
        event_type: event.kind,
        phase,
        tracking_id,
        lnc_idx: event.nc,
        timestamp_ns: at,
        data: FetchedData {
            nc_timestamp_ns: on_core.then_some(at),
            model_id: event.model,
            bytes: event.bytes,
            status,
        },
    };
    [record("start", event.start_ns, None), record("stop", event.end_ns, event.status.as_deref())]
}

impl Default for EventLog {
    fn default() -> EventLog {
        EventLog::new()
    }
}

impl EventLog {
    /// An empty log; time 0 is now.
    pub fn new() -> EventLog {
        EventLog {
            epoch: Instant::now(),
            capture: Mutex::new(None),
            profile: Mutex::new(None),
            latest: Mutex::new(BTreeMap::new()),
            next_tracking_id: AtomicU64::new(1),
        }
    }

    /// Nanoseconds since the log was made.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Records `event` for every consumer that wants it.
    pub fn record(&self, event: Event) {
        if event.kind == "nc_exec_running" {
            lock(&self.latest).insert(event.nc, event.clone());
            if let Some(profile) = lock(&self.profile).as_mut() {
                if profile.model.is_none_or(|model| event.model == Some(model)) {
                    if profile.executions.len() < MAX_PROFILE_EXECUTIONS {
                        profile.executions.push(event.clone());
                    } else {
                        profile.dropped += 1;
                    }
                }
            }
        }
        if let Some(capture) = lock(&self.capture).as_mut() {
            if capture.config.disabled_ncs.contains(&event.nc)
                || capture.config.disabled_types.contains(event.kind)
            {
                return;
            }
            let limit = usize::try_from(capture.config.max_events_per_nc).unwrap_or(usize::MAX);
            if limit == 0 {
                *capture.dropped.entry(event.nc).or_default() += 1;
                return;
            }
            let ring = capture.rings.entry(event.nc).or_default();
            if ring.len() >= limit {
                ring.pop_front();
                *capture.dropped.entry(event.nc).or_default() += 1;
            }
            ring.push_back((self.next_tracking_id.fetch_add(1, Ordering::Relaxed), event));
        }
    }

    /// Starts a capture.
    ///
    /// # Errors
    /// [`TraceError::AlreadyCapturing`].
    pub fn start_capture(&self, config: CaptureConfig) -> Result<(), TraceError> {
        let mut capture = lock(&self.capture);
        if capture.is_some() {
            return Err(TraceError::AlreadyCapturing);
        }
        *capture = Some(Capture { config, rings: BTreeMap::new(), dropped: BTreeMap::new() });
        Ok(())
    }

    /// Stops the capture and frees its rings.
    ///
    /// # Errors
    /// [`TraceError::NotCapturing`].
    pub fn stop_capture(&self) -> Result<(), TraceError> {
        lock(&self.capture).take().map(drop).ok_or(TraceError::NotCapturing)
    }

    /// Removes and returns captured events as JSON: `{"format", "events": [...], "dropped"}`,
    /// each span as a `start` and a `stop` record; `max_events_per_nc` counts spans.
    ///
    /// # Errors
    /// [`TraceError::NotCapturing`].
    pub fn fetch(&self, options: &FetchOptions) -> Result<String, TraceError> {
        let mut guard = lock(&self.capture);
        let capture = guard.as_mut().ok_or(TraceError::NotCapturing)?;
        let mut spans = Vec::new();
        for (&nc, ring) in &mut capture.rings {
            if options.nc.is_some_and(|wanted| wanted != u64::from(nc)) {
                continue;
            }
            let n = options.max_events_per_nc.map_or(ring.len(), |max| {
                ring.len().min(usize::try_from(max).unwrap_or(usize::MAX))
            });
            spans.extend(ring.drain(..n));
        }
        let mut events: Vec<FetchedRecord<'_>> =
            spans.iter().flat_map(|(id, event)| span_records(*id, event)).collect();
        // Time order; at one instant a span's start comes before its stop, and spans keep the
        // order they were recorded in.
        events.sort_by_key(|record| (record.timestamp_ns, record.tracking_id, record.phase));
        let file =
            FetchFile { format: "nrtsim-sys-trace-2", events, dropped: capture.dropped.clone() };
        Ok(serde_json::to_string(&file).unwrap_or_else(|_| "{}".to_owned()))
    }

    /// Starts recording the launches of `model` (every model for `None`).
    ///
    /// # Errors
    /// [`TraceError::AlreadyProfiling`].
    pub fn start_profile(&self, model: Option<u64>) -> Result<(), TraceError> {
        let mut profile = lock(&self.profile);
        if profile.is_some() {
            return Err(TraceError::AlreadyProfiling);
        }
        *profile = Some(Profile { model, executions: Vec::new(), dropped: 0 });
        Ok(())
    }

    /// Stops recording and returns the profile as JSON:
    /// `{"format", "model", "executions": [...], "dropped_executions"}`.
    ///
    /// # Errors
    /// [`TraceError::NotProfiling`].
    pub fn stop_profile(&self) -> Result<String, TraceError> {
        let profile = lock(&self.profile).take().ok_or(TraceError::NotProfiling)?;
        Ok(profile_json(profile.model, &profile.executions, profile.dropped))
    }

    /// Whether a profile is being recorded.
    pub fn profiling(&self) -> bool {
        lock(&self.profile).is_some()
    }

    /// The profile of the latest launch on `nc` (continuous profiling's save); `None` when the
    /// core has not launched anything.
    pub fn latest_profile(&self, nc: u32) -> Option<String> {
        let latest = lock(&self.latest).get(&nc).cloned()?;
        Some(profile_json(latest.model, std::slice::from_ref(&latest), 0))
    }
}

fn profile_json(model: Option<u64>, executions: &[Event], dropped: u64) -> String {
    let file =
        ProfileFile { format: "nrtsim-profile-1", model, executions, dropped_executions: dropped };
    serde_json::to_string_pretty(&file).unwrap_or_else(|_| "{}".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &'static str, nc: u32, at: u64) -> Event {
        Event { kind, nc, start_ns: at, end_ns: at + 1, model: Some(1), bytes: None, status: None }
    }

    #[test]
    fn a_capture_keeps_the_newest_events_per_core_and_counts_the_dropped() {
        let log = EventLog::new();
        log.record(event("nc_exec_running", 0, 1)); // before the capture: not kept
        log.start_capture(CaptureConfig { max_events_per_nc: 2, ..CaptureConfig::default() })
            .unwrap();
        for at in 10..15 {
            log.record(event("nc_exec_running", 0, at));
        }
        log.record(event("model_load", 1, 20));
        let json: serde_json::Value =
            serde_json::from_str(&log.fetch(&FetchOptions::default()).unwrap()).unwrap();
        let starts: Vec<u64> = json["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["phase"] == "start")
            .map(|e| e["timestamp_ns"].as_u64().unwrap())
            .collect();
        assert_eq!(starts, [13, 14, 20]);
        assert_eq!(json["dropped"]["0"], 3);
        let again: serde_json::Value =
            serde_json::from_str(&log.fetch(&FetchOptions::default()).unwrap()).unwrap();
        assert_eq!(again["events"].as_array().unwrap().len(), 0, "fetched events are gone");
        log.stop_capture().unwrap();
        assert_eq!(log.fetch(&FetchOptions::default()), Err(TraceError::NotCapturing));
    }

    #[test]
    fn disabled_cores_and_types_are_not_captured_and_fetch_filters() {
        let log = EventLog::new();
        let mut config = CaptureConfig::default();
        config.disabled_ncs.insert(1);
        config.set_event_type("dma_to_device", false).unwrap();
        assert_eq!(config.set_event_type("nope", true), Err(UnknownEventType("nope".into())));
        assert!(!config.enabled_event_types().contains(&"dma_to_device"));
        log.start_capture(config).unwrap();
        log.record(event("nc_exec_running", 1, 1));
        log.record(event("dma_to_device", 0, 2));
        log.record(event("nc_exec_running", 0, 3));
        log.record(event("nc_exec_running", 2, 4));
        let only_2 = log.fetch(&FetchOptions { nc: Some(2), max_events_per_nc: None }).unwrap();
        let json: serde_json::Value = serde_json::from_str(&only_2).unwrap();
        assert_eq!(json["events"].as_array().unwrap().len(), 2, "one span: a start and a stop");
        assert_eq!(json["events"][0]["lnc_idx"], 2);
        let rest: serde_json::Value =
            serde_json::from_str(&log.fetch(&FetchOptions::default()).unwrap()).unwrap();
        assert_eq!(rest["events"].as_array().unwrap().len(), 2);
        assert_eq!(rest["events"][0]["timestamp_ns"], 3);
        assert_eq!(log.start_capture(CaptureConfig::default()), Err(TraceError::AlreadyCapturing));
    }

    /// The fields nkipy's spike reads to time a launch (`_parse_trace_durations`): each
    /// `nc_exec_running` span is a `start` and a `stop` with one `tracking_id`, and the
    /// difference of their `data.nc_timestamp_ns` is the launch's duration.
    #[test]
    fn a_fetched_launch_is_a_start_and_a_stop_that_spike_can_pair() {
        let log = EventLog::new();
        log.start_capture(CaptureConfig::default()).unwrap();
        let mut launch = event("nc_exec_running", 0, 100);
        launch.end_ns = 350;
        launch.status = Some("NRT_SUCCESS".into());
        log.record(launch.clone());
        launch.start_ns = 400;
        launch.end_ns = 410;
        log.record(launch);
        log.record(Event { bytes: Some(16), ..event("dma_to_device", 0, 50) });
        let json: serde_json::Value =
            serde_json::from_str(&log.fetch(&FetchOptions::default()).unwrap()).unwrap();
        let events = json["events"].as_array().unwrap();
        let running: Vec<(&str, u64, u64)> = events
            .iter()
            .filter(|e| e["event_type"] == "nc_exec_running")
            .map(|e| {
                let phase = e["phase"].as_str().unwrap();
                (
                    phase,
                    e["tracking_id"].as_u64().unwrap(),
                    e["data"]["nc_timestamp_ns"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            running,
            [("start", 1, 100), ("stop", 1, 350), ("start", 2, 400), ("stop", 2, 410)]
        );
        assert_eq!(events[3]["data"]["status"], "NRT_SUCCESS", "the stop carries the status");
        assert_eq!(events[2]["data"].get("status"), None, "the start does not");
        let dma = &events[0];
        assert_eq!(
            (dma["event_type"].as_str(), dma["phase"].as_str()),
            (Some("dma_to_device"), Some("start"))
        );
        assert_eq!(dma["data"]["bytes"], 16);
        assert_eq!(dma["data"].get("nc_timestamp_ns"), None, "a host-side event has no core time");
    }

    #[test]
    fn a_profile_records_the_launches_of_its_model() {
        let log = EventLog::new();
        assert_eq!(log.stop_profile(), Err(TraceError::NotProfiling));
        log.start_profile(Some(7)).unwrap();
        let mut launch = event("nc_exec_running", 0, 5);
        launch.model = Some(7);
        log.record(launch.clone());
        log.record(event("nc_exec_running", 0, 6)); // model 1: not in the profile
        let json: serde_json::Value = serde_json::from_str(&log.stop_profile().unwrap()).unwrap();
        assert_eq!(json["format"], "nrtsim-profile-1");
        assert_eq!(json["model"], 7);
        assert_eq!(json["executions"].as_array().unwrap().len(), 1);
        let latest: serde_json::Value =
            serde_json::from_str(&log.latest_profile(0).unwrap()).unwrap();
        assert_eq!(latest["executions"][0]["start_ns"], 6);
        assert_eq!(log.latest_profile(3), None);
    }
}
