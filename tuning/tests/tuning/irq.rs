//! IRQ plans, apply and revert on fixture trees (never on the host).

use std::path::Path;

use tuning::host::{Nic, Topology};
use tuning::plan::{apply_irqs, plan_irqs, restore_irqs, IrqPlan, Snapshot};

use crate::util::{self, put};

/// A NIC eth0 on node 1 of the 192-CPU fixture with 4 queue IRQs (100-103) plus a config IRQ 99.
fn nic_fixture(root: &Path) {
    put(root, "sys/class/net/eth0/device/numa_node", "1\n");
    put(root, "sys/class/net/eth0/queues/rx-0/rps_cpus", "0\n");
    put(root, "sys/class/net/eth0/queues/tx-0/xps_cpus", "1\n");
    let mut interrupts = String::from("           CPU0       CPU1\n");
    for irq in 99..104 {
        put(
            root,
            &format!("sys/class/net/eth0/device/msi_irqs/{irq}"),
            "msix\n",
        );
        put(
            root,
            &format!("proc/irq/{irq}/smp_affinity_list"),
            "0-191\n",
        );
        put(
            root,
            &format!("proc/irq/{irq}/effective_affinity_list"),
            "5\n",
        );
        let name = if irq == 99 {
            "eth0-config".to_string()
        } else {
            format!("eth0-TxRx-{}", irq - 100)
        };
        interrupts.push_str(&format!(
            " {irq}:  0 0 PCI-MSIX-0000:3b:00.0 {} -edge {name}\n",
            irq - 99
        ));
    }
    put(root, "proc/interrupts", &interrupts);
    put(root, "proc/4242/comm", "irqbalance\n");
}

#[test]
fn plans_warn_and_apply_revert_on_a_fixture_tree() {
    let d = tempfile::tempdir().unwrap();
    let root = util::two_socket_192(&d.path().join("root"));
    nic_fixture(&root);
    let nic = Nic::read(&root, "eth0").unwrap();
    assert_eq!(nic.numa_node, Some(1));
    assert_eq!(
        nic.queue_irqs.iter().map(|q| q.irq).collect::<Vec<_>>(),
        [100, 101, 102, 103]
    );
    assert_eq!(nic.queue_irqs[0].effective.as_deref(), Some(&[5][..]));
    assert_eq!(nic.rps.get("rx-0").map(String::as_str), Some("0"));
    let t = Topology::read(&root).unwrap();

    let (hk, warns) = plan_irqs(&root, &nic, &t, IrqPlan::Housekeeping, &[]).unwrap();
    assert!(hk.iter().all(|m| m.to == [0, 2]));
    assert!(warns
        .iter()
        .any(|w| w.message.contains("irqbalance is running (pid [4242])")));
    assert!(!warns.iter().any(|w| w.message.contains("isolated")));

    let (pq, warns) = plan_irqs(&root, &nic, &t, IrqPlan::PerQueue, &[97, 99, 101, 103]).unwrap();
    assert_eq!(
        pq.iter().map(|m| m.to[0]).collect::<Vec<_>>(),
        [97, 99, 101, 103]
    );
    assert_eq!(
        warns
            .iter()
            .filter(|w| w.message.contains("lands on isolated"))
            .count(),
        4
    );

    let (sp, _) = plan_irqs(&root, &nic, &t, IrqPlan::Spread, &[]).unwrap();
    assert!(sp.iter().all(|m| t.cpu(m.to[0]).unwrap().node == 1));

    let state = d.path().join("state");
    let snap = apply_irqs(&root, &hk, &state, "test").unwrap();
    for irq in 100..104 {
        assert_eq!(
            std::fs::read_to_string(root.join(format!("proc/irq/{irq}/smp_affinity_list")))
                .unwrap(),
            "0,2"
        );
    }
    let s = Snapshot::read(&snap).unwrap();
    assert!(restore_irqs(&root, &s.saved).is_empty());
    for irq in 100..104 {
        assert_eq!(
            std::fs::read_to_string(root.join(format!("proc/irq/{irq}/smp_affinity_list")))
                .unwrap(),
            "0-191"
        );
    }
    assert!(
        restore_irqs(&root, &s.saved).is_empty(),
        "second restore is a no-op"
    );
}

#[test]
fn a_failing_irq_write_restores_earlier_ones() {
    let d = tempfile::tempdir().unwrap();
    let root = util::two_socket_192(&d.path().join("root"));
    nic_fixture(&root);
    let nic = Nic::read(&root, "eth0").unwrap();
    let t = Topology::read(&root).unwrap();
    let (moves, _) = plan_irqs(&root, &nic, &t, IrqPlan::Housekeeping, &[]).unwrap();
    // IRQ 102's file is replaced by a directory: its write fails.
    let f = root.join("proc/irq/102/smp_affinity_list");
    std::fs::remove_file(&f).unwrap();
    std::fs::create_dir(&f).unwrap();
    let e = apply_irqs(&root, &moves, &d.path().join("state"), "t").unwrap_err();
    assert!(e.to_string().contains("/proc/irq/102"), "{e}");
    for irq in [100, 101, 103] {
        assert_eq!(
            std::fs::read_to_string(root.join(format!("proc/irq/{irq}/smp_affinity_list")))
                .unwrap()
                .trim(),
            "0-191"
        );
    }
}
