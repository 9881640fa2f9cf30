//! The steps of `connstorm scale` on the fixture machines: 2 × 96 SMT with isolcpus, a 4-node
//! EPYC, an 8P+4E hybrid desktop, and the 2-vCPU VM.

use tuning::advice::{plan_scale, PairLayout, ScalePlanError, ScaleRequest, ScaleShape};
use tuning::host::Topology;

use crate::util;

/// (shape, cores, server CPUs, load CPUs) of every step.
fn steps(t: &Topology, req: &ScaleRequest) -> Vec<(&'static str, usize, String, String)> {
    plan_scale(t, req)
        .unwrap()
        .steps
        .iter()
        .map(|s| {
            (
                s.shape.name(),
                s.cores,
                tuning::cpulist::format(&s.server),
                tuning::cpulist::format(&s.load),
            )
        })
        .collect()
}

fn one(shape: ScaleShape) -> ScaleRequest {
    ScaleRequest {
        shapes: vec![shape],
        ..ScaleRequest::default()
    }
}

/// 2 sockets × 48 cores × 2 threads, isolcpus=1,3-191: housekeeping 0 and 2; the steps take node
/// 0's cores (the two that share a thread with housekeeping, 1 and 3, last) one thread each,
/// then node 1's; the together shape crosses nodes only at its 32-core step.
#[test]
fn two_socket_192_steps_stay_on_node_0_and_one_thread_per_core_first() {
    let d = tempfile::tempdir().unwrap();
    let t = Topology::read(&util::two_socket_192(d.path())).unwrap();
    let plan = plan_scale(&t, &ScaleRequest::default()).unwrap();
    assert_eq!(plan.housekeeping, [0, 2]);
    assert_eq!(plan.order.len(), 96, "one CPU per core: {:?}", plan.order);
    assert_eq!(&plan.order[..3], [4, 6, 8]);
    assert_eq!(&plan.order[46..50], [1, 3, 96, 98]);
    let together: Vec<_> = plan
        .steps
        .iter()
        .filter(|s| s.shape == ScaleShape::Together)
        .collect();
    let cores: Vec<usize> = together.iter().map(|s| s.cores).collect();
    assert_eq!(cores, [1, 2, 4, 8, 16, 32, 48]);
    assert_eq!(
        (together[0].server.clone(), together[0].load.clone()),
        (vec![4], vec![6])
    );
    assert_eq!(together[1].server, [4, 8]);
    assert_eq!(together[1].load, [6, 10]);
    for s in &together[..5] {
        assert_eq!(s.nodes, [0], "{} cores: {:?}", s.cores, s.nodes);
        assert!(s.notes.is_empty(), "{:?}", s.notes);
    }
    assert_eq!(together[5].nodes, [0, 1]);
    assert!(
        together[5]
            .notes
            .iter()
            .any(|n| n.starts_with("crosses NUMA nodes")),
        "{:?}",
        together[5].notes
    );
    // No step puts work on both threads of a core, and every worker CPU is isolated.
    for s in &plan.steps {
        let cpus = s.cpus();
        assert!(cpus.iter().all(|c| t.isolated.contains(c)));
        for c in &cpus {
            let sib = &t.cpu(*c).unwrap().siblings;
            assert_eq!(
                sib.iter().filter(|x| cpus.contains(x)).count(),
                1,
                "{sib:?}"
            );
        }
    }
    // The fixed server takes node 0's 48 cores; the load grows over node 1's.
    let fixed = steps(&t, &one(ScaleShape::FixedServer));
    let expected: Vec<(&str, usize, String, String)> = [1usize, 2, 4, 8, 16, 32, 48]
        .iter()
        .map(|&n| {
            let load: Vec<usize> = (0..n).map(|i| 96 + 2 * i).collect();
            (
                "fixed-server",
                n,
                String::new(),
                tuning::cpulist::format(&load),
            )
        })
        .collect();
    assert_eq!(
        fixed
            .iter()
            .map(|s| (s.0, s.1, s.3.clone()))
            .collect::<Vec<_>>(),
        expected
            .iter()
            .map(|s| (s.0, s.1, s.3.clone()))
            .collect::<Vec<_>>()
    );
    let server = &plan_scale(&t, &one(ScaleShape::FixedServer)).unwrap().steps[0].server;
    assert_eq!(server.len(), 48);
    assert!(server.iter().all(|c| t.cpu(*c).unwrap().node == 0));
    // With SMT siblings node 0's second threads come before node 1.
    let smt = plan_scale(
        &t,
        &ScaleRequest {
            smt: true,
            shapes: vec![ScaleShape::Together],
            ..ScaleRequest::default()
        },
    )
    .unwrap();
    assert_eq!(smt.order.len(), 190);
    assert!(smt.order[..94].iter().all(|c| t.cpu(*c).unwrap().node == 0));
    assert_eq!(smt.steps.last().unwrap().cores, 95);
    let first_smt = smt
        .steps
        .iter()
        .find(|s| s.notes.iter().any(|n| n.contains("both SMT siblings")))
        .unwrap();
    assert_eq!(
        first_smt.cores, 32,
        "64 CPUs: past node 0's 48 cores, on its siblings"
    );
    assert_eq!(first_smt.nodes, [0], "siblings of node 0 before node 1");
}

