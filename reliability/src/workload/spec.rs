//! [`WorkloadSpec`]: what a workload does, every figure bounded.

use std::collections::BTreeMap;
use std::time::Duration;

use super::WorkloadError;
use super::batch_retry::BatchRetry;
use crate::event::{NodeId, Partition};

/// Highest total produce rate a spec may ask for: far above what 2 shared cores sustain (about
/// 1,000 messages/s on one node), so it only stops a typo from flooding the machine.
pub const MAX_RATE: u32 = 10_000;

/// Longest produce phase a spec may ask for: the plan's longest test runs 180 s.
pub const MAX_DURATION: Duration = Duration::from_secs(600);

/// Most producer or consumer tasks.
pub const MAX_TASKS: u32 = 64;

/// Most produce requests one producer keeps in flight. The load is open-loop (a request is
/// sent on its tick, whether or not earlier ones answered) until this many wait, so a stalled
/// node cannot pile up unbounded requests.
pub const MAX_IN_FLIGHT_PER_PRODUCER: usize = 32;

/// Largest `max_messages` of a receive, as Wharf allows.
pub const MAX_RECEIVE_MESSAGES: u32 = 100;

/// Records asked per page when draining; Wharf's largest page.
pub const DRAIN_PAGE: u32 = 1_000;

/// What a workload does.
#[derive(Debug, Clone)]
pub struct WorkloadSpec {
    /// The topic produced to and drained.
    pub topic: String,
    /// The subscription consumers receive through.
    pub subscription: String,
    /// The topic's partitions.
    pub partitions: u32,
    /// Producer tasks (processes `0..producers` in the history).
    pub producers: u32,
    /// Consumer tasks (processes `producers..producers + consumers`).
    pub consumers: u32,
    /// Total produce rate, messages per second, spread evenly over the producers.
    pub rate: u32,
    /// How long producers produce.
    pub duration: Duration,
    /// Distinct message keys (`k0`…), drawn at random per message.
    pub keys: u32,
    /// Seed of the key choices.
    pub seed: u64,
    /// The produce `ack` parameter: `all` (on a single node Wharf treats it as `leader`).
    pub ack: String,
    /// Bound on every call (a receive's `wait_ms` is added to it).
    pub request_timeout: Duration,
    /// `max_messages` of each receive.
    pub receive_max: u32,
    /// `wait_ms` of each receive.
    pub receive_wait_ms: u64,
    /// The subscription's `ack_timeout_ms` (the lease of a received message); `None` leaves
    /// Wharf's default. A fault test shortens it so messages leased by a killed node come back
    /// within the run.
    pub ack_timeout_ms: Option<u64>,
    /// How long consumers may go on after producers stop, until every acknowledged value was
    /// consumed (received and acked): long enough for a lease to run out and its message to
    /// come back.
    pub consume_grace: Duration,
    /// Bound on creating the topic and the subscription.
    pub setup_timeout: Duration,
    /// Bound on draining every node.
    pub drain_timeout: Duration,
    /// Per partition, the nodes holding a replica of it, which the drain reads it from;
    /// `None`: every node holds every partition (the replication factor is the node count).
    pub replicas: Option<BTreeMap<Partition, Vec<NodeId>>>,
    /// `Some`: the producers send batches and retry each unchanged until a 200 (see
    /// [`BatchRetry`]) instead of one message per request at `rate`, which then only names
    /// no figure (`duration` still bounds the sending). `None`: the open-loop producers.
    pub batch_retry: Option<BatchRetry>,
    /// Whether consumers (and setup) pick each call's node at random, seeded from `seed`,
    /// instead of in turn.
    pub random_nodes: bool,
}

impl WorkloadSpec {
    /// A workload at `rate` messages/s for `duration`, with 2 producers, 2 consumers, 3
    /// partitions, 4 keys, `ack=all` and 2 s call timeouts.
    pub fn new(rate: u32, duration: Duration) -> Self {
        Self {
            topic: "harness".to_owned(),
            subscription: "harness-sub".to_owned(),
            partitions: 3,
            producers: 2,
            consumers: 2,
            rate,
            duration,
            keys: 4,
            seed: 0,
            ack: "all".to_owned(),
            request_timeout: Duration::from_secs(2),
            receive_max: 10,
            receive_wait_ms: 1_000,
            ack_timeout_ms: None,
            consume_grace: Duration::from_secs(5),
            setup_timeout: Duration::from_secs(10),
            drain_timeout: Duration::from_secs(20),
            replicas: None,
            batch_retry: None,
            random_nodes: false,
        }
    }

    /// Checks every figure is within its bound.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let invalid = |setting: &'static str, value: String, reason: &'static str| {
            Err(WorkloadError::Invalid {
                setting,
                value,
                reason,
            })
        };
        if self.rate == 0 || self.rate > MAX_RATE {
            return invalid("rate", self.rate.to_string(), "must be 1 to 10000");
        }
        if self.duration.is_zero() || self.duration > MAX_DURATION {
            return invalid(
                "duration",
                format!("{:?}", self.duration),
                "must be 1 ms to 600 s",
            );
        }
        if self.producers == 0 || self.producers > MAX_TASKS {
            return invalid("producers", self.producers.to_string(), "must be 1 to 64");
        }
        if self.consumers > MAX_TASKS {
            return invalid("consumers", self.consumers.to_string(), "must be 0 to 64");
        }
        if self.partitions == 0 || self.keys == 0 {
            return invalid(
                "partitions/keys",
                self.keys.to_string(),
                "must be 1 or more",
            );
        }
        if self.receive_max == 0 || self.receive_max > MAX_RECEIVE_MESSAGES {
            return invalid(
                "receive_max",
                self.receive_max.to_string(),
                "must be 1 to 100",
            );
        }
        if let Some(problem) = self.batch_retry.as_ref().and_then(BatchRetry::problem) {
            return invalid("batch_retry", format!("{:?}", self.batch_retry), problem);
        }
        Ok(())
    }

    /// Messages each producer sends: its share of `rate × duration`, rounded up.
    pub fn messages_per_producer(&self) -> u64 {
        let total = (f64::from(self.rate) * self.duration.as_secs_f64()).ceil() as u64;
        total.div_ceil(u64::from(self.producers))
    }

    /// Time between two sends of one producer.
    pub fn producer_period(&self) -> Duration {
        Duration::from_secs_f64(f64::from(self.producers) / f64::from(self.rate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_shared_by_the_producers() {
        let spec = WorkloadSpec::new(200, Duration::from_secs(3));
        assert_eq!(spec.messages_per_producer(), 300);
        assert_eq!(spec.producer_period(), Duration::from_millis(10));
        assert!(spec.validate().is_ok());
    }

    #[test]
    fn both_sides_of_the_rate_bound() {
        let mut spec = WorkloadSpec::new(MAX_RATE, Duration::from_secs(1));
        assert!(spec.validate().is_ok());
        spec.rate = MAX_RATE + 1;
        assert!(spec.validate().is_err());
        spec.rate = 0;
        assert!(spec.validate().is_err());
    }

    #[test]
    fn both_sides_of_the_duration_bound() {
        let mut spec = WorkloadSpec::new(1, MAX_DURATION);
        assert!(spec.validate().is_ok());
        spec.duration = MAX_DURATION + Duration::from_millis(1);
        assert!(spec.validate().is_err());
    }
}
