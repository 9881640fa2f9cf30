//! The steps of `connstorm scale`: which CPUs serve and load at 1, 2, 4, … N cores, in two
//! shapes — server and load growing together (one more server CPU and one more load CPU per
//! core), and a fixed server with the load growing.
//!
//! Order of the CPUs the steps take (the placement planner's pool, [`super::place_cpus`]'s
//! rules for what is usable and what is housekeeping): node by node — the NIC's node first when
//! given, then by node id — and within a node one logical CPU per physical core first (isolated,
//! P-cores before E-cores, cores that share no thread with housekeeping first, then by id), then
//! with `smt` that node's other SMT siblings. So a step stays within one NUMA node and one
//! thread per core as long as it can, and crosses nodes last. Each step takes a prefix of that
//! order, so step N's CPUs include step N−1's.
//!
//! Layout of a `together` step of N cores: with [`PairLayout::Split`] 2N CPUs, server and load
//! alternating along the order (each pair side by side on one node); with
//! [`PairLayout::Shared`] N CPUs, each running one server worker and one load worker (softirq
//! work stays on the CPU that raised it: the `bench --whole-machine` shape, and the only one
//! that gives two steps on a 2-CPU host). A `fixed-server` plan takes its server CPUs first and
//! grows the load over the CPUs after them.

use serde::Serialize;

use super::placement::{list, pool_for};
use crate::cpulist;
use crate::host::{CoreKind, Topology};

/// How server and load grow from step to step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScaleShape {
    /// One more server core and one more load core per core of the step.
    Together,
    /// The server on fixed CPUs, the load growing.
    FixedServer,
}

impl ScaleShape {
    /// `together` or `fixed-server`, as the option and the record write it.
    pub fn name(self) -> &'static str {
        match self {
            ScaleShape::Together => "together",
            ScaleShape::FixedServer => "fixed-server",
        }
    }
}

/// Where a `together` step's server and load workers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PairLayout {
    /// Server and load on different CPUs: N cores = N server CPUs + N load CPUs.
    #[default]
    Split,
    /// One server worker and one load worker on each of N CPUs.
    Shared,
}

impl PairLayout {
    /// `split` or `shared`.
    pub fn name(self) -> &'static str {
        match self {
            PairLayout::Split => "split",
            PairLayout::Shared => "shared",
        }
    }
}

/// What to plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleRequest {
    /// The shapes, in the order they run.
    pub shapes: Vec<ScaleShape>,
    /// `together` steps' layout.
    pub pairs: PairLayout,
    /// Cores per step, ascending (`None`: 1, 2, 4, … up to the most that fit, and that most).
    pub steps: Option<Vec<usize>>,
    /// `fixed-server`: server CPUs (`None`: half of the worker CPUs, at least one).
    pub server_cores: Option<usize>,
    /// Use both SMT siblings of a core (after that node's cores each have one).
    pub smt: bool,
    /// Physical cores kept for housekeeping when nothing is isolated (fewer on a small host).
    pub housekeeping_cores: usize,
    /// NUMA node of the NIC: its CPUs are taken first.
    pub nic_node: Option<usize>,
    /// CPUs the plan may use (`None`: every online CPU).
    pub allowed: Option<Vec<usize>>,
}

