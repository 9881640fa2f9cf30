//! `connstorm server` on its own (not inside `bench`): what it derives from a finished run
//! besides the library's report, as values for the binary to print or write.
//!
//! - [`server`]: the watch loop of a running server and the `server --out` record.

pub mod server;
