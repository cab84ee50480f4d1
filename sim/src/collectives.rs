//! Collectives outside a NEFF (`nrt_build_global_comm`, `nrt_cc_global_comm_init`,
//! `nrt_barrier`, `nrt_all_gather`) over ranks that are threads of this process.
//!
//! A rank is named by `(g_device_id, g_device_count)`: its global id and the world size. The
//! simulator keeps one [`Communicator`] per world size; building a communicator (the two
//! `*_comm` functions) only makes sure it exists, because every rank here shares one address
//! space and nothing has to be exchanged in advance. `vnc` only has to name a core of the
//! machine: ranks are not tied to cores, since the simulator's cores carry no state a
//! collective would touch.
//!
//! A communicator runs rounds, like a cyclic barrier: each rank arrives with an operation (a
//! barrier, or an all-gather of `n` bytes); the last rank to arrive completes the round, every
//! rank takes the round's result, and the next round starts at once (a generation counter tells
//! the rounds apart). What libnrt would leave undefined is an error here rather than a hang or a
//! wrong answer:
//! - a rank that does not see all its peers within the timeout withdraws and gets `NRT_TIMEOUT`
//!   (the default is [`crate::config::RENDEZVOUS_TIMEOUT`], as for collective launches);
//! - a rank that arrives while it is already waiting in the round gets `NRT_INVALID` (the
//!   waiting call is undisturbed);
//! - ranks that disagree about the operation (a barrier against an all-gather, or two input
//!   sizes) fail the whole round with `NRT_INVALID`, so nobody waits for a result that cannot
//!   exist;
//! - `nrt_close` drops every communicator ([`Collectives::close`]): a rank waiting in a round
//!   returns at once with `NRT_CLOSED`, and so does a rank that reaches a communicator after the
//!   close. libnrt's status table has a code for exactly this (14, the runtime is closed, what
//!   every call after `nrt_close` gets), and its own comment asks for the most descriptive code
//!   over the generic `NRT_FAILURE`; `NRT_TIMEOUT` would claim the peers were late, which they
//!   need not be. The next `nrt_init` starts with no communicators ([`Collectives::reopen`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use abi::runtime::NrtError;
use abi::status::NrtStatus;

/// Why a collective call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CollectiveError {
    /// The world has no ranks.
    #[error("the world size (g_device_count) must be at least 1, got 0")]
    EmptyWorld,
    /// The rank's id is not below the world size.
    #[error("rank {rank} is outside the world of {world} ranks (expected g_device_id < {world})")]
    RankOutsideWorld {
        /// The caller's `g_device_id`.
        rank: u32,
        /// The caller's `g_device_count`.
        world: u32,
    },
    /// The rank is already waiting in the current round.
    #[error("rank {rank} of a world of {world} arrived twice in one round")]
    AlreadyArrived {
        /// The rank that came twice.
        rank: u32,
        /// The world size.
        world: u32,
    },
    /// Two ranks brought different operations to one round.
    #[error("rank {rank} brought {found} to a round where rank {peer} brought {expected}")]
    Mismatch {
        /// The rank whose operation disagrees.
        rank: u32,
        /// What it brought.
        found: Operation,
        /// A rank already in the round.
        peer: u32,
        /// What that rank brought.
        expected: Operation,
    },
    /// The peers did not all come in time.
    #[error(
        "rank {rank} of a world of {world} waited {waited_ms} ms for its peers, {arrived} of {world} came"
    )]
    Timeout {
        /// The rank that gave up.
        rank: u32,
        /// The world size.
        world: u32,
        /// How many ranks (this one included) had arrived.
        arrived: usize,
        /// How long it waited, in milliseconds.
        waited_ms: u128,
    },
    /// The runtime was closed (`nrt_close`) before the round completed.
    #[error(
        "the runtime was closed (nrt_close) while rank {rank} of a world of {world} was in a collective, expected it open until the round completed"
    )]
    Closed {
        /// The rank whose call was cut short.
        rank: u32,
        /// The world size.
        world: u32,
    },
    /// The gathered bytes do not fit in memory (or in `usize`).
    #[error("an all-gather of {world} ranks × {n_bytes} bytes does not fit in memory")]
    TooLarge {
        /// The world size.
        world: u32,
        /// Each rank's input size.
        n_bytes: usize,
    },
}

