//! The queues of libnrt's asynchronous API (`nrta_*`): per NeuronCore, execution unit and queue
//! index, each with a worker thread, strictly increasing sequence numbers, completion tracking
//! and error trackers.
//!
//! Design choices:
//! - **Jobs are closures.** The queues know nothing about tensors or models: a caller (the C
//!   layer) schedules a job that performs the synchronous runtime call (`tensor_write`,
//!   `execute`, …) and returns its result. So the async API has exactly the semantics of the
//!   synchronous one, run later, in order, on another thread.
//! - **One worker thread per queue**, made on the first request of that queue and fed through a
//!   channel: requests of one queue complete in the order they were scheduled; requests of
//!   different queues (a write queue and the compute queue) run concurrently, as on a device. A
//!   client that does not wait for completion observes it (its output is not written yet).
//! - **Sequence ids** follow the public layout: an execution-unit id in the top 16 bits, a
//!   48-bit sequence number below, starting at 1 per queue. The simulator's execution-unit id
//!   packs the queue's key: `lnc << 8 | xu << 4 | queue` (so `lnc < 256`, `queue < 16`).
//! - **Errors go to trackers.** A failed job's status is recorded with its sequence id in the
//!   tracker named when it was scheduled; the request still completes.
//! - **No drain from a worker.** A job may call back into the client (the exec callback of
//!   `nrta_execute_schedule`), and the client may call `nrt_async_drain_queued_execs` there. The
//!   request that runs the callback cannot complete before the callback returns, so such a drain
//!   could never end: [`AsyncQueues::drain`] refuses any call from a worker thread
//!   ([`AsyncError::DrainFromWorker`]) instead of waiting (`docs/abi-facts.md` §4 says why).

use std::cell::Cell;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use abi::runtime::NrtError;
use abi::status::NrtStatus;

/// The execution units of `nrta_xu_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecutionUnit {
    /// `NRTA_XU_TENSOR_READ`.
    TensorRead = 0,
    /// `NRTA_XU_TENSOR_WRITE`.
    TensorWrite = 1,
    /// `NRTA_XU_TENSOR_OP`: copies and other tensor operations.
    TensorOp = 2,
    /// `NRTA_XU_COMPUTE`: model executions.
    Compute = 3,
    /// `NRTA_XU_COLLECTIVES`.
    Collectives = 4,
}

impl ExecutionUnit {
    /// The unit for an `nrta_xu_t` code.
    pub fn from_code(code: u32) -> Option<ExecutionUnit> {
        Some(match code {
            0 => ExecutionUnit::TensorRead,
            1 => ExecutionUnit::TensorWrite,
            2 => ExecutionUnit::TensorOp,
            3 => ExecutionUnit::Compute,
            4 => ExecutionUnit::Collectives,
            _ => return None,
        })
    }

    /// How many queues the unit has: compute and collectives use queue 0 only.
    pub fn n_queues(self) -> u32 {
        match self {
            ExecutionUnit::Compute | ExecutionUnit::Collectives => 1,
            _ => 16,
        }
    }
}

/// One queue: a NeuronCore, an execution unit and a queue index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueueKey {
    /// The (logical) NeuronCore.
    pub lnc: u32,
    /// The execution unit.
    pub xu: ExecutionUnit,
    /// The queue index within the unit.
    pub queue: u32,
}

/// Bits of a sequence id below the execution-unit id.
pub const SEQ_NUM_BITS: u32 = 48;
const SEQ_NUM_MASK: u64 = (1 << SEQ_NUM_BITS) - 1;

impl QueueKey {
    /// The execution-unit id of the queue (the top 16 bits of its sequence ids).
    pub fn xu_id(self) -> u64 {
        u64::from(self.lnc) << 8 | (self.xu as u64) << 4 | u64::from(self.queue)
    }

    /// The sequence id of request `n` of this queue.
    pub fn seq(self, n: u64) -> u64 {
        self.xu_id() << SEQ_NUM_BITS | (n & SEQ_NUM_MASK)
    }

