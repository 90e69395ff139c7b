//! A produce's origin (principal, client address, node) and each message's trace context are
//! stored with its messages, read back by offset, and survive a restart (read from disk).

use std::sync::Arc;

use broker_core::broker::{AckMode, NewMessage};
use broker_core::config::FsyncPolicy;
use broker_core::{Broker, Origin, StoredRecord, TraceContext};

use crate::support;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn origin(principal: &str, address: &str) -> Arc<Origin> {
    Arc::new(Origin {
        principal: Some(principal.into()),
        address: Some(address.parse().expect("an address")),
        node: None,
    })
}

fn message(n: usize) -> NewMessage {
    NewMessage {
        value: bytes::Bytes::from(format!("m{n}")),
        trace: n
            .is_multiple_of(2)
            .then(|| TraceContext::parse(TRACEPARENT, Some("a=b")).expect("ok")),
        ..NewMessage::default()
    }
}

async fn read_all(broker: &Broker) -> Vec<StoredRecord> {
    let read = broker
        .read_partition("t", 0, 0, 100, 0, None)
        .await
        .expect("read");
    read.messages
}

fn check(records: &[StoredRecord], alice: &Arc<Origin>, bob: &Arc<Origin>) {
    assert_eq!(records.len(), 6);
    for (n, stored) in records.iter().enumerate() {
        let record = &stored.record;
        let expected = if n < 3 { alice } else { bob };
        assert_eq!(record.origin.as_ref(), Some(expected), "record {n}");
        assert_eq!(record.trace.is_some(), n.is_multiple_of(2), "record {n}");
    }
    assert!(records[6 - 1].record.trace.is_none());
    assert_eq!(
        records[0]
            .record
            .trace
            .as_ref()
            .and_then(|t| t.tracestate()),
        Some("a=b")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origins_and_trace_contexts_are_read_back_by_offset_and_after_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let broker = support::open(dir.path(), FsyncPolicy::Always).await;
    support::create_topic(&broker, 1).await;
    let alice = origin("alice", "192.0.2.7");
    let bob = origin("bob", "2001:db8::9");
    for (who, range) in [(&alice, 0..3), (&bob, 3..6)] {
        let messages = range.map(message).collect();
        broker
            .produce_from("t", messages, AckMode::Leader, Some(Arc::clone(who)))
            .await
            .expect("produce");
    }
    check(&read_all(&broker).await, &alice, &bob);
    broker.shutdown().await;
    drop(broker);

    let broker = support::open(dir.path(), FsyncPolicy::Always).await;
    let records = read_all(&broker).await;
    check(&records, &alice, &bob);
    let shared = records[0]
        .record
        .origin
        .as_ref()
        .zip(records[2].record.origin.as_ref());
    assert!(
        shared.is_some_and(|(a, b)| Arc::ptr_eq(a, b)),
        "one produce's records share one decoded origin"
    );
    broker.shutdown().await;
}