impl CollectiveError {
    /// The libnrt status of this failure.
    pub fn status(&self) -> NrtStatus {
        match self {
            CollectiveError::Timeout { .. } => NrtStatus::Timeout,
            CollectiveError::TooLarge { .. } => NrtStatus::Resource,
            CollectiveError::Closed { .. } => NrtStatus::Closed,
            _ => NrtStatus::Invalid,
        }
    }
}

impl From<CollectiveError> for NrtError {
    fn from(err: CollectiveError) -> NrtError {
        NrtError::new(err.status(), err.to_string())
    }
}

/// What a rank brings to a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// `nrt_barrier`.
    Barrier,
    /// `nrt_all_gather` of this many bytes per rank.
    AllGather(usize),
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Operation::Barrier => f.write_str("a barrier"),
            Operation::AllGather(n_bytes) => write!(f, "an all-gather of {n_bytes} bytes"),
        }
    }
}

/// What every rank of a completed round takes: the gathered bytes (empty for a barrier).
type Outcome = Arc<Result<Vec<u8>, CollectiveError>>;

#[derive(Debug)]
struct Round {
    /// Counts completed rounds; a waiter's round is over when it changes.
    generation: u64,
    /// What each rank that came brought to the current round, by rank (a map, not a table of
    /// `world` entries, so a world size from a caller costs nothing until ranks come).
    arrivals: BTreeMap<u32, (Operation, Vec<u8>)>,
    /// The outcome of round `generation - 1`.
    last: Option<Outcome>,
    /// Set by [`Communicator::close`]: no round completes any more.
    closed: bool,
}

