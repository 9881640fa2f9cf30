//! The `--cpus auto` planner on the four fixture machines.

use tuning::advice::{place_cpus, PlacementError, PlacementRequest};
use tuning::host::{CoreKind, Topology};

use crate::util;

fn distinct_cores(t: &Topology, cpus: &[usize]) -> bool {
    let mut cores: Vec<Vec<usize>> = cpus
        .iter()
        .map(|c| t.cpu(*c).unwrap().siblings.clone())
        .collect();
    cores.sort();
    cores.dedup();
    cores.len() == cpus.len()
}

#[test]
fn two_socket_192_with_odd_isolated_cpus() {
    let d = tempfile::tempdir().unwrap();
    let t = Topology::read(&util::two_socket_192(d.path())).unwrap();
    let p = place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 16,
            load_workers: 8,
            housekeeping_cores: 1,
            nic_node: Some(1),
            ..PlacementRequest::default()
        },
    )
    .unwrap();
    assert_eq!(p.housekeeping, [0, 2]);
    let all: Vec<usize> = p.server.iter().chain(&p.load).copied().collect();
    assert!(all.iter().all(|c| t.isolated.contains(c)));
    assert!(
        distinct_cores(&t, &all),
        "one logical CPU per core: {all:?}"
    );
    assert!(
        p.server.iter().all(|c| t.cpu(*c).unwrap().node == 1),
        "{:?}",
        p.server
    );
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    // Node 0: cores holding a housekeeping CPU (0/1 and 2/3) are used last.
    let p0 = place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 4,
            nic_node: Some(0),
            ..PlacementRequest::default()
        },
    )
    .unwrap();
    assert!(
        p0.server
            .iter()
            .all(|c| *c > 3 && t.cpu(*c).unwrap().node == 0),
        "{:?}",
        p0.server
    );
}

#[test]
fn epyc_four_nodes_prefers_the_nic_node() {
    let d = tempfile::tempdir().unwrap();
    let t = Topology::read(&util::epyc_4node(d.path())).unwrap();
    let p = place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 8,
            load_workers: 0,
            nic_node: Some(2),
            ..PlacementRequest::default()
        },
    )
    .unwrap();
    assert!(
        p.server.iter().all(|c| t.cpu(*c).unwrap().node == 2),
        "{:?}",
        p.server
    );
    assert!(distinct_cores(&t, &p.server));
    // More than the node's 8 cores: spills to other nodes and says so.
    let p = place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 10,
            nic_node: Some(2),
            ..PlacementRequest::default()
        },
    )
    .unwrap();
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("not on the NIC's NUMA node 2")),
        "{:?}",
        p.notes
    );
    // SMT siblings only when asked.
    let max_cores = place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 29,
            ..PlacementRequest::default()
        },
    );
    assert!(
        matches!(
            max_cores,
            Err(PlacementError::NotEnough { available: 28, .. })
        ),
        "{max_cores:?}"
    );
    assert!(place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 29,
            smt: true,
            ..PlacementRequest::default()
        }
    )
    .is_ok());
}

#[test]
fn hybrid_desktop_uses_p_cores_first() {
    let d = tempfile::tempdir().unwrap();
    let t = Topology::read(&util::hybrid_8p4e(d.path())).unwrap();
    let p = place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 4,
            load_workers: 3,
            housekeeping_cores: 1,
            ..PlacementRequest::default()
        },
    )
    .unwrap();
    assert_eq!(p.housekeeping, [0, 1]);
    let all: Vec<usize> = p.server.iter().chain(&p.load).copied().collect();
    assert!(
        all.iter()
            .all(|c| t.cpu(*c).unwrap().kind == CoreKind::Performance),
        "{all:?}"
    );
    assert!(distinct_cores(&t, &all));
    let p = place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 8,
            load_workers: 3,
            housekeeping_cores: 1,
            ..PlacementRequest::default()
        },
    )
    .unwrap();
    assert_eq!(
        p.load
            .iter()
            .filter(|c| t.cpu(**c).unwrap().kind == CoreKind::Efficiency)
            .count(),
        3
    );
}

#[test]
fn two_vcpu_vm() {
    let d = tempfile::tempdir().unwrap();
    let t = Topology::read(&util::vm_2vcpu(d.path())).unwrap();
    let p = place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 1,
            load_workers: 1,
            housekeeping_cores: 0,
            ..PlacementRequest::default()
        },
    )
    .unwrap();
    assert_eq!((p.server.clone(), p.load.clone()), (vec![0], vec![1]));
    assert!(p.notes.iter().any(|n| n.contains("no housekeeping")));
    let e = place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 1,
            load_workers: 1,
            housekeeping_cores: 1,
            ..PlacementRequest::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("only 1 available"), "{e}");
    let allowed = place_cpus(
        &t,
        &PlacementRequest {
            server_workers: 1,
            allowed: Some(vec![1]),
            ..PlacementRequest::default()
        },
    )
    .unwrap();
    assert_eq!(allowed.server, [1]);
}
