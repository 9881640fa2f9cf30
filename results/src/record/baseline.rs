//! The kernel floor as a record stores it (`bench --baseline`): [`Baseline`] and its paired
//! slices ([`Paired`]: slices of the floor and of connstorm's peak in ABBA order, their ratios,
//! the median ratio and its confidence interval). The analysis computes them.

use serde::{Deserialize, Serialize};

/// The kernel floor measured in the same run (`bench --baseline`): a minimal blocking
/// socket/connect/close loop against accept/close on the same CPUs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Baseline {
    /// Connections per second the blocking pair reached (with `paired`: the median of its
    /// slices).
    pub floor_per_sec: f64,
    /// connstorm's peak divided by the floor (1.0 = as fast as the kernel floor); with `paired`,
    /// the median of the paired ratios.
    pub ratio: f64,
    /// The paired slices, ratios and the median's confidence interval (records before it had
    /// one floor run after the peak: absent there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<Paired>,
}

/// Which arm a slice measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arm {
    /// The kernel floor (blocking pair).
    Floor,
    /// connstorm's peak (closed loop).
    Connstorm,
}

impl Arm {
    /// `floor` or `connstorm`.
    pub fn name(self) -> &'static str {
        match self {
            Arm::Floor => "floor",
            Arm::Connstorm => "connstorm",
        }
    }
}

/// One measured slice (its warm-up excluded).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Slice {
    /// Pair index, from 0.
    pub pair: usize,
    /// `floor` or `connstorm`.
    pub arm: Option<Arm>,
    /// Completed connections per second.
    pub per_sec: f64,
    /// Completed connections.
    pub connections: u64,
    /// Measured seconds.
    pub secs: f64,
    /// Failed attempts (connect errors, timeouts).
    pub failures: u64,
    /// Server-side CPU per connection, µs (on-CPU time of the server threads ÷ connections).
    pub server_us_per_conn: Option<f64>,
    /// Load-side CPU per connection, µs.
    pub load_us_per_conn: Option<f64>,
}

/// A distribution-free confidence interval for a median: the order-statistic interval
/// `[x₍ₖ₎, x₍ₙ₊₁₋ₖ₎]` of the sorted samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MedianInterval {
    /// Lower bound: the k-th smallest sample.
    pub low: f64,
    /// Upper bound: the k-th largest sample.
    pub high: f64,
    /// The rank k (1-based).
    pub k: usize,
    /// Exact coverage `1 − 2·P(B ≤ k−1)`, B ~ Binomial(n, ½) (≥ the level asked).
    pub coverage: f64,
}

/// The paired result as stored in the record (`baseline.paired`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Paired {
    /// Every slice in run order.
    pub slices: Vec<Slice>,
    /// Per pair, connstorm ÷ floor (pairs where the floor completed nothing are left out).
    pub ratios: Vec<f64>,
    /// Median of `ratios` (0 without any).
    pub median_ratio: f64,
    /// Confidence level asked (0.95).
    pub confidence: f64,
    /// The interval for the median ratio; `None` with too few pairs (< 6 at 95%).
    pub interval: Option<MedianInterval>,
    /// How the interval was computed, with its source.
    pub method: String,
    /// Seconds measured per slice.
    pub slice_secs: f64,
    /// Warm-up seconds before each slice.
    pub warmup_secs: f64,
    /// Floor shape: `split` (disjoint CPU sets) or `whole-machine` (overlapping).
    pub shape: String,
}
