//! The text of `connstorm tune placement` and of `connstorm scale --dry-run`: per NUMA node
//! which CPUs serve, load, keep house or stay idle, per SMT sibling set for the cores in use,
//! and why; and a scale plan's steps with their CPUs.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::advice::{CpuRole, Placement, PlacementRequest, ScalePlan};
use crate::cpulist;
use crate::host::Topology;

fn list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "none".into()
    } else {
        cpulist::format(cpus)
    }
}

/// One line about the machine: CPUs, packages, nodes, cores, SMT, hybrid, isolated.
pub fn machine_line(topo: &Topology) -> String {
    format!(
        "{} online CPU(s) ({}): {} package(s), {} NUMA node(s), {} physical core(s), SMT {}{}, \
         isolated {}",
        topo.online.len(),
        list(&topo.online),
        topo.packages(),
        topo.nodes.len(),
        topo.cores(),
        if topo.smt_active() { "on" } else { "off" },
        if topo.hybrid() {
            ", hybrid (P- and E-cores)"
        } else {
            ""
        },
        list(&topo.isolated)
    )
}

/// Roles in the order they are printed.
const ROLES: [&str; 6] = [
    "server",
    "load",
    "housekeeping",
    "idle sibling",
    "spare",
    "not allowed",
];

/// The placement `p` of `req` on `topo` (`roles` from [`crate::advice::cpu_roles`]): the
/// machine, what was asked, per node the CPUs of each role, per SMT sibling set in use what
/// each thread does, why, and the planner's notes.
pub fn placement(
    topo: &Topology,
    req: &PlacementRequest,
    p: &Placement,
    roles: &[CpuRole],
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "machine: {}", machine_line(topo));
    let _ = writeln!(
        out,
        "asked: {} server + {} load worker(s), {}, {} housekeeping core(s) when nothing is \
         isolated{}",
        req.server_workers,
        req.load_workers,
        if req.smt {
            "SMT siblings allowed"
        } else {
            "one worker per physical core"
        },
        req.housekeeping_cores,
        match req.nic_node {
            Some(n) => format!(", the NIC on node {n}"),
            None => String::new(),
        }
    );
    let _ = writeln!(
        out,
        "placement: server {} · load {} · housekeeping {}",
        list(&p.server),
        list(&p.load),
        list(&p.housekeeping)
    );
    let role_of: BTreeMap<usize, &CpuRole> = roles.iter().map(|r| (r.cpu, r)).collect();
    for node in &topo.nodes {
        let _ = writeln!(out, "\nnode {} (CPUs {})", node.id, list(&node.cpus));
        for role in ROLES {
            let cpus: Vec<usize> = node
                .cpus
                .iter()
                .copied()
                .filter(|c| role_of.get(c).is_some_and(|r| r.role == role))
                .collect();
            if !cpus.is_empty() {
                let _ = writeln!(out, "  {role:<13} {}", cpulist::format(&cpus));
            }
        }
        // Each SMT sibling set with a worker or housekeeping on it: what each thread does.
        let mut seen: Vec<&Vec<usize>> = Vec::new();
        let mut lines = Vec::new();
        for c in &node.cpus {
            let Some(r) = role_of.get(c) else { continue };
            if seen.contains(&&r.siblings) || r.siblings.len() < 2 {
                continue;
            }
            seen.push(&r.siblings);
            let busy = r.siblings.iter().any(|s| {
                role_of
                    .get(s)
                    .is_some_and(|x| matches!(x.role, "server" | "load" | "housekeeping"))
            });
            if busy {
                let parts: Vec<String> = r
                    .siblings
                    .iter()
                    .map(|s| format!("{s} {}", role_of.get(s).map_or("offline", |x| x.role)))
                    .collect();
                lines.push(format!(
                    "    core {}: {}",
                    list(&r.siblings),
                    parts.join(", ")
                ));
            }
        }
        if !lines.is_empty() {
            let _ = writeln!(out, "  SMT sibling sets in use:");
            for l in lines {
                let _ = writeln!(out, "{l}");
            }
        }
    }
    let _ = writeln!(out, "\nwhy:");
    for role in ROLES {
        let mut by_why: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for r in roles.iter().filter(|r| r.role == role) {
            by_why.entry(r.why.as_str()).or_default().push(r.cpu);
        }
        for (why, cpus) in by_why {
            let _ = writeln!(out, "  {role:<13} {:<12} {why}", cpulist::format(&cpus));
        }
    }
    let _ = writeln!(
        out,
        "  rules: isolated CPUs first (when any are), the NIC's node first, P-cores before \
         E-cores, cores sharing no thread with housekeeping first, then by CPU id; server \
         workers pick first"
    );
    for n in &p.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// A scale plan: its CPU order and housekeeping, then one line per step with its CPUs and
/// nodes, and what a step changes (a second node, both SMT siblings busy, E-cores).
pub fn scale_plan(topo: &Topology, plan: &ScalePlan) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "machine: {}", machine_line(topo));
    let _ = writeln!(out, "housekeeping: {}", list(&plan.housekeeping));
    for n in &plan.notes {
        let _ = writeln!(out, "{n}");
    }
    let rows: Vec<Vec<String>> = plan
        .steps
        .iter()
        .map(|s| {
            vec![
                s.shape.name().to_string(),
                s.cores.to_string(),
                list(&s.server),
                list(&s.load),
                list(&s.nodes),
                s.notes.join("; "),
            ]
        })
        .collect();
    out.push_str(&super::table(
        &[
            "shape",
            "cores",
            "server CPUs",
            "load CPUs",
            "nodes",
            "what changes",
        ],
        &rows,
    ));
    out
}
