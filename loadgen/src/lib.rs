//! connstorm loadgen crate (being built).