    /// The queue a sequence id belongs to, and its sequence number.
    pub fn of_seq(seq: u64) -> Option<(QueueKey, u64)> {
        let xu_id = seq >> SEQ_NUM_BITS;
        let xu = ExecutionUnit::from_code(((xu_id >> 4) & 0xF) as u32)?;
        let key = QueueKey { lnc: (xu_id >> 8) as u32, xu, queue: (xu_id & 0xF) as u32 };
        Some((key, seq & SEQ_NUM_MASK))
    }
}

/// Why a request was refused when it was scheduled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AsyncError {
    /// The NeuronCore does not exist.
    #[error("neuron core {lnc} does not exist, expected one below {n_cores}")]
    NoSuchCore {
        /// The core asked for.
        lnc: u32,
        /// The machine's cores.
        n_cores: u32,
    },
    /// The queue index is out of range for the unit.
    #[error("queue {queue} of {xu:?} is invalid, expected one below {n_queues}")]
    NoSuchQueue {
        /// The unit.
        xu: ExecutionUnit,
        /// The queue asked for.
        queue: i64,
        /// The unit's queues.
        n_queues: u32,
    },
    /// The error tracker was not made by this runtime or is destroyed.
    #[error("error tracker {0} is not live")]
    NoSuchTracker(u64),
    /// The tracker belongs to another NeuronCore.
    #[error("error tracker {tracker} is for neuron core {tracker_lnc}, the request runs on {lnc}")]
    TrackerOfAnotherCore {
        /// The tracker.
        tracker: u64,
        /// Its core.
        tracker_lnc: u32,
        /// The request's core.
        lnc: u32,
    },
    /// The sequence id was never handed out.
    #[error("sequence id {0:#x} was never issued")]
    UnknownSequence(u64),
    /// The system refused a socket pair for a completion handle.
    #[error("cannot make a completion handle: {0}")]
    NoDescriptor(String),
    /// A drain was asked for on a queue's worker thread (from an exec callback), where waiting
    /// would wait for the running request itself.
    #[error(
        "cannot drain neuron core {lnc} from the worker of queue {queue} of {xu:?} (an exec callback): the drain would wait for the request that is running it, expected a call from a thread of the client's own"
    )]
    DrainFromWorker {
        /// The core asked to drain.
        lnc: u32,
        /// The worker's execution unit.
        xu: ExecutionUnit,
        /// The worker's queue index.
        queue: u32,
    },
}

impl From<AsyncError> for NrtError {
    /// `NRT_INVALID_HANDLE` for a tracker that is not live, `NRT_INVALID` otherwise.
    fn from(err: AsyncError) -> NrtError {
        let status = match err {
            AsyncError::NoSuchTracker(_) => NrtStatus::InvalidHandle,
            AsyncError::NoDescriptor(_) => NrtStatus::Resource,
            _ => NrtStatus::Invalid,
        };
        NrtError::new(status, err.to_string())
    }
}

/// A request's work: the synchronous call it stands for, given the request's sequence id.
pub type Job = Box<dyn FnOnce(u64) -> Result<(), NrtError> + Send>;

#[derive(Default)]
struct Progress {
    issued: u64,
    completed: u64,
    /// The write ends of completion handles (`nrta_get_completion_handle`), by request number:
    /// dropped when the request completes, which makes the caller's end readable (end of file).
    waiters: Vec<(u64, UnixStream)>,
}

impl Progress {
    /// Marks requests up to number `n` completed and releases their completion handles.
    fn complete(&mut self, n: u64) {
        self.completed = n;
        self.waiters.retain(|(waiting_for, _)| *waiting_for > n);
    }
}

thread_local! {
    /// The queue whose worker this thread is; `None` on every other thread.
    static WORKER_OF: Cell<Option<QueueKey>> = const { Cell::new(None) };
}

/// What a worker receives: the sequence id, the tracker and the job.
type Request = (u64, Option<Arc<Tracker>>, Job);

struct Queue {
    sender: Mutex<Sender<Request>>,
    progress: Arc<(Mutex<Progress>, Condvar)>,
}

/// The errors of one NeuronCore's requests (`nrta_error_tracker_t`).
#[derive(Debug)]
pub struct Tracker {
    lnc: u32,
    errors: Mutex<Vec<(u64, NrtStatus)>>,
}

