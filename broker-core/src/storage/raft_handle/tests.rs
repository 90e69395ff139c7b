//! A replicated partition's Raft log on segment files: appends, reads by index, visibility
//! by applied index, cuts of a conflicting tail, purges, and all of it across a reopen.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::Notify;

use super::*;
use crate::config::FsyncPolicy;
use crate::message::Record;

fn record(n: u64) -> Record {
    Record {
        id: format!("m-{n}"),
        timestamp_ms: 1_000 + n,
        key: None,
        value: Bytes::from(vec![(n % 251) as u8; 300]),
        binary: true,
        scheduled: false,
        client_id: false,
        headers: Vec::new(),
        tags: Vec::new(),
        trace: None,
        origin: None,
    }
}

fn messages(term: u64, index: u64, first: u64, count: u64) -> RaftEntry {
    let records: Vec<Record> = (first..first + count).map(record).collect();
    RaftEntry {
        term,
        index,
        body: EntryBody::messages(&records).expect("encodes"),
    }
}

fn meta(term: u64, index: u64) -> RaftEntry {
    RaftEntry {
        term,
        index,
        body: EntryBody::meta(5, &Bytes::from_static(b"membership")).expect("encodes"),
    }
}

struct Node {
    _root: tempfile::TempDir,
    dir: std::path::PathBuf,
    db: sled::Db,
    on_commit: Arc<Notify>,
}

impl Node {
    fn new() -> Node {
        let root = tempfile::tempdir().expect("temp dir");
        let db = sled::Config::new()
            .path(root.path().join("meta"))
            .open()
            .expect("sled");
        Node {
            dir: root.path().join("p0"),
            _root: root,
            db,
            on_commit: Arc::new(Notify::new()),
        }
    }

    fn open(&self, applied: Option<u64>) -> PartitionHandle {
        open_in(&self.dir, &self.db, &self.on_commit, applied)
    }
}

fn open_in(
    dir: &Path,
    db: &sled::Db,
    on_commit: &Arc<Notify>,
    applied: Option<u64>,
) -> PartitionHandle {
    open_sized(dir, db, on_commit, applied, 4 * 1024)
}

fn open_sized(
    dir: &Path,
    db: &sled::Db,
    on_commit: &Arc<Notify>,
    applied: Option<u64>,
    segment_bytes: u64,
) -> PartitionHandle {
    let config = LogConfig {
        segment_bytes,
        fsync: FsyncPolicy::Always,
        leader_epoch: 0,
    };
    let tree = db.open_tree("p0").expect("tree");
    PartitionHandle::open_replicated(
        dir.to_path_buf(),
        tree,
        config,
        Arc::clone(on_commit),
        applied,
    )
    .expect("opens")
}

async fn append(log: &PartitionHandle, entries: Vec<RaftEntry>) -> EntriesWritten {
    let answer = log.append_entries(entries).await.expect("queued");
    answer.await.expect("answered").expect("written")
}

/// Appends a membership entry (1) and `count` entries of two messages each (2 on, term 1):
/// entry `i` holds offsets `2(i - 2)` and `2(i - 2) + 1`.
async fn append_run(log: &PartitionHandle, count: u64) {
    let mut entries = vec![meta(1, 1)];
    for i in 0..count {
        entries.push(messages(1, 2 + i, i * 2, 2));
    }
    append(log, entries).await;
}

fn terms_and_offsets(log: &PartitionHandle, from: u64, to: u64) -> Vec<(u64, u64, u64)> {
    log.read_entries(from, to, usize::MAX)
        .expect("reads")
        .into_iter()
        .map(|(h, _)| (h.raft_index.unwrap_or(0), h.leader_epoch, h.base_offset))
        .collect()
}

