//! Splitting a kernel's work over the cores: one pool of worker threads kept for the process.
//!
//! Design choices:
//! - Kernels used to start a scoped thread per part of every large instruction. Starting and
//!   joining a thread costs 35–40 µs on the 2-core machines here (more under load), and a model
//!   runs dozens of such instructions per launch: a transformer encoder's run paid over a
//!   millisecond in thread starts alone. The pool's workers stay, and a part handed to one waits
//!   microseconds, not tens of them.
//! - The calling thread takes parts as the workers do, so a split over `n` cores keeps `n`
//!   threads busy: the pool has one worker fewer than the process has cores.
//!   The cores are those the process may run on (its CPU affinity, its cgroup's quota), or
//!   `NRTSIM_THREADS` when set ([`machine_cores`]): a test runner that starts one process per
//!   core sets it to 1, and no process then splits at all.
//! - The pool is ours, not rayon's global one, so a program that configures that pool (or links
//!   another library that does) neither changes nor is changed by ours. A part that itself splits
//!   (a product inside a batch) runs nested on the same pool: rayon's workers take other parts
//!   while they wait, so nesting cannot deadlock.
//! - A part that panics is a bug of ours: [`try_each`] turns it into [`Fail::Internal`] as the
//!   scoped threads' joins did, instead of unwinding through the interpreter. [`each`], for
//!   kernels that return nothing, lets the panic continue, as a scoped thread's did.
//! - Between kernels the workers stay awake, and the caller waits for its parts awake: a worker
//!   that went to sleep, and a caller blocked on the scope's latch, each took 20–30 µs to wake on
//!   the VMs here (an idle virtual CPU is halted, and waking it goes through the hypervisor), so
//!   every split cost 42–57 µs of hand-offs and the transformer model lost about 3 ms per run to
//!   them (two cores ran it 1.67× faster than one instead of nearly 2×). Now each split makes
//!   sure a keep-awake job runs on every worker ([`keep_awake`]): it takes parts as they are
//!   handed out, and returns once it has found no part for [`KEEP_AWAKE`]; and a caller that is
//!   not a worker spins up to [`CALLER_SPIN`] for its parts to finish before it blocks. A split
//!   then costs under a microsecond. The price is a core kept busy for [`KEEP_AWAKE`] after the
//!   last split, as any spinning pool does.
//! - A split pays only while the other cores are ours. When one is taken (another process, a
//!   test runner's next worker), the part handed to it waits for a scheduler slice, milliseconds,
//!   and every kernel that splits waits with it: a model ran up to 7× slower with one of two
//!   cores busy, and with both cores' parts fixed in advance it still ran 1.3–1.6× slower than
//!   the same run on one thread. Three things answer it:
//!   - Parts are taken, not handed out: the caller and the workers each take the next part when
//!     they finish one ([`each`]), so a worker that has not started leaves its parts to the
//!     caller instead of holding them until its core is free. Kernels cut their work into a few
//!     parts per core ([`per_part`]), and each thread starts on a run of consecutive parts of its
//!     own, taking from the ends of the others' runs once its own is done: a core that runs
//!     slower than the other (a busy one, or a virtual CPU whose host core is shared, as the
//!     VMs here showed for minutes at a time) costs the split at most one part, and on time each
//!     thread keeps its run of the data from one kernel to the next.
//!   - Where the system says (Linux's runnable count in `/proc/loadavg`, read at most every
//!     [`CONTENTION_EVERY`]), kernels run on their calling thread alone ([`usable_cores`], which
//!     [`each`] and [`cores`] read) while other programs' runnable threads leave them no
//!     second core (on larger machines, over the cores they leave): the other program is not slowed by our spinning workers, and
//!     ours runs at the speed of one core. With one of two cores busy the models then run as fast
//!     as on one thread, instead of 1.3–1.6× slower. Our own workers are told apart by their
//!     state (`/proc/self/task/TID/stat`, each recording its id when it starts), not by whether
//!     a keep-awake job is running: a worker is still runnable for a while after its job ends
//!     (rayon's own idle spin), and counted as another program's thread it had kept a quiet
//!     machine's kernels on one core for the next interval, again and again.
//!   - Elsewhere, and for what the count cannot see (a hypervisor's other guests), the caller
//!     times its own parts and its wait for the others: a wait longer than its own parts and than
//!     [`LATE`] makes the kernels run alone for a while, [`BACKOFF_FIRST`] at first and twice as
//!     long after each late split that follows, up to [`BACKOFF_MOST`]; a split on time sets it
//!     back. Only a split whose workers were all spinning in their keep-awake jobs already is
//!     judged: waking a worker that slept can take milliseconds on a VM, and judging that wait
//!     had kept a quiet machine's 512³ dot alone for most of its runs (91 GFLOP/s instead of
//!     150–186). A job spawned is not a worker awake: the split after the one that woke the
//!     workers had been judged late while they were still waking.
//! - When the pool cannot be made (the system refuses threads), every part runs on the calling
//!   thread: slower, never wrong. So does a child process forked after the pool was made (a
//!   Python program's `fork` workers): the pool's threads are not in the child, and a part handed
//!   to them would never run.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::error::Fail;

