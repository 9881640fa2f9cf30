//! Findings: one observation about the host, with how bad it is and what to do.

use serde::{Deserialize, Serialize};

/// How much a finding matters for a connection-rate run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Context only.
    Info,
    /// Likely to distort results or to be undone; worth fixing.
    Warn,
    /// The run will be wrong or the host cannot do what was asked.
    Error,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Error => "error",
        })
    }
}

/// One observation: `topic` (short, e.g. `"isolation"`), what was seen and what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// Short area name: `"isolation"`, `"irq"`, `"sysctl"`, `"kconfig"`, `"limits"`, `"read"`.
    pub topic: String,
    /// What was seen and, when something is off, how to fix it.
    pub message: String,
}

impl Finding {
    /// Builds a finding.
    pub fn new(severity: Severity, topic: &str, message: impl Into<String>) -> Finding {
        Finding {
            severity,
            topic: topic.to_string(),
            message: message.into(),
        }
    }
}
