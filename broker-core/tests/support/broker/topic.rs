//! A broker on a fresh folder with the topic `t`, and plain messages for it (the broker tests
//! and the broker's failpoint tests).

use std::sync::Arc;

use broker_core::broker::NewMessage;
use broker_core::topic::TopicSpec;
use broker_core::{Broker, BrokerConfig};

/// Creates the topic `t` with `partitions` partitions.
pub async fn create_topic(broker: &Broker, partitions: u32) {
    broker
        .create_topic(TopicSpec {
            name: "t".into(),
            partitions: Some(partitions),
            ..TopicSpec::default()
        })
        .await
        .expect("topic");
}

/// A broker on a fresh folder with a topic `t` of `partitions` partitions.
pub async fn broker_with_topic(partitions: u32) -> (tempfile::TempDir, Arc<Broker>) {
    let dir = tempfile::tempdir().expect("dir");
    let broker = Broker::open(BrokerConfig::new(dir.path()))
        .await
        .expect("open");
    create_topic(&broker, partitions).await;
    (dir, broker)
}

/// A message holding `value` and nothing else.
pub fn text(value: &'static str) -> NewMessage {
    NewMessage {
        value: bytes::Bytes::from_static(value.as_bytes()),
        ..NewMessage::default()
    }
}
