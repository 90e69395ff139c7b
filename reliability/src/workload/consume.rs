//! A consumer: receives from the nodes in turn, records each delivery, acks it on the node it
//! came from, and records each value's ack.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::api::{Received, Reply};
use super::{Context, RETRY_PAUSE};
use crate::event::{Ack, Deliver, Event, NodeId, Outcome};

/// Runs consumer `process` until the producers are done and a receive comes back empty, or
/// `consume_grace` after the producers are done.
pub async fn run(context: Arc<Context>, process: u32) {
    let spec = &context.spec;
    let mut stop_at: Option<Instant> = None;
    for n in 0_u64.. {
        if stop_at.is_none() && context.producers_done.load(Ordering::Acquire) {
            stop_at = Some(Instant::now() + spec.consume_grace);
        }
        if stop_at.is_some_and(|at| Instant::now() >= at) {
            break;
        }
        let endpoint = context.endpoint(process, n);
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
            Reply::Ok(messages) if messages.is_empty() => {
                if stop_at.is_some() {
                    break;
                }
            }
            Reply::Ok(messages) => {
                handle(&context, process, endpoint.node, &endpoint.url, messages).await
            }
            _ => tokio::time::sleep(RETRY_PAUSE).await,
        }
    }
}

/// Records the deliveries, acks them all on `url`, and records each value's ack.
async fn handle(context: &Context, process: u32, node: NodeId, url: &str, messages: Vec<Received>) {
    let spec = &context.spec;
    let received_ms = context.recorder.now_ms();
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
            node,
        }));
    }
    context
        .counters
        .delivered
        .fetch_add(messages.len() as u64, Ordering::Relaxed);
    let receipts: Vec<String> = messages.iter().map(|(m, _)| m.receipt.clone()).collect();
    let invoke_ms = context.recorder.now_ms();
    let reply = context
        .api
        .ack(url, &spec.topic, &spec.subscription, &receipts)
        .await;
    let complete_ms = context.recorder.now_ms();
    for (message, value) in messages {
        let outcome = match &reply {
            Reply::Ok(ack) if ack.failed.iter().any(|f| f.receipt == message.receipt) => {
                Outcome::Fail
            }
            other => other.outcome(),
        };
        if outcome == Outcome::Ok {
            context.counters.acks_ok.fetch_add(1, Ordering::Relaxed);
        }
        context.recorder.record(&Event::Ack(Ack {
            process,
            subscription: spec.subscription.clone(),
            value,
            invoke_ms,
            complete_ms,
            outcome,
            status: reply.status(),
        }));
    }
}
