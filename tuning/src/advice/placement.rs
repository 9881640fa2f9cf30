//! The CPU planner behind `--server-cpus auto` / `--load-cpus auto`, `connstorm tune placement`
//! and the steps of `connstorm scale`: which CPUs run server workers, load workers and
//! housekeeping (IRQs, the rest of the system).
//!
//! Rules, in order (Documentation/ABI/testing/sysfs-devices-system-cpu for `isolated` and
//! `nohz_full`; Documentation/networking/scaling.rst: "hyperthreads
//! showed no benefit for interrupt handling — one queue per physical core"):
//! 1. Only online CPUs the process may use.
//! 2. Housekeeping: when CPUs are isolated, every non-isolated CPU is housekeeping; otherwise the
//!    first `housekeeping_cores` physical cores (all their threads) are set aside. (The steps of
//!    `connstorm scale` set fewer aside on a small host, saying so: [`super::plan_scale`].)
//! 3. Workers get one logical CPU per physical core (unless `smt` is asked for), ranked: isolated
//!    first (when any are), on the NIC's NUMA node first, P-cores before E-cores, cores that share
//!    no thread with a housekeeping CPU first, then by CPU id. Server workers pick first, then load
//!    workers from what is left.
//!
//! [`PlacementError`] names the CPUs the planner had, what it set aside and what it wanted,
//! without option names: the caller knows its own options and adds the remedy.

use serde::Serialize;

use crate::cpulist;
use crate::host::{CoreKind, Topology};

/// What to place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlacementRequest {
    /// Server workers wanted (one per CPU).
    pub server_workers: usize,
    /// Load-generator workers wanted (0 when the load runs elsewhere).
    pub load_workers: usize,
    /// Physical cores kept for housekeeping when nothing is isolated (default 1 in the CLI).
    pub housekeeping_cores: usize,
    /// NUMA node of the NIC (None: no preference).
    pub nic_node: Option<usize>,
    /// Allow both SMT siblings of a core to run workers (after every core has one).
    pub smt: bool,
    /// CPUs this process may use (None: every online CPU).
    pub allowed: Option<Vec<usize>>,
}

/// The chosen CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// Server worker CPUs, in rank order.
    pub server: Vec<usize>,
    /// Load worker CPUs, in rank order.
    pub load: Vec<usize>,
    /// Housekeeping CPUs (for IRQs and everything else).
    pub housekeeping: Vec<usize>,
    /// Compromises made (e.g. workers off the NIC's node).
    pub notes: Vec<String>,
}

/// No placement fits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    /// Fewer worker CPUs than workers asked for.
    #[error(
        "{wanted} worker CPU(s) wanted ({server} server + {load} load, {per}) but only \
         {available} available: had CPU(s) {} (online and allowed for this process), housekeeping \
         {}, worker CPUs {}{}",
        list(.usable),
        list(.housekeeping),
        list(.workers),
        siblings_note(.siblings, *.smt)
    )]
    NotEnough {
        /// Server workers asked for.
        server: usize,
        /// Load workers asked for.
        load: usize,
        /// Workers asked for in all.
        wanted: usize,
        /// CPUs available to workers.
        available: usize,
        /// Online CPUs the process may use.
        usable: Vec<usize>,
        /// CPUs set aside for housekeeping.
        housekeeping: Vec<usize>,
        /// CPUs workers could get (rank order).
        workers: Vec<usize>,
        /// SMT siblings of worker CPUs left out (one CPU per core); empty with `smt`.
        siblings: Vec<usize>,
        /// Whether SMT siblings were allowed.
        smt: bool,
        /// "one per physical core" or "SMT siblings allowed".
        per: String,
    },
}

/// A CPU list for a message: `none` when empty (an empty list read as a blank in a sentence).
pub(crate) fn list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "none".into()
    } else {
        cpulist::format(cpus)
    }
}

fn siblings_note(siblings: &[usize], smt: bool) -> String {
    if smt || siblings.is_empty() {
        String::new()
    } else {
        format!(
            " (SMT siblings {} left out: one worker per physical core)",
            cpulist::format(siblings)
        )
    }
}

