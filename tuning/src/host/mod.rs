//! The host as it is: plain structs read from a root path (`/` on a real host, a fixture tree
//! in tests), and the network namespaces connstorm runs in. Nothing here changes a setting.
//!
//! Files: `topology` ([`Topology`]: CPUs, SMT siblings, cores, packages, NUMA nodes,
//! isolated/nohz_full CPUs; `topology_snapshot`: [`snapshot_topology`], its files copied for
//! another host to read as a root), `cmdline` ([`Cmdline`]: the isolation parameters of
//! `/proc/cmdline`), `nic` ([`Nic`]: a device's NUMA node, queue IRQs and their affinity,
//! RPS/XPS), `facts` ([`HostFacts`]: what a run record says about the host), `procstat`
//! (per-CPU busy time from `/proc/stat`), `softirqs` (per-CPU NET_RX/NET_TX softirqs and
//! `ksoftirqd/N` CPU time), `clock` ([`ClockSync`]: the clock's sync state for
//! multi-host runs), `probe` (capabilities probed in this process: io_uring, socket options),
//! `netns` (which network namespace this is, entering a named one, and the veth-joined pair of
//! `bench --netns`), `sockets` (the TCP sockets of this namespace from sock_diag: listening
//! ports, who holds a port, TIME_WAIT left toward a destination) and `finding` ([`Finding`]: one
//! observation about the host, with how bad it is and what to do — the vocabulary of every
//! check).

mod clock;
mod cmdline;
mod facts;
mod finding;
mod netns;
mod nic;
mod probe;
mod procstat;
mod sockets;
mod softirqs;
mod topology;
mod topology_snapshot;

pub use clock::{clock_warning, read_clock, ClockSync};
pub use cmdline::{Cmdline, IsolCpus};
pub use facts::{HostFacts, ACCEPT_RATE_SYSCTLS};
pub use finding::{Finding, Severity};
pub use netns::{
    check_rtt, enter_netns, in_initial_netns, netns_identity, NetnsError, NetnsId, NsPair,
    PairError, INITIAL_MARKER, MAX_NETEM_DELAY, MAX_RTT, NETNS_DIR, PAIR_LOAD_IP, PAIR_SERVER_IP,
};
pub(crate) use netns::{current_netns, run_in_fresh_netns, run_in_initial_netns};
pub(crate) use nic::{irq_affinity, irq_names, irqbalance_pids};
pub use nic::{Nic, NicError, QueueIrq};

pub(crate) use probe::probe_findings;
pub use procstat::{cpu_time_delta, read_cpu_times, CpuTime, CpuTimes};
pub use sockets::{
    listening_ports, parse_proc_net_tcp, port_holders, socket_owner, tcp_sockets, ListenQueue,
    TcpSocket, TcpState,
};
pub use softirqs::{
    parse_ksoftirqd_stat, parse_softirqs, read_net_softirqs, CpuNetSoftirqs, NetSoftirqSample,
    SoftirqsError,
};
pub use topology::{allowed_cpus, CoreKind, Cpu, NumaNode, Topology, TopologyError};
pub use topology_snapshot::{snapshot_topology, SnapshotError, SnapshotSummary};
