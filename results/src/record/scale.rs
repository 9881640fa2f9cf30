//! `connstorm scale` as stored: the plan (shapes, every step's CPUs) and each step's figures
//! ([`ScaleRecord`]). Each step is also an ordinary phase of the record (`together-4`,
//! `fixed-server-8`): its counts, CPU time, counters, cross-check and profile are there; the
//! figures here are derived from it by `results::analysis::scale_figures` and kept so that a
//! reader of the JSON alone sees them.

use serde::{Deserialize, Serialize};

/// The scale part of a `scale` record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ScaleRecord {
    /// Efficiency below which a step is the knee (`--efficiency`, default 0.8).
    pub efficiency_threshold: f64,
    /// `together` steps' layout: `split` (server and load on different CPUs) or `shared` (one
    /// of each on every CPU).
    pub pairs: String,
    /// Both SMT siblings of a core could run workers (`--smt`).
    pub smt: bool,
    /// Housekeeping CPUs of the plan.
    pub housekeeping: Vec<usize>,
    /// Worker CPUs in the order steps take them.
    pub order: Vec<usize>,
    /// How the order was made (and what it gave up on a small host).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Every step, in run order.
    pub steps: Vec<ScaleStep>,
    /// The knee of each shape that ran (none when every step kept its efficiency).
    #[serde(default)]
    pub knees: Vec<ScaleKnee>,
}

/// One step: its plan and figures.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ScaleStep {
    /// `together` or `fixed-server`.
    pub shape: String,
    /// Cores of the step: server and load CPUs each (`together`), load CPUs (`fixed-server`).
    pub cores: usize,
    /// The phase of this step in the record's `phases` (`together-4`).
    pub phase: String,
    /// Server worker CPUs.
    pub server_cpus: Vec<usize>,
    /// Load worker CPUs.
    pub load_cpus: Vec<usize>,
    /// NUMA nodes of its CPUs.
    pub nodes: Vec<usize>,
    /// What this step changes against the one before (a second node, both SMT siblings busy,
    /// E-cores).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Connections/s over the measured part (closed loop: the peak); `None` when nothing was
    /// measured or the step did not run.
    pub achieved_per_sec: Option<f64>,
    /// `achieved_per_sec / cores`.
    pub per_core_per_sec: Option<f64>,
    /// `achieved_per_sec / (cores × rate of the shape's 1-core step)`: 1.0 is linear scaling.
    /// With a first step of more than one core, `rate_N / (N/N₀ × rate_N₀)`.
    pub efficiency: Option<f64>,
    /// Server CPU µs per connection (on-CPU time of its workers ÷ connections).
    pub server_us_per_conn: Option<f64>,
    /// Load CPU µs per connection.
    pub load_us_per_conn: Option<f64>,
    /// The step's CPU with the largest softirq share of the phase's wall time.
    pub busiest_softirq_cpu: Option<usize>,
    /// That share, percent 0–100 (from /proc/stat's softirq column: a floor where softirq
    /// work in task context is charged to the task).
    pub busiest_softirq_pct: Option<f64>,
    /// Busy share of the step's busiest CPU, percent (from /proc/stat).
    pub busiest_cpu_pct: Option<f64>,
    /// Whether the rate had settled: the measured part's second half within 10% of its first
    /// half; `None` with fewer than two whole seconds.
    pub settled: Option<bool>,
}

/// Where a shape stopped scaling and what limited it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ScaleKnee {
    /// The shape.
    pub shape: String,
    /// Cores of the first step whose efficiency fell below the threshold.
    pub cores: usize,
    /// Its efficiency.
    pub efficiency: f64,
    /// Cores of the last step that kept the efficiency (`None` when the first step after the
    /// base fell below).
    pub last_good_cores: Option<usize>,
    /// What limited it, one line (the strongest evidence).
    pub limit: String,
    /// Everything the counters, CPU figures and profile say about it, one line each.
    pub evidence: Vec<String>,
}
