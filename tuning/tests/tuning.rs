//! Integration tests of the tuning crate: fixture trees and real network namespaces.

mod util;

use std::path::Path;

use tuning::counters::Snapshot;
use tuning::host::{CoreKind, Topology};

#[test]
fn counters_in_a_fresh_netns_agree_with_the_kernel() {
    let (before, after, kernel_active) = testkit::NetNs::run(|ns| {
        let before = Snapshot::read_current().unwrap();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let conns: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        let after = Snapshot::read_current().unwrap();
        drop(conns);
        (before, after, ns.counter("Tcp.ActiveOpens"))
    });
    let d = after.delta(&before);
    assert_eq!(d.active_opens(), 3);
    assert_eq!(d.passive_opens(), 3);
    assert_eq!(after.get("Tcp.ActiveOpens"), Some(kernel_active));
    assert!(
        d.drops().is_empty(),
        "no drops expected on an idle namespace: {:?}",
        d.drops()
    );
    assert!(d.to_map().contains_key("TcpExt.ListenOverflows"));
}

#[test]
fn topology_of_the_two_socket_192_cpu_fixture() {
    let d = tempfile::tempdir().unwrap();
    let root = util::two_socket_192(d.path());
    let t = Topology::read(&root).unwrap();
    assert_eq!(t.online.len(), 192);
    assert_eq!(t.isolated.len(), 190);
    assert_eq!(t.housekeeping(), [0, 2]);
    assert_eq!(t.packages(), 2);
    assert_eq!(t.cores(), 96);
    assert!(t.smt_active());
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(t.cpu(97).unwrap().siblings, [96, 97]);
    assert_eq!(t.cpu(100).unwrap().node, 1);
    let c = tuning::host::Cmdline::read(&root).unwrap();
    assert_eq!(c.isolcpus.unwrap().flags, ["managed_irq", "domain"]);
}

#[test]
fn topology_of_epyc_hybrid_and_vm_fixtures() {
    let d = tempfile::tempdir().unwrap();
    let epyc = Topology::read(&util::epyc_4node(&d.path().join("e"))).unwrap();
    assert_eq!(epyc.nodes.len(), 4);
    assert_eq!(epyc.cpu(33).unwrap().siblings, [1, 33]);
    assert_eq!(epyc.cpu(33).unwrap().node, 0);
    let hy = Topology::read(&util::hybrid_8p4e(&d.path().join("h"))).unwrap();
    assert!(hy.hybrid());
    assert_eq!(hy.cores(), 12);
    assert_eq!(hy.cpu(17).unwrap().kind, CoreKind::Efficiency);
    assert_eq!(hy.cpu(3).unwrap().kind, CoreKind::Performance);
    let vm = Topology::read(&util::vm_2vcpu(&d.path().join("v"))).unwrap();
    assert!(!vm.smt_active());
    assert_eq!(vm.housekeeping(), [0, 1]);
}

#[test]
fn host_facts_from_the_checked_in_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/vm");
    let h = tuning::host::HostFacts::read(&root);
    assert_eq!(h.kernel_release.as_deref(), Some("6.18.0-fixture"));
    assert_eq!(h.online_cpus.as_deref(), Some(&[0, 1][..]));
    assert_eq!(
        h.sysctls
            .get("net.ipv4.ip_local_port_range")
            .map(String::as_str),
        Some("32768 60999")
    );
    assert_eq!(h.nofile, Some((1024, 20000)));
    assert_eq!(h.cpu_model.as_deref(), Some("Fixture CPU @ 2.0GHz"));
    assert!(h.findings.is_empty(), "{:?}", h.findings);
    let snap = Snapshot::read(&root.join("proc/net")).unwrap();
    assert_eq!(snap.get("TcpExt.ListenOverflows"), Some(4));
}

#[path = "tuning/presets.rs"]
mod presets;

#[path = "tuning/placement.rs"]
mod placement;

#[path = "tuning/scale.rs"]
mod scale;

#[path = "tuning/kconfig.rs"]
mod kconfig;

#[path = "tuning/irq.rs"]
mod irq;

#[path = "tuning/sysctld.rs"]
mod sysctld;

#[path = "tuning/hostfiles.rs"]
mod hostfiles;

#[test]
fn a_child_netns_is_detected_so_global_keys_are_refused() {
    let inside = testkit::NetNs::run(|_| tuning::host::in_initial_netns());
    assert!(!inside, "a fresh namespace must not look like the host");
}

/// Parsers of outside input never panic on garbage (a small deterministic fuzz loop).
#[test]
fn parsers_survive_random_input() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let alphabet = b"abc019 =.-_/#;\n\t,:\"[]{}CONFIG_y$\x00\xff";
    for round in 0..3000 {
        let len = (round % 97) + 1;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize]
            })
            .collect();
        let s = String::from_utf8_lossy(&bytes);
        let _ = tuning::host::Cmdline::parse(&s);
        let _ = tuning::sysctl::Preset::parse_sysctl_conf(&s, "f");
        let _ = tuning::sysctl::import_script(&s);
        let _ = tuning::sysctl::Pattern::parse(&s);
        let _ = tuning::sysctl::Preset::parse_toml(&s, "f");
        let _ = tuning::advice::KernelConfig::parse(&s, "f");
        let _ = tuning::cpulist::parse(&s);
        let _ = tuning::sysctl::Key::parse(&s);
    }
}

#[path = "tuning/profile.rs"]
mod profile;
