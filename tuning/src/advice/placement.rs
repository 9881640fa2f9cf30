//! The CPU planner behind `--cpus auto`: which CPUs run server workers, load workers and
//! housekeeping (IRQs, the rest of the system).
//!
//! Rules, in order (Documentation/ABI/testing/sysfs-devices-system-cpu for `isolated` and
//! `nohz_full`; Documentation/networking/scaling.rst: "hyperthreads
//! showed no benefit for interrupt handling — one queue per physical core"):
//! 1. Only online CPUs the process may use.
//! 2. Housekeeping: when CPUs are isolated, every non-isolated CPU is housekeeping; otherwise the
//!    first `housekeeping_cores` physical cores (all their threads) are set aside.
//! 3. Workers get one logical CPU per physical core (unless `smt` is asked for), ranked: isolated
//!    first (when any are), on the NIC's NUMA node first, P-cores before E-cores, cores that share
//!    no thread with a housekeeping CPU first, then by CPU id. Server workers pick first, then load
//!    workers from what is left.

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
    /// Not enough CPUs.
    #[error("--cpus auto: {wanted} worker CPU(s) wanted but only {available} available ({why}); ask for fewer workers, allow SMT siblings, or give --cpus explicitly")]
    NotEnough {
        /// Workers asked for.
        wanted: usize,
        /// CPUs available to workers.
        available: usize,
        /// Context.
        why: String,
    },
}

/// Plans CPUs for `req` on `topo`.
///
/// # Errors
/// [`PlacementError::NotEnough`].
pub fn place_cpus(topo: &Topology, req: &PlacementRequest) -> Result<Placement, PlacementError> {
    let usable: Vec<usize> = topo
        .online
        .iter()
        .copied()
        .filter(|c| req.allowed.as_ref().is_none_or(|a| a.contains(c)))
        .collect();
    let core_of = |c: usize| topo.cpu(c).map_or(vec![c], |x| x.siblings.clone());
    let mut housekeeping: Vec<usize>;
    let isolated_any = usable.iter().any(|c| topo.isolated.contains(c));
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
            if cores >= req.housekeeping_cores {
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
    let pool: Vec<usize> = usable
        .iter()
        .copied()
        .filter(|c| !housekeeping.contains(c))
        .collect();
    // Rank key: lower is better.
    let rank = |c: usize| {
        let cpu = topo.cpu(c);
        let off_node = req
            .nic_node
            .is_some_and(|n| cpu.is_some_and(|x| x.node != n));
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
    let mut ranked = pool.clone();
    ranked.sort_by_key(|c| rank(*c));
    for c in ranked {
        let sibs = core_of(c);
        if primaries.iter().any(|p| sibs.contains(p)) {
            secondaries.push(c);
        } else {
            primaries.push(c);
        }
    }
    let mut order = primaries.clone();
    if req.smt {
        order.extend(secondaries);
    }
    let wanted = req.server_workers + req.load_workers;
    if order.len() < wanted {
        return Err(PlacementError::NotEnough {
            wanted,
            available: order.len(),
            why: format!(
                "{} usable CPU(s), housekeeping {}, {} physical core(s) left for workers{}",
                usable.len(),
                cpulist::format(&housekeeping),
                primaries.len(),
                if req.smt { "" } else { ", one CPU per core" }
            ),
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
    if isolated_any {
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
    if housekeeping.is_empty() {
        notes.push("no housekeeping CPU left: IRQs and system work run on worker CPUs".to_string());
    }
    Ok(Placement {
        server,
        load,
        housekeeping,
        notes,
    })
}