impl Default for ScaleRequest {
    fn default() -> Self {
        ScaleRequest {
            shapes: vec![ScaleShape::Together, ScaleShape::FixedServer],
            pairs: PairLayout::Split,
            steps: None,
            server_cores: None,
            smt: false,
            housekeeping_cores: 1,
            nic_node: None,
            allowed: None,
        }
    }
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScaleStep {
    /// The shape it belongs to.
    pub shape: ScaleShape,
    /// Its cores: server and load CPUs each (`together`), load CPUs (`fixed-server`).
    pub cores: usize,
    /// Server worker CPUs.
    pub server: Vec<usize>,
    /// Load worker CPUs.
    pub load: Vec<usize>,
    /// NUMA nodes its CPUs are on, ascending.
    pub nodes: Vec<usize>,
    /// What is new in this step that changes what a core is worth: crossing to another node,
    /// both SMT siblings of a core busy, E-cores.
    pub notes: Vec<String>,
}

impl ScaleStep {
    /// Every CPU of the step once, ascending.
    pub fn cpus(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.server.iter().chain(&self.load).copied().collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// The plan: the CPU order, housekeeping, and the steps of each shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScalePlan {
    /// Worker CPUs in the order steps take them.
    pub order: Vec<usize>,
    /// Housekeeping CPUs (IRQs, the rest of the system, the profile's collector).
    pub housekeeping: Vec<usize>,
    /// The steps, shape by shape in the order asked, fewest cores first.
    pub steps: Vec<ScaleStep>,
    /// How the order was made and what it gave up (housekeeping on a small host, …).
    pub notes: Vec<String>,
}

/// Why no plan fits. Each names what it had and what it wanted; the caller adds its options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScalePlanError {
    /// One usable CPU, or none (a snapshot whose allowed CPUs are all offline): nothing to
    /// scale.
    #[error(
        "{} all this process may use: scaling needs at least two (1 core, then 2)",
        if .usable.is_empty() {
            "no CPU (none of its allowed CPUs is online) is".to_string()
        } else {
            format!("one CPU ({}) is", list(.usable))
        }
    )]
    OneCpu {
        /// The usable CPUs.
        usable: Vec<usize>,
    },
    /// Steps not strictly ascending, or a step of 0 cores.
    #[error("steps {}: core counts go from 1 up, each larger than the one before", join(.steps))]
    BadSteps {
        /// The steps given.
        steps: Vec<usize>,
    },
    /// A step wants more CPUs than there are.
    #[error(
        "{shape} step of {cores} core(s) wants {wanted} CPU(s) ({layout}) but {available} worker \
         CPU(s) are there: had CPU(s) {} (online and allowed), housekeeping {}, worker CPUs {}{}; \
         the most this shape takes is {max} core(s)",
        list(.usable),
        list(.housekeeping),
        list(.workers),
        if .siblings.is_empty() { String::new() } else {
            format!(" (SMT siblings {} left out: one worker per physical core)", list(.siblings))
        }
    )]
    TooFew {
        /// The shape.
        shape: &'static str,
        /// Cores of the step.
        cores: usize,
        /// CPUs it wants.
        wanted: usize,
        /// How the step uses CPUs, in words.
        layout: String,
        /// Worker CPUs there are.
        available: usize,
        /// The most cores this shape can have.
        max: usize,
        /// Online CPUs the process may use.
        usable: Vec<usize>,
        /// Housekeeping CPUs.
        housekeeping: Vec<usize>,
        /// Worker CPUs in order.
        workers: Vec<usize>,
        /// SMT siblings left out.
        siblings: Vec<usize>,
    },
    /// Only one step fits a shape (nothing to compare with).
    #[error(
        "{shape}: only one step fits ({cores} core(s) at most on worker CPUs {}): scaling needs \
         two steps",
        list(.workers)
    )]
    OneStep {
        /// The shape.
        shape: &'static str,
        /// The most cores.
        cores: usize,
        /// Worker CPUs in order.
        workers: Vec<usize>,
    },
    /// `fixed-server` with more server cores than leave a load CPU.
    #[error(
        "fixed-server: {server} server core(s) leave {left} worker CPU(s) for the load (worker \
         CPUs {}): at least 2 are needed for two steps",
        list(.workers)
    )]
    ServerTooLarge {
        /// Server cores asked for.
        server: usize,
        /// Worker CPUs left for the load.
        left: usize,
        /// Worker CPUs in order.
        workers: Vec<usize>,
    },
}

