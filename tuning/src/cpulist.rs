//! CPU lists in the kernel's format (`0-3,8`, strides `0-7:1/2`, `N` = the last CPU, `all`): the
//! one parser of the workspace, [`common::cpulist`], re-exported so every crate reads and prints
//! lists alike and says the same thing about a bad one (see there for the syntax and for why `N`
//! comes from `/sys/devices/system/cpu/possible`).
//!
//! Used here for sysfs files (`/sys/devices/system/cpu/online`, `isolated`, `nodeN/cpulist`,
//! `smp_affinity_list`), kernel command-line values (`isolcpus=`, `nohz_full=1-N`,
//! `rcu_nocbs=all`) and the `--cpus` options of the CLI.

pub use common::cpulist::*;