#[tokio::test]
async fn entries_read_back_by_index_and_readers_see_only_what_raft_applied() {
    let node = Node::new();
    let log = node.open(None);
    let written = append(
        &log,
        vec![meta(1, 1), messages(1, 2, 0, 3), messages(1, 3, 3, 2)],
    )
    .await;
    assert!(written.fsynced);
    assert_eq!(written.last.map(|l| (l.index, l.next_offset)), Some((3, 5)));
    assert_eq!(
        terms_and_offsets(&log, 1, 4),
        vec![(1, 1, 0), (2, 1, 0), (3, 1, 3)]
    );
    let read = log.read_entries(2, 3, usize::MAX).expect("reads");
    assert_eq!(
        read[0].1,
        messages(1, 2, 0, 3).body,
        "the body comes back as appended"
    );
    assert_eq!(log.end_offset(), 0, "nothing applied, nothing visible");
    log.publish_applied(2, &node.on_commit).expect("publishes");
    assert_eq!(log.end_offset(), 3);
    let visible = log.read(0, 100, usize::MAX).expect("reads");
    assert_eq!(visible.len(), 3);
    assert_eq!(visible[2].record, record(2));
    assert_eq!(visible[2].leader_epoch, 1, "the term is the batch epoch");
    log.shutdown();
}

#[tokio::test]
async fn a_read_of_everything_visible_stops_at_the_published_end() {
    // Past the published end the bytes are Raft's to cut at any moment (a deposed leader's
    // tail gives way while a consumer reads): a read that looked there met a file shorter
    // than it had just been (UnexpectedEof). Damaging those bytes makes a look visible.
    let node = Node::new();
    let log = node.open(None);
    append(
        &log,
        vec![meta(1, 1), messages(1, 2, 0, 3), messages(1, 3, 3, 2)],
    )
    .await;
    log.publish_applied(2, &node.on_commit).expect("publishes");
    let unpublished = log.locate_entry(3).expect("reads").expect("entry 3");
    let segment = node.dir.join("00000000000000000000.log");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .expect("opens");
    let damage = vec![0xFF; 64];
    let at = unpublished.at.position + unpublished.frame_len - 64;
    std::os::unix::fs::FileExt::write_all_at(&file, &damage, at).expect("damages");
    let visible = log
        .read(0, 100, usize::MAX)
        .expect("reads only what is visible");
    let offsets: Vec<u64> = visible.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![0, 1, 2]);
    log.shutdown();
}

#[tokio::test]
async fn a_conflicting_tail_is_cut_and_its_offsets_are_given_again() {
    let node = Node::new();
    let log = node.open(None);
    append(
        &log,
        vec![
            meta(1, 1),
            messages(1, 2, 0, 3),
            messages(1, 3, 3, 2),
            messages(1, 4, 5, 1),
        ],
    )
    .await;
    log.publish_applied(2, &node.on_commit).expect("publishes");
    log.truncate_entries(3).await.expect("cuts");
    assert_eq!(log.last_entry().map(|l| l.index), Some(2));
    append(&log, vec![messages(2, 3, 100, 1)]).await;
    assert_eq!(
        terms_and_offsets(&log, 1, 10),
        vec![(1, 1, 0), (2, 1, 0), (3, 2, 3)]
    );
    log.publish_applied(3, &node.on_commit).expect("publishes");
    let visible = log.read(0, 100, usize::MAX).expect("reads");
    assert_eq!(visible.len(), 4);
    assert_eq!(
        visible[3].record,
        record(100),
        "offset 3 holds the new leader's entry"
    );
    assert!(
        log.truncate_entries(2).await.is_err(),
        "an applied entry is never cut"
    );
    log.shutdown();
}

#[tokio::test]
async fn a_reopened_log_knows_its_last_entry_and_shows_only_what_was_applied() {
    let node = Node::new();
    let log = node.open(None);
    // 300-byte values and 4 KiB segments: the run spans several segments.
    append_run(&log, 40).await;
    log.publish_applied(30, &node.on_commit).expect("publishes");
    log.shutdown();
    drop(log);
    let log = node.open(Some(30));
    assert_eq!(
        log.last_entry().map(|l| (l.index, l.next_offset)),
        Some((41, 80))
    );
    assert_eq!(
        log.end_offset(),
        58,
        "entries up to 30 (offsets below 58) are visible"
    );
    let all = terms_and_offsets(&log, 1, 100);
    assert_eq!(
        all.len(),
        41,
        "every entry reads back, older ones by scanning files"
    );
    assert!(
        all.iter()
            .enumerate()
            .all(|(i, (index, _, _))| *index == i as u64 + 1)
    );
    assert!(
        log.truncate_entries(10).await.is_err(),
        "an applied entry is never cut"
    );
    log.truncate_entries(35)
        .await
        .expect("an unapplied entry is cut");
    assert_eq!(log.last_entry().map(|l| l.index), Some(34));
    assert!(
        log.truncate_entries(35).await.is_ok(),
        "cutting past the end changes nothing"
    );
    log.shutdown();
}