fn join(v: &[usize]) -> String {
    v.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// 1, 2, 4, … up to `max`, and `max` itself when it is not a power of two.
pub fn default_steps(max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut n = 1;
    while n <= max {
        v.push(n);
        n *= 2;
    }
    if max > 0 && v.last() != Some(&max) {
        v.push(max);
    }
    v
}

/// The worker CPUs in step order (see the module docs) from the planner's ranked primaries and
/// secondaries.
fn step_order(
    topo: &Topology,
    primaries: &[usize],
    secondaries: &[usize],
    smt: bool,
    nic_node: Option<usize>,
) -> Vec<usize> {
    let node_of = |c: usize| topo.cpu(c).map_or(0, |x| x.node);
    let mut nodes: Vec<usize> = primaries
        .iter()
        .chain(secondaries)
        .map(|&c| node_of(c))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes.sort_by_key(|n| (nic_node != Some(*n), *n));
    let mut order = Vec::new();
    for n in nodes {
        order.extend(primaries.iter().copied().filter(|&c| node_of(c) == n));
        if smt {
            order.extend(secondaries.iter().copied().filter(|&c| node_of(c) == n));
        }
    }
    order
}

/// Plans the steps of `req` on `topo`.
///
/// # Errors
/// [`ScalePlanError`]: one usable CPU, steps out of order, a step that wants more CPUs than
/// there are, a shape with only one step, a fixed server that leaves too little load.
// The error is made at most once per command, before anything runs, and carries the CPU
// lists its message names: its size costs nothing worth a box.
#[allow(clippy::result_large_err)]
pub fn plan_scale(topo: &Topology, req: &ScaleRequest) -> Result<ScalePlan, ScalePlanError> {
    let usable = super::placement::usable_cpus(topo, req.allowed.as_deref());
    if usable.len() <= 1 {
        return Err(ScalePlanError::OneCpu { usable });
    }
    if let Some(s) = &req.steps {
        if s.is_empty() || s[0] == 0 || s.windows(2).any(|w| w[1] <= w[0]) {
            return Err(ScalePlanError::BadSteps { steps: s.clone() });
        }
    }
    // Worker CPUs the plan needs at its largest: housekeeping gives way on a small host.
    let needed = req
        .shapes
        .iter()
        .map(|&shape| {
            let top = req
                .steps
                .as_ref()
                .and_then(|s| s.last().copied())
                .unwrap_or(2);
            match (shape, req.pairs) {
                (ScaleShape::Together, PairLayout::Split) => top.saturating_mul(2),
                (ScaleShape::Together, PairLayout::Shared) => top,
                (ScaleShape::FixedServer, _) => req.server_cores.unwrap_or(top).saturating_add(top),
            }
        })
        .max()
        .unwrap_or(2);
    let pool = pool_for(
        topo,
        req.allowed.as_deref(),
        req.housekeeping_cores,
        req.nic_node,
        req.smt,
        needed,
    );
    let order = step_order(
        topo,
        &pool.primaries,
        &pool.secondaries,
        req.smt,
        req.nic_node,
    );
    let siblings = if req.smt {
        Vec::new()
    } else {
        pool.secondaries.clone()
    };
    let mut notes = Vec::new();
    if let Some(n) = &pool.housekeeping_note {
        notes.push(n.clone());
    }
    notes.push(format!(
        "order: node by node{}, one CPU per physical core first{}: {}",
        match req.nic_node {
            Some(n) => format!(" (the NIC's node {n} first)"),
            None => String::new(),
        },
        if req.smt {
            ", then that node's SMT siblings"
        } else {
            " (SMT siblings unused)"
        },
        list(&order)
    ));
    let too_few = |shape: ScaleShape, cores: usize, wanted: usize, layout: String, max: usize| {
        ScalePlanError::TooFew {
            shape: shape.name(),
            cores,
            wanted,
            layout,
            available: order.len(),
            max,
            usable: pool.usable.clone(),
            housekeeping: pool.housekeeping.clone(),
            workers: order.clone(),
            siblings: siblings.clone(),
        }
    };
    let mut steps = Vec::new();
    for &shape in &req.shapes {
        let (max, server_fixed) = match (shape, req.pairs) {
            (ScaleShape::Together, PairLayout::Split) => (order.len() / 2, 0),
            (ScaleShape::Together, PairLayout::Shared) => (order.len(), 0),
            (ScaleShape::FixedServer, _) => {
                let s = req.server_cores.unwrap_or((order.len() / 2).max(1));
                let left = order.len().saturating_sub(s);
                if left < 2 {
                    return Err(ScalePlanError::ServerTooLarge {
                        server: s,
                        left,
                        workers: order.clone(),
                    });
                }
                (left, s)
            }
        };
        let cores_list = match &req.steps {
            Some(s) => s.clone(),
            None => default_steps(max),
        };
        if cores_list.len() < 2 {
            return Err(ScalePlanError::OneStep {
                shape: shape.name(),
                cores: max,
                workers: order.clone(),
            });
        }
        for &cores in &cores_list {
            let (server, load, wanted, layout) = match (shape, req.pairs) {
                (ScaleShape::Together, PairLayout::Split) => {
                    let take = &order[..(2 * cores).min(order.len())];
                    (
                        take.iter().step_by(2).copied().collect::<Vec<_>>(),
                        take.iter().skip(1).step_by(2).copied().collect::<Vec<_>>(),
                        2 * cores,
                        format!("{cores} server + {cores} load, split"),
                    )
                }
                (ScaleShape::Together, PairLayout::Shared) => {
                    let take = order[..cores.min(order.len())].to_vec();
                    (
                        take.clone(),
                        take,
                        cores,
                        format!("one server and one load worker on each of {cores}"),
                    )
                }
                (ScaleShape::FixedServer, _) => {
                    let server = order[..server_fixed].to_vec();
                    let end = (server_fixed + cores).min(order.len());
                    let load = order[server_fixed..end].to_vec();
                    (
                        server,
                        load,
                        server_fixed + cores,
                        format!("{server_fixed} fixed server + {cores} load"),
                    )
                }
            };
            if cores > max {
                return Err(too_few(shape, cores, wanted, layout, max));
            }
            steps.push(step(topo, shape, cores, server, load, req.nic_node));
        }
    }
    mark_news(topo, &mut steps);
    Ok(ScalePlan {
        order,
        housekeeping: pool.housekeeping,
        steps,
        notes,
    })
}

fn step(
    topo: &Topology,
    shape: ScaleShape,
    cores: usize,
    server: Vec<usize>,
    load: Vec<usize>,
    nic_node: Option<usize>,
) -> ScaleStep {
    let mut s = ScaleStep {
        shape,
        cores,
        server,
        load,
        nodes: Vec::new(),
        notes: Vec::new(),
    };
    let mut nodes: Vec<usize> = s
        .cpus()
        .iter()
        .map(|&c| topo.cpu(c).map_or(0, |x| x.node))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    s.nodes = nodes;
    if let Some(n) = nic_node {
        if s.nodes.iter().any(|&x| x != n) {
            s.notes.push(format!("CPUs off the NIC's node {n}"));
        }
    }
    s
}

/// Notes on each step what changes a core's worth compared with the step before it: a second
/// node, both siblings of a core busy, E-cores.
fn mark_news(topo: &Topology, steps: &mut [ScaleStep]) {
    let mut prev: Option<(ScaleShape, usize, bool, bool)> = None;
    for s in steps.iter_mut() {
        let cpus = s.cpus();
        let both_siblings = cpus.iter().any(|&c| {
            topo.cpu(c)
                .is_some_and(|x| x.siblings.iter().any(|&t| t != c && cpus.contains(&t)))
        });
        let ecores = cpus
            .iter()
            .any(|&c| topo.cpu(c).is_some_and(|x| x.kind == CoreKind::Efficiency));
        let (was_nodes, was_smt, was_e) = match prev {
            Some((shape, n, smt, e)) if shape == s.shape => (n, smt, e),
            _ => (1, false, false),
        };
        if s.nodes.len() > was_nodes {
            s.notes.push(format!(
                "crosses NUMA nodes: CPUs on nodes {}",
                cpulist::format(&s.nodes)
            ));
        }
        if both_siblings && !was_smt {
            s.notes
                .push("both SMT siblings of a core busy: a CPU is no longer a core".into());
        }
        if ecores && !was_e {
            s.notes
                .push("E-cores in use: a core here is worth less than a P-core".into());
        }
        prev = Some((s.shape, s.nodes.len(), both_siblings, ecores));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_steps_are_powers_of_two_then_the_most() {
        assert_eq!(default_steps(1), [1]);
        assert_eq!(default_steps(2), [1, 2]);
        assert_eq!(default_steps(8), [1, 2, 4, 8]);
        assert_eq!(default_steps(47), [1, 2, 4, 8, 16, 32, 47]);
        assert!(default_steps(0).is_empty());
    }

    /// CPU lists: no usable CPU is named as none (a snapshot whose allowed CPUs are offline),
    /// not "one CPU (none)".
    #[test]
    fn no_usable_cpu_is_not_called_one_cpu() {
        let none = ScalePlanError::OneCpu { usable: vec![] }.to_string();
        assert!(
            none.starts_with(
                "no CPU (none of its allowed CPUs is online) is all this process may use"
            ),
            "{none}"
        );
        let one = ScalePlanError::OneCpu { usable: vec![3] }.to_string();
        assert!(
            one.starts_with("one CPU (3) is all this process may use"),
            "{one}"
        );
    }
}