impl Tracker {
    /// The failed requests so far: sequence id and status, in completion order.
    pub fn errors(&self) -> Vec<(u64, NrtStatus)> {
        lock(&self.errors).clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Every queue of a machine of `n_cores` NeuronCores.
pub struct AsyncQueues {
    n_cores: u32,
    queues: Mutex<HashMap<QueueKey, Arc<Queue>>>,
    trackers: Mutex<HashMap<u64, Arc<Tracker>>>,
    next_tracker: AtomicU64,
}

impl std::fmt::Debug for AsyncQueues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncQueues").field("n_cores", &self.n_cores).finish_non_exhaustive()
    }
}

impl AsyncQueues {
    /// No queue yet; workers start with their first request.
    pub fn new(n_cores: u32) -> AsyncQueues {
        AsyncQueues {
            n_cores,
            queues: Mutex::new(HashMap::new()),
            trackers: Mutex::new(HashMap::new()),
            next_tracker: AtomicU64::new(1),
        }
    }

    /// The key of queue `queue` of `xu` on `lnc`, checked.
    ///
    /// # Errors
    /// [`AsyncError::NoSuchCore`] or [`AsyncError::NoSuchQueue`].
    pub fn key(&self, lnc: u32, xu: ExecutionUnit, queue: i64) -> Result<QueueKey, AsyncError> {
        if lnc >= self.n_cores {
            return Err(AsyncError::NoSuchCore { lnc, n_cores: self.n_cores });
        }
        let n_queues = xu.n_queues();
        match u32::try_from(queue) {
            Ok(queue) if queue < n_queues => Ok(QueueKey { lnc, xu, queue }),
            _ => Err(AsyncError::NoSuchQueue { xu, queue, n_queues }),
        }
    }

    fn queue(&self, key: QueueKey) -> Arc<Queue> {
        let mut queues = lock(&self.queues);
        queues
            .entry(key)
            .or_insert_with(|| {
                let (sender, receiver) = channel::<Request>();
                let progress = Arc::new((Mutex::new(Progress::default()), Condvar::new()));
                let worker_progress = Arc::clone(&progress);
                std::thread::Builder::new()
                    .name(format!("nrta-{}-{:?}-{}", key.lnc, key.xu, key.queue))
                    .spawn(move || {
                        WORKER_OF.with(|worker_of| worker_of.set(Some(key)));
                        for (seq, tracker, job) in receiver {
                            // A panic in a job is a bug of ours; it fails that request (so the
                            // queue keeps completing) instead of stopping the worker.
                            let result = catch_unwind(AssertUnwindSafe(|| job(seq)))
                                .unwrap_or_else(|_| {
                                    Err(NrtError::new(NrtStatus::Failure, "the request panicked"))
                                });
                            if let (Err(err), Some(tracker)) = (result, &tracker) {
                                lock(&tracker.errors).push((seq, err.status));
                            }
                            let (progress, done) = &*worker_progress;
                            lock(progress).complete(seq & SEQ_NUM_MASK);
                            done.notify_all();
                        }
                    })
                    .map(drop)
                    .unwrap_or_else(|err| eprintln!("nrtsim: cannot start an async worker: {err}"));
                Arc::new(Queue { sender: Mutex::new(sender), progress })
            })
            .clone()
    }

    /// Schedules `job` on queue `key`; failures go to `tracker` (if any). Returns its sequence id.
    ///
    /// # Errors
    /// [`AsyncError::NoSuchTracker`] or [`AsyncError::TrackerOfAnotherCore`].
    pub fn schedule(
        &self,
        key: QueueKey,
        tracker: Option<u64>,
        job: Job,
    ) -> Result<u64, AsyncError> {
        let tracker = match tracker {
            None => None,
            Some(id) => {
                let found = lock(&self.trackers).get(&id).cloned();
                let found = found.ok_or(AsyncError::NoSuchTracker(id))?;
                if found.lnc != key.lnc {
                    return Err(AsyncError::TrackerOfAnotherCore {
                        tracker: id,
                        tracker_lnc: found.lnc,
                        lnc: key.lnc,
                    });
                }
                Some(found)
            }
        };
        let queue = self.queue(key);
        // The sender lock also orders issue numbers with sends, so the worker sees them in order.
        let sender = lock(&queue.sender);
        let seq = {
            let mut progress = lock(&queue.progress.0);
            progress.issued += 1;
            key.seq(progress.issued)
        };
        if sender.send((seq, tracker.clone(), job)).is_err() {
            // No worker (it could not be started): the request fails at once, and completes.
            if let Some(tracker) = tracker {
                lock(&tracker.errors).push((seq, NrtStatus::Failure));
            }
            lock(&queue.progress.0).complete(seq & SEQ_NUM_MASK);
        }
        Ok(seq)
    }

