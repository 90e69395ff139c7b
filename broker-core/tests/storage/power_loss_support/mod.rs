//! The power-loss runs of `power_loss.rs`: one partition on a [`SimulatedDisk`], producers
//! appending random batches until the power goes at a random change to the files, then the
//! files as the loss left them, a random loss of the sled index, reopening, and the checks.

pub mod broker;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use broker_core::config::{FsyncPolicy, LogConfig};
use broker_core::message::{Record, StoredRecord};
use broker_core::storage::PartitionHandle;
use broker_core::storage::crash_sim::{PowerLoss, SimulatedDisk, Tearing, TornWrite};
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::Notify;

use crate::support::temp_root;

/// Power losses per seed: the second one also crashes a log that recovery just cut.
pub const CYCLES: usize = 2;
/// Producers appending at once, so the writer groups their batches.
const PRODUCERS: u64 = 3;
/// Batches each producer sends per cycle at most (if the power stays on that long).
const MAX_BATCHES: usize = 25;
/// The power goes at a random change to the files among the first this many of a cycle:
/// a cycle of [`MAX_BATCHES`] × [`PRODUCERS`] batches makes about this many.
const MAX_CRASH_OP: u64 = 150;
/// Or it goes right after a random write among the first this many (half of the cycles): a
/// power loss that finds a write unsynced, under `fsync always` too.
const MAX_CRASH_WRITE: u64 = 80;
/// Chance that the power goes again while recovery reopens the log (its cuts and deletions
/// must be durable, or redone by the next recovery).
const RECOVERY_LOSS_CHANCE: f64 = 0.3;
/// The power goes at one of recovery's first this many changes: cutting a tail is two
/// (cut, fsync), deleting later segments one each and a directory fsync, then an fsync.
const MAX_RECOVERY_CRASH_OP: u64 = 6;
/// Records in a batch at most.
const MAX_BATCH_RECORDS: usize = 8;
/// Bytes of a record's value at most: a batch spans from a few dozen bytes to ~6 KiB.
const MAX_VALUE_BYTES: usize = 700;
/// Small segments, so that a cycle rolls a few of them.
const SEGMENT_BYTES: u64 = 8 * 1024;
/// Records a check reads at a time: few, so reads cross batches and segments.
const READ_STEP: usize = 7;
/// How long a probe waits for its batch to become visible: an interval's fsync comes within
/// milliseconds when all is well.
const PROBE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);
/// Offsets read one by one after each recovery (through the sparse index).
const POINT_READS: usize = 5;

/// What a producer was told about one batch before the power went.
#[derive(Debug, Clone)]
pub struct Ack {
    /// The record at the acknowledged offset.
    pub record: Record,
    /// The answer said fsynced (the produce reply's `leader-fsynced` rather than
    /// `leader-written`).
    pub fsynced: bool,
    /// When the answer came.
    pub at: Instant,
}

/// Everything sent and acknowledged in a seed's run.
#[derive(Debug, Default)]
struct History {
    sent: HashMap<String, Record>,
    /// Acknowledged records by offset, not yet found lost.
    acked: BTreeMap<u64, Ack>,
}

/// What one seed's run counted.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    /// Records acknowledged before a power loss.
    pub acked: u64,
    /// Acknowledged records checked after a power loss (each record once per check).
    pub acked_checked: u64,
    /// Acknowledged records found lost.
    pub lost: u64,
    /// Of those, records whose answer said fsynced.
    pub lost_fsynced: u64,
    /// Age at the power loss of each lost record's answer, in ms.
    pub lost_ages_ms: Vec<u64>,
    /// Records served after recovery (each once per check, point reads included).
    pub served: u64,
    /// Records served that are not what was sent (or not at an acknowledged offset).
    pub corrupt_served: u64,
    /// Reads after recovery that failed (a corrupt frame recovery should have cut).
    pub read_errors: u64,
    /// Offsets that did not follow on.
    pub offset_gaps: u64,
    /// Torn or garbled writes the power losses left.
    pub torn: u64,
    /// Of those, the ones recovery cut (the file ends at or before the torn write).
    pub torn_truncated: u64,
    /// Of those, the ones that came out whole: the part a prefix lacked would have written
    /// bytes the file already held there (a frame ending in zeros, torn over zeros written
    /// ahead), so the frame is intact and recovery rightly keeps it.
    pub torn_whole: u64,
    /// Unsynced changes pending at the power losses.
    pub unsynced_changes: u64,
    /// Creations or removals the power losses undid.
    pub entries_undone: u64,
    /// Power losses.
    pub power_losses: u64,
    /// Power losses while recovery reopened the log (not among `power_losses`).
    pub recovery_losses: u64,
    /// Of those, the ones before the open returned.
    pub inside_recovery: u64,
    /// Appends after recovery that failed or read back wrong.
    pub append_failures: u64,
    /// Answers before the power loss that did not say fsynced.
    pub acks_unsynced: u64,
}

