//! Starting a broker on a data folder another run left behind.

use broker_core::{Broker, BrokerConfig, BrokerError};

use crate::support::open_metadata;

/// Opens a broker on `dir`, then shuts it down and lets go of the folder.
async fn open_and_close(dir: &std::path::Path) {
    let broker = Broker::open(BrokerConfig::new(dir)).await.expect("open");
    broker.shutdown().await;
}

#[tokio::test]
async fn a_stored_receipt_key_of_the_wrong_size_stops_the_start_instead_of_being_replaced() {
    let dir = tempfile::tempdir().expect("dir");
    open_and_close(dir.path()).await;
    {
        let db = open_metadata(dir.path()).await;
        let meta = db.open_tree("meta").expect("tree");
        meta.insert("receipt_key", &[7u8; 7][..]).expect("insert");
        db.flush().expect("flush");
    }

    let error = Broker::open(BrokerConfig::new(dir.path()))
        .await
        .expect_err("a 7-byte receipt key must not be replaced silently");

    assert!(
        matches!(error, BrokerError::Corrupt { .. }),
        "expected Corrupt, got {error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("receipt_key"), "{message}");
    assert!(message.contains("7 bytes"), "{message}");
}

#[tokio::test]
async fn a_stored_receipt_key_survives_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    open_and_close(dir.path()).await;
    let first = read_key(dir.path()).await;

    open_and_close(dir.path()).await;

    assert_eq!(read_key(dir.path()).await, first);
}

/// The receipt key the metadata store in `dir` holds.
async fn read_key(dir: &std::path::Path) -> Vec<u8> {
    let db = open_metadata(dir).await;
    let key = db.open_tree("meta").expect("tree").get("receipt_key");
    key.expect("get").expect("a key was made").to_vec()
}