/// The CPUs the planner works with: who may be used, what housekeeping takes, and the worker
/// CPUs ranked (one per core first, then SMT siblings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pool {
    /// Online CPUs the process may use.
    pub(crate) usable: Vec<usize>,
    /// Housekeeping CPUs.
    pub(crate) housekeeping: Vec<usize>,
    /// Some usable CPU is isolated.
    pub(crate) isolated_any: bool,
    /// One CPU per physical core, best first.
    pub(crate) primaries: Vec<usize>,
    /// The other SMT siblings of the workers' cores, best first.
    pub(crate) secondaries: Vec<usize>,
    /// Why housekeeping is smaller than asked (a small host), if it is.
    pub(crate) housekeeping_note: Option<String>,
}

/// The usable CPUs of `topo` under `allowed`, ascending.
pub(crate) fn usable_cpus(topo: &Topology, allowed: Option<&[usize]>) -> Vec<usize> {
    topo.online
        .iter()
        .copied()
        .filter(|c| allowed.is_none_or(|a| a.contains(c)))
        .collect()
}

/// Builds the pool with `hk_cores` housekeeping cores when nothing is isolated.
pub(crate) fn pool(
    topo: &Topology,
    allowed: Option<&[usize]>,
    hk_cores: usize,
    nic_node: Option<usize>,
) -> Pool {
    let usable = usable_cpus(topo, allowed);
    let core_of = |c: usize| topo.cpu(c).map_or(vec![c], |x| x.siblings.clone());
    let isolated_any = usable.iter().any(|c| topo.isolated.contains(c));
    let mut housekeeping: Vec<usize>;
    if isolated_any {
        housekeeping = usable
            .iter()
            .copied()
            .filter(|c| !topo.isolated.contains(c))
            .collect();
    } else {
        housekeeping = Vec::new();
        let mut cores = 0;
        for &c in &usable {
            if cores >= hk_cores {
                break;
            }
            if !housekeeping.contains(&c) {
                housekeeping.extend(core_of(c).into_iter().filter(|s| usable.contains(s)));
                cores += 1;
            }
        }
        housekeeping.sort_unstable();
        housekeeping.dedup();
    }
    let worker_pool: Vec<usize> = usable
        .iter()
        .copied()
        .filter(|c| !housekeeping.contains(c))
        .collect();
    // Rank key: lower is better.
    let rank = |c: usize| {
        let cpu = topo.cpu(c);
        let off_node = nic_node.is_some_and(|n| cpu.is_some_and(|x| x.node != n));
        let kind = match cpu.map_or(CoreKind::Uniform, |x| x.kind) {
            CoreKind::Performance | CoreKind::Uniform => 0,
            CoreKind::Efficiency => 1,
        };
        let shares_hk = core_of(c).iter().any(|s| housekeeping.contains(s));
        (
            isolated_any && !topo.isolated.contains(&c),
            off_node,
            kind,
            shares_hk,
            c,
        )
    };
    let mut primaries: Vec<usize> = Vec::new();
    let mut secondaries: Vec<usize> = Vec::new();
    let mut ranked = worker_pool;
    ranked.sort_by_key(|c| rank(*c));
    for c in ranked {
        let sibs = core_of(c);
        if primaries.iter().any(|p| sibs.contains(p)) {
            secondaries.push(c);
        } else {
            primaries.push(c);
        }
    }
    Pool {
        usable,
        housekeeping,
        isolated_any,
        primaries,
        secondaries,
        housekeeping_note: None,
    }
}

/// The pool with as many of `hk_cores` housekeeping cores as leave `wanted` worker CPUs (one
/// per core, or with siblings when `smt`): on a small host with nothing isolated, fewer cores
/// (down to none) are set aside and [`Pool::housekeeping_note`] says so. With isolated CPUs the
/// housekeeping set is the non-isolated CPUs, whatever is wanted.
pub(crate) fn pool_for(
    topo: &Topology,
    allowed: Option<&[usize]>,
    hk_cores: usize,
    nic_node: Option<usize>,
    smt: bool,
    wanted: usize,
) -> Pool {
    let workers = |p: &Pool| p.primaries.len() + if smt { p.secondaries.len() } else { 0 };
    let asked = pool(topo, allowed, hk_cores, nic_node);
    if asked.isolated_any || workers(&asked) >= wanted || hk_cores == 0 {
        return asked;
    }
    for fewer in (0..hk_cores).rev() {
        let mut p = pool(topo, allowed, fewer, nic_node);
        if workers(&p) >= wanted || fewer == 0 {
            p.housekeeping_note = Some(format!(
                "{} usable CPU(s) and nothing isolated: {} housekeeping core(s) set aside instead \
                 of {hk_cores}, so that {wanted} worker CPU(s) fit{}",
                p.usable.len(),
                fewer,
                if fewer == 0 {
                    " (IRQs and system work share the worker CPUs)"
                } else {
                    ""
                }
            ));
            return p;
        }
    }
    asked
}