impl Figures {
    /// Adds another seed's figures.
    pub fn add(&mut self, other: &Figures) {
        self.acked += other.acked;
        self.acked_checked += other.acked_checked;
        self.lost += other.lost;
        self.lost_fsynced += other.lost_fsynced;
        self.lost_ages_ms.extend(&other.lost_ages_ms);
        self.served += other.served;
        self.corrupt_served += other.corrupt_served;
        self.read_errors += other.read_errors;
        self.offset_gaps += other.offset_gaps;
        self.torn += other.torn;
        self.torn_truncated += other.torn_truncated;
        self.torn_whole += other.torn_whole;
        self.unsynced_changes += other.unsynced_changes;
        self.entries_undone += other.entries_undone;
        self.power_losses += other.power_losses;
        self.recovery_losses += other.recovery_losses;
        self.inside_recovery += other.inside_recovery;
        self.append_failures += other.append_failures;
        self.acks_unsynced += other.acks_unsynced;
    }
}

/// How many seeds to run: `$WHARF_POWERLOSS_SEEDS`, else `default`.
pub fn seeds(default: u64) -> u64 {
    std::env::var("WHARF_POWERLOSS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// One partition's directory and sled db, on tmpfs when there is one (a simulated power loss
/// needs no real fsync, and 200 seeds of real ones would take minutes).
struct Partition {
    _root: tempfile::TempDir,
    dir: PathBuf,
    db: sled::Db,
    config: LogConfig,
    on_commit: Arc<Notify>,
}

impl Partition {
    fn new(fsync: FsyncPolicy) -> Partition {
        let root = temp_root();
        let db = sled::Config::new()
            .path(root.path().join("meta"))
            .flush_every_ms(None)
            .open()
            .expect("sled");
        Partition {
            dir: root.path().join("orders-0"),
            _root: root,
            db,
            config: LogConfig {
                segment_bytes: SEGMENT_BYTES,
                fsync,
                leader_epoch: 3,
            },
            on_commit: Arc::new(Notify::new()),
        }
    }

    fn tree(&self) -> sled::Tree {
        self.db.open_tree("orders-0").expect("tree")
    }

    fn open(&self) -> broker_core::error::Result<PartitionHandle> {
        PartitionHandle::open(
            self.dir.clone(),
            self.tree(),
            self.config.clone(),
            Arc::clone(&self.on_commit),
        )
    }

    /// sled loses what it had not flushed when the power went: keeps it all, loses it all, or
    /// loses the entries from some offset on.
    fn lose_index(&self, rng: &mut StdRng) {
        let tree = self.tree();
        match rng.gen_range(0..3) {
            0 => {}
            1 => tree.clear().expect("clear index"),
            _ => {
                let cut: u64 = rng.gen_range(0..200);
                for key in tree.iter().keys() {
                    let key = key.expect("key");
                    let offset_past_cut = key[0] == b'o' && key[1..] >= cut.to_be_bytes()[..];
                    if offset_past_cut || key[0] == b't' {
                        tree.remove(key).expect("remove");
                    }
                }
            }
        }
    }
}

/// A record of `seed`'s run with a random value (random bytes: a CRC must catch any tear).
fn random_record(id: String, ts: u64, rng: &mut StdRng) -> Record {
    let len = rng.gen_range(0..=MAX_VALUE_BYTES);
    let mut value = vec![0; len];
    rng.fill(&mut value[..]);
    Record {
        id,
        timestamp_ms: ts,
        key: rng
            .gen_bool(0.3)
            .then(|| format!("key-{}", rng.gen_range(0..10))),
        value: Bytes::from(value),
        binary: rng.gen_bool(0.5),
        scheduled: false,
        client_id: false,
        headers: vec![("h".into(), rng.gen_range(0..1000u32).to_string())],
        tags: Vec::new(),
        trace: None,
        origin: None,
    }
}

/// Runs one producer until the power goes or it sent [`MAX_BATCHES`]: every batch it sent,
/// and the answers it got before the power went.
async fn produce(
    handle: PartitionHandle,
    disk: Arc<SimulatedDisk>,
    name: String,
    seed: u64,
) -> (Vec<Record>, Vec<(u64, Vec<Record>, bool, Instant)>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut sent, mut acked) = (Vec::new(), Vec::new());
    for n in 0..MAX_BATCHES {
        if disk.is_crashed() {
            break;
        }
        let count = rng.gen_range(1..=MAX_BATCH_RECORDS);
        let batch: Vec<Record> = (0..count)
            .map(|i| random_record(format!("{name}-{n}-{i}"), 1_000 + n as u64, &mut rng))
            .collect();
        sent.extend(batch.iter().cloned());
        let answer = handle.append(batch.clone()).await;
        // Seen false after the answer: the answer came before the power went.
        let before_loss = !disk.is_crashed();
        match answer {
            Ok(result) if before_loss => {
                acked.push((result.base_offset, batch, result.fsynced, Instant::now()));
            }
            _ => break,
        }
    }
    (sent, acked)
}

/// Runs `seed`: [`CYCLES`] power losses under `fsync`, each checked. `Err` names what broke.
pub async fn run_seed(seed: u64, fsync: FsyncPolicy) -> Result<Figures, String> {
    let part = Partition::new(fsync);
    let disk = Arc::new(SimulatedDisk::watch(&part.dir));
    let mut rng = StdRng::seed_from_u64(seed);
    let mut history = History::default();
    let mut figures = Figures::default();
    let mut handle = part.open().map_err(|e| format!("first open: {e}"))?;
    for cycle in 0..CYCLES {
        let tearing = Tearing::default();
        match rng.gen_bool(0.5) {
            true => disk.crash_at_op(rng.gen_range(1..=MAX_CRASH_OP), rng.r#gen(), tearing),
            false => {
                disk.crash_after_write(rng.gen_range(1..=MAX_CRASH_WRITE), rng.r#gen(), tearing)
            }
        }
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let name = format!("s{seed}-c{cycle}-p{p}");
                let run = produce(handle.clone(), Arc::clone(&disk), name, rng.r#gen());
                tokio::spawn(run)
            })
            .collect();
        for producer in producers {
            let (sent, acked) = producer.await.expect("producer");
            note(&mut history, &mut figures, sent, acked);
        }
        disk.power_loss_now(rng.r#gen(), tearing);
        let loss = disk.power_loss().expect("the power is cut");
        stop(handle).await;
        loss.apply()
            .expect("write the files as the power loss left them");
        part.lose_index(&mut rng);
        disk.revive();
        let mut torn = loss.torn.clone();
        if rng.gen_bool(RECOVERY_LOSS_CHANCE) {
            let (more, inside) = lose_power_in_recovery(&part, &disk, &mut rng).await;
            torn.extend(more);
            figures.recovery_losses += 1;
            figures.inside_recovery += u64::from(inside);
        }
        handle = part
            .open()
            .map_err(|e| format!("cycle {cycle}: recovery refused to open the log: {e}"))?;
        check(
            &handle,
            &mut history,
            (&loss, &torn),
            &mut figures,
            &mut rng,
        );
        probe(&handle, &mut history, &mut figures, seed, cycle).await;
    }
    stop(handle).await;
    Ok(figures)
}

fn note(
    history: &mut History,
    figures: &mut Figures,
    sent: Vec<Record>,
    acked: Vec<(u64, Vec<Record>, bool, Instant)>,
) {
    for record in sent {
        history.sent.insert(record.id.clone(), record);
    }
    for (base, batch, fsynced, at) in acked {
        figures.acks_unsynced += u64::from(!fsynced);
        figures.acked += batch.len() as u64;
        for (offset, record) in (base..).zip(batch) {
            let ack = Ack {
                record,
                fsynced,
                at,
            };
            history.acked.insert(offset, ack);
        }
    }
}

/// Opens the log with the power going at one of recovery's first changes (or right after it,
/// if it makes fewer), and leaves the files as that loss left them: the torn writes, and
/// whether the power went before the open returned.
async fn lose_power_in_recovery(
    part: &Partition,
    disk: &SimulatedDisk,
    rng: &mut StdRng,
) -> (Vec<TornWrite>, bool) {
    let tearing = Tearing::default();
    disk.crash_at_op(
        rng.gen_range(1..=MAX_RECOVERY_CRASH_OP),
        rng.r#gen(),
        tearing,
    );
    let opened = part.open();
    let inside = disk.is_crashed();
    disk.power_loss_now(rng.r#gen(), tearing);
    if let Ok(handle) = opened {
        stop(handle).await;
    }
    let loss = disk.power_loss().expect("the power is cut");
    loss.apply()
        .expect("write the files as the power loss left them");
    disk.revive();
    (loss.torn, inside)
}

/// Shuts the (crashed) writer down off the async threads.
async fn stop(handle: PartitionHandle) {
    tokio::task::spawn_blocking(move || handle.shutdown())
        .await
        .expect("shutdown");
}

/// Every record from offset 0, and how many reads failed.
fn read_served(handle: &PartitionHandle) -> (Vec<StoredRecord>, u64) {
    let mut served: Vec<StoredRecord> = Vec::new();
    loop {
        let next = served.last().map_or(0, |r| r.offset + 1);
        match handle.read(next, READ_STEP, usize::MAX) {
            Ok(piece) if piece.is_empty() => return (served, 0),
            Ok(piece) => served.extend(piece),
            Err(_) => return (served, 1),
        }
    }
}

/// What recovery made of a torn write.
enum TornOutcome {
    /// The file ends at or before it (or is gone).
    Cut,
    /// The file holds every byte the write meant to put there.
    Whole,
    /// Some of it is still there, not as written: recovery should have cut it.
    LeftInPlace,
}

fn torn_write_outcome(torn: &TornWrite) -> TornOutcome {
    let Ok(bytes) = std::fs::read(&torn.path) else {
        return TornOutcome::Cut;
    };
    let at = usize::try_from(torn.at).expect("a position in memory");
    if bytes.len() <= at {
        return TornOutcome::Cut;
    }
    match bytes.get(at..at + torn.written.len()) {
        Some(there) if there == torn.written.as_slice() => TornOutcome::Whole,
        _ => TornOutcome::LeftInPlace,
    }
}

/// Checks a log reopened after `loss` against the history; acknowledged records found lost
/// leave the history (their offsets are taken again).
fn check(
    handle: &PartitionHandle,
    history: &mut History,
    (loss, torn_writes): (&PowerLoss, &[TornWrite]),
    figures: &mut Figures,
    rng: &mut StdRng,
) {
    figures.power_losses += 1;
    figures.unsynced_changes += loss.unsynced_changes as u64;
    figures.entries_undone += loss.entries_undone as u64;
    for torn in torn_writes {
        figures.torn += 1;
        match torn_write_outcome(torn) {
            TornOutcome::Cut => figures.torn_truncated += 1,
            TornOutcome::Whole => figures.torn_whole += 1,
            TornOutcome::LeftInPlace => {}
        }
    }
    let (served, read_errors) = read_served(handle);
    figures.read_errors += read_errors;
    let end = handle.end_offset();
    figures.served += served.len() as u64;
    for (i, stored) in served.iter().enumerate() {
        figures.offset_gaps += u64::from(stored.offset != i as u64);
        let sent = history.sent.get(&stored.record.id);
        figures.corrupt_served += u64::from(sent != Some(&stored.record));
    }
    figures.offset_gaps += u64::from(served.len() as u64 != end);
    let mut lost = Vec::new();
    for (offset, ack) in &history.acked {
        figures.acked_checked += 1;
        match served.get(*offset as usize) {
            Some(stored) if stored.record == ack.record => {}
            Some(_) => figures.corrupt_served += 1,
            None => lost.push(*offset),
        }
    }
    for offset in lost {
        let ack = history.acked.remove(&offset).expect("acked");
        figures.lost += 1;
        figures.lost_fsynced += u64::from(ack.fsynced);
        let age = loss.at.saturating_duration_since(ack.at);
        figures.lost_ages_ms.push(age.as_millis() as u64);
    }
    for _ in 0..POINT_READS.min(served.len()) {
        let offset = rng.gen_range(0..served.len());
        let read = handle.read(offset as u64, 1, usize::MAX);
        let same = read.is_ok_and(|r| r.first() == Some(&served[offset]));
        figures.served += 1;
        figures.corrupt_served += u64::from(!same);
    }
}

/// Appends a batch to the recovered log and reads it back at the end.
async fn probe(
    handle: &PartitionHandle,
    history: &mut History,
    figures: &mut Figures,
    seed: u64,
    cycle: usize,
) {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x9e37);
    let batch: Vec<Record> = (0..3)
        .map(|i| random_record(format!("s{seed}-c{cycle}-probe-{i}"), 5_000, &mut rng))
        .collect();
    let end = handle.end_offset();
    let appended = handle.append(batch.clone()).await;
    // Under an interval the batch becomes visible with the fsync that follows.
    let deadline = Instant::now() + PROBE_DEADLINE;
    while handle.end_offset() == end && Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let read = handle.read(end, batch.len(), usize::MAX);
    let read_back = read.is_ok_and(|r| r.iter().map(|s| &s.record).eq(batch.iter()));
    match appended {
        Ok(result) if result.base_offset == end && read_back => {
            let acked = vec![(end, batch.clone(), result.fsynced, Instant::now())];
            note(history, figures, batch, acked);
        }
        _ => figures.append_failures += 1,
    }
}
