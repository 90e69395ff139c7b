//! A producer: unique values `p{process}-{counter}`, keyed from a small set, sent open-loop on
//! a fixed period to the nodes in turn; each completed operation is a `produce` event.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;

use super::Context;
use super::spec::MAX_IN_FLIGHT_PER_PRODUCER;
use crate::event::{Event, Outcome, Produce};

/// Runs producer `process` for the spec's duration, then waits for its requests in flight
/// (each ends within the call timeout).
pub async fn run(context: Arc<Context>, process: u32) {
    let spec = &context.spec;
    let mut keys = StdRng::seed_from_u64(spec.seed ^ u64::from(process));
    let mut ticker = tokio::time::interval(spec.producer_period());
    ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT_PER_PRODUCER));
    let end = Instant::now() + spec.duration;
    let mut sends = JoinSet::new();
    for counter in 0..spec.messages_per_producer() {
        ticker.tick().await;
        if Instant::now() >= end || context.stop_producing.load(Ordering::Acquire) {
            break;
        }
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break;
        };
        let key = format!("k{}", keys.gen_range(0..spec.keys));
        let context = context.clone();
        sends.spawn(async move {
            send(&context, process, counter, key).await;
            drop(permit);
        });
        while sends.try_join_next().is_some() {}
    }
    while sends.join_next().await.is_some() {}
}

/// Sends one message and records what came of it.
async fn send(context: &Context, process: u32, counter: u64, key: String) {
    let endpoint = context.endpoint(process, counter);
    let value = format!("p{process}-{counter}");
    let spec = &context.spec;
    let invoke_ms = context.recorder.now_ms();
    let reply = context
        .api
        .produce(&endpoint.url, &spec.topic, &spec.ack, &value, &key)
        .await;
    let complete_ms = context.recorder.now_ms();
    let outcome = reply.outcome();
    let placement = match &reply {
        super::api::Reply::Ok(placement) => Some(*placement),
        _ => None,
    };
    context.recorder.record(&Event::Produce(Produce {
        process,
        value: value.clone(),
        key: Some(key),
        partition: placement.map(|p| p.partition),
        offset: placement.and_then(|p| p.offset),
        node: endpoint.node,
        invoke_ms,
        complete_ms,
        outcome,
        status: reply.status(),
        code: reply.code().map(str::to_owned),
        duplicate: placement.is_some_and(|p| p.duplicate),
    }));
    count(context, outcome);
    if outcome == Outcome::Ok {
        context.produced(&value);
    }
}

fn count(context: &Context, outcome: Outcome) {
    let counters = &context.counters;
    let bump = |c: &AtomicU64| c.fetch_add(1, Ordering::Relaxed);
    bump(&counters.attempts);
    match outcome {
        Outcome::Ok => bump(&counters.acked),
        Outcome::Fail => bump(&counters.failed),
        Outcome::Info => bump(&counters.unknown),
    };
}
