//! A batch producer that retries: each batch of [`BatchRetry::size`] messages (values and
//! client ids `p{process}-{counter}`, keys drawn from `k0…`) goes to a node drawn at random
//! (seeded), and while its answer is not a 200 (a timeout, a connection error, a 5xx, 503
//! included, or a transient 4xx) it is sent again, unchanged (the same ids, keys and values),
//! to another node drawn at random, until one answer is a 200. Every attempt is recorded: one
//! `produce` event per message, with the node, the times, the outcome, and from the 200 the
//! partition, offset and `duplicate` flag of each message.
//!
//! What an attempt proves about each message of its batch: `ok` for a 200; `fail` only when
//! the connection could not be opened (nothing was sent); `info` for everything else. A node
//! splits a batch by partition leader and answers a part's error for the whole batch while the
//! other parts may be stored, so no refusal of a batch proves that none of it was stored.
//!
//! The load is modest and bounded: a batch every [`BatchRetry::period_ms`] (drawn) per
//! producer, at most [`BatchRetry::in_flight`] batches under way per producer (a batch being
//! retried keeps its slot), and each batch given up after [`BatchRetry::give_up_after`] or
//! [`MAX_BATCH_ATTEMPTS`] attempts, whichever comes first (counted as abandoned).

use std::ops::RangeInclusive;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::Context;
use super::api::{Api, BatchMessage, Placement, Reply};
use crate::event::{Event, Outcome, Produce};
use crate::harness::Endpoint;

/// Most messages in one batch, as Wharf allows in one JSON produce.
pub const MAX_BATCH_SIZE: u32 = 1_000;

/// Most batches one producer keeps under way: each may be retried for long while its
/// partition's leader is cut off, and a 2-core machine running three nodes has little room.
pub const MAX_BATCHES_IN_FLIGHT: usize = 16;

/// Most attempts of one batch: at the shortest retry pause over the longest give-up time this
/// is never reached by a live cluster; it only bounds the loop's count as the plan asks.
pub const MAX_BATCH_ATTEMPTS: u32 = 1_000;

/// [`BatchRetry::new`]'s pause between two batches of a producer, in milliseconds: some 13
/// batches a second per producer, a modest load for three debug nodes on 2 shared cores.
pub const DEFAULT_PERIOD_MS: RangeInclusive<u64> = 50..=100;

/// [`BatchRetry::new`]'s batches under way per producer: one may hang in a cut while the other
/// keeps the producer going.
pub const DEFAULT_IN_FLIGHT: usize = 2;

/// [`BatchRetry::new`]'s bound on one attempt: past an election (a second or two here) and a
/// node's own replication timeout (5 s), so a timeout means the node could not answer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(6);

/// [`BatchRetry::new`]'s pause before a retry: a refusal (`not_leader`) comes back in
/// milliseconds, and this keeps a producer to ten attempts a second while no node can store.
pub const DEFAULT_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// [`BatchRetry::new`]'s bound on one batch: far past any partition's recovery after a heal,
/// so a batch given up means the cluster stayed unable to store it.
pub const DEFAULT_GIVE_UP_AFTER: Duration = Duration::from_secs(120);

/// How a batch producer sends and retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchRetry {
    /// Messages per batch, 1 to [`MAX_BATCH_SIZE`].
    pub size: u32,
    /// Pause before a producer's next batch, in milliseconds, drawn from this range.
    pub period_ms: RangeInclusive<u64>,
    /// Batches one producer keeps under way, 1 to [`MAX_BATCHES_IN_FLIGHT`].
    pub in_flight: usize,
    /// Bound on one attempt: past it the attempt's outcome is unknown and the batch is sent
    /// again.
    pub timeout: Duration,
    /// Pause between an attempt that did not get a 200 and the next.
    pub retry_pause: Duration,
    /// A batch not answered with a 200 this long after its first attempt is given up.
    pub give_up_after: Duration,
}

impl BatchRetry {
    /// Batches of `size` every [`DEFAULT_PERIOD_MS`], [`DEFAULT_IN_FLIGHT`] under way per
    /// producer, [`DEFAULT_TIMEOUT`] per attempt, [`DEFAULT_RETRY_PAUSE`] between attempts,
    /// given up after [`DEFAULT_GIVE_UP_AFTER`].
    pub fn new(size: u32) -> Self {
        Self {
            size,
            period_ms: DEFAULT_PERIOD_MS,
            in_flight: DEFAULT_IN_FLIGHT,
            timeout: DEFAULT_TIMEOUT,
            retry_pause: DEFAULT_RETRY_PAUSE,
            give_up_after: DEFAULT_GIVE_UP_AFTER,
        }
    }