/// A restart's reads of old entries (openraft's binary search for each term's first entry
/// reads one entry at a time) scan a bounded stretch of frames each, not the segment from its
/// start: in a 10-minute soak the start of a replica had grown to 15 s, past its bound.
#[tokio::test]
async fn reads_of_single_old_entries_scan_a_bounded_stretch_of_the_segment() {
    let node = Node::new();
    let open = |applied| open_sized(&node.dir, &node.db, &node.on_commit, applied, 4 << 20);
    let log = open(None);
    const ENTRIES: u64 = 2_000;
    append_run(&log, ENTRIES).await;
    log.publish_applied(ENTRIES + 1, &node.on_commit)
        .expect("publishes");
    log.shutdown();
    drop(log);
    // Applied up to the last entry: the in-memory tail holds none, every read goes to the file.
    let log = open(Some(ENTRIES + 1));
    let segments = log.inner.view.all_segments();
    assert_eq!(segments.len(), 1, "one segment holds the run");
    let scanned = || segments[0].frames_scanned();
    let before = scanned();
    // A binary search's reads, as openraft's `load_log_ids` does them, several times over.
    let mut lookups = 0_u64;
    for round in 1..6 {
        let target = ENTRIES * round / 6;
        let (mut low, mut high) = (1, ENTRIES + 1);
        while low < high {
            let mid = (low + high) / 2;
            let read = log.read_entries(mid, mid + 1, usize::MAX).expect("reads");
            assert_eq!(read[0].0.raft_index, Some(mid));
            lookups += 1;
            match mid < target {
                true => low = mid + 1,
                false => high = mid,
            }
        }
        assert_eq!(low, target);
    }
    for index in [ENTRIES, 3, ENTRIES / 2, ENTRIES / 3, 2 * ENTRIES / 3] {
        let read = log
            .read_entries(index, index + 1, usize::MAX)
            .expect("reads");
        assert_eq!(read[0].0.raft_index, Some(index));
        lookups += 1;
    }
    // An entry's frame is about 650 bytes: a mark every 4 KiB is 7 frames apart.
    let per_lookup = super::super::entry_marks::MARK_EVERY_BYTES / 600 + 2;
    let bound = ENTRIES + lookups * per_lookup;
    let frames = scanned() - before;
    assert!(
        frames <= bound,
        "{lookups} lookups scanned {frames} frames, bound {bound} (one pass and a stretch each)"
    );
    log.shutdown();
}

#[tokio::test]
async fn a_cut_into_an_older_segment_deletes_the_later_ones_and_survives_a_reopen() {
    let node = Node::new();
    let log = node.open(None);
    append_run(&log, 40).await;
    log.publish_applied(5, &node.on_commit).expect("publishes");
    let segments_before = std::fs::read_dir(&node.dir).expect("dir").count();
    log.truncate_entries(8).await.expect("cuts");
    let segments_after = std::fs::read_dir(&node.dir).expect("dir").count();
    assert!(
        segments_after < segments_before,
        "{segments_after} of {segments_before} segments left"
    );
    append(&log, vec![messages(3, 8, 500, 1), messages(3, 9, 501, 1)]).await;
    log.shutdown();
    drop(log);
    let log = node.open(Some(5));
    assert_eq!(
        log.last_entry().map(|l| (l.index, l.term, l.next_offset)),
        Some((9, 3, 14))
    );
    let tail = terms_and_offsets(&log, 7, 20);
    assert_eq!(tail, vec![(7, 1, 10), (8, 3, 12), (9, 3, 13)]);
    log.shutdown();
}

