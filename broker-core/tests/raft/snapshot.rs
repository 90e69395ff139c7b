//! A partition snapshot that does not decode (truncated, corrupt, of an unknown version) is a
//! storage error of the state machine, not a panic, and leaves the log as it was; a snapshot
//! file that does not decode stops the replica from opening rather than starting it from a
//! wrong point.

use std::io::Cursor;
use std::sync::Arc;

use broker_core::config::{FsyncPolicy, LogConfig};
use broker_core::raft::{
    NoDerivedState, PartitionMachine, SNAPSHOT_FILE, SNAPSHOT_VERSION, SnapshotBody, TypeConfig,
};
use broker_core::storage::PartitionHandle;
use openraft::storage::RaftStateMachine;
use openraft::{CommittedLeaderId, LogId, SnapshotMeta, StoredMembership};
use tokio::sync::Notify;

fn open_log(root: &std::path::Path, db: &sled::Db) -> PartitionHandle {
    let config = LogConfig {
        segment_bytes: 4 * 1024,
        fsync: FsyncPolicy::Always,
        leader_epoch: 0,
    };
    PartitionHandle::open_replicated(
        root.join("p0"),
        db.open_tree("p0").expect("tree"),
        config,
        Arc::new(Notify::new()),
        None,
    )
    .expect("opens")
}

fn meta() -> SnapshotMeta<u64, broker_core::raft::NodeInfo> {
    SnapshotMeta {
        last_log_id: Some(LogId::new(CommittedLeaderId::new(3, 0), 40)),
        last_membership: StoredMembership::default(),
        snapshot_id: "3-40-1".into(),
    }
}

#[tokio::test]
async fn a_snapshot_that_does_not_decode_is_an_error_and_changes_nothing() {
    let root = tempfile::tempdir().expect("dir");
    let db = sled::Config::new()
        .path(root.path().join("meta"))
        .open()
        .expect("sled");
    let log = open_log(root.path(), &db);
    let mut machine = PartitionMachine::open(
        log.clone(),
        Arc::new(Notify::new()),
        Arc::new(NoDerivedState),
    )
    .expect("machine");
    let good = SnapshotBody {
        next_offset: 500,
        derived: bytes::Bytes::from_static(b"{}"),
    }
    .encode();
    let mut later = good.clone();
    later[4] = SNAPSHOT_VERSION + 1;
    let mut flipped = good.clone();
    flipped[10] ^= 0x40;
    let bad: [(&str, Vec<u8>); 5] = [
        ("empty", Vec::new()),
        ("truncated", good[..good.len() - 1].to_vec()),
        ("a later version", later),
        ("a flipped bit", flipped),
        ("not a snapshot", b"hello".to_vec()),
    ];
    for (what, bytes) in bad {
        let installed = machine
            .install_snapshot(&meta(), Box::new(Cursor::new(bytes)))
            .await;
        assert!(installed.is_err(), "{what} installed");
        assert_eq!(log.end_offset(), 0, "{what} moved the log");
        let (applied, _) =
            <PartitionMachine as RaftStateMachine<TypeConfig>>::applied_state(&mut machine)
                .await
                .expect("state");
        assert_eq!(applied, None, "{what} moved the applied id");
    }
    machine
        .install_snapshot(&meta(), Box::new(Cursor::new(good)))
        .await
        .expect("a good snapshot installs");
    assert_eq!(log.start_offset(), 500);
    assert_eq!(log.end_offset(), 500);
    log.shutdown();
}

#[tokio::test]
async fn a_kept_snapshot_restarts_the_machine_and_a_corrupt_one_stops_it() {
    let root = tempfile::tempdir().expect("dir");
    let db = sled::Config::new()
        .path(root.path().join("meta"))
        .open()
        .expect("sled");
    let log = open_log(root.path(), &db);
    let good = SnapshotBody {
        next_offset: 7,
        derived: bytes::Bytes::new(),
    }
    .encode();
    let mut machine = PartitionMachine::open(
        log.clone(),
        Arc::new(Notify::new()),
        Arc::new(NoDerivedState),
    )
    .expect("machine");
    machine
        .install_snapshot(&meta(), Box::new(Cursor::new(good)))
        .await
        .expect("installs");
    let mut reopened = PartitionMachine::open(
        log.clone(),
        Arc::new(Notify::new()),
        Arc::new(NoDerivedState),
    )
    .expect("reopens");
    let (applied, _) = reopened.applied_state().await.expect("state");
    assert_eq!(applied, meta().last_log_id);
    let kept = reopened
        .get_current_snapshot()
        .await
        .expect("snapshot")
        .expect("kept");
    assert_eq!(kept.meta, meta());

    let path = log.dir().join(SNAPSHOT_FILE);
    let text = std::fs::read(&path).expect("file");
    std::fs::write(&path, &text[..text.len() / 2]).expect("truncates");
    let corrupt = PartitionMachine::open(
        log.clone(),
        Arc::new(Notify::new()),
        Arc::new(NoDerivedState),
    );
    assert!(corrupt.is_err(), "a truncated snapshot file opened");
    log.shutdown();
}