    /// Whether every figure is within its bound; the reason when not.
    pub fn problem(&self) -> Option<&'static str> {
        if self.size == 0 || self.size > MAX_BATCH_SIZE {
            return Some("batch size must be 1 to 1000");
        }
        if self.period_ms.is_empty() || *self.period_ms.start() == 0 {
            return Some("the batch period must be a non-empty range from 1 ms");
        }
        if self.in_flight == 0 || self.in_flight > MAX_BATCHES_IN_FLIGHT {
            return Some("batches in flight must be 1 to 16");
        }
        if self.timeout.is_zero() || self.give_up_after.is_zero() {
            return Some("the attempt timeout and the give-up time must be above zero");
        }
        None
    }

    /// Most batches one producer may send in `duration`: one per shortest period.
    fn max_batches(&self, duration: Duration) -> u64 {
        let shortest = Duration::from_millis(*self.period_ms.start());
        (duration.as_millis() / shortest.as_millis().max(1)) as u64 + 1
    }
}

/// What an attempt proves about each message of its batch: `ok` for a 200, `fail` when the
/// connection could not be opened, `info` otherwise (another part of the batch may be stored).
pub fn batch_outcome<T>(reply: &Reply<T>) -> Outcome {
    match reply {
        Reply::Ok(_) => Outcome::Ok,
        Reply::Refused(_) => Outcome::Fail,
        Reply::Status { .. } | Reply::Unknown { .. } => Outcome::Info,
    }
}

/// Whether a batch whose attempt came back with `reply` is sent again: anything but a 200 and
/// a 4xx other than 404 (the topic not yet known to that node), 408 and 429.
pub fn worth_retrying<T>(reply: &Reply<T>) -> bool {
    match reply {
        Reply::Ok(_) => false,
        Reply::Refused(_) | Reply::Unknown { .. } => true,
        Reply::Status { status, .. } => {
            !(400..500).contains(status) || [404, 408, 429].contains(status)
        }
    }
}

/// What came of one attempt of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempted {
    /// A 200: done.
    Stored,
    /// Worth sending again.
    Retry,
    /// An answer no retry can change (a 4xx such as 400): the batch is given up.
    Refused,
}

/// What a batch producer shares with its batches.
struct Producer {
    context: Arc<Context>,
    batch: BatchRetry,
    api: Api,
    process: u32,
}

/// Runs batch producer `process` (sending through `api`, whose calls end within the batch
/// timeout) until the spec's duration ends or the producers are told to stop, then waits for
/// its batches under way (each ends with a 200 or when given up).
pub(super) async fn run(context: Arc<Context>, process: u32, batch: BatchRetry, api: Api) {
    let mut rng = StdRng::seed_from_u64(context.spec.seed ^ (u64::from(process) << 32));
    let spec_duration = context.spec.duration;
    let max_batches = batch.max_batches(spec_duration);
    let in_flight = Arc::new(Semaphore::new(batch.in_flight));
    let producer = Arc::new(Producer {
        context,
        batch,
        api,
        process,
    });
    let end = Instant::now() + spec_duration;
    let mut sends = JoinSet::new();
    let mut counter = 0_u64;
    for _ in 0..max_batches {
        let pause = rng.gen_range(producer.batch.period_ms.clone());
        tokio::time::sleep(Duration::from_millis(pause)).await;
        if Instant::now() >= end || producer.context.stop_producing.load(Ordering::Acquire) {
            break;
        }
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break;
        };
        let messages: Vec<BatchMessage> = (0..producer.batch.size)
            .map(|_| {
                let message = BatchMessage {
                    value: format!("p{process}-{counter}"),
                    key: format!("k{}", rng.gen_range(0..producer.context.spec.keys)),
                };
                counter += 1;
                message
            })
            .collect();
        let seed = rng.r#gen::<u64>();
        let producer = producer.clone();
        sends.spawn(async move {
            producer.send_until_ok(&messages, seed).await;
            drop(permit);
        });
        while sends.try_join_next().is_some() {}
    }
    while sends.join_next().await.is_some() {}
}

