//! A consumer: receives from the nodes in turn (or at random, with the spec's `random_nodes`),
//! records each delivery, acks it on the node it came from (on the next nodes while that one
//! cannot answer, for up to half the lease: a receipt stays valid on whichever node leads the
//! partition, and a failover takes a second or two), and records each value's ack.

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
///
/// A node settles an ack of receipts from several partitions share by share, one per partition
/// leader, and answers the first share's error for the whole request while the shares before it
/// were applied: a 5xx to such an ack proves nothing about any one receipt (`info`), where for
/// receipts of one partition a 503 is a refusal (`fail`).
fn record_acks(
    context: &Context,
    process: u32,
    messages: &[(Received, String)],
    reply: &Reply<AckReply>,
    times: (u64, u64),
) {
    let first_partition = messages.first().map(|(m, _)| m.partition);
    let several_partitions = messages
        .iter()
        .any(|(m, _)| Some(m.partition) != first_partition);
    for (message, value) in messages {
        let (outcome, code) = ack_outcome(reply, &message.receipt, several_partitions);
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
            code,
        }));
    }
}

/// What `reply` proves about the ack of `receipt`, and the code it gave: `fail` with the code
/// of its entry in a 200's `failed` list; `info` for a 5xx to an ack spanning
/// `several_partitions`; otherwise as any call's reply.
fn ack_outcome(
    reply: &Reply<AckReply>,
    receipt: &str,
    several_partitions: bool,
) -> (Outcome, Option<String>) {
    let refused = match reply {
        Reply::Ok(ack) => ack.failed.iter().find(|f| f.receipt == receipt),
        _ => None,
    };
    match (reply, refused) {
        (_, Some(failed)) => (Outcome::Fail, Some(failed.code.clone())),
        (Reply::Status { status, code }, None) if several_partitions && *status >= 500 => {
            (Outcome::Info, code.clone())
        }
        (other, None) => (other.outcome(), other.code().map(str::to_owned)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::api::FailedReceipt;

    fn not_leader() -> Reply<AckReply> {
        Reply::Status {
            status: 503,
            code: Some("not_leader".into()),
        }
    }

    #[test]
    fn a_receipt_in_the_failed_list_fails_with_its_code_the_others_are_confirmed() {
        let reply = Reply::Ok(AckReply {
            acked: 1,
            failed: vec![FailedReceipt {
                receipt: "r2".into(),
                code: "receipt_invalid".into(),
            }],
        });
        assert_eq!(ack_outcome(&reply, "r1", true), (Outcome::Ok, None));
        assert_eq!(
            ack_outcome(&reply, "r2", true),
            (Outcome::Fail, Some("receipt_invalid".into()))
        );
    }

    #[test]
    fn a_503_refuses_an_ack_of_one_partition_and_proves_nothing_for_several() {
        let code = Some("not_leader".to_owned());
        assert_eq!(
            ack_outcome(&not_leader(), "r1", false),
            (Outcome::Fail, code.clone())
        );
        assert_eq!(
            ack_outcome(&not_leader(), "r1", true),
            (Outcome::Info, code)
        );
    }
}
