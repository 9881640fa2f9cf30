//! connstorm tuning crate (being built): reads and changes the host.
#![forbid(unsafe_code)]

pub mod cpulist;
