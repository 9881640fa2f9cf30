//! Integration tests of the results crate: golden records, cross-implementation histogram
//! decoding (Python `hdrh`), comparisons on synthetic trial sets, plot contents.

mod cross_impl;
mod fuzz;
mod golden;
mod util;
