//! Where the overload phase's requests went: [`Outcomes`], counted by each connection while it
//! runs, and [`OutcomeCounts`], the same read back from the merged measurement as the figures
//! the report shows.

use std::time::Duration;

use http::StatusCode;

use super::Produce;
use crate::client::{Reply, RequestError};
use crate::scenario::{Measurement, Tally};

/// The overload phase's counts: a [`Tally`] whose main latency is the accepted requests'
/// (others go to `status_<code>`), and the 503s that came without `Retry-After`.
#[derive(Debug, Default)]
pub(super) struct Outcomes {
    pub(super) tally: Tally,
    pub(super) without_retry_after: u64,
}

impl Outcomes {
    /// Counts one measured request that took `latency`.
    pub(super) fn count(
        &mut self,
        latency: Duration,
        result: Result<Reply, RequestError>,
        produce: &Produce,
    ) {
        self.tally.requests += 1;
        match &result {
            Ok(reply) if reply.is_success() => {
                self.tally.latency.record(latency);
                self.tally.messages += produce.messages;
                self.tally.payload_bytes += produce.payload_bytes;
            }
            Ok(reply) => {
                let status = reply.status.as_u16();
                self.tally
                    .record_other(&format!("status_{status}"), latency);
                if reply.status == StatusCode::SERVICE_UNAVAILABLE && !reply.has_retry_after() {
                    self.without_retry_after += 1;
                }
            }
            Err(_) => {}
        }
        let _reply = self.tally.check(result);
    }

    /// Joins the workers and adds up their counts; a worker that panicked counts as an error.
    pub(super) async fn join(workers: Vec<tokio::task::JoinHandle<Outcomes>>) -> Outcomes {
        let mut total = Outcomes::default();
        for worker in workers {
            match worker.await {
                Ok(outcomes) => {
                    total.tally.merge(outcomes.tally);
                    total.without_retry_after += outcomes.without_retry_after;
                }
                Err(_) => total.tally.error("worker_panicked"),
            }
        }
        total
    }
}

/// Measured requests by outcome, read back from a measurement's error counts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct OutcomeCounts {
    accepted: u64,
    status_503: u64,
    without_retry_after: u64,
    status_429: u64,
    status_other: u64,
    connect_failed: u64,
    resets: u64,
    timeouts: u64,
    other_errors: u64,
}

impl OutcomeCounts {
    /// The counts of `m`, whose errors are an [`Outcomes`] tally's.
    pub(super) fn of(m: &Measurement, without_retry_after: u64) -> OutcomeCounts {
        let mut counts = OutcomeCounts {
            without_retry_after,
            ..OutcomeCounts::default()
        };
        for (kind, &count) in &m.errors {
            let slot = match kind.as_str() {
                "status_503" => &mut counts.status_503,
                "status_429" => &mut counts.status_429,
                "connect" => &mut counts.connect_failed,
                "transport" => &mut counts.resets,
                "timeout" => &mut counts.timeouts,
                other if other.starts_with("status_") => &mut counts.status_other,
                _ => &mut counts.other_errors,
            };
            *slot += count;
        }
        counts.accepted = m.requests.saturating_sub(m.errors.values().sum());
        counts
    }

    /// Requests that got an HTTP reply.
    fn answered(&self) -> u64 {
        self.accepted + self.status_503 + self.status_429 + self.status_other
    }

    /// The counts as named figures, and the 503 share of the answered requests.
    pub(super) fn figures(&self) -> Vec<(&'static str, Option<f64>)> {
        let answered = self.answered();
        let share_503 = (answered > 0).then(|| self.status_503 as f64 / answered as f64);
        vec![
            ("accepted", Some(self.accepted as f64)),
            ("answered", Some(answered as f64)),
            ("status_503", Some(self.status_503 as f64)),
            ("share_503", share_503),
            (
                "status_503_without_retry_after",
                Some(self.without_retry_after as f64),
            ),
            ("status_429", Some(self.status_429 as f64)),
            ("status_other", Some(self.status_other as f64)),
            ("connect_failed", Some(self.connect_failed as f64)),
            ("resets", Some(self.resets as f64)),
            ("timeouts", Some(self.timeouts as f64)),
        ]
    }