    /// Whether request `seq` has completed.
    ///
    /// # Errors
    /// [`AsyncError::UnknownSequence`] for an id never issued.
    pub fn is_completed(&self, seq: u64) -> Result<bool, AsyncError> {
        let (key, n) = QueueKey::of_seq(seq).ok_or(AsyncError::UnknownSequence(seq))?;
        let queue = lock(&self.queues).get(&key).cloned();
        let queue = queue.ok_or(AsyncError::UnknownSequence(seq))?;
        let progress = lock(&queue.progress.0);
        if n == 0 || n > progress.issued {
            return Err(AsyncError::UnknownSequence(seq));
        }
        Ok(progress.completed >= n)
    }

    /// `nrta_get_completion_handle`: a descriptor that becomes readable (end of file) when
    /// request `seq` completes, at once if it has; the caller closes it (drops it).
    ///
    /// # Errors
    /// [`AsyncError::UnknownSequence`] for an id never issued; [`AsyncError::NoDescriptor`]
    /// when the system gives no socket pair.
    pub fn completion_handle(&self, seq: u64) -> Result<OwnedFd, AsyncError> {
        let (key, n) = QueueKey::of_seq(seq).ok_or(AsyncError::UnknownSequence(seq))?;
        let queue = lock(&self.queues).get(&key).cloned();
        let queue = queue.ok_or(AsyncError::UnknownSequence(seq))?;
        let mut progress = lock(&queue.progress.0);
        if n == 0 || n > progress.issued {
            return Err(AsyncError::UnknownSequence(seq));
        }
        let (caller, ours) =
            UnixStream::pair().map_err(|err| AsyncError::NoDescriptor(err.to_string()))?;
        if progress.completed < n {
            progress.waiters.push((n, ours));
        }
        Ok(OwnedFd::from(caller))
    }

    /// The sequence id of the last completed request of `key` (number 0 when none has).
    pub fn last_completed(&self, key: QueueKey) -> u64 {
        let queue = lock(&self.queues).get(&key).cloned();
        key.seq(queue.map_or(0, |queue| lock(&queue.progress.0).completed))
    }