/// The ranks of one world size.
#[derive(Debug)]
pub struct Communicator {
    world: u32,
    round: Mutex<Round>,
    completed: Condvar,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Communicator {
    /// A communicator of `world` ranks.
    ///
    /// # Errors
    /// [`CollectiveError::EmptyWorld`] for 0.
    pub fn new(world: u32) -> Result<Communicator, CollectiveError> {
        if world == 0 {
            return Err(CollectiveError::EmptyWorld);
        }
        Ok(Communicator {
            world,
            round: Mutex::new(Round {
                generation: 0,
                arrivals: BTreeMap::new(),
                last: None,
                closed: false,
            }),
            completed: Condvar::new(),
        })
    }

    /// The world size.
    pub fn world(&self) -> u32 {
        self.world
    }

    /// Blocks until every rank has called `barrier` in this round.
    ///
    /// # Errors
    /// See the module documentation.
    pub fn barrier(&self, rank: u32, timeout: Duration) -> Result<(), CollectiveError> {
        self.join(rank, Operation::Barrier, Vec::new(), timeout).map(drop)
    }

    /// Blocks until every rank has brought its `input`; returns the inputs concatenated in rank
    /// order (the same bytes for every rank).
    ///
    /// # Errors
    /// See the module documentation.
    pub fn all_gather(
        &self,
        rank: u32,
        input: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, CollectiveError> {
        let mut mine = Vec::new();
        mine.try_reserve_exact(input.len())
            .map_err(|_| CollectiveError::TooLarge { world: self.world, n_bytes: input.len() })?;
        mine.extend_from_slice(input);
        self.join(rank, Operation::AllGather(input.len()), mine, timeout)
    }

    fn join(
        &self,
        rank: u32,
        operation: Operation,
        input: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, CollectiveError> {
        let world = self.world;
        if rank >= world {
            return Err(CollectiveError::RankOutsideWorld { rank, world });
        }
        let mut round = lock(&self.round);
        if round.closed {
            return Err(CollectiveError::Closed { rank, world });
        }
        if round.arrivals.contains_key(&rank) {
            return Err(CollectiveError::AlreadyArrived { rank, world });
        }
        let peer = round.arrivals.iter().next().map(|(peer, (expected, _))| (*peer, *expected));
        if let Some((peer, expected)) = peer.filter(|(_, expected)| *expected != operation) {
            let err = CollectiveError::Mismatch { rank, found: operation, peer, expected };
            self.complete(&mut round, Err(err.clone()));
            return Err(err);
        }
        round.arrivals.insert(rank, (operation, input));
        let generation = round.generation;
        if round.arrivals.len() == world as usize {
            let outcome = gather(world, operation, std::mem::take(&mut round.arrivals));
            self.complete(&mut round, outcome);
        } else {
            let started = Instant::now();
            let deadline = started + timeout;
            while round.generation == generation {
                if round.closed {
                    return Err(CollectiveError::Closed { rank, world });
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    round.arrivals.remove(&rank);
                    let arrived = round.arrivals.len() + 1;
                    let waited_ms = started.elapsed().as_millis();
                    return Err(CollectiveError::Timeout { rank, world, arrived, waited_ms });
                }
                round = self
                    .completed
                    .wait_timeout(round, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        // Every rank of a round must arrive again before the next round can complete, so the
        // last outcome is still this rank's round's when it wakes.
        match round.last.as_deref() {
            Some(outcome) => outcome.clone(),
            None => unreachable!("a completed round always leaves its outcome"),
        }
    }

    /// Fails the current round and every later call with [`CollectiveError::Closed`], and wakes
    /// the waiters so they return now rather than at their timeout.
    pub fn close(&self) {
        let mut round = lock(&self.round);
        round.closed = true;
        round.arrivals.clear();
        self.completed.notify_all();
    }

    /// Ends the current round with `outcome` and wakes its waiters.
    fn complete(&self, round: &mut Round, outcome: Result<Vec<u8>, CollectiveError>) {
        round.arrivals.clear();
        round.last = Some(Arc::new(outcome));
        round.generation = round.generation.wrapping_add(1);
        self.completed.notify_all();
    }
}

/// The round's inputs in rank order.
fn gather(
    world: u32,
    operation: Operation,
    arrivals: BTreeMap<u32, (Operation, Vec<u8>)>,
) -> Result<Vec<u8>, CollectiveError> {
    let n_bytes = match operation {
        Operation::Barrier => 0,
        Operation::AllGather(n_bytes) => n_bytes,
    };
    let total =
        n_bytes.checked_mul(world as usize).ok_or(CollectiveError::TooLarge { world, n_bytes })?;
    let mut gathered = Vec::new();
    gathered.try_reserve_exact(total).map_err(|_| CollectiveError::TooLarge { world, n_bytes })?;
    for (_, input) in arrivals.into_values() {
        gathered.extend_from_slice(&input);
    }
    Ok(gathered)
}

/// The communicators of one runtime, by world size, and whether new ones may be made.
#[derive(Debug)]
struct Registry {
    /// False from [`Collectives::close`] to [`Collectives::reopen`].
    open: bool,
    by_world: HashMap<u32, Arc<Communicator>>,
}

/// The communicators of one runtime, by world size, and how long a rank waits for its peers.
#[derive(Debug)]
pub struct Collectives {
    communicators: Mutex<Registry>,
    timeout: Mutex<Duration>,
}

impl Default for Collectives {
    fn default() -> Collectives {
        Collectives::new(crate::config::RENDEZVOUS_TIMEOUT)
    }
}

impl Collectives {
    /// No communicators yet; ranks wait `timeout` for their peers.
    pub fn new(timeout: Duration) -> Collectives {
        Collectives {
            communicators: Mutex::new(Registry { open: true, by_world: HashMap::new() }),
            timeout: Mutex::new(timeout),
        }
    }

    /// `nrt_close`: drops every communicator after closing it (its waiting ranks return
    /// [`CollectiveError::Closed`] now), and refuses new ones until [`Collectives::reopen`].
    pub fn close(&self) {
        let dropped = {
            let mut registry = lock(&self.communicators);
            registry.open = false;
            std::mem::take(&mut registry.by_world)
        };
        for communicator in dropped.values() {
            communicator.close();
        }
    }

    /// `nrt_init` after a close: communicators may be made again, all of them new.
    pub fn reopen(&self) {
        lock(&self.communicators).open = true;
    }

    /// How long a rank waits for its peers.
    pub fn timeout(&self) -> Duration {
        *lock(&self.timeout)
    }

    /// Sets how long a rank waits for its peers (for later calls).
    pub fn set_timeout(&self, timeout: Duration) {
        *lock(&self.timeout) = timeout;
    }

    /// The communicator of `world` ranks, made on first use; checks that `rank` belongs to it.
    ///
    /// # Errors
    /// [`CollectiveError::EmptyWorld`], [`CollectiveError::RankOutsideWorld`], and
    /// [`CollectiveError::Closed`] between [`Collectives::close`] and [`Collectives::reopen`].
    pub fn communicator(
        &self,
        rank: u32,
        world: u32,
    ) -> Result<Arc<Communicator>, CollectiveError> {
        if world == 0 {
            return Err(CollectiveError::EmptyWorld);
        }
        if rank >= world {
            return Err(CollectiveError::RankOutsideWorld { rank, world });
        }
        let mut registry = lock(&self.communicators);
        if !registry.open {
            return Err(CollectiveError::Closed { rank, world });
        }
        if let Some(found) = registry.by_world.get(&world) {
            return Ok(Arc::clone(found));
        }
        let made = Arc::new(Communicator::new(world)?);
        registry.by_world.insert(world, Arc::clone(&made));
        Ok(made)
    }

    /// [`Communicator::barrier`] of the world of `world` ranks.
    ///
    /// # Errors
    /// See the module documentation.
    pub fn barrier(&self, rank: u32, world: u32) -> Result<(), CollectiveError> {
        self.communicator(rank, world)?.barrier(rank, self.timeout())
    }

    /// [`Communicator::all_gather`] of the world of `world` ranks.
    ///
    /// # Errors
    /// See the module documentation.
    pub fn all_gather(
        &self,
        rank: u32,
        world: u32,
        input: &[u8],
    ) -> Result<Vec<u8>, CollectiveError> {
        self.communicator(rank, world)?.all_gather(rank, input, self.timeout())
    }
}

#[cfg(test)]
mod tests {
    use std::thread;

    use super::*;

    const SHORT: Duration = Duration::from_millis(200);

    /// Runs `each(rank)` on one thread per rank of `world` and returns the results by rank.
    fn on_ranks<T: Send>(world: u32, each: impl Fn(u32) -> T + Sync) -> Vec<T> {
        thread::scope(|scope| {
            let handles: Vec<_> = (0..world)
                .map(|rank| {
                    scope.spawn({
                        let each = &each;
                        move || each(rank)
                    })
                })
                .collect();
            handles.into_iter().map(|handle| handle.join().expect("a rank panicked")).collect()
        })
    }

    fn input_of(rank: u32) -> Vec<u8> {
        vec![rank as u8 * 16, rank as u8 * 16 + 1, rank as u8 * 16 + 2]
    }

    #[test]
    fn a_barrier_of_two_and_of_four_ranks_releases_every_rank() {
        for world in [2, 4] {
            let collectives = Collectives::new(Duration::from_secs(10));
            let released = on_ranks(world, |rank| collectives.barrier(rank, world));
            assert_eq!(released, vec![Ok(()); world as usize], "world {world}");
        }
    }

    #[test]
    fn no_rank_leaves_a_barrier_before_the_last_one_arrives() {
        let collectives = Collectives::new(Duration::from_secs(10));
        let arrived = std::sync::atomic::AtomicU32::new(0);
        let seen = on_ranks(4, |rank| {
            if rank == 3 {
                thread::sleep(Duration::from_millis(50));
            }
            arrived.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            collectives.barrier(rank, 4).expect("the barrier");
            arrived.load(std::sync::atomic::Ordering::SeqCst)
        });
        assert_eq!(seen, vec![4; 4]);
    }

    #[test]
    fn all_gather_returns_every_input_in_rank_order_to_every_rank() {
        for world in [2u32, 4] {
            let collectives = Collectives::new(Duration::from_secs(10));
            let gathered =
                on_ranks(world, |rank| collectives.all_gather(rank, world, &input_of(rank)));
            let expected: Vec<u8> = (0..world).flat_map(input_of).collect();
            assert_eq!(expected.len(), 3 * world as usize);
            for (rank, got) in gathered.into_iter().enumerate() {
                assert_eq!(got, Ok(expected.clone()), "rank {rank} of {world}");
            }
        }
    }

    #[test]
    fn one_rank_passes_a_barrier_and_gathers_its_own_input_at_once() {
        let collectives = Collectives::new(SHORT);
        assert_eq!(collectives.barrier(0, 1), Ok(()));
        assert_eq!(collectives.all_gather(0, 1, b"abc"), Ok(b"abc".to_vec()));
    }

    #[test]
    fn a_rank_whose_peer_never_comes_times_out() {
        let collectives = Collectives::new(SHORT);
        let err = collectives.barrier(0, 2).expect_err("rank 1 never comes");
        assert!(
            matches!(err, CollectiveError::Timeout { rank: 0, world: 2, arrived: 1, waited_ms }
                if waited_ms >= SHORT.as_millis()),
            "{err:?}"
        );
        assert_eq!(NrtError::from(err).status, NrtStatus::Timeout);
        // The rank withdrew: the next round of both ranks completes.
        collectives.set_timeout(Duration::from_secs(10));
        assert_eq!(on_ranks(2, |rank| collectives.barrier(rank, 2)), vec![Ok(()), Ok(())]);
    }

    #[test]
    fn a_rank_arriving_twice_in_one_round_is_invalid_and_the_round_still_completes() {
        let collectives = Collectives::new(Duration::from_secs(10));
        let communicator = collectives.communicator(0, 2).unwrap();
        thread::scope(|scope| {
            let waiting = scope.spawn(|| communicator.all_gather(0, b"a", Duration::from_secs(10)));
            while !lock(&communicator.round).arrivals.contains_key(&0) {
                thread::yield_now();
            }
            let twice = communicator.all_gather(0, b"z", SHORT).expect_err("rank 0 is waiting");
            assert_eq!(twice, CollectiveError::AlreadyArrived { rank: 0, world: 2 });
            assert_eq!(NrtError::from(twice).status, NrtStatus::Invalid);
            assert_eq!(communicator.all_gather(1, b"b", SHORT), Ok(b"ab".to_vec()));
            assert_eq!(waiting.join().unwrap(), Ok(b"ab".to_vec()));
        });
    }

    #[test]
    fn ranks_with_different_sizes_fail_the_round_for_everyone() {
        let collectives = Collectives::new(Duration::from_secs(10));
        let communicator = collectives.communicator(0, 2).unwrap();
        thread::scope(|scope| {
            let waiting = scope.spawn(|| communicator.all_gather(0, b"four", SHORT * 50));
            while !lock(&communicator.round).arrivals.contains_key(&0) {
                thread::yield_now();
            }
            let expected = CollectiveError::Mismatch {
                rank: 1,
                found: Operation::AllGather(8),
                peer: 0,
                expected: Operation::AllGather(4),
            };
            assert_eq!(communicator.all_gather(1, b"eight!!!", SHORT), Err(expected.clone()));
            assert_eq!(waiting.join().unwrap(), Err(expected.clone()));
            assert_eq!(NrtError::from(expected).status, NrtStatus::Invalid);
        });
    }

    #[test]
    fn a_barrier_against_an_all_gather_is_invalid() {
        let collectives = Collectives::new(SHORT * 50);
        let results = on_ranks(2, |rank| {
            if rank == 0 {
                collectives.barrier(0, 2).map(|()| Vec::new())
            } else {
                thread::sleep(Duration::from_millis(50));
                collectives.all_gather(1, 2, b"x")
            }
        });
        for result in results {
            let err = result.expect_err("the operations disagree");
            assert!(matches!(err, CollectiveError::Mismatch { .. }), "{err:?}");
        }
    }

    #[test]
    fn rounds_are_reusable_three_times_with_fresh_bytes() {
        let collectives = Collectives::new(Duration::from_secs(10));
        let per_rank = on_ranks(4, |rank| {
            (0..3u8)
                .map(|round| {
                    collectives.barrier(rank, 4)?;
                    collectives.all_gather(rank, 4, &[round, rank as u8])
                })
                .collect::<Vec<_>>()
        });
        for (rank, rounds) in per_rank.into_iter().enumerate() {
            for (round, got) in rounds.into_iter().enumerate() {
                let expected: Vec<u8> = (0..4u8).flat_map(|r| [round as u8, r]).collect();
                assert_eq!(got, Ok(expected), "rank {rank}, round {round}");
            }
        }
    }

    /// A world size from a caller allocates nothing per rank: a lone rank of the largest world
    /// waits and times out like any other.
    #[test]
    fn a_huge_world_costs_nothing_until_its_ranks_come() {
        let collectives = Collectives::new(Duration::from_millis(20));
        let err = collectives.all_gather(7, u32::MAX, b"x").expect_err("no peer comes");
        assert!(matches!(err, CollectiveError::Timeout { rank: 7, arrived: 1, .. }), "{err:?}");
    }

    /// A rank waiting for a peer that will never come returns `Closed` as soon as the
    /// communicators are closed, not at its timeout; calls after the close are refused the same
    /// way, and a reopened registry makes fresh communicators. The timeout is 10 s, so a close
    /// that does not wake the rank fails the test in seconds instead of hanging it.
    #[test]
    fn closing_wakes_a_waiting_rank_with_closed_and_reopening_starts_afresh() {
        const TIMEOUT: Duration = Duration::from_secs(10);
        let collectives = Collectives::new(TIMEOUT);
        let communicator = collectives.communicator(0, 2).unwrap();
        thread::scope(|scope| {
            let waiting = scope.spawn(|| collectives.barrier(0, 2));
            while !lock(&communicator.round).arrivals.contains_key(&0) {
                thread::yield_now();
            }
            let closed_at = Instant::now();
            collectives.close();
            let err = waiting.join().unwrap().expect_err("the runtime closed under the barrier");
            let after_close = closed_at.elapsed();
            assert!(
                after_close < TIMEOUT / 2,
                "the rank returned {after_close:?} after the close, expected at once (its timeout is {TIMEOUT:?})"
            );
            assert_eq!(err, CollectiveError::Closed { rank: 0, world: 2 });
            assert_eq!(NrtError::from(err).status, NrtStatus::Closed);
        });
        assert_eq!(
            collectives.all_gather(1, 2, b"x"),
            Err(CollectiveError::Closed { rank: 1, world: 2 })
        );
        assert_eq!(
            communicator.barrier(1, SHORT),
            Err(CollectiveError::Closed { rank: 1, world: 2 }),
            "a communicator taken before the close stays closed"
        );
        collectives.reopen();
        collectives.set_timeout(Duration::from_secs(10));
        let fresh = collectives.communicator(0, 2).unwrap();
        assert!(!Arc::ptr_eq(&fresh, &communicator), "the closed communicator was dropped");
        assert_eq!(on_ranks(2, |rank| collectives.barrier(rank, 2)), vec![Ok(()), Ok(())]);
    }

    #[test]
    fn bad_worlds_and_ranks_are_invalid() {
        let collectives = Collectives::new(SHORT);
        assert_eq!(collectives.barrier(0, 0), Err(CollectiveError::EmptyWorld));
        assert_eq!(
            collectives.all_gather(4, 4, b""),
            Err(CollectiveError::RankOutsideWorld { rank: 4, world: 4 })
        );
        let message = CollectiveError::RankOutsideWorld { rank: 4, world: 4 }.to_string();
        assert_eq!(message, "rank 4 is outside the world of 4 ranks (expected g_device_id < 4)");
    }
}