    /// The counts in a sentence, for the notes.
    pub(super) fn summary(&self) -> String {
        format!(
            "of those measured, {} accepted, {} × 503 ({} without Retry-After), {} × 429, {} other statuses, {} connect failures, {} resets, {} timeouts",
            self.accepted,
            self.status_503,
            self.without_retry_after,
            self.status_429,
            self.status_other,
            self.connect_failed,
            self.resets,
            self.timeouts,
        )
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http::HeaderMap;
    use http::header::{HeaderValue, RETRY_AFTER};

    use super::*;
    use crate::scenario::overload::OverloadSpec;
    use crate::scenario::{Load, RunShape};
    use crate::target::Target;

    fn produce() -> Produce {
        let spec = OverloadSpec {
            connections: 2,
            unloaded_connections: 1,
            factor: 3.0,
            batch: 2,
            value_bytes: 10,
            partitions: 1,
        };
        Produce::new("t", &spec)
    }

    fn reply(status: StatusCode, retry_after: bool) -> Result<Reply, RequestError> {
        let mut headers = HeaderMap::new();
        if retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
        }
        Ok(Reply {
            status,
            headers,
            body: Bytes::new(),
        })
    }

    #[test]
    fn every_outcome_lands_in_its_own_count_and_only_accepted_latency_is_the_main_one() {
        let produce = produce();
        let mut outcomes = Outcomes::default();
        let ms = Duration::from_millis;
        outcomes.count(ms(5), reply(StatusCode::OK, false), &produce);
        outcomes.count(ms(6), reply(StatusCode::OK, false), &produce);
        outcomes.count(
            ms(1),
            reply(StatusCode::SERVICE_UNAVAILABLE, true),
            &produce,
        );
        outcomes.count(
            ms(1),
            reply(StatusCode::SERVICE_UNAVAILABLE, false),
            &produce,
        );
        outcomes.count(ms(1), reply(StatusCode::TOO_MANY_REQUESTS, true), &produce);
        outcomes.count(ms(1), reply(StatusCode::PAYLOAD_TOO_LARGE, false), &produce);
        outcomes.count(ms(1), Err(RequestError::Connect), &produce);
        outcomes.count(ms(1), Err(RequestError::Transport), &produce);
        outcomes.count(ms(1), Err(RequestError::Timeout), &produce);
        let load = Load {
            target: Target::parse("http://127.0.0.1:1").expect("loopback"),
            target_name: "wharf".to_owned(),
            round: 1,
            timeout: Duration::from_secs(1),
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            max_requests: 100,
            server_pid: None,
            node_pids: Vec::new(),
        };
        let shape = RunShape::new("overload", 2, Some(9.0));
        let m = Measurement::from_tally(&load, shape, outcomes.tally, load.duration, (None, None));
        assert_eq!(m.latency.count, 2);
        assert_eq!(m.messages, 4);
        assert_eq!(m.req_per_s, 2.0);
        let counts = OutcomeCounts::of(&m, outcomes.without_retry_after);
        let expected = OutcomeCounts {
            accepted: 2,
            status_503: 2,
            without_retry_after: 1,
            status_429: 1,
            status_other: 1,
            connect_failed: 1,
            resets: 1,
            timeouts: 1,
            other_errors: 0,
        };
        assert_eq!(counts, expected);
        assert_eq!(counts.answered(), 6);
        let share = counts
            .figures()
            .into_iter()
            .find(|(name, _)| *name == "share_503");
        assert_eq!(share, Some(("share_503", Some(2.0 / 6.0))));
    }
}