/// One socket, NPS4: 4 nodes × 8 cores, isolcpus=4-31,36-63 (node 0's first four cores are
/// housekeeping). Node by node: 4-7, then 8-15, …; with the NIC on node 2 its CPUs come first.
#[test]
fn epyc_four_nodes_fill_a_node_before_the_next() {
    let d = tempfile::tempdir().unwrap();
    let t = Topology::read(&util::epyc_4node(d.path())).unwrap();
    let together = steps(&t, &one(ScaleShape::Together));
    assert_eq!(
        together,
        [
            ("together", 1, "4".into(), "5".into()),
            ("together", 2, "4,6".into(), "5,7".into()),
            ("together", 4, "4,6,8,10".into(), "5,7,9,11".into()),
            (
                "together",
                8,
                "4,6,8,10,12,14,16,18".into(),
                "5,7,9,11,13,15,17,19".into()
            ),
            (
                "together",
                14,
                "4,6,8,10,12,14,16,18,20,22,24,26,28,30".into(),
                "5,7,9,11,13,15,17,19,21,23,25,27,29,31".into()
            ),
        ]
    );
    let fixed = steps(&t, &one(ScaleShape::FixedServer));
    assert_eq!(
        fixed,
        [
            ("fixed-server", 1, "4-17".into(), "18".into()),
            ("fixed-server", 2, "4-17".into(), "18-19".into()),
            ("fixed-server", 4, "4-17".into(), "18-21".into()),
            ("fixed-server", 8, "4-17".into(), "18-25".into()),
            ("fixed-server", 14, "4-17".into(), "18-31".into()),
        ]
    );
    let nic = plan_scale(
        &t,
        &ScaleRequest {
            nic_node: Some(2),
            shapes: vec![ScaleShape::Together],
            ..ScaleRequest::default()
        },
    )
    .unwrap();
    assert_eq!(&nic.order[..8], [16, 17, 18, 19, 20, 21, 22, 23]);
    assert_eq!(nic.steps[2].nodes, [2], "4 cores fit on the NIC's node");
    assert_eq!(nic.steps[3].nodes, [0, 1, 2]);
    assert!(nic.steps[3]
        .notes
        .iter()
        .any(|n| n.contains("off the NIC's node 2")));
}

/// 8 P-cores with HT (0-15) and 4 E-cores (16-19), nothing isolated: one housekeeping core
/// (0/1); P-cores one thread each, then E-cores; the step that reaches an E-core says so.
#[test]
fn hybrid_uses_p_cores_before_e_cores_and_says_when_it_reaches_one() {
    let d = tempfile::tempdir().unwrap();
    let t = Topology::read(&util::hybrid_8p4e(d.path())).unwrap();
    let plan = plan_scale(&t, &ScaleRequest::default()).unwrap();
    assert_eq!(plan.housekeeping, [0, 1]);
    assert_eq!(plan.order, [2, 4, 6, 8, 10, 12, 14, 16, 17, 18, 19]);
    let got = steps(&t, &ScaleRequest::default());
    assert_eq!(
        got,
        [
            ("together", 1, "2".into(), "4".into()),
            ("together", 2, "2,6".into(), "4,8".into()),
            ("together", 4, "2,6,10,14".into(), "4,8,12,16".into()),
            ("together", 5, "2,6,10,14,17".into(), "4,8,12,16,18".into()),
            ("fixed-server", 1, "2,4,6,8,10".into(), "12".into()),
            ("fixed-server", 2, "2,4,6,8,10".into(), "12,14".into()),
            ("fixed-server", 4, "2,4,6,8,10".into(), "12,14,16-17".into()),
            ("fixed-server", 6, "2,4,6,8,10".into(), "12,14,16-19".into()),
        ]
    );
    let t4 = &plan.steps[2];
    assert!(
        t4.notes.iter().any(|n| n.starts_with("E-cores in use")),
        "{:?}",
        t4.notes
    );
    assert!(plan.steps[1].notes.is_empty());
}

/// The 2-vCPU VM: split pairs fit one step only (refused, naming what fits); shared pairs give
/// 1 → 2 cores, the housekeeping core given up with a note.
#[test]
fn two_vcpus_scale_one_to_two_cores_with_shared_pairs_only() {
    let d = tempfile::tempdir().unwrap();
    let t = Topology::read(&util::vm_2vcpu(d.path())).unwrap();
    let e = plan_scale(&t, &one(ScaleShape::Together)).unwrap_err();
    assert!(
        matches!(e, ScalePlanError::OneStep { cores: 1, .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("only one step fits"), "{e}");
    let shared = ScaleRequest {
        shapes: vec![ScaleShape::Together],
        pairs: PairLayout::Shared,
        ..ScaleRequest::default()
    };
    let plan = plan_scale(&t, &shared).unwrap();
    assert_eq!(
        steps(&t, &shared),
        [
            ("together", 1, "0".into(), "0".into()),
            ("together", 2, "0-1".into(), "0-1".into()),
        ]
    );
    assert!(plan.housekeeping.is_empty());
    assert!(
        plan.notes[0].contains("0 housekeeping core(s) set aside instead of 1"),
        "{:?}",
        plan.notes
    );
    // More steps than CPUs: a clear refusal naming what it had and wanted.
    let e = plan_scale(
        &t,
        &ScaleRequest {
            steps: Some(vec![1, 2, 4]),
            ..shared.clone()
        },
    )
    .unwrap_err();
    let m = e.to_string();
    assert!(
        m.starts_with("together step of 4 core(s) wants 4 CPU(s)") && m.contains("had CPU(s) 0-1"),
        "{m}"
    );
    let e = plan_scale(
        &t,
        &ScaleRequest {
            allowed: Some(vec![1]),
            ..shared.clone()
        },
    )
    .unwrap_err();
    assert_eq!(e, ScalePlanError::OneCpu { usable: vec![1] });
    let e = plan_scale(
        &t,
        &ScaleRequest {
            steps: Some(vec![2, 1]),
            ..shared
        },
    )
    .unwrap_err();
    assert!(matches!(e, ScalePlanError::BadSteps { .. }), "{e:?}");
}