#[tokio::test]
async fn a_purge_deletes_only_whole_segments_below_the_index() {
    let node = Node::new();
    let log = node.open(None);
    append_run(&log, 40).await;
    log.publish_applied(41, &node.on_commit).expect("publishes");
    let purged = log.purge_entries(20).await.expect("purges");
    assert!(purged > 0);
    let first = log.start_offset();
    assert!(first > 0 && first <= 38, "start moved to {first}");
    let remaining = terms_and_offsets(&log, 21, 100);
    assert_eq!(remaining.first().map(|e| e.0), Some(21), "entry 21 is kept");
    assert_eq!(log.purge_entries(0).await.expect("purges"), 0);
    log.shutdown();
}

/// Flips one byte inside the frame of entry `index` (past its length prefix and CRC).
fn flip_byte_of_entry(node: &Node, log: &PartitionHandle, index: u64) {
    use std::os::unix::fs::FileExt;
    let entry = log.locate_entry(index).expect("locates").expect("held");
    let path = node.dir.join(format!("{:020}.log", entry.at.segment_base));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .expect("segment");
    let at = entry.at.position + entry.frame_len / 2;
    let mut byte = [0];
    file.read_exact_at(&mut byte, at).expect("reads");
    file.write_all_at(&[!byte[0]], at).expect("writes");
    file.sync_all().expect("syncs");
}

#[tokio::test]
async fn a_bad_frame_before_the_tail_is_found_and_cut_and_the_log_continues_from_the_entry_before()
{
    let node = Node::new();
    let log = node.open(None);
    append_run(&log, 40).await;
    log.publish_applied(5, &node.on_commit).expect("publishes");
    assert_eq!(log.find_damaged_entries(6).expect("checks"), None);
    // An entry inside a segment, not its first (a segment's first frame is read at open).
    let bad = (20..30)
        .find(|i| {
            log.locate_entry(*i)
                .expect("locates")
                .is_some_and(|e| e.at.position > 0)
        })
        .expect("an entry inside a segment");
    flip_byte_of_entry(&node, &log, bad);
    log.shutdown();
    drop(log);

    let log = node.open(Some(5));
    assert_eq!(log.cut_beyond(), None, "the bad frame is not in the tail");
    let damaged = log
        .find_damaged_entries(6)
        .expect("checks")
        .expect("the bad frame is found");
    assert_eq!(damaged.first_lost(), bad);
    assert_eq!(damaged.last_intact.map(|e| e.index), Some(bad - 1));
    log.cut_damaged_entries(damaged).await.expect("cuts");
    // Entry i (from 2) holds offsets 2(i-2) and 2(i-2)+1: entry `bad - 1` ends before this.
    let next = 2 * (bad - 2);
    assert_eq!(
        log.last_entry().map(|l| (l.index, l.next_offset)),
        Some((bad - 1, next)),
        "the entry before the bad frame is the last again"
    );
    append(
        &log,
        vec![messages(2, bad, 900, 2), messages(2, bad + 1, 902, 1)],
    )
    .await;
    log.shutdown();
    drop(log);

    let log = node.open(Some(5));
    assert_eq!(log.find_damaged_entries(6).expect("checks"), None);
    let tail = terms_and_offsets(&log, bad - 1, 100);
    assert_eq!(
        tail,
        vec![
            (bad - 1, 1, next - 2),
            (bad, 2, next),
            (bad + 1, 2, next + 2)
        ]
    );
    log.shutdown();
}

#[tokio::test]
async fn a_bad_frame_readers_can_see_is_never_cut() {
    let node = Node::new();
    let log = node.open(None);
    append_run(&log, 10).await;
    log.publish_applied(11, &node.on_commit).expect("publishes");
    flip_byte_of_entry(&node, &log, 4);
    let damaged = log
        .find_damaged_entries(0)
        .expect("checks")
        .expect("the bad frame is found");
    assert_eq!(damaged.first_lost(), 4);
    assert!(
        log.cut_damaged_entries(damaged).await.is_err(),
        "an applied entry is never cut"
    );
    assert_eq!(log.last_entry().map(|l| l.index), Some(11));
    log.shutdown();
}
