//! The threads SPMD ranks past the first run on, kept between launches.
//!
//! Design choices:
//! - An SPMD launch runs every rank at once (a rank blocks in a collective until all have come),
//!   rank 0 on the calling thread and each other rank on a thread of its own. A thread started
//!   per launch cost 30-80 µs on the 2-core VMs here, and it started empty: the packing buffers
//!   the gemm keeps per thread, and its allocator arena, were made again on every launch. Two
//!   ranks of a 256×512·512×1024 product took 1770-1920 µs where one rank alone took 1390-1540
//!   (and two processes running it side by side 1520 each). With kept threads, on a 2-core
//!   AVX-512 Xeon VM, three interleaved pairs: that product 1825-1923 → 1607-1685 µs, the
//!   all-reduce model (that product, an all-reduce, a ReLU) 2041-2099 → 1917-2021 µs, an empty
//!   two-rank launch 31-33 → 4-42 µs (medians 71-74 → 6-47).
//! - A kept thread is a one-thread rayon pool: rayon's scopes hand it a job that borrows the
//!   launch's data, with no `unsafe` here. Each pool runs at most one job at a time, checked out
//!   by one launch and given back after it, so a rank's job never waits behind another rank's:
//!   a rank blocked in a collective holds its thread, and the other ranks have theirs. (One pool
//!   of several threads would not do: a rank waiting for its kernels' parts lets its thread take
//!   other queued jobs, and a rank taken that way blocks below the one it waits for.)
//! - A kept thread counts as the process's own when `par` judges the machine's load, as the
//!   kernel pool's workers do: idle, it may still be runnable for a moment after its rank. A
//!   thread not kept stops counting when it exits.
//! - At most [`KEEP`] threads are kept; a launch with more ranks starts the rest and keeps them
//!   up to that number. A child forked after threads were kept does not use them (they live in
//!   the parent only) and starts its own.
//! - A job that panics is a bug of ours: its rank's result is `None`, as a thread's failed join
//!   was, and the other ranks still finish or fail.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

/// The most rank threads kept between launches.
const KEEP: usize = 64;

/// Rank threads not in use, each with the process that made it.
struct RankThreads {
    idle: Mutex<Vec<(u32, rayon::ThreadPool)>>,
}

/// The process's kept rank threads.
static THREADS: RankThreads = RankThreads::new();

/// Runs every job at once, job 0 on the calling thread and each other on a rank thread of its
/// own ([`RankThreads::run_all`] on the process's kept threads).
pub(crate) fn run_all<R: Send, F: FnOnce() -> R + Send>(
    jobs: Vec<F>,
    gone: impl Fn(usize) + Sync,
) -> Vec<Option<R>> {
    THREADS.run_all(jobs, gone)
}

impl RankThreads {
    const fn new() -> RankThreads {
        RankThreads { idle: Mutex::new(Vec::new()) }
    }

    /// Up to `count` rank threads for one launch: kept ones first, then new ones, fewer only
    /// when the system refuses threads.
    fn check_out(&self, count: usize) -> Vec<rayon::ThreadPool> {
        let pid = std::process::id();
        let mut pools = Vec::with_capacity(count);
        {
            let mut idle = self.idle.lock().unwrap_or_else(|poison| poison.into_inner());
            // Threads kept by the parent of a forked child are not in the child: never used
            // there.
            idle.retain(|(made_in, _)| *made_in == pid);
            while pools.len() < count {
                let Some((_, pool)) = idle.pop() else { break };
                pools.push(pool);
            }
        }
        while pools.len() < count {
            let made = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "hlo-rank".to_owned())
                .stack_size(64 << 20)
                .start_handler(|_| super::par::count_as_ours())
                .exit_handler(|_| super::par::count_as_ours_no_more())
                .build();
            match made {
                Ok(pool) => pools.push(pool),
                Err(_) => break,
            }
        }
        pools
    }

    /// Keeps `pools` for the next launch, up to [`KEEP`] in all.
    fn give_back(&self, pools: Vec<rayon::ThreadPool>) {
        let pid = std::process::id();
        let mut idle = self.idle.lock().unwrap_or_else(|poison| poison.into_inner());
        for pool in pools {
            if idle.len() < KEEP {
                idle.push((pid, pool));
            }
        }
    }

    /// Runs every job at once, job 0 on the calling thread and each other on a rank thread of
    /// its own, and returns their results in order. `gone` is called with the index of each job
    /// that will not finish, so that a collective can be told its rank will never come: one
    /// whose thread could not be had (not run; called before any job starts), or one that
    /// panicked (called when it did). Such a job's result is `None`.
    fn run_all<R: Send, F: FnOnce() -> R + Send>(
        &self,
        jobs: Vec<F>,
        gone: impl Fn(usize) + Sync,
    ) -> Vec<Option<R>> {
        let n = jobs.len();
        let pools = self.check_out(n.saturating_sub(1));
        let slots: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
        let mut jobs: Vec<(usize, F)> = jobs.into_iter().enumerate().collect();
        // Jobs past those with a thread (and past job 0) are not run.
        for (index, _) in jobs.drain(pools.len().saturating_add(1).min(n)..) {
            gone(index);
        }
        let mut jobs = jobs.into_iter();
        if let Some(first) = jobs.next() {
            nest(&pools, jobs.collect(), &slots, &gone, first);
        }
        self.give_back(pools);
        slots.into_iter().map(|slot| slot.into_inner().unwrap_or_else(|p| p.into_inner())).collect()
    }
}