/// Plans CPUs for `req` on `topo`.
///
/// # Errors
/// [`PlacementError::NotEnough`], naming the CPUs it had, housekeeping and the workers wanted.
// The error is made at most once per command, before anything runs, and carries the CPU
// lists its message names: its size costs nothing worth a box.
#[allow(clippy::result_large_err)]
pub fn place_cpus(topo: &Topology, req: &PlacementRequest) -> Result<Placement, PlacementError> {
    // Saturating: `--server-workers 18446744073709551615 --load-workers 1` wrapped to 0 and
    // sliced past the end (a panic); saturated, it is more than any host has.
    let wanted = req.server_workers.saturating_add(req.load_workers);
    let pool = pool(
        topo,
        req.allowed.as_deref(),
        req.housekeeping_cores,
        req.nic_node,
    );
    let mut order = pool.primaries.clone();
    if req.smt {
        order.extend(pool.secondaries.iter().copied());
    }
    if order.len() < wanted {
        return Err(PlacementError::NotEnough {
            server: req.server_workers,
            load: req.load_workers,
            wanted,
            available: order.len(),
            usable: pool.usable.clone(),
            housekeeping: pool.housekeeping.clone(),
            workers: order,
            siblings: if req.smt {
                Vec::new()
            } else {
                pool.secondaries.clone()
            },
            smt: req.smt,
            per: if req.smt {
                "SMT siblings allowed".into()
            } else {
                "one per physical core".into()
            },
        });
    }
    let server: Vec<usize> = order[..req.server_workers].to_vec();
    let load: Vec<usize> = order[req.server_workers..wanted].to_vec();
    let mut notes = Vec::new();
    if let Some(n) = req.nic_node {
        let off: Vec<usize> = server
            .iter()
            .chain(&load)
            .copied()
            .filter(|c| topo.cpu(*c).is_some_and(|x| x.node != n))
            .collect();
        if !off.is_empty() {
            notes.push(format!(
                "CPUs {} are not on the NIC's NUMA node {n}",
                cpulist::format(&off)
            ));
        }
    }
    if pool.isolated_any {
        let not_iso: Vec<usize> = server
            .iter()
            .chain(&load)
            .copied()
            .filter(|c| !topo.isolated.contains(c))
            .collect();
        if !not_iso.is_empty() {
            notes.push(format!(
                "CPUs {} are not isolated",
                cpulist::format(&not_iso)
            ));
        }
    } else {
        notes.push("no isolated CPUs: workers share CPUs with the rest of the system".to_string());
    }
    if pool.housekeeping.is_empty() {
        notes.push("no housekeeping CPU left: IRQs and system work run on worker CPUs".to_string());
    }
    Ok(Placement {
        server,
        load,
        housekeeping: pool.housekeeping,
        notes,
    })
}

/// The CPUs workers may get for `req` on `topo` (its counts ignored), best first: one per
/// physical core, then with `smt` the other siblings. With the housekeeping set aside as
/// [`place_cpus`] sets it.
pub fn worker_cpus(topo: &Topology, req: &PlacementRequest) -> Vec<usize> {
    let p = pool(
        topo,
        req.allowed.as_deref(),
        req.housekeeping_cores,
        req.nic_node,
    );
    let mut v = p.primaries;
    if req.smt {
        v.extend(p.secondaries);
    }
    v
}

/// What each CPU does in a placement and why, for [`crate::render::placement`]: one entry per
/// online CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuRole {
    /// The CPU.
    pub cpu: usize,
    /// Its NUMA node.
    pub node: usize,
    /// Its SMT siblings (itself included).
    pub siblings: Vec<usize>,
    /// `server`, `load`, `housekeeping`, `idle sibling` (an SMT sibling of a worker CPU, left
    /// idle), `spare` (usable, not needed), `not allowed` (outside the affinity mask).
    pub role: &'static str,
    /// Why, in words.
    pub why: String,
}

