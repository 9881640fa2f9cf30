//! Kernel config audit on fixture configs, per profile, and runtime cross-checks.

use std::path::{Path, PathBuf};

use tuning::advice::{audit_kernel_config, AuditProfile, AuditRuntime, KernelConfig};
use tuning::host::Cmdline;
use tuning::host::Severity;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kconfig")
        .join(name)
}

fn runtime(cmdline: &str) -> AuditRuntime {
    AuditRuntime {
        cmdline: Some(Cmdline::parse(cmdline)),
        sched_rt_runtime_us: Some(-1),
        numa_balancing: Some(0),
        preempt_runtime: Err("EPERM".into()),
        rt_planned: false,
        cpus: None,
    }
}

fn off(cfg: &KernelConfig, p: AuditProfile, rt: &AuditRuntime) -> Vec<String> {
    audit_kernel_config(cfg, p, rt)
        .0
        .into_iter()
        .filter(|r| r.severity != Severity::Info)
        .map(|r| r.item)
        .collect()
}

#[test]
fn each_fixture_fits_its_own_profile_and_not_the_others() {
    let rt = runtime("isolcpus=2-3 nohz_full=2-3");
    let server = KernelConfig::read_file(&fixture("server.config.gz")).unwrap();
    assert_eq!(
        server,
        KernelConfig::read_file(&fixture("server.config"))
            .map(|mut c| {
                c.origin = server.origin.clone();
                c
            })
            .unwrap()
    );
    assert!(
        off(&server, AuditProfile::Server, &rt).is_empty(),
        "{:?}",
        off(&server, AuditProfile::Server, &rt)
    );
    assert!(off(&server, AuditProfile::Rt, &rt).contains(&"preemption".to_string()));
    let rtc = KernelConfig::read_file(&fixture("rt.config")).unwrap();
    assert!(
        off(&rtc, AuditProfile::Rt, &rt).is_empty(),
        "{:?}",
        off(&rtc, AuditProfile::Rt, &rt)
    );
    assert!(off(&rtc, AuditProfile::Server, &rt).contains(&"preemption".to_string()));
    let desk = KernelConfig::read_file(&fixture("desktop.config")).unwrap();
    assert!(
        off(&desk, AuditProfile::Desktop, &rt).is_empty(),
        "{:?}",
        off(&desk, AuditProfile::Desktop, &rt)
    );
    let rt_off = off(&desk, AuditProfile::Rt, &rt);
    for item in [
        "CONFIG_RT_GROUP_SCHED",
        "CONFIG_NO_HZ_FULL",
        "CONFIG_SCHED_CORE",
        "preemption",
    ] {
        assert!(rt_off.contains(&item.to_string()), "{item} in {rt_off:?}");
    }
    let (rows, _) = audit_kernel_config(&server, AuditProfile::Server, &rt);
    assert!(rows[0].current.contains("tick 4.0 ms"), "{:?}", rows[0]);
}

#[test]
fn runtime_cross_checks() {
    let server = KernelConfig::read_file(&fixture("server.config")).unwrap();
    let mut rt = runtime("nohz_full=0-3");
    rt.sched_rt_runtime_us = Some(950000);
    rt.numa_balancing = Some(1);
    rt.rt_planned = true;
    let (_, f) = audit_kernel_config(&server, AuditProfile::Server, &rt);
    let text: Vec<&str> = f.iter().map(|x| x.message.as_str()).collect();
    assert!(
        f.iter().any(|x| x.severity == Severity::Error
            && x.message.contains("CONFIG_NO_HZ_FULL is not built")),
        "{text:?}"
    );
    assert!(text.iter().any(|m| m.contains("without isolcpus")));
    assert!(text.iter().any(|m| m.contains("boot CPU 0")));
    assert!(text
        .iter()
        .any(|m| m.contains("sched_rt_runtime_us = 950000")));
    assert!(text.iter().any(|m| m.contains("numa_balancing is on")));
    let clean = audit_kernel_config(
        &KernelConfig::read_file(&fixture("rt.config")).unwrap(),
        AuditProfile::Rt,
        &runtime("isolcpus=2-3 nohz_full=2-3"),
    )
    .1;
    assert!(clean.is_empty(), "{clean:?}");
}
