//! A consumer: receives from the nodes in turn, records each delivery, acks it on the node it
//! came from (on the next nodes while that one cannot answer, for up to half the lease: a
//! receipt stays valid on whichever node leads the partition, and a failover takes a second or
//! two), and records each value's ack.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::api::{AckReply, Received, Reply};
use super::{Context, RETRY_PAUSE};

/// Wharf's default `ack_timeout_ms`, the lease when the spec leaves it.
const DEFAULT_ACK_TIMEOUT_MS: u64 = 30_000;
use crate::event::{Ack, Deliver, Event, Outcome};

/// Runs consumer `process` until the producers are done and every value they got acknowledged
/// was consumed, or `consume_grace` after the producers are done.
pub async fn run(context: Arc<Context>, process: u32) {
    let spec = &context.spec;
    let mut stop_at: Option<Instant> = None;
    for n in 0_u64.. {
        if stop_at.is_none() && context.producers_done.load(Ordering::Acquire) {
            stop_at = Some(Instant::now() + spec.consume_grace);
        }
        if context.all_consumed() || stop_at.is_some_and(|at| Instant::now() >= at) {
            break;
        }
        let endpoint = context.endpoint(process, n);
        let invoke_ms = context.recorder.now_ms();
        let reply = context
            .api
            .receive(
                &endpoint.url,
                &spec.topic,
                &spec.subscription,
                spec.receive_max,
                spec.receive_wait_ms,
            )
            .await;
        match reply {
            Reply::Ok(messages) if messages.is_empty() => {}
            Reply::Ok(messages) => handle(&context, process, n, invoke_ms, messages).await,
            _ => tokio::time::sleep(RETRY_PAUSE).await,
        }
    }
}

/// Records the deliveries of the receive sent at `invoke_ms` to the `n`th endpoint, acks them
/// all, and records each value's ack.
async fn handle(context: &Context, process: u32, n: u64, invoke_ms: u64, messages: Vec<Received>) {
    let spec = &context.spec;
    let received_ms = context.recorder.now_ms();
    let node = context.endpoint(process, n).node;
    let messages: Vec<(Received, String)> = messages
        .into_iter()
        .filter_map(|m| m.value.clone().map(|value| (m, value)))
        .collect();
    for (message, value) in &messages {
        context.recorder.record(&Event::Deliver(Deliver {
            process,
            subscription: spec.subscription.clone(),
            value: value.clone(),
            partition: message.partition,
            offset: message.offset,
            attempt: message.delivery_attempt,
            received_ms,
            receive_invoke_ms: Some(invoke_ms),
            node,
        }));
    }
    context
        .counters
        .delivered
        .fetch_add(messages.len() as u64, Ordering::Relaxed);
    let receipts: Vec<String> = messages.iter().map(|(m, _)| m.receipt.clone()).collect();
    let lease = Duration::from_millis(spec.ack_timeout_ms.unwrap_or(DEFAULT_ACK_TIMEOUT_MS));
    let give_up = Instant::now() + lease / 2;
    for attempt in 0_u64.. {
        let url = &context.endpoint(process, n + attempt).url;
        let invoke_ms = context.recorder.now_ms();
        let reply = context
            .api
            .ack(url, &spec.topic, &spec.subscription, &receipts)
            .await;
        let complete_ms = context.recorder.now_ms();
        record_acks(
            context,
            process,
            &messages,
            &reply,
            (invoke_ms, complete_ms),
        );
        if !reply.is_transient() || Instant::now() >= give_up {
            return;
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

/// Records what `reply` (sent and answered at `times`) proves about each message's ack.
fn record_acks(
    context: &Context,
    process: u32,
    messages: &[(Received, String)],
    reply: &Reply<AckReply>,
    times: (u64, u64),
) {
    for (message, value) in messages {
        let outcome = match reply {
            Reply::Ok(ack) if ack.failed.iter().any(|f| f.receipt == message.receipt) => {
                Outcome::Fail
            }
            other => other.outcome(),
        };
        if outcome == Outcome::Ok {
            context.counters.acks_ok.fetch_add(1, Ordering::Relaxed);
        }
        // An ack of unknown outcome may have taken effect: its retry then fails with
        // `receipt_invalid`, like one whose lease ended, and the message never comes back.
        // Waiting for it would only wait out `consume_grace`; the checker judges deliveries.
        if outcome != Outcome::Fail {
            context.consumed(value);
        }
        context.recorder.record(&Event::Ack(Ack {
            process,
            subscription: context.spec.subscription.clone(),
            value: value.clone(),
            invoke_ms: times.0,
            complete_ms: times.1,
            outcome,
            status: reply.status(),
        }));
    }
}