/// Every online CPU's role in `p` (planned on `topo` for `req`) and why.
pub fn cpu_roles(topo: &Topology, req: &PlacementRequest, p: &Placement) -> Vec<CpuRole> {
    let usable = usable_cpus(topo, req.allowed.as_deref());
    let workers: Vec<usize> = p.server.iter().chain(&p.load).copied().collect();
    topo.cpus
        .iter()
        .map(|c| {
            let kind = match c.kind {
                CoreKind::Performance => ", P-core",
                CoreKind::Efficiency => ", E-core",
                CoreKind::Uniform => "",
            };
            let iso = if topo.isolated.contains(&c.id) {
                "isolated"
            } else {
                "not isolated"
            };
            let nic = match req.nic_node {
                Some(n) if n == c.node => ", on the NIC's node",
                Some(_) => ", off the NIC's node",
                None => "",
            };
            let core = if c.siblings.len() < 2 {
                ""
            } else if c.siblings.iter().any(|s| *s != c.id && workers.contains(s)) {
                ", SMT sibling also a worker"
            } else {
                ", its core to itself"
            };
            let (role, why) = if !usable.contains(&c.id) {
                (
                    "not allowed",
                    "outside this process's affinity mask (taskset/cpuset)".to_string(),
                )
            } else if p.server.contains(&c.id) {
                ("server", format!("{iso}{nic}{kind}{core}"))
            } else if p.load.contains(&c.id) {
                ("load", format!("{iso}{nic}{kind}{core}"))
            } else if p.housekeeping.contains(&c.id) {
                let why = if topo.isolated.is_empty() {
                    "first core(s) set aside: IRQs and system work".to_string()
                } else {
                    "not isolated: IRQs and system work".to_string()
                };
                ("housekeeping", why)
            } else if c.siblings.iter().any(|s| *s != c.id && workers.contains(s)) {
                (
                    "idle sibling",
                    "SMT sibling of a worker CPU, left idle so the worker has its core".into(),
                )
            } else {
                ("spare", format!("not needed: {iso}{nic}{kind}"))
            };
            CpuRole {
                cpu: c.id,
                node: c.node,
                siblings: c.siblings.clone(),
                role,
                why,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Cpu, NumaNode};

    /// `n` CPUs, no SMT, one node, nothing isolated.
    fn flat(n: usize) -> Topology {
        let online: Vec<usize> = (0..n).collect();
        Topology {
            online: online.clone(),
            isolated: Vec::new(),
            nohz_full: Vec::new(),
            cpus: online
                .iter()
                .map(|&id| Cpu {
                    id,
                    core_id: Some(id as u32),
                    package_id: Some(0),
                    node: 0,
                    siblings: vec![id],
                    kind: CoreKind::Uniform,
                })
                .collect(),
            nodes: vec![NumaNode {
                id: 0,
                cpus: online,
            }],
        }
    }

    /// Finding: `taskset -c 1 connstorm bench --server-cpus auto --load-cpus auto` said
    /// "--cpus auto: --cpus auto: 2 worker CPU(s) wanted … housekeeping , …". The error names
    /// what it had (CPU 1), wanted (1 + 1) and set aside ("none", not a blank), with no prefix.
    #[test]
    fn one_allowed_cpu_names_what_it_had_and_wanted() {
        let t = flat(2);
        let e = place_cpus(
            &t,
            &PlacementRequest {
                server_workers: 1,
                load_workers: 1,
                housekeeping_cores: 0,
                allowed: Some(vec![1]),
                ..PlacementRequest::default()
            },
        )
        .unwrap_err();
        let m = e.to_string();
        assert_eq!(
            m,
            "2 worker CPU(s) wanted (1 server + 1 load, one per physical core) but only 1 \
             available: had CPU(s) 1 (online and allowed for this process), housekeeping none, \
             worker CPUs 1"
        );
        assert!(
            !m.contains("--"),
            "no option names: the caller adds its own: {m}"
        );
    }

    /// Absurd sizes: worker counts whose sum overflows `usize` are refused as too many (they
    /// panicked on a slice bound), with the asked counts named.
    #[test]
    fn absurd_worker_counts_are_refused_not_a_panic() {
        let e = place_cpus(
            &flat(4),
            &PlacementRequest {
                server_workers: usize::MAX,
                load_workers: 1,
                ..PlacementRequest::default()
            },
        )
        .unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains(&format!("{} server + 1 load", usize::MAX)),
            "{m}"
        );
        assert!(m.contains("but only 4 available"), "{m}");
    }
}
