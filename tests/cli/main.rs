//! connstorm's command-line tests: the binary run as a user runs it, one module per command
//! family. They are one test binary (not one per file) so that the workspace links the binary's
//! whole dependency graph once for them rather than ten times, and so that the long tests of one
//! family overlap with the short ones of another (README's test command runs them all).

mod bench_cli;
mod ecosystem_cli;
mod http_cli;
mod load_cli;
mod metrics_cli;
mod multihost;
mod results_cli;
mod server_cli;
mod shared;
mod tls_cli;
mod tune_cli;