    /// Blocks until every request scheduled so far on `lnc` has completed.
    ///
    /// # Errors
    /// [`AsyncError::DrainFromWorker`], at once, when called on a worker thread of any queue: a
    /// job's callback would wait for its own request (or, from two cores' callbacks, each for
    /// the other), which never completes.
    pub fn drain(&self, lnc: u32) -> Result<(), AsyncError> {
        if let Some(worker) = WORKER_OF.with(Cell::get) {
            return Err(AsyncError::DrainFromWorker { lnc, xu: worker.xu, queue: worker.queue });
        }
        let queues: Vec<Arc<Queue>> = lock(&self.queues)
            .iter()
            .filter(|(key, _)| key.lnc == lnc)
            .map(|(_, queue)| Arc::clone(queue))
            .collect();
        for queue in queues {
            let (progress, done) = &*queue.progress;
            let mut state = lock(progress);
            while state.completed < state.issued {
                state = done.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
        }
        Ok(())
    }

    /// A new error tracker for `lnc`.
    ///
    /// # Errors
    /// [`AsyncError::NoSuchCore`].
    pub fn tracker_create(&self, lnc: u32) -> Result<u64, AsyncError> {
        if lnc >= self.n_cores {
            return Err(AsyncError::NoSuchCore { lnc, n_cores: self.n_cores });
        }
        let id = self.next_tracker.fetch_add(1, Ordering::Relaxed);
        lock(&self.trackers).insert(id, Arc::new(Tracker { lnc, errors: Mutex::new(Vec::new()) }));
        Ok(id)
    }

    /// Forgets a tracker; `false` when it was not live.
    pub fn tracker_destroy(&self, id: u64) -> bool {
        lock(&self.trackers).remove(&id).is_some()
    }

    /// The errors a tracker holds.
    ///
    /// # Errors
    /// [`AsyncError::NoSuchTracker`].
    pub fn tracker_errors(&self, id: u64) -> Result<Vec<(u64, NrtStatus)>, AsyncError> {
        let tracker = lock(&self.trackers).get(&id).cloned();
        Ok(tracker.ok_or(AsyncError::NoSuchTracker(id))?.errors())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    #[test]
    fn sequence_ids_carry_the_queue_and_a_number_from_one() {
        let queues = AsyncQueues::new(2);
        let key = queues.key(1, ExecutionUnit::TensorWrite, 3).unwrap();
        let first = queues.schedule(key, None, Box::new(|_| Ok(()))).unwrap();
        let second = queues.schedule(key, None, Box::new(|_| Ok(()))).unwrap();
        assert_eq!(first & SEQ_NUM_MASK, 1);
        assert_eq!(second, first + 1);
        assert_eq!(QueueKey::of_seq(second), Some((key, 2)));
        queues.drain(1).unwrap();
        assert_eq!(queues.last_completed(key), second);
        assert_eq!(queues.is_completed(second), Ok(true));
        assert_eq!(queues.is_completed(second + 1), Err(AsyncError::UnknownSequence(second + 1)));
    }

    #[test]
    fn a_request_completes_only_after_its_job_ran() {
        let queues = AsyncQueues::new(1);
        let key = queues.key(0, ExecutionUnit::Compute, 0).unwrap();
        let (release, wait) = mpsc::channel::<()>();
        let seq = queues
            .schedule(
                key,
                None,
                Box::new(move |_| {
                    let _ = wait.recv();
                    Ok(())
                }),
            )
            .unwrap();
        assert_eq!(queues.is_completed(seq), Ok(false), "the job is blocked");
        release.send(()).unwrap();
        queues.drain(0).unwrap();
        assert_eq!(queues.is_completed(seq), Ok(true));
    }

    #[test]
    fn requests_of_one_queue_run_in_order_and_failures_reach_the_tracker() {
        let queues = AsyncQueues::new(1);
        let key = queues.key(0, ExecutionUnit::TensorOp, 0).unwrap();
        let tracker = queues.tracker_create(0).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut seqs = Vec::new();
        for i in 0..20u32 {
            let order = Arc::clone(&order);
            let job: Job = Box::new(move |_| {
                lock(&order).push(i);
                if i % 7 == 3 { Err(NrtError::new(NrtStatus::Invalid, "odd")) } else { Ok(()) }
            });
            seqs.push(queues.schedule(key, Some(tracker), job).unwrap());
        }
        queues.drain(0).unwrap();
        assert_eq!(*lock(&order), (0..20).collect::<Vec<_>>());
        let errors = queues.tracker_errors(tracker).unwrap();
        assert_eq!(
            errors,
            vec![
                (seqs[3], NrtStatus::Invalid),
                (seqs[10], NrtStatus::Invalid),
                (seqs[17], NrtStatus::Invalid)
            ]
        );
        assert!(queues.tracker_destroy(tracker));
        assert_eq!(queues.tracker_errors(tracker), Err(AsyncError::NoSuchTracker(tracker)));
    }

    /// A job that drains (as an exec callback calling `nrt_async_drain_queued_execs` does) is
    /// refused at once, whichever core it drains; its own request then completes. The test
    /// waits for the job's answer with a deadline, so a drain that hangs fails it.
    #[test]
    fn a_drain_from_a_worker_is_refused_instead_of_waiting_for_itself() {
        let queues = Arc::new(AsyncQueues::new(2));
        let key = queues.key(0, ExecutionUnit::Compute, 0).unwrap();
        for lnc in [0, 1] {
            let (answer, answered) = mpsc::channel();
            let in_job = Arc::clone(&queues);
            let job: Job = Box::new(move |_| {
                let _ = answer.send(in_job.drain(lnc));
                Ok(())
            });
            let seq = queues.schedule(key, None, job).unwrap();
            let drained = answered
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("the drain inside the job returned within 10 s");
            assert_eq!(
                drained,
                Err(AsyncError::DrainFromWorker { lnc, xu: ExecutionUnit::Compute, queue: 0 })
            );
            queues.drain(0).unwrap();
            assert_eq!(queues.is_completed(seq), Ok(true));
        }
        let refused = AsyncError::DrainFromWorker { lnc: 0, xu: ExecutionUnit::Compute, queue: 0 };
        assert_eq!(NrtError::from(refused).status, NrtStatus::Invalid);
    }

    #[test]
    fn a_panicking_job_fails_its_request_and_the_queue_goes_on() {
        let queues = AsyncQueues::new(1);
        let key = queues.key(0, ExecutionUnit::TensorOp, 0).unwrap();
        let tracker = queues.tracker_create(0).unwrap();
        let boom = queues.schedule(key, Some(tracker), Box::new(|_| panic!("a bug"))).unwrap();
        let seen = Arc::new(AtomicU64::new(0));
        let seen_in_job = Arc::clone(&seen);
        let next = queues
            .schedule(
                key,
                Some(tracker),
                Box::new(move |seq| {
                    seen_in_job.store(seq, Ordering::SeqCst);
                    Ok(())
                }),
            )
            .unwrap();
        queues.drain(0).unwrap();
        assert_eq!(queues.is_completed(next), Ok(true));
        assert_eq!(seen.load(Ordering::SeqCst), next, "a job is given its own sequence id");
        assert_eq!(queues.tracker_errors(tracker).unwrap(), vec![(boom, NrtStatus::Failure)]);
    }

    #[test]
    fn a_completion_handle_is_readable_once_its_request_completes() {
        use std::io::{ErrorKind, Read};
        let queues = AsyncQueues::new(1);
        let key = queues.key(0, ExecutionUnit::TensorWrite, 0).unwrap();
        let (release, gate) = channel::<()>();
        let gate = Mutex::new(gate);
        let seq = queues
            .schedule(
                key,
                None,
                Box::new(move |_| {
                    let _ = lock(&gate).recv();
                    Ok(())
                }),
            )
            .unwrap();
        let mut pending = UnixStream::from(queues.completion_handle(seq).unwrap());
        pending.set_nonblocking(true).unwrap();
        let mut byte = [0u8; 1];
        let err = pending.read(&mut byte).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::WouldBlock, "readable before the request ran");
        release.send(()).unwrap();
        queues.drain(0).unwrap();
        pending.set_nonblocking(false).unwrap();
        assert_eq!(pending.read(&mut byte).unwrap(), 0, "end of file once completed");
        let mut done = UnixStream::from(queues.completion_handle(seq).unwrap());
        assert_eq!(done.read(&mut byte).unwrap(), 0, "a completed request's handle is ready");
        let never = key.seq(2);
        assert!(matches!(queues.completion_handle(never), Err(AsyncError::UnknownSequence(_))));
    }

    #[test]
    fn bad_cores_queues_and_trackers_are_refused() {
        let queues = AsyncQueues::new(2);
        assert_eq!(
            queues.key(2, ExecutionUnit::Compute, 0),
            Err(AsyncError::NoSuchCore { lnc: 2, n_cores: 2 })
        );
        assert!(matches!(
            queues.key(0, ExecutionUnit::Compute, 1),
            Err(AsyncError::NoSuchQueue { queue: 1, .. })
        ));
        assert!(queues.key(0, ExecutionUnit::TensorRead, -1).is_err());
        let other = queues.tracker_create(1).unwrap();
        let key = queues.key(0, ExecutionUnit::TensorRead, 0).unwrap();
        assert!(matches!(
            queues.schedule(key, Some(other), Box::new(|_| Ok(()))),
            Err(AsyncError::TrackerOfAnotherCore { .. })
        ));
        assert_eq!(queues.is_completed(0), Err(AsyncError::UnknownSequence(0)));
    }
}
