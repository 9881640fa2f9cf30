//! Fixture trees for the tuning integration tests: small /proc and /sys trees built in a tempdir.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Writes `text` to `root/rel`, creating parent directories.
pub fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Description of a machine to build as a sysfs/procfs fixture.
pub struct Machine {
    /// (package, node, cores, threads per core, kind) blocks; CPU ids are assigned per `numbering`.
    pub packages: usize,
    pub nodes_per_package: usize,
    pub cores_per_node: usize,
    pub threads: usize,
    /// true: Intel-style numbering (all first threads, then all second threads);
    /// false: siblings adjacent (0,1 = one core).
    pub siblings_far: bool,
    pub cmdline: String,
    pub isolated: String,
}

/// Builds a fixture for `m` and returns its root.
pub fn build(dir: &Path, m: &Machine) -> PathBuf {
    let root = dir.to_path_buf();
    let total_cores = m.packages * m.nodes_per_package * m.cores_per_node;
    let ncpu = total_cores * m.threads;
    let cpu_of = |core: usize, thread: usize| {
        if m.siblings_far {
            thread * total_cores + core
        } else {
            core * m.threads + thread
        }
    };
    let mut node_cpus: Vec<Vec<usize>> = vec![Vec::new(); m.packages * m.nodes_per_package];
    for core in 0..total_cores {
        let node = core / m.cores_per_node;
        let package = node / m.nodes_per_package;
        let sibs: Vec<usize> = (0..m.threads).map(|t| cpu_of(core, t)).collect();
        for t in 0..m.threads {
            let cpu = cpu_of(core, t);
            node_cpus[node].push(cpu);
            let base = format!("sys/devices/system/cpu/cpu{cpu}/topology");
            put(
                &root,
                &format!("{base}/core_id"),
                &format!("{}\n", core % (m.nodes_per_package * m.cores_per_node)),
            );
            put(
                &root,
                &format!("{base}/physical_package_id"),
                &format!("{package}\n"),
            );
            put(
                &root,
                &format!("{base}/thread_siblings_list"),
                &format!("{}\n", tuning::cpulist::format(&sibs)),
            );
        }
    }
    put(
        &root,
        "sys/devices/system/cpu/online",
        &format!("0-{}\n", ncpu - 1),
    );
    put(
        &root,
        "sys/devices/system/cpu/isolated",
        &format!("{}\n", m.isolated),
    );
    for (n, cpus) in node_cpus.iter().enumerate() {
        put(
            &root,
            &format!("sys/devices/system/node/node{n}/cpulist"),
            &format!("{}\n", tuning::cpulist::format(cpus)),
        );
    }
    put(&root, "proc/cmdline", &format!("{}\n", m.cmdline));
    put(
        &root,
        "proc/self/status",
        &format!("Name:\tx\nCpus_allowed_list:\t0-{}\n", ncpu - 1),
    );
    root
}

/// 2 sockets × 48 cores × 2 threads = 192 CPUs, siblings adjacent (cpu 2k and 2k+1 share a core),
/// isolcpus=1,3-191 (every odd CPU plus 3-191: only 0 and 2 housekeeping). One NUMA node per socket.
pub fn two_socket_192(dir: &Path) -> PathBuf {
    build(
        dir,
        &Machine {
            packages: 2,
            nodes_per_package: 1,
            cores_per_node: 48,
            threads: 2,
            siblings_far: false,
            cmdline: "BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,domain,1,3-191 nohz_full=1,3-191 rcu_nocbs=1,3-191 irqaffinity=0,2".into(),
            isolated: "1,3-191".into(),
        },
    )
}

/// One socket, 4 NUMA nodes (NPS4) × 8 cores × 2 threads = 64 CPUs, siblings far (cpu c and c+32).
pub fn epyc_4node(dir: &Path) -> PathBuf {
    build(
        dir,
        &Machine {
            packages: 1,
            nodes_per_package: 4,
            cores_per_node: 8,
            threads: 2,
            siblings_far: true,
            cmdline: "isolcpus=4-31,36-63".into(),
            isolated: "4-31,36-63".into(),
        },
    )
}

/// Hybrid desktop: 8 P-cores with HT (CPUs 0-15, siblings adjacent) + 4 E-cores (16-19).
pub fn hybrid_8p4e(dir: &Path) -> PathBuf {
    let root = build(
        dir,
        &Machine {
            packages: 1,
            nodes_per_package: 1,
            cores_per_node: 8,
            threads: 2,
            siblings_far: false,
            cmdline: "quiet".into(),
            isolated: String::new(),
        },
    );
    for (i, cpu) in (16..20).enumerate() {
        let base = format!("sys/devices/system/cpu/cpu{cpu}/topology");
        put(&root, &format!("{base}/core_id"), &format!("{}\n", 8 + i));
        put(&root, &format!("{base}/physical_package_id"), "0\n");
        put(
            &root,
            &format!("{base}/thread_siblings_list"),
            &format!("{cpu}\n"),
        );
    }
    put(&root, "sys/devices/system/cpu/online", "0-19\n");
    put(&root, "sys/devices/system/node/node0/cpulist", "0-19\n");
    put(&root, "sys/devices/cpu_core/cpus", "0-15\n");
    put(&root, "sys/devices/cpu_atom/cpus", "16-19\n");
    put(&root, "proc/self/status", "Cpus_allowed_list:\t0-19\n");
    root
}

/// A 2-vCPU VM: no SMT, one node, nothing isolated.
pub fn vm_2vcpu(dir: &Path) -> PathBuf {
    build(
        dir,
        &Machine {
            packages: 1,
            nodes_per_package: 1,
            cores_per_node: 2,
            threads: 1,
            siblings_far: false,
            cmdline: "console=ttyS0 quiet".into(),
            isolated: String::new(),
        },
    )
}