/// The cores the process's kernels may use: `NRTSIM_THREADS` when it is a positive number (a
/// runner that starts one process per core sets 1), else the cores this process may run on
/// (`available_parallelism`: its CPU affinity and its cgroup's quota), asked once.
pub(crate) fn machine_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        let set = std::env::var("NRTSIM_THREADS").ok().and_then(|n| n.trim().parse().ok());
        set.filter(|&n: &usize| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// The process's kernel workers, made on first use; `None` when the system refused them, or in a
/// child forked after they were made (they live in the parent only).
fn pool() -> Option<&'static rayon::ThreadPool> {
    // The pool and the process it was made in.
    static POOL: OnceLock<Option<(u32, rayon::ThreadPool)>> = OnceLock::new();
    let made = POOL.get_or_init(|| {
        let all = machine_cores();
        if all < 2 {
            return None;
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(all.saturating_sub(1).max(1))
            .thread_name(|i| format!("nrtsim-kernel-{i}"))
            .start_handler(|_| count_as_ours())
            .build()
            .ok()?;
        Some((std::process::id(), pool))
    });
    made.as_ref().filter(|(pid, _)| *pid == std::process::id()).map(|(_, pool)| pool)
}

/// How long a worker's keep-awake job waits for a part before it lets the worker sleep.
const KEEP_AWAKE: Duration = Duration::from_millis(2);

/// How long a caller that is not a worker spins for its parts before it blocks.
const CALLER_SPIN: Duration = Duration::from_millis(1);

/// A wait for the other parts shorter than this is never late, whatever the caller's own part
/// took: a hand-off costs microseconds, a scheduler slice milliseconds.
const LATE: Duration = Duration::from_micros(200);

/// How long kernels run alone after the first late split.
const BACKOFF_FIRST: Duration = Duration::from_millis(10);

/// The longest they run alone before a split is tried again.
const BACKOFF_MOST: Duration = Duration::from_millis(640);

/// The instant the backoff times count from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// When kernels run alone, and for how long the next time (see the module's notes): two plain
/// atomics, so a lost update between racing splits costs at most one backoff's length.
struct Backoff {
    /// Microseconds since [`epoch`] until which kernels run alone (0: not backing off).
    alone_until_us: AtomicU64,
    /// The length of the next backoff, in microseconds (0: [`BACKOFF_FIRST`]).
    next_us: AtomicU64,
}

impl Backoff {
    const fn new() -> Backoff {
        Backoff { alone_until_us: AtomicU64::new(0), next_us: AtomicU64::new(0) }
    }

    fn alone_at(&self, now_us: u64) -> bool {
        let until = self.alone_until_us.load(Ordering::Relaxed);
        until != 0 && now_us < until
    }

    /// A split at `now_us` whose caller's own part took `own` and then waited `waited` for the
    /// others: a late one starts (or lengthens) a backoff, one on time ends the doubling.
    fn record(&self, now_us: u64, own: Duration, waited: Duration) {
        if waited > own.max(LATE) {
            let length = self.next_us.load(Ordering::Relaxed).max(micros(BACKOFF_FIRST));
            self.alone_until_us.store(now_us.saturating_add(length).max(1), Ordering::Relaxed);
            let next = length.saturating_mul(2).min(micros(BACKOFF_MOST));
            self.next_us.store(next, Ordering::Relaxed);
        } else if self.next_us.load(Ordering::Relaxed) != 0 {
            self.next_us.store(0, Ordering::Relaxed);
        }
    }
}

/// The process's backoff.
static BACKOFF: Backoff = Backoff::new();

/// The cores kernels may split over now: [`machine_cores`], fewer while other programs' threads
/// wait for the cores ours would take ([`Contention`]), one while a late split's backoff lasts
/// (see the module's notes).
pub(crate) fn usable_cores() -> usize {
    let all = machine_cores();
    if all < 2 {
        return 1;
    }
    let now_us = micros(epoch().elapsed());
    if BACKOFF.alone_at(now_us) {
        return 1;
    }
    all.min(CONTENTION.free_at(now_us, runnable_now)).max(1)
}

/// How often the machine's runnable threads are counted, at most.
const CONTENTION_EVERY: Duration = Duration::from_millis(4);

/// The cores left to us at the last count of the machine's runnable threads: a part handed to a
/// worker whose core another program's thread wants waits for a scheduler slice.
struct Contention {
    /// Microseconds since [`epoch`] of the last count, plus one (0: never counted).
    counted_at_us: AtomicU64,
    /// Cores not wanted by other programs' threads (`usize::MAX`: unknown).
    free: AtomicUsize,
}

impl Contention {
    const fn new() -> Contention {
        Contention { counted_at_us: AtomicU64::new(0), free: AtomicUsize::new(usize::MAX) }
    }

    /// The last count's free cores, counted again by one caller when it is [`CONTENTION_EVERY`]
    /// old. `count` gives the threads runnable on the whole machine (this one included), its
    /// online cores, and how many of the runnable are the pool's workers; `None` where the
    /// system does not say, which leaves every core free.
    fn free_at(&self, now_us: u64, count: impl FnOnce() -> Option<(usize, usize, usize)>) -> usize {
        let last = self.counted_at_us.load(Ordering::Relaxed);
        let stamp = now_us.saturating_add(1);
        let due = last == 0 || stamp.saturating_sub(last) >= micros(CONTENTION_EVERY);
        if due
            && self
                .counted_at_us
                .compare_exchange(last, stamp, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let free = count()
                .map_or(usize::MAX, |(runnable, online, ours)| free_cores(runnable, online, ours));
            self.free.store(free, Ordering::Relaxed);
        }
        self.free.load(Ordering::Relaxed)
    }
}

/// The cores of `online` that other programs leave free when `runnable` threads are runnable,
/// this one and `workers` runnable workers of ours among them.
fn free_cores(runnable: usize, online: usize, workers: usize) -> usize {
    let others = runnable.saturating_sub(1 + workers);
    online.saturating_sub(others)
}

/// The system's ids of the pool's worker threads, as each records its own when it starts.
static WORKER_TIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Counts the calling thread as one of ours when the machine's load is judged: the pool's
/// workers, and the threads kept for SPMD ranks (`rank_threads`), each of which may still be
/// runnable for a moment after its part or its rank ends.
pub(crate) fn count_as_ours() {
    if let Some(tid) = this_thread_id() {
        WORKER_TIDS.lock().unwrap_or_else(|poison| poison.into_inner()).push(tid);
    }
}

/// Undoes [`count_as_ours`] for the calling thread as it exits (a rank thread not kept), so the
/// list holds no id the system may give to another thread.
pub(crate) fn count_as_ours_no_more() {
    if let Some(tid) = this_thread_id() {
        WORKER_TIDS.lock().unwrap_or_else(|poison| poison.into_inner()).retain(|&t| t != tid);
    }
}

/// The calling thread's id as Linux numbers it (`/proc/thread-self/stat`'s first field); `None`
/// elsewhere.
fn this_thread_id() -> Option<u32> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// The state letter of a `/proc/.../stat` line (`R` runnable, `S` sleeping, ...): the field after
/// the command name, which is in parentheses and may hold spaces and parentheses itself.
fn state_of(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// How many of the pool's workers are runnable now (running or waiting for a core): the
/// machine's count includes them, and they are ours. A worker whose state cannot be read counts
/// as runnable, which leaves a core to us rather than take one away.
fn workers_runnable() -> usize {
    let tids = WORKER_TIDS.lock().unwrap_or_else(|poison| poison.into_inner()).clone();
    tids.iter()
        .filter(|tid| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
                .ok()
                .and_then(|stat| state_of(&stat))
                .is_none_or(|state| state == 'R')
        })
        .count()
}

/// The process's view of the machine's load.
static CONTENTION: Contention = Contention::new();

/// The threads runnable on the machine now (the kernel's count, this one included), its online
/// cores, and the pool's workers among the runnable: Linux's `/proc/loadavg`,
/// `/sys/devices/system/cpu/online` and each worker's `/proc/self/task/TID/stat`; `None`
/// elsewhere.
fn runnable_now() -> Option<(usize, usize, usize)> {
    static ONLINE: OnceLock<Option<usize>> = OnceLock::new();
    let online = (*ONLINE.get_or_init(|| {
        let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
        online_cores(&text)
    }))?;
    // A worker runnable just before or just after the machine's count may be in it: counted as
    // ours either way, since a worker of ours taken for another program's thread would keep our
    // kernels on one core for the whole interval.
    let before = workers_runnable();
    let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
    let runnable = runnable_of(&loadavg)?;
    Some((runnable, online, before.max(workers_runnable())))
}

/// The runnable count of `/proc/loadavg` (`0.50 0.40 0.30 RUNNABLE/TOTAL LASTPID`).
fn runnable_of(loadavg: &str) -> Option<usize> {
    loadavg.split_whitespace().nth(3)?.split_once('/')?.0.parse().ok()
}

/// The cores of a kernel CPU list (`0-3,8,10-11`).
fn online_cores(list: &str) -> Option<usize> {
    list.trim().split(',').try_fold(0usize, |sum, range| {
        let count = match range.split_once('-') {
            Some((low, high)) => {
                high.parse::<usize>().ok()?.checked_sub(low.parse::<usize>().ok()?)? + 1
            }
            None => {
                range.parse::<usize>().ok()?;
                1
            }
        };
        sum.checked_add(count)
    })
}

/// Whether keep-awake jobs are running (or on their way to the workers).
static AWAKE: AtomicBool = AtomicBool::new(false);

/// How many of them have not returned yet.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// How many of them are running on their workers now (started, not returned).
static SPINNING: AtomicUsize = AtomicUsize::new(0);

/// Starts a keep-awake job on every worker of `pool`, unless they run already, and says whether
/// every worker is in its job now, spinning (a job spawned is not yet a worker awake: waking a
/// worker that slept can take milliseconds on a VM). Each job takes the pool's parts as they come
/// (`yield_now` runs one) and returns after [`KEEP_AWAKE`] without any. A part handed out just
/// as they return is taken by the worker's own loop, as it always was.
fn keep_awake(pool: &'static rayon::ThreadPool) -> bool {
    let workers = pool.current_num_threads();
    if AWAKE.swap(true, Ordering::AcqRel) {
        return SPINNING.load(Ordering::Acquire) == workers;
    }
    // The last job to return clears `AWAKE`: the next set starts only after all have returned.
    RUNNING.store(workers, Ordering::Release);
    pool.spawn_broadcast(move |_| {
        SPINNING.fetch_add(1, Ordering::AcqRel);
        #[cfg(test)]
        tests::IN_KEEP_AWAKE.with(|inside| inside.set(true));
        let mut last = Instant::now();
        loop {
            match pool.yield_now() {
                Some(rayon::Yield::Executed) => last = Instant::now(),
                _ if last.elapsed() > KEEP_AWAKE => break,
                _ => std::hint::spin_loop(),
            }
        }
        #[cfg(test)]
        tests::IN_KEEP_AWAKE.with(|inside| inside.set(false));
        SPINNING.fetch_sub(1, Ordering::AcqRel);
        if RUNNING.fetch_sub(1, Ordering::AcqRel) == 1 {
            AWAKE.store(false, Ordering::Release);
        }
    });
    false
}

/// Spins while `busy` holds, for at most `limit`: a wait that stays on its core, for waits of
/// microseconds that sleeping would stretch to tens (see the module's notes).
pub(crate) fn spin_while(limit: Duration, busy: impl Fn() -> bool) {
    let start = Instant::now();
    while busy() && start.elapsed() < limit {
        std::hint::spin_loop();
    }
}

/// Runs `job` on every item and returns when all are done. The items are cut into one run of
/// consecutive items per thread, the calling thread's first: each thread takes its own run's items
/// in order and, once it is done, the others' from their ends, so a core that is late or slower
/// (a busy core, a virtual CPU whose host core is shared) costs at most the item it took, and on
/// time each thread keeps the same run of the data split after split.
pub(crate) fn each<T: Send>(items: impl IntoIterator<Item = T>, job: impl Fn(T) + Sync) {
    let mut items = items.into_iter().peekable();
    let Some(first) = items.next() else { return };
    let job = &job;
    match pool().filter(|_| items.peek().is_some() && usable_cores() > 1) {
        Some(pool) => split(pool, std::iter::once(first).chain(items).collect(), job),
        None => std::iter::once(first).chain(items).for_each(job),
    }
}

/// How many of `units` (rows, products, elements) each part gets when a kernel splits them over
/// `cores`: [`PARTS_PER_CORE`] parts per core, so that [`each`] can even out cores that run at
/// different speeds, but no part smaller than `least` units (what a part's own set-up costs
/// pays for); all of them on one core.
pub(crate) fn per_part(units: usize, cores: usize, least: usize) -> usize {
    if cores <= 1 {
        return units.max(1);
    }
    units.div_ceil(cores.saturating_mul(PARTS_PER_CORE)).max(least).max(1)
}

/// Parts per core of a kernel's split ([`per_part`]). With one part per core, a core running at
/// two thirds of the other's speed (measured on the VMs here: a worker's part of a batched product
/// took 380 µs while the caller's took 260) made every split wait for it; with four, the faster
/// core takes the slow one's last parts.
pub(crate) const PARTS_PER_CORE: usize = 4;

/// The parts of a split not yet taken: one run of consecutive parts per thread.
struct Runs<T> {
    parts: Vec<Option<T>>,
    /// Per thread, its run's next part and the end of the run.
    runs: Vec<(usize, usize)>,
}

impl<T> Runs<T> {
    /// `parts` cut into `threads` runs as even as can be.
    fn new(parts: Vec<T>, threads: usize) -> Runs<T> {
        let (len, threads) = (parts.len(), threads.max(1));
        let runs = (0..threads).map(|t| (t * len / threads, (t + 1) * len / threads)).collect();
        Runs { parts: parts.into_iter().map(Some).collect(), runs }
    }

    /// Thread `home`'s next part: its own run's next, else the last of the run with the most left.
    fn take(&mut self, home: usize) -> Option<T> {
        let at = match self.runs.get_mut(home) {
            Some((next, end)) if *next < *end => {
                *next += 1;
                *next - 1
            }
            _ => {
                let (_, end) = self
                    .runs
                    .iter_mut()
                    .filter(|(next, end)| next < end)
                    .max_by_key(|(next, end)| *end - *next)?;
                *end -= 1;
                *end
            }
        };
        self.parts.get_mut(at)?.take()
    }
}

/// [`each`] over `pool`: run 0 on this thread, the others on the workers as they come for them.
fn split<T: Send>(pool: &'static rayon::ThreadPool, items: Vec<T>, job: &(impl Fn(T) + Sync)) {
    let total = items.len();
    let helpers = pool.current_num_threads().min(total.saturating_sub(1));
    // The parts not yet taken, and how many of them are done.
    let runs = Mutex::new(Runs::new(items, helpers + 1));
    let done = AtomicUsize::new(0);
    let (runs, done) = (&runs, &done);
    let take =
        move |home: usize| runs.lock().unwrap_or_else(|poison| poison.into_inner()).take(home);
    let awake = keep_awake(pool);
    // A worker waiting for nested parts takes them itself, so only an outside caller spins, and
    // only its waits say whether the other cores are ours.
    let outside = pool.current_thread_index().is_none();
    // Only a split whose workers were all spinning already says whether their cores are ours:
    // waking one that slept can take milliseconds on a VM.
    let judged = outside && awake;
    let started = Instant::now();
    let mut own = None;
    pool.in_place_scope(|scope| {
        for home in 1..=helpers {
            scope.spawn(move |_| {
                while let Some(item) = take(home) {
                    job(item);
                    done.fetch_add(1, Ordering::Release);
                }
            });
        }
        while let Some(item) = take(0) {
            job(item);
            done.fetch_add(1, Ordering::Release);
        }
        if outside {
            if judged {
                own = Some(started.elapsed());
            }
            spin_while(CALLER_SPIN, || done.load(Ordering::Acquire) != total);
        }
    });
    if let Some(own) = own {
        BACKOFF.record(micros(epoch().elapsed()), own, started.elapsed().saturating_sub(own));
    }
}

/// [`each`] for fallible parts: every part runs, and the error of the first part (in the items'
/// order) that failed or panicked is the result.
pub(crate) fn try_each<T: Send>(
    items: impl IntoIterator<Item = T>,
    job: impl Fn(T) -> Result<(), Fail> + Sync,
) -> Result<(), Fail> {
    // (position of the part, its error): the earliest part's is kept.
    let failure: Mutex<Option<(usize, Fail)>> = Mutex::new(None);
    let (job, failure_ref) = (&job, &failure);
    each(items.into_iter().enumerate(), move |(position, item)| {
        let outcome = catch_unwind(AssertUnwindSafe(|| job(item))).unwrap_or_else(|_| {
            Err(Fail::Internal("a part of a kernel split over the cores panicked".into()))
        });
        if let Err(fail) = outcome {
            let mut slot = failure_ref.lock().unwrap_or_else(|poison| poison.into_inner());
            if slot.as_ref().is_none_or(|(earliest, _)| position < *earliest) {
                *slot = Some((position, fail));
            }
        }
    });
    match failure.into_inner().unwrap_or_else(|poison| poison.into_inner()) {
        Some((_, fail)) => Err(fail),
        None => Ok(()),
    }
}

/// The cores this thread's kernels may split their work over: those `par::usable_cores` leaves
/// this process (its cores, asked once; fewer while other programs' threads want them; one while
/// splits back off), or this thread's share of them inside [`with_core_share`].
pub(crate) fn cores() -> usize {
    // Fewer while other programs want the cores, one after a late split.
    let all = usable_cores();
    SHARE.with(|share| share.get()).map_or(all, |share| share.clamp(1, all))
}

thread_local! {
    static SHARE: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with this thread's kernels splitting their work over at most `share` cores: SPMD
/// ranks run side by side, one thread each, so each takes its part of the machine instead of
/// all of it (two ranks on two cores would otherwise run four threads of gemm).
pub(crate) fn with_core_share<R>(share: usize, f: impl FnOnce() -> R) -> R {
    let before = SHARE.with(|s| s.replace(Some(share)));
    let result = f();
    SHARE.with(|s| s.set(before));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_part_runs_once_and_the_first_on_the_calling_thread() {
        let caller = std::thread::current().id();
        let seen: Mutex<Vec<(usize, bool)>> = Mutex::new(Vec::new());
        each(0..7, |i| {
            let on_caller = std::thread::current().id() == caller;
            seen.lock().expect("no panic").push((i, on_caller));
        });
        let mut seen = seen.into_inner().expect("no panic");
        seen.sort();
        assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), (0..7).collect::<Vec<_>>());
        assert!(seen[0].1, "the first part runs on the calling thread");
    }

    #[test]
    fn each_thread_takes_its_own_run_in_order_then_the_end_of_the_longest_left() {
        // Ten parts over three threads: runs 0..3, 3..6, 6..10.
        let mut runs = Runs::new((0..10).collect::<Vec<usize>>(), 3);
        assert_eq!(runs.take(1), Some(3));
        assert_eq!([runs.take(0), runs.take(0), runs.take(0)], [Some(0), Some(1), Some(2)]);
        // Thread 0's run is done; thread 2 has not started: its run is the longest left.
        assert_eq!(runs.take(0), Some(9));
        assert_eq!(runs.take(2), Some(6));
        // Runs 1 and 2 have two left each (4, 5 and 7, 8): thread 0 takes an end of one.
        let stolen = runs.take(0);
        assert!(matches!(stolen, Some(5) | Some(8)), "{stolen:?}");
        let mut rest: Vec<usize> = std::iter::from_fn(|| runs.take(1)).collect();
        rest.extend(stolen);
        rest.sort();
        assert_eq!(rest, [4, 5, 7, 8]);
        assert_eq!((runs.take(0), runs.take(2)), (None, None));
        // More threads than parts: the extra runs are empty, their threads take others' parts.
        let mut runs = Runs::new(vec!['a', 'b'], 4);
        assert_eq!((runs.take(3), runs.take(0), runs.take(1)), (Some('b'), Some('a'), None));
    }

    #[test]
    fn a_kernel_is_cut_into_a_few_parts_per_core_none_below_its_least() {
        assert_eq!(per_part(100, 1, 1), 100, "one core: one part");
        assert_eq!(per_part(64, 2, 1), 64 / (2 * PARTS_PER_CORE));
        assert_eq!(per_part(64, 2, 16), 16);
        assert_eq!(per_part(3, 2, 1), 1);
        assert_eq!(per_part(0, 2, 1), 1, "a part is never empty");
        assert_eq!(per_part(0, 1, 1), 1);
    }

    #[test]
    fn parts_write_disjoint_slices_of_the_callers_buffer() {
        let mut data = vec![0u32; 1000];
        each(data.chunks_mut(130).enumerate(), |(i, chunk)| {
            for (j, x) in chunk.iter_mut().enumerate() {
                *x = (i * 130 + j) as u32 * 3;
            }
        });
        let expected: Vec<u32> = (0..1000).map(|i| i * 3).collect();
        assert_eq!(data, expected);
    }

    #[test]
    fn the_workers_stop_spinning_once_idle_and_wake_for_the_next_split() {
        let total = AtomicUsize::new(0);
        each(0..4, |i| {
            total.fetch_add(i, Ordering::Relaxed);
        });
        // Other tests split work meanwhile and keep the workers awake; each quiet spell of
        // KEEP_AWAKE lets them return, so this ends.
        let start = Instant::now();
        while AWAKE.load(Ordering::Acquire) {
            assert!(start.elapsed() < Duration::from_secs(60), "the keep-awake jobs never return");
            std::thread::sleep(KEEP_AWAKE);
        }
        each(4..8, |i| {
            total.fetch_add(i, Ordering::Relaxed);
        });
        assert_eq!(total.into_inner(), (0..8).sum::<usize>());
    }

    #[test]
    fn a_worker_that_has_not_started_leaves_its_parts_to_the_caller() {
        let Some(pool) = pool() else { return };
        // Every worker sleeps in a job of its own, started before the split.
        let started = std::sync::Arc::new(AtomicUsize::new(0));
        let workers = pool.current_num_threads();
        let flag = started.clone();
        pool.spawn_broadcast(move |_| {
            flag.fetch_add(1, Ordering::AcqRel);
            std::thread::sleep(Duration::from_millis(300));
        });
        while started.load(Ordering::Acquire) < workers {
            std::thread::yield_now();
        }
        let caller = std::thread::current().id();
        let on_caller = AtomicUsize::new(0);
        // `split`, not `each`: a test run's other threads can make `each` keep to this thread.
        split(pool, (0..4).collect(), &|_| {
            if std::thread::current().id() == caller {
                on_caller.fetch_add(1, Ordering::Relaxed);
            }
        });
        assert_eq!(on_caller.into_inner(), 4, "parts waited for a busy worker");
    }

    thread_local! {
        /// Whether this worker is inside a keep-awake job's loop, which runs the pool's other
        /// jobs as they come (`yield_now`): a job found here did not hold its worker alone.
        pub(super) static IN_KEEP_AWAKE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    #[test]
    fn workers_whose_keep_awake_jobs_have_not_started_are_not_awake() {
        let Some(pool) = pool() else { return };
        let workers = pool.current_num_threads();
        // Every worker held in a job of its own: keep-awake jobs spawned now wait behind it. A
        // keep-awake job another test started may take a holding job into its own loop, where
        // its worker counts as spinning; then the round holds nothing and is tried again.
        let start = Instant::now();
        loop {
            assert!(start.elapsed() < Duration::from_secs(60), "no round held every worker");
            let held = std::sync::Arc::new(AtomicUsize::new(0));
            let nested = std::sync::Arc::new(AtomicUsize::new(0));
            let release = std::sync::Arc::new(AtomicBool::new(false));
            let (flag, inside, stop) = (held.clone(), nested.clone(), release.clone());
            pool.spawn_broadcast(move |_| {
                if IN_KEEP_AWAKE.with(|inside| inside.get()) {
                    inside.fetch_add(1, Ordering::AcqRel);
                }
                flag.fetch_add(1, Ordering::AcqRel);
                while !stop.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            while held.load(Ordering::Acquire) < workers {
                std::thread::yield_now();
            }
            if nested.load(Ordering::Acquire) > 0 {
                release.store(true, Ordering::Release);
                std::thread::sleep(KEEP_AWAKE);
                continue;
            }
            // The first call spawns the jobs (or finds them spawned by another test); neither
            // call may say the workers are awake while none of them runs its job.
            let first = keep_awake(pool);
            let second = keep_awake(pool);
            release.store(true, Ordering::Release);
            assert!(!first && !second, "workers judged awake while held: {first} {second}");
            return;
        }
    }

    #[test]
    fn other_programs_runnable_threads_take_cores_from_ours() {
        // Two cores: this thread alone, or with its worker spinning, has both.
        assert_eq!(free_cores(1, 2, 0), 2);
        assert_eq!(free_cores(2, 2, 1), 2);
        // A spinning thread of another program besides them takes one.
        assert_eq!(free_cores(2, 2, 0), 1);
        assert_eq!(free_cores(3, 2, 1), 1);
        // Eight cores, seven workers awake and two other threads: six left.
        assert_eq!(free_cores(10, 8, 7), 6);
        // More others than cores leave none; a count that misses our own threads (they were
        // between runs) leaves all.
        assert_eq!(free_cores(9, 4, 0), 0);
        assert_eq!(free_cores(0, 2, 1), 2);
    }

    #[test]
    fn the_machine_is_counted_at_most_every_interval_and_an_unknown_count_leaves_every_core() {
        let contention = Contention::new();
        let calls = AtomicUsize::new(0);
        let count = |answer: Option<(usize, usize, usize)>| {
            let calls = &calls;
            move || {
                calls.fetch_add(1, Ordering::Relaxed);
                answer
            }
        };
        let every = micros(CONTENTION_EVERY);
        assert_eq!(contention.free_at(5, count(None)), usize::MAX);
        // Within the interval the last count stands, and the machine is not read again.
        assert_eq!(contention.free_at(5 + every - 1, count(Some((1000, 2, 0)))), usize::MAX);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        // A thousand runnable threads on two cores, whatever other tests' workers add.
        assert_eq!(contention.free_at(5 + every, count(Some((1000, 2, 0)))), 0);
        assert_eq!(contention.free_at(5 + every + 1, count(Some((1, 2, 0)))), 0);
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        assert_eq!(contention.free_at(5 + 2 * every, count(Some((1, 2, 0)))), 2);
    }

    #[test]
    fn the_workers_are_found_by_their_thread_ids_and_states() {
        assert_eq!(state_of("1234 (nrtsim-kernel-0) R 1 2 3"), Some('R'));
        assert_eq!(state_of("77 (a (b) c) S 1"), Some('S'));
        assert_eq!(state_of("garbage"), None);
        if std::fs::metadata("/proc/thread-self/stat").is_err() {
            return;
        }
        // Every worker of the pool records its id when it starts (kept SPMD rank threads, which
        // other tests of this process may have made, record theirs too); this thread is not
        // among them.
        let Some(pool) = pool() else { return };
        let on_workers = pool.broadcast(|_| this_thread_id());
        let tids = WORKER_TIDS.lock().unwrap_or_else(|poison| poison.into_inner()).clone();
        assert_eq!(on_workers.len(), pool.current_num_threads());
        for on_worker in &on_workers {
            assert!(on_worker.is_some_and(|tid| tids.contains(&tid)), "{on_worker:?} in {tids:?}");
        }
        assert!(!this_thread_id().is_some_and(|tid| tids.contains(&tid)));
        // A worker held busy in a job is runnable; every worker is counted at most once.
        let (go, stop) = (AtomicBool::new(false), AtomicBool::new(false));
        pool.in_place_scope(|scope| {
            scope.spawn(|_| {
                go.store(true, Ordering::Release);
                while !stop.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
            });
            while !go.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            let runnable = workers_runnable();
            stop.store(true, Ordering::Release);
            assert!((1..=tids.len()).contains(&runnable), "{runnable} of {}", tids.len());
        });
    }

    #[test]
    fn the_kernels_lists_read_as_the_system_writes_them() {
        assert_eq!(runnable_of("0.52 0.58 0.59 3/467 12345\n"), Some(3));
        assert_eq!(runnable_of("0.52 0.58"), None);
        assert_eq!(online_cores("0-1\n"), Some(2));
        assert_eq!(online_cores("0-3,8,10-11"), Some(7));
        assert_eq!(online_cores("3-1"), None);
        assert_eq!(online_cores(""), None);
    }

    #[test]
    fn a_late_split_backs_off_doubling_up_to_the_most_and_one_on_time_resets_the_doubling() {
        let ms = |n: u64| Duration::from_millis(n);
        let backoff = Backoff::new();
        assert!(!backoff.alone_at(0));
        // On time: the caller's part 1 ms, the others done 0.1 ms later.
        backoff.record(1_000, ms(1), Duration::from_micros(100));
        assert!(!backoff.alone_at(1_001));
        // A wait under LATE is never late, even after a tiny part of the caller's own.
        backoff.record(1_000, Duration::from_micros(5), Duration::from_micros(150));
        assert!(!backoff.alone_at(1_001));
        // Late: 3 ms of waiting after a 1 ms part. Alone for 10 ms, then 20, 40, ... 640.
        let mut now = 10_000;
        for length_ms in [10, 20, 40, 80, 160, 320, 640, 640] {
            backoff.record(now, ms(1), ms(3));
            assert!(backoff.alone_at(now + length_ms * 1000 - 1), "{length_ms}");
            assert!(!backoff.alone_at(now + length_ms * 1000), "{length_ms}");
            now += length_ms * 1000;
        }
        // A split on time after the backoff ends: the next late one starts from 10 ms again.
        backoff.record(now, ms(2), ms(1));
        backoff.record(now, ms(1), ms(3));
        assert!(!backoff.alone_at(now + 10_000));
        // A wait as long as the caller's own part is not late: the split broke even.
        let fresh = Backoff::new();
        fresh.record(0, ms(5), ms(5));
        assert!(!fresh.alone_at(1));
    }

    #[test]
    fn no_items_is_no_work() {
        let runs = AtomicUsize::new(0);
        each(std::iter::empty::<usize>(), |_| {
            runs.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(runs.into_inner(), 0);
        assert!(try_each(std::iter::empty::<usize>(), |_| Ok(())).is_ok());
    }

    #[test]
    fn the_earliest_failing_part_is_the_error_and_every_part_still_runs() {
        let runs = AtomicUsize::new(0);
        let result = try_each(0..6, |i| {
            runs.fetch_add(1, Ordering::Relaxed);
            if i == 2 || i == 4 { Err(Fail::Invalid(format!("part {i}"))) } else { Ok(()) }
        });
        assert!(matches!(result, Err(Fail::Invalid(ref m)) if m == "part 2"), "{result:?}");
        assert_eq!(runs.into_inner(), 6);
    }

    #[test]
    fn a_panicking_part_is_an_internal_error_not_an_unwind() {
        let result = try_each(0..3, |i| {
            if i == 1 {
                panic!("a bug in part 1");
            }
            Ok(())
        });
        assert!(
            matches!(result, Err(Fail::Internal(ref m)) if m.contains("panicked")),
            "{result:?}"
        );
    }

    #[test]
    fn parts_that_split_again_finish_on_the_same_pool() {
        let total = AtomicUsize::new(0);
        each(0..4, |_| {
            each(0..4, |_| {
                total.fetch_add(1, Ordering::Relaxed);
            })
        });
        assert_eq!(total.into_inner(), 16);
    }

    /// A thread's core share bounds `cores()` (never to zero, never above the machine's), is
    /// restored when its scope ends, nests, and is the thread's own: a thread spawned inside
    /// sees the whole machine again.
    #[test]
    fn a_core_share_bounds_this_threads_kernels_and_is_restored() {
        let all = cores();
        with_core_share(1, || {
            assert_eq!(cores(), 1);
            with_core_share(0, || assert_eq!(cores(), 1, "at least one core"));
            with_core_share(all + 5, || assert_eq!(cores(), all, "at most the machine"));
            assert_eq!(cores(), 1, "the inner share ended");
            let other = std::thread::spawn(cores).join().expect("thread");
            assert_eq!(other, all, "another thread has no share");
        });
        assert_eq!(cores(), all);
    }
}