/// Hands the last of `jobs` to the first of `pools` and recurses inside that pool's scope, so
/// that every handed job runs while `first` runs on this thread, and each scope waits for its
/// job before it ends.
fn nest<R: Send, F: FnOnce() -> R + Send>(
    pools: &[rayon::ThreadPool],
    mut jobs: Vec<(usize, F)>,
    slots: &[Mutex<Option<R>>],
    gone: &(impl Fn(usize) + Sync),
    first: (usize, F),
) {
    let store = |(index, job): (usize, F)| {
        let result = catch_unwind(AssertUnwindSafe(job)).ok();
        if result.is_none() {
            gone(index);
        }
        *slots[index].lock().unwrap_or_else(|poison| poison.into_inner()) = result;
    };
    match (pools.split_first(), jobs.pop()) {
        (Some((pool, rest)), Some(job)) => pool.in_place_scope(|scope| {
            scope.spawn(move |_| store(job));
            nest(rest, jobs, slots, gone, first);
        }),
        _ => store(first),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    #[test]
    fn every_job_runs_at_once_on_a_thread_of_its_own() {
        // Each job waits until all have started: run one after another, or two on one thread,
        // they would never finish.
        for n in [1, 2, 5] {
            let barrier = Barrier::new(n);
            let jobs: Vec<_> = (0..n)
                .map(|i| {
                    let barrier = &barrier;
                    move || {
                        barrier.wait();
                        (i, std::thread::current().id())
                    }
                })
                .collect();
            let results: Vec<_> =
                run_all(jobs, |_| panic!("every job has a thread")).into_iter().flatten().collect();
            assert_eq!(
                results.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
                (0..n).collect::<Vec<_>>()
            );
            assert_eq!(results[0].1, std::thread::current().id(), "job 0 runs on the caller");
            let mut threads: Vec<_> = results.iter().map(|(_, t)| format!("{t:?}")).collect();
            threads.sort();
            threads.dedup();
            assert_eq!(threads.len(), n, "one thread per job");
        }
    }

    #[test]
    fn threads_are_kept_from_one_launch_to_the_next() {
        let threads = RankThreads::new();
        let thread_of_job_1 = || {
            let jobs: Vec<Box<dyn FnOnce() -> _ + Send>> = vec![
                Box::new(|| None),
                Box::new(|| {
                    let this = std::thread::current();
                    Some((this.id(), this.name().map(str::to_owned)))
                }),
            ];
            threads.run_all(jobs, |_| {}).pop().flatten().flatten()
        };
        let first = thread_of_job_1().expect("job 1 ran");
        assert_eq!(first.1.as_deref(), Some("hlo-rank"));
        assert_eq!(threads.idle.lock().unwrap().len(), 1, "the thread went back to the idle list");
        assert_eq!(thread_of_job_1().map(|(id, _)| id), Some(first.0), "the same thread again");
    }

    #[test]
    fn a_job_that_panics_gives_none_is_reported_gone_and_the_others_finish() {
        let jobs: Vec<Box<dyn FnOnce() -> u32 + Send>> =
            vec![Box::new(|| 1), Box::new(|| panic!("a bug")), Box::new(|| 3)];
        let gone = Mutex::new(Vec::new());
        let results = run_all(jobs, |i| gone.lock().unwrap().push(i));
        assert_eq!(results, vec![Some(1), None, Some(3)]);
        assert_eq!(*gone.lock().unwrap(), vec![1]);
    }
}
