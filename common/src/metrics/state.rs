//! [`StateMetric`]: a phase that the caller sets, exposed as a gauge per state (1 for the
//! current one), e.g. `connstorm_bench_phase{phase="latency"} 1`.

use std::fmt;
use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

/// A state gauge family set by the caller (see the module docs).
#[derive(Debug)]
pub struct StateMetric {
    name: &'static str,
    help: &'static str,
    states: &'static [&'static str],
    current: Mutex<&'static str>,
}

impl StateMetric {
    /// The family `name` (without the `connstorm_` prefix) with `states`, starting in the first.
    ///
    /// # Panics
    /// When `states` is empty.
    pub fn new(
        name: &'static str,
        help: &'static str,
        states: &'static [&'static str],
    ) -> Arc<StateMetric> {
        Arc::new(StateMetric {
            name,
            help,
            states,
            current: Mutex::new(states[0]),
        })
    }

    /// Sets the current state; a name outside the states is ignored (debug builds panic).
    pub fn set(&self, state: &str) {
        match self.states.iter().find(|s| **s == state) {
            Some(s) => *self.current.lock().unwrap_or_else(|p| p.into_inner()) = s,
            None => debug_assert!(false, "{state:?} is not a state of {}", self.name),
        }
    }

    /// The current state.
    pub fn get(&self) -> &'static str {
        *self.current.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Collector for StateMetric {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> fmt::Result {
        super::encode::state(
            &mut enc,
            self.name,
            self.help,
            "phase",
            self.states,
            self.get(),
        )
    }
}
