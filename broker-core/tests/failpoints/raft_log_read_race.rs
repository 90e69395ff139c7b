//! A Raft log read racing a truncation (found by `reliability/tests/faults/partitions.rs`, R4):
//! a node that lost leadership still had a replication read under way when the new leader's
//! first append cut its uncommitted suffix and wrote other entries in its place. The read met
//! another entry's bytes where its entry had been and returned a storage error, and openraft
//! stops a group for good on any storage error of a replication read ("quit RaftCore::main on
//! error … when Read Logs"), so the partition's replica on that node was dead until a restart.
//! Entries cut away under a read are entries not found, which openraft allows a reader to
//! leave out: the read must return the entries it could read, not an error.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc;
use std::time::Duration;

use broker_core::raft::{LogStore, NodeInfo, TypeConfig};
use fail::FailScenario;
use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Membership, RaftLogReader};

use crate::support::replicated_log;

const FAILPOINT: &str = "raft_view::read_entries::located";

fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn blank(term: u64, index: u64) -> Entry<TypeConfig> {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Blank,
    }
}

/// A membership entry: larger than a blank one, so the entries written after it no longer
/// start where the cut ones did.
fn membership(term: u64, index: u64) -> Entry<TypeConfig> {
    let nodes: BTreeMap<u64, NodeInfo> = (1..=3)
        .map(|id| {
            let info = NodeInfo {
                cluster_addr: format!("10.0.0.{id}:7000"),
                zone: format!("zone-{id}"),
            };
            (id, info)
        })
        .collect();
    let voters = BTreeSet::from([1, 2, 3]);
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Membership(Membership::new(vec![voters], nodes)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_racing_a_truncation_returns_the_entries_it_could_read_not_an_error() {
    // The failpoint is global to the process: held, the scenario keeps this binary's other
    // tests (the cluster ones read Raft logs too) from running meanwhile.
    let _scenario = FailScenario::setup();
    let (partition, log) = replicated_log();
    let dir = partition.dir.clone();
    let mut store = LogStore::open(log.clone(), dir.clone()).expect("state");
    store
        .blocking_append((1..=12).map(|i| blank(1, i)))
        .await
        .expect("entries of term 1");
    // Opened again, as after a restart: the entries appended last are no longer kept in
    // memory, so the read below goes to the file (where the race is).
    drop(store);
    let mut store = LogStore::open(log, dir).expect("state");

    // The reader stops once it has found where entry 8 lies, until the log changed.
    let (reached, wait_reached) = mpsc::channel::<()>();
    let (go, wait_go) = mpsc::channel::<()>();
    let wait_go = std::sync::Mutex::new(wait_go);
    fail::cfg_callback(FAILPOINT, move || {
        let _ = reached.send(());
        if let Ok(go) = wait_go.lock() {
            let _ = go.recv_timeout(Duration::from_secs(10));
        }
    })
    .expect("failpoint");
    let mut reader = store.get_log_reader().await;
    let read = tokio::spawn(async move { reader.try_get_log_entries(8..13).await });
    tokio::task::spawn_blocking(move || wait_reached.recv_timeout(Duration::from_secs(10)))
        .await
        .expect("joins")
        .expect("the reader reaches the failpoint");
    fail::remove(FAILPOINT);

    // A new leader of term 2 replaces everything from entry 5 on.
    store.truncate(log_id(1, 5)).await.expect("truncates");
    let replacing = std::iter::once(membership(2, 5)).chain((6..=12).map(|i| blank(2, i)));
    store
        .blocking_append(replacing)
        .await
        .expect("entries of term 2");
    go.send(()).expect("the reader waits");

    let entries = read
        .await
        .expect("joins")
        .expect("a read racing a truncation is not a storage error");
    let now = store
        .get_log_reader()
        .await
        .try_get_log_entries(8..13)
        .await
        .expect("reads");
    for entry in &entries {
        assert!(
            now.iter().any(|e| e.log_id == entry.log_id),
            "read {:?}, which the log does not hold: {now:?}",
            entry.log_id
        );
    }
}
