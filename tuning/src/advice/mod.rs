//! Judgements about the host that change nothing: what is wrong or limiting, and plans a caller
//! may act on.
//!
//! Files: `doctor` ([`doctor`]: the one-screen summary of everything that matters for a
//! connection-rate run, as findings), `boot` ([`cmdline_findings`]: the boot command line's CPU
//! lists against this host's CPUs and the isolation in effect), `kconfig` ([`audit_kernel_config`]: the kernel
//! configuration audited for a [`AuditProfile`]), `placement` ([`place_cpus`]: the CPU planner
//! behind `--server-cpus auto` and `tune placement`, [`cpu_roles`]: what each CPU does and
//! why), `scale` ([`plan_scale`]: the steps of `connstorm scale`, on the planner's CPUs) and
//! `ports` ([`port_budget`]: the ephemeral-port budget of a client).

mod boot;
mod doctor;
mod kconfig;
mod placement;
mod ports;
mod scale;

pub use boot::{cmdline_findings, CpuState};
pub use doctor::doctor;
pub use kconfig::{
    audit_kernel_config, AuditProfile, AuditRow, AuditRuntime, KconfigError, KernelConfig,
    MAX_KCONFIG_BYTES,
};
pub use placement::{
    cpu_roles, place_cpus, worker_cpus, CpuRole, Placement, PlacementError, PlacementRequest,
};
pub use ports::{
    port_budget, port_in_use, port_reuse_remedy, port_shortfall, time_wait_held, PortDemand,
    PortEstimate, PortHolders, PortReuse, PortSettings, PortSettingsError, TimeWaitHeld,
    DEFAULT_REUSE_DELAY_MS, TIME_WAIT_SECS,
};
pub use scale::{
    default_steps, plan_scale, PairLayout, ScalePlan, ScalePlanError, ScaleRequest, ScaleShape,
    ScaleStep,
};
