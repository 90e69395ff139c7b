//! Helpers shared by the broker's integration tests: opening a broker on a folder a previous
//! one just let go of, and the topic `t` with its subscription `s`.

#![allow(
    dead_code,
    reason = "each test binary uses its own part of the helpers"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_core::config::FsyncPolicy;
use broker_core::subscription::{RetryPolicy, StartPosition, SubscriptionSpec};
use broker_core::topic::TopicSpec;
use broker_core::{Broker, BrokerConfig};

/// Opens a broker on `dir` with `fsync`, waiting (at most 10 s) for the last one's sled
/// threads to let go of the folder's lock.
pub async fn open(dir: &Path, fsync: FsyncPolicy) -> Arc<Broker> {
    let mut config = BrokerConfig::new(dir);
    config.log.fsync = fsync;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match Broker::open(config.clone()).await {
            Ok(broker) => return broker,
            Err(error) if Instant::now() < deadline => {
                eprintln!("retrying the open: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("open: {error}"),
        }
    }
}

/// Opens the sled store of a broker's folder directly (a test that edits it between runs),
/// retrying for up to 10 s while the shut-down broker's last background tasks let go of it.
pub async fn open_metadata(dir: &Path) -> sled::Db {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match sled::open(dir.join("meta")) {
            Ok(db) => return db,
            Err(error) if Instant::now() < deadline => {
                eprintln!("retrying the metadata open: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("sled: {error}"),
        }
    }
}

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

/// Creates the subscription `s` of `t`, from the start, with `retry` (the default without).
pub async fn create_subscription(broker: &Broker, retry: Option<RetryPolicy>) {
    broker
        .create_subscription(
            "t",
            SubscriptionSpec {
                name: "s".into(),
                start: Some(StartPosition::Earliest),
                retry,
                ..SubscriptionSpec::default()
            },
        )
        .await
        .expect("subscription");
}