impl Producer {
    /// Sends `messages` to random nodes (drawn from `seed`) until one answers 200, within the
    /// bounds; records every attempt.
    async fn send_until_ok(&self, messages: &[BatchMessage], seed: u64) {
        let mut rng = StdRng::seed_from_u64(seed);
        let give_up = Instant::now() + self.batch.give_up_after;
        let counters = &self.context.counters;
        for attempt in 0..MAX_BATCH_ATTEMPTS {
            if attempt > 0 {
                counters.batch_retries.fetch_add(1, Ordering::Relaxed);
            }
            let endpoints = &self.context.endpoints;
            let endpoint = &endpoints[rng.gen_range(0..endpoints.len())];
            match self.attempt(messages, endpoint).await {
                Attempted::Stored => return,
                Attempted::Refused => break,
                Attempted::Retry if Instant::now() >= give_up => break,
                Attempted::Retry => tokio::time::sleep(self.batch.retry_pause).await,
            }
        }
        counters.batches_abandoned.fetch_add(1, Ordering::Relaxed);
    }

    /// One attempt of `messages` at `endpoint`, recorded.
    async fn attempt(&self, messages: &[BatchMessage], endpoint: &Endpoint) -> Attempted {
        let context = &self.context;
        let spec = &context.spec;
        let invoke_ms = context.recorder.now_ms();
        let reply = self
            .api
            .produce_batch(&endpoint.url, &spec.topic, &spec.ack, messages)
            .await;
        let complete_ms = context.recorder.now_ms();
        let outcome = batch_outcome(&reply);
        let placements: &[Placement] = match &reply {
            Reply::Ok(placements) => placements,
            _ => &[],
        };
        for (index, message) in messages.iter().enumerate() {
            let placement = placements.get(index);
            let duplicate = placement.is_some_and(|p| p.duplicate);
            context.recorder.record(&Event::Produce(Produce {
                process: self.process,
                value: message.value.clone(),
                key: Some(message.key.clone()),
                partition: placement.map(|p| p.partition),
                offset: placement.and_then(|p| p.offset),
                node: endpoint.node,
                invoke_ms,
                complete_ms,
                outcome,
                status: reply.status(),
                code: reply.code().map(str::to_owned),
                duplicate,
            }));
            self.count(outcome, duplicate);
            if outcome == Outcome::Ok {
                context.produced(&message.value);
            }
        }
        match outcome {
            Outcome::Ok => Attempted::Stored,
            _ if worth_retrying(&reply) => Attempted::Retry,
            _ => Attempted::Refused,
        }
    }

    fn count(&self, outcome: Outcome, duplicate: bool) {
        let counters = &self.context.counters;
        let bump = |c: &AtomicU64| c.fetch_add(1, Ordering::Relaxed);
        bump(&counters.attempts);
        match outcome {
            Outcome::Ok => bump(&counters.acked),
            Outcome::Fail => bump(&counters.failed),
            Outcome::Info => bump(&counters.unknown),
        };
        if duplicate {
            bump(&counters.duplicate_replies);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> Reply<()> {
        Reply::Status { status, code: None }
    }

    #[test]
    fn only_a_refused_connection_proves_a_batch_was_not_stored() {
        assert_eq!(batch_outcome(&Reply::Ok(())), Outcome::Ok);
        assert_eq!(
            batch_outcome(&Reply::<()>::Refused("x".into())),
            Outcome::Fail
        );
        assert_eq!(batch_outcome(&status(503)), Outcome::Info);
        assert_eq!(batch_outcome(&status(400)), Outcome::Info);
    }

    #[test]
    fn timeouts_5xx_and_transient_4xx_are_retried_other_4xx_are_not() {
        let timeout = Reply::<()>::Unknown {
            status: None,
            detail: "timeout".into(),
        };
        assert!(worth_retrying(&timeout));
        assert!(worth_retrying(&Reply::<()>::Refused("x".into())));
        for code in [500, 503, 504, 507, 404, 408, 429] {
            assert!(worth_retrying(&status(code)), "{code}");
        }
        for code in [400, 409, 413] {
            assert!(!worth_retrying(&status(code)), "{code}");
        }
        assert!(!worth_retrying(&Reply::Ok(())));
    }

    #[test]
    fn the_defaults_are_within_their_bounds_and_bad_figures_are_named() {
        assert_eq!(BatchRetry::new(5).problem(), None);
        assert!(BatchRetry::new(0).problem().is_some());
        let mut batch = BatchRetry::new(5);
        batch.in_flight = MAX_BATCHES_IN_FLIGHT + 1;
        assert!(batch.problem().is_some());
        assert_eq!(BatchRetry::new(5).max_batches(Duration::from_secs(1)), 21);
    }
}
