//! `SimRuntime`'s collectives outside a NEFF (`nrt_build_global_comm`, `nrt_barrier`,
//! `nrt_all_gather`) with one thread per rank and one NeuronCore per rank: the gate, the
//! argument checks, the gathered bytes and the timeout as statuses.

mod common;

use std::thread;
use std::time::Duration;

use abi::runtime::prelude::*;
use abi::runtime::{Framework, NrtError};
use abi::status::NrtStatus;
use common::small_config;
use sim::SimRuntime;

fn status<T>(result: Result<T, NrtError>) -> NrtStatus {
    result.map_or_else(|err| err.status, |_| NrtStatus::Success)
}

fn four_core_sim() -> SimRuntime {
    let sim = SimRuntime::new(small_config(4, false)).expect("sim");
    sim.init(Framework::NoFw, "", "").unwrap();
    sim
}

#[test]
fn four_ranks_on_four_cores_build_meet_and_gather_in_rank_order() {
    let sim = four_core_sim();
    let gathered: Vec<Result<Vec<u8>, NrtError>> = thread::scope(|scope| {
        let ranks: Vec<_> = (0..4u32)
            .map(|rank| {
                let sim = &sim;
                scope.spawn(move || {
                    let vnc = rank as i32;
                    sim.build_global_comm(vnc, rank, 4)?;
                    sim.barrier(vnc, rank, 4)?;
                    sim.all_gather(vnc, rank, 4, &(rank * 1000).to_le_bytes())
                })
            })
            .collect();
        ranks.into_iter().map(|rank| rank.join().expect("a rank panicked")).collect()
    });
    let expected: Vec<u8> = [0u32, 1000, 2000, 3000].iter().flat_map(|v| v.to_le_bytes()).collect();
    for (rank, got) in gathered.into_iter().enumerate() {
        assert_eq!(got.expect("the all-gather"), expected, "rank {rank}");
    }
}

#[test]
fn collectives_are_gated_and_check_their_arguments() {
    let sim = SimRuntime::new(small_config(2, false)).expect("sim");
    assert_eq!(status(sim.barrier(0, 0, 1)), NrtStatus::Uninitialized);
    sim.init(Framework::NoFw, "", "").unwrap();
    assert_eq!(status(sim.barrier(0, 0, 1)), NrtStatus::Success);
    assert_eq!(status(sim.barrier(2, 0, 1)), NrtStatus::Invalid, "vnc 2 of 2 cores");
    assert_eq!(status(sim.barrier(-1, 0, 1)), NrtStatus::Invalid, "vnc -1");
    assert_eq!(status(sim.all_gather(0, 0, 0, b"x")), NrtStatus::Invalid, "a world of 0");
    let outside = sim.cc_global_comm_init(0, 2, 2);
    let err = outside.expect_err("rank 2 of 2");
    assert_eq!(err.status, NrtStatus::Invalid);
    assert!(err.detail.contains("rank 2 is outside the world of 2 ranks"), "{}", err.detail);
}

#[test]
fn a_rank_alone_in_a_world_of_two_times_out_with_nrt_timeout() {
    let sim = four_core_sim();
    sim.set_collective_timeout(Duration::from_millis(100));
    let err = sim.all_gather(1, 1, 2, b"lonely").expect_err("rank 0 never comes");
    assert_eq!(err.status, NrtStatus::Timeout);
    assert!(
        err.detail.starts_with("nrt_all_gather: rank 1 of a world of 2 waited"),
        "{}",
        err.detail
    );
}

/// `nrt_close` while a rank waits in `nrt_barrier` for a peer that never comes: the barrier
/// returns NRT_CLOSED at once, not after its timeout, and after a new `nrt_init` the ranks meet
/// on a fresh communicator. The timeout is short (10 s), so a close that does not wake the rank
/// fails this test in seconds (NRT_TIMEOUT, or a late return) instead of hanging it.
#[test]
fn closing_the_runtime_ends_a_waiting_barrier_with_nrt_closed() {
    const TIMEOUT: Duration = Duration::from_secs(10);
    let sim = four_core_sim();
    sim.set_collective_timeout(TIMEOUT);
    let (status_of_barrier, after_close) = thread::scope(|scope| {
        let waiting = scope.spawn(|| sim.barrier(0, 0, 2));
        // However the two threads interleave, the barrier ends with NRT_CLOSED: waiting for
        // rank 1 when the close comes, or refused by the gate after it.
        thread::sleep(Duration::from_millis(100));
        let closed_at = std::time::Instant::now();
        sim.close();
        (status(waiting.join().expect("the rank panicked")), closed_at.elapsed())
    });
    assert_eq!(status_of_barrier, NrtStatus::Closed);
    assert!(
        after_close < TIMEOUT / 2,
        "the barrier returned {after_close:?} after nrt_close, expected at once (its timeout is {TIMEOUT:?})"
    );
    assert_eq!(status(sim.barrier(0, 0, 2)), NrtStatus::Closed, "after nrt_close");
    sim.init(Framework::NoFw, "", "").unwrap();
    sim.set_collective_timeout(Duration::from_secs(60));
    let met = thread::scope(|scope| {
        let ranks: Vec<_> = (0..2u32)
            .map(|rank| {
                let sim = &sim;
                scope.spawn(move || status(sim.barrier(rank as i32, rank, 2)))
            })
            .collect();
        ranks.into_iter().map(|rank| rank.join().expect("a rank panicked")).collect::<Vec<_>>()
    });
    assert_eq!(met, vec![NrtStatus::Success; 2]);
}
