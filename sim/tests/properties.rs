//! Algebraic properties of simulated memory: write-then-read, slices, copy bounds, allocator
//! accounting.

mod common;

use abi::runtime::prelude::*;
use abi::runtime::{Framework, Placement, TensorId};
use abi::status::NrtStatus;
use common::small_sim;
use proptest::prelude::*;
use sim::SimRuntime;

fn placement() -> impl Strategy<Value = Placement> {
    prop_oneof![Just(Placement::Device), Just(Placement::Host), Just(Placement::Virtual)]
}

fn ready_sim() -> SimRuntime {
    let sim = small_sim();
    sim.init(Framework::NoFw, "", "").unwrap();
    sim
}

fn in_bounds(offset: usize, len: usize, size: usize) -> bool {
    offset.checked_add(len).is_some_and(|end| end <= size)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn write_then_read_returns_the_bytes_or_invalid_out_of_bounds(
        placement in placement(),
        size in 0usize..2048,
        offset in 0usize..2100,
        data in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let sim = ready_sim();
        let tensor = sim.tensor_allocate(placement, 0, size, b"t").unwrap();
        let written = sim.tensor_write(tensor, offset, &data);
        let mut back = vec![0u8; data.len()];
        let read = sim.tensor_read(tensor, offset, &mut back);
        if in_bounds(offset, data.len(), size) {
            prop_assert!(written.is_ok() && read.is_ok());
            prop_assert_eq!(back, data);
        } else {
            prop_assert_eq!(written.unwrap_err().status, NrtStatus::Invalid);
            prop_assert_eq!(read.unwrap_err().status, NrtStatus::Invalid);
        }
    }

    #[test]
    fn slices_alias_their_parent_at_their_offset(
        placement in placement(),
        size in 1usize..1024,
        slice_offset in 0usize..1100,
        slice_size in 0usize..600,
        byte in 1u8..,
    ) {
        let sim = ready_sim();
        let parent = sim.tensor_allocate(placement, 0, size, b"parent").unwrap();
        match sim.tensor_allocate_slice(parent, slice_offset, slice_size, b"slice") {
            Ok(slice) => {
                prop_assert!(in_bounds(slice_offset, slice_size, size));
                prop_assert_eq!(sim.tensor_get_size(slice).unwrap(), slice_size);
                sim.tensor_memset(slice, 0, i32::from(byte), slice_size).unwrap();
                sim.tensor_free(parent).unwrap();
                let mut whole = vec![0u8; slice_size];
                sim.tensor_read(slice, 0, &mut whole).unwrap();
                prop_assert!(whole.iter().all(|&b| b == byte));
                let beyond = sim.tensor_read(slice, slice_size, &mut [0u8; 1]);
                prop_assert_eq!(beyond.unwrap_err().status, NrtStatus::Invalid);
            }
            Err(err) => {
                prop_assert!(!in_bounds(slice_offset, slice_size, size));
                prop_assert_eq!(err.status, NrtStatus::Invalid);
            }
        }
    }

    #[test]
    fn copy_moves_exactly_the_range_or_is_invalid(
        src_placement in placement(),
        dst_placement in placement(),
        src_size in 0usize..512,
        dst_size in 0usize..512,
        src_offset in 0usize..600,
        dst_offset in 0usize..600,
        len in 0usize..300,
    ) {
        let sim = ready_sim();
        let src = sim.tensor_allocate(src_placement, 0, src_size, b"src").unwrap();
        let dst = sim.tensor_allocate(dst_placement, 0, dst_size, b"dst").unwrap();
        let pattern: Vec<u8> = (0..src_size).map(|i| (i % 251) as u8 + 1).collect();
        sim.tensor_write(src, 0, &pattern).unwrap();
        let result = sim.tensor_copy(src, src_offset, dst, dst_offset, len);
        let mut expected = vec![0u8; dst_size];
        if in_bounds(src_offset, len, src_size) && in_bounds(dst_offset, len, dst_size) {
            prop_assert!(result.is_ok());
            expected[dst_offset..dst_offset + len].copy_from_slice(&pattern[src_offset..src_offset + len]);
        } else {
            prop_assert_eq!(result.unwrap_err().status, NrtStatus::Invalid);
        }
        let mut got = vec![0u8; dst_size];
        sim.tensor_read(dst, 0, &mut got).unwrap();
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn device_bytes_in_use_track_allocations_and_return_to_zero(
        sizes in proptest::collection::vec(0usize..(1 << 20), 1..24),
        free_order in proptest::collection::vec(any::<prop::sample::Index>(), 24),
    ) {
        let sim = ready_sim();
        let mut live: Vec<(TensorId, u64)> = Vec::new();
        let mut expected = 0u64;
        for (idx, &size) in sizes.iter().enumerate() {
            let tensor = sim.tensor_allocate(Placement::Device, 0, size, b"t").unwrap();
            let reserved = (size as u64).div_ceil(64) * 64;
            expected += reserved;
            live.push((tensor, reserved));
            prop_assert_eq!(sim.device_bytes_in_use(0), Some(expected));
            // Free one in a random order every other allocation.
            if idx % 2 == 1 {
                let (tensor, reserved) = live.remove(free_order[idx].index(live.len()));
                sim.tensor_free(tensor).unwrap();
                expected -= reserved;
                prop_assert_eq!(sim.device_bytes_in_use(0), Some(expected));
            }
        }
        for (tensor, _) in live {
            sim.tensor_free(tensor).unwrap();
        }
        prop_assert_eq!(sim.device_bytes_in_use(0), Some(0));
        // After everything is freed, the whole HBM is one free range again.
        let all = sim.tensor_allocate(Placement::Device, 0, 64 << 20, b"all").unwrap();
        sim.tensor_free(all).unwrap();
    }
}
