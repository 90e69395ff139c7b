//! Failures injected with the `fail` crate into the broker's own code (`fail::fail_point!`):
//! what callers see when a part of the broker breaks. Each test holds a [`FailScenario`],
//! which clears every failpoint before and after it and makes the tests of this binary run
//! one at a time (the failpoints are global to the process).
//!
//! Failpoints in the code:
//! - `writer::commit_group`: a partition writer thread about to take a group commit.

use std::sync::Arc;

use broker_core::broker::{AckMode, NewMessage};
use broker_core::topic::TopicSpec;
use broker_core::{Broker, BrokerConfig, BrokerError};
use fail::FailScenario;

/// A broker on a fresh folder with one single-partition topic, `t`.
async fn broker_with_topic() -> (tempfile::TempDir, Arc<Broker>) {
    let dir = tempfile::tempdir().expect("dir");
    let broker = Broker::open(BrokerConfig::new(dir.path()))
        .await
        .expect("open");
    broker
        .create_topic(TopicSpec {
            name: "t".into(),
            ..TopicSpec::default()
        })
        .await
        .expect("topic");
    (dir, broker)
}

fn message(value: &'static str) -> NewMessage {
    NewMessage {
        value: bytes::Bytes::from_static(value.as_bytes()),
        ..NewMessage::default()
    }
}

#[tokio::test]
async fn a_produce_whose_partition_writer_panics_is_an_internal_failure_not_a_shutdown() {
    let scenario = FailScenario::setup();
    let (_dir, broker) = broker_with_topic().await;
    fail::cfg("writer::commit_group", "panic").expect("failpoint");

    let error = broker
        .produce("t", vec![message("a")], AckMode::Leader)
        .await
        .expect_err("the writer panicked");
    assert!(
        matches!(error, BrokerError::Panicked { .. }),
        "expected Panicked, got {error:?}"
    );
    let later = broker
        .produce("t", vec![message("b")], AckMode::Leader)
        .await
        .expect_err("the writer is gone");
    assert!(
        matches!(later, BrokerError::Panicked { .. }),
        "a produce to a dead writer is no shutdown either: {later:?}"
    );

    scenario.teardown();
    broker.shutdown().await;
    let after_shutdown = broker
        .produce("t", vec![message("c")], AckMode::Leader)
        .await
        .expect_err("shut down");
    assert!(matches!(after_shutdown, BrokerError::ShuttingDown));
}
