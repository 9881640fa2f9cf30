//! connstorm results crate (being built).
