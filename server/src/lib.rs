//! connstorm server crate (being built).
