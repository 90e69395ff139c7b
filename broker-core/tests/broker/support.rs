//! Helpers of the broker tests: opening a broker on a folder a previous one just let go of,
//! the topic `t` with its subscription `s`, and edits of a stopped broker's folder. Opening and
//! the topic are shared with other binaries (`tests/support/broker/`).

use std::path::Path;
use std::time::{Duration, Instant};

use broker_core::Broker;
use broker_core::storage::LogPosition;
use broker_core::subscription::store::{SubscriptionStore, tree_name};
use broker_core::subscription::{LeaseTable, TablePolicy};
use broker_core::subscription::{RetryPolicy, StartPosition, SubscriptionSpec};

#[path = "../support/broker/open.rs"]
mod open;
#[path = "../support/broker/topic.rs"]
mod topic;

pub use open::{open, open_with};
pub use topic::{broker_with_topic, create_topic, text};

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

/// Replaces the subscription's checkpoint by the one it had when it was created: a fresh table
/// at offset 0 covering nothing of the log, so all its state must come from the log.
pub async fn forget_the_checkpoint(dir: &Path, subscription_uid: u64) {
    let db = open_metadata(dir).await;
    let tree = db.open_tree(tree_name(subscription_uid)).expect("tree");
    tree.clear().expect("clear");
    let store = SubscriptionStore::new(tree);
    let mut table = LeaseTable::starting_at(0, TablePolicy::default());
    table.mark_cursor_dirty();
    store
        .save_checkpoint(0, table.take_changes(), LogPosition::default(), &[])
        .expect("save");
    db.flush().expect("flush");
}

/// The first folder named `name` below `root`, depth first.
pub fn find_dir(root: &Path, name: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(root).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if path.file_name().and_then(|n| n.to_str()) == Some(name) {
                return Some(path);
            }
            if let Some(found) = find_dir(&path, name) {
                return Some(found);
            }
        }
    }
    None
}
