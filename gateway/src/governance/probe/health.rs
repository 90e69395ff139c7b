//! [`ProbeHealth`]: the outcome of the probe's last rounds, written by the probe task and
//! read by `/readyz` ([`ProbeStatus`]) and the alerts' evaluator.

use std::sync::RwLock;

use broker_core::sync::{read, write};
use serde::Serialize;
use utoipa::ToSchema;

use super::round::ProbeFailure;

/// Where the probe stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeState {
    /// The node does not probe (`probe_interval_ms` is 0).
    Off,
    /// Probing, no round finished yet (in a cluster: also while the node does not lead its
    /// probe topic, e.g. before the controller leader has made it).
    Starting,
    /// The last round succeeded.
    Ok,
    /// The last round failed.
    Failing,
}

/// The probe as `/readyz` shows it. Times are Unix epoch ms.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ProbeStatus {
    /// Where the probe stands.
    pub state: ProbeState,
    /// The time between two rounds, in ms (0: off).
    pub interval_ms: u64,
    /// When the last round ended, success or not.
    pub last_at_ms: Option<u64>,
    /// When the last successful round ended.
    pub last_success_at_ms: Option<u64>,
    /// The produce → received time of the last successful round, in ms.
    pub last_latency_ms: Option<f64>,
    /// Rounds failed in a row (0 after a success).
    pub consecutive_failures: u64,
    /// Why the last failed round failed (`<step>: <reason>`), kept until a success.
    pub last_error: Option<String>,
}

/// The probe's state on one node, shared by the probe task, `/readyz` and the alerts.
#[derive(Debug)]
pub struct ProbeHealth {
    status: RwLock<ProbeStatus>,
    /// Steady ms (see [`broker_core::clock::steady_ms`]) of the first failed round of the
    /// failures in a row, for the built-in alert's `since_ms`.
    failing_since_ms: RwLock<Option<u64>>,
}

impl ProbeHealth {
    /// The state of a node that probes every `interval_ms` (0: [`ProbeState::Off`]).
    pub fn new(interval_ms: u64) -> ProbeHealth {
        let state = match interval_ms {
            0 => ProbeState::Off,
            _ => ProbeState::Starting,
        };
        ProbeHealth {
            status: RwLock::new(ProbeStatus {
                state,
                interval_ms,
                last_at_ms: None,
                last_success_at_ms: None,
                last_latency_ms: None,
                consecutive_failures: 0,
                last_error: None,
            }),
            failing_since_ms: RwLock::new(None),
        }
    }

    /// The state of a node that does not probe.
    pub fn off() -> ProbeHealth {
        ProbeHealth::new(0)
    }

    /// The status now.
    pub fn status(&self) -> ProbeStatus {
        read(&self.status).clone()
    }

    /// Rounds failed in a row, or `None` when the node does not probe or no round has
    /// finished (the `probe` alert kind's value).
    pub fn failures(&self) -> Option<u64> {
        let status = read(&self.status);
        match status.state {
            ProbeState::Off | ProbeState::Starting => None,
            ProbeState::Ok | ProbeState::Failing => Some(status.consecutive_failures),
        }
    }

    /// Steady ms of the first of the failures in a row, `None` unless the probe is failing.
    pub fn failing_since_ms(&self) -> Option<u64> {
        *read(&self.failing_since_ms)
    }

    /// Records a round that succeeded at `at_ms` with this latency.
    pub fn succeeded(&self, at_ms: u64, latency_ms: f64) {
        *write(&self.failing_since_ms) = None;
        let mut status = write(&self.status);
        status.state = ProbeState::Ok;
        status.last_at_ms = Some(at_ms);
        status.last_success_at_ms = Some(at_ms);
        status.last_latency_ms = Some(latency_ms);
        status.consecutive_failures = 0;
        status.last_error = None;
    }

    /// Records a round that failed at `at_ms` (wall clock), `steady_ms` on the steady one.
    pub fn failed(&self, at_ms: u64, steady_ms: u64, failure: &ProbeFailure) {
        write(&self.failing_since_ms).get_or_insert(steady_ms);
        let mut status = write(&self.status);
        status.state = ProbeState::Failing;
        status.last_at_ms = Some(at_ms);
        status.consecutive_failures += 1;
        status.last_error = Some(failure.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governance::probe::ProbeStep;

    #[test]
    fn failures_count_up_until_a_success_and_an_idle_probe_has_none() {
        assert_eq!(ProbeHealth::off().status().state, ProbeState::Off);
        let health = ProbeHealth::new(1_000);
        assert_eq!(health.failures(), None);
        let failure = ProbeFailure::new(ProbeStep::Receive, "timed out");
        health.failed(10, 110, &failure);
        health.failed(20, 120, &failure);
        assert_eq!(health.failures(), Some(2));
        assert_eq!(health.failing_since_ms(), Some(110), "the first of the run");
        let status = health.status();
        assert_eq!(status.state, ProbeState::Failing);
        assert_eq!(status.last_error.as_deref(), Some("receive: timed out"));
        health.succeeded(30, 1.5);
        let status = health.status();
        assert_eq!((status.consecutive_failures, status.last_error), (0, None));
        assert_eq!(status.last_latency_ms, Some(1.5));
        assert_eq!(health.failures(), Some(0));
        assert_eq!(health.failing_since_ms(), None);
    }
}
