//! A replicated partition's entry is readable as soon as its append is written, before its
//! fsync: a partition leader replicates while it fsyncs (`async_leader_flush`), so its
//! followers can commit an entry and the leader apply it (make it visible to readers) while
//! its own fsync is still under way. The message index learned of an append only after the
//! group's fsync, so a reader of the first offset of an index chunk met "no index entry leads
//! to committed offset 0", and a receive skipped that message for good as unreadable
//! (`broker-core/tests/cluster` met it 2 times in 6 runs, a cluster's probe topic once).
//! Here one log alone, its writer's fsync held by the `segment::sync` failpoint.

use std::sync::{Mutex, mpsc};
use std::time::Duration;

use broker_core::storage::{EntryBody, RaftEntry};
use fail::FailScenario;

use crate::support::{bare, record, replicated_log};

const FAILPOINT: &str = "segment::sync";
/// Longest a held fsync waits to be let go (the test lets it go far sooner).
const HOLD_LIMIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_applied_before_its_fsync_ends_is_read_not_reported_corrupt() {
    let _scenario = FailScenario::setup();
    let (partition, log) = replicated_log();

    // The writer's fsyncs wait until let go.
    let (release, held) = mpsc::channel::<()>();
    let held = Mutex::new(held);
    fail::cfg_callback(FAILPOINT, move || {
        let writer = std::thread::current()
            .name()
            .is_some_and(|name| name.starts_with("wharf-writer"));
        if writer && let Ok(held) = held.lock() {
            let _ = held.recv_timeout(HOLD_LIMIT);
        }
    })
    .expect("failpoint");

    let written = record(0, 100);
    let entry = RaftEntry {
        term: 1,
        index: 1,
        body: EntryBody::messages(std::slice::from_ref(&written)).expect("encodes"),
    };
    let flushed = log.append_entries(vec![entry]).await.expect("written");
    // Raft applied it (its followers hold it) while this replica's fsync is under way.
    log.publish_applied(1, &partition.on_commit)
        .expect("published");
    let read = log.read(0, 10, 1024 * 1024);
    // Let go (whether the writer reached its fsync yet or not: it cannot pass it before this,
    // so the read above came before the group's commit), and hold no later fsync.
    release.send(()).expect("the failpoint holds the receiver");
    drop(release);
    let fsynced = flushed.await.expect("answered");
    fail::remove(FAILPOINT);

    let records = read.expect("the applied entry reads while its fsync is under way");
    assert_eq!(bare(&records), [written]);
    fsynced.expect("the held fsync succeeds once let go");
}
