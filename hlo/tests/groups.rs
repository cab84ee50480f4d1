//! Replica groups from each of the fields XLA may use, with the iota form worked out by hand.

use hlo::proto::{
    CollectiveDeviceListProto, HloInstructionProto, IotaReplicaGroupListProto, ReplicaGroup,
};

fn iota(groups: i64, per_group: i64, dims: &[i64], perm: &[i32]) -> IotaReplicaGroupListProto {
    IotaReplicaGroupListProto {
        num_replica_groups: groups,
        num_devices_per_group: per_group,
        iota_reshape_dims: dims.to_vec(),
        iota_transpose_perm: perm.to_vec(),
    }
}

#[test]
fn iota_without_transpose_is_consecutive_ids() {
    // [2,2]<=[4]: 0 1 2 3 cut in two.
    assert_eq!(iota(2, 2, &[4], &[0]).expand().unwrap(), vec![vec![0, 1], vec![2, 3]]);
}

#[test]
fn iota_with_transpose_strides_across_the_reshape() {
    // [2,2]<=[2,2]T(1,0): [[0,1],[2,3]] transposed is [[0,2],[1,3]].
    assert_eq!(iota(2, 2, &[2, 2], &[1, 0]).expand().unwrap(), vec![vec![0, 2], vec![1, 3]]);
    // [1,8]<=[2,4]T(1,0): [[0..4],[4..8]] transposed, read row-major: 0 4 1 5 2 6 3 7.
    assert_eq!(iota(1, 8, &[2, 4], &[1, 0]).expand().unwrap(), vec![vec![0, 4, 1, 5, 2, 6, 3, 7]]);
}

#[test]
fn inconsistent_iota_is_an_error() {
    assert!(iota(3, 2, &[4], &[]).expand().is_err());
    assert!(iota(2, 2, &[2, 2], &[0, 0]).expand().is_err());
    assert!(iota(2, 2, &[2, 2], &[0]).expand().is_err());
    assert!(iota(1, i64::MAX, &[i64::MAX, 2], &[]).expand().is_err());
}

#[test]
fn groups_come_from_whichever_field_is_set() {
    let legacy = HloInstructionProto {
        replica_groups: vec![ReplicaGroup { replica_ids: vec![1, 0] }],
        ..Default::default()
    };
    assert_eq!(legacy.collective_groups().unwrap(), vec![vec![1, 0]]);
    let listed = HloInstructionProto {
        collective_device_list: Some(Box::new(CollectiveDeviceListProto {
            replica_groups: vec![ReplicaGroup { replica_ids: vec![3] }],
            iota_replica_group_list: None,
        })),
        ..legacy.clone()
    };
    assert_eq!(listed.collective_groups().unwrap(), vec![vec![3]]);
    let iota_form = HloInstructionProto {
        iota_replica_group_list: Some(Box::new(iota(1, 2, &[2], &[]))),
        ..listed
    };
    assert_eq!(iota_form.collective_groups().unwrap(), vec![vec![0, 1]]);
    assert!(HloInstructionProto::default().collective_groups().unwrap().is_empty());
}
