//! A simulated power loss for the segment files (feature `crash-sim`, test builds only).
//!
//! Every call that changes a segment file or its directory reports itself here (through
//! `disk_events`): writes, cuts, fsyncs, creates, removes and directory fsyncs. A
//! [`SimulatedDisk`] watching a directory keeps, per file under it, the bytes its last
//! successful fsync made durable and the changes made since, in order, and whether the file's
//! directory entry (its creation or removal) was made durable by a directory fsync.
//!
//! A power loss ([`SimulatedDisk::crash_at_op`] or [`SimulatedDisk::power_loss_now`]) freezes
//! that record: from then on every change under the directory fails with EIO, so nothing more
//! reaches the files, and [`PowerLoss::apply`] rewrites them as the machine would find them at
//! the next boot:
//! - each file holds its durable bytes plus a random part of its unsynced changes: a prefix of
//!   them in order, the next one possibly torn (a prefix of its bytes), garbled (random
//!   bytes in its place) or zeroed (its length without its data); or, now and then, a random subset of them (the disk wrote pages out
//!   of order), each kept, dropped or torn;
//! - a file whose creation no directory fsync covered may be gone; a removed file whose
//!   removal none covered may be back, with its durable bytes.
//!
//! What it assumes: an fsync (`fdatasync` or `fsync`) that returned makes the file's bytes and
//! length durable, and a directory fsync the entries of that directory; nothing else is
//! durable. A write that fails part way is not recorded (the code cuts it back). Files other
//! than segment files (sled's, Raft's state and snapshot files) are not simulated.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The errno of EIO on Linux: what every change gets once the power is gone.
const EIO: i32 = 5;

/// Every watched directory, to find the one a path lies under.
static DISKS: Mutex<Vec<Weak<Disk>>> = Mutex::new(Vec::new());
/// Whether any directory is watched: the hooks' fast path when none is.
static WATCHING: AtomicBool = AtomicBool::new(false);

/// How a power loss treats the unsynced changes of a file.
#[derive(Debug, Clone, Copy)]
pub struct Tearing {
    /// Chance that the first unsynced change not kept whole is torn or garbled instead of lost.
    pub torn: f64,
    /// Of the torn changes, the share replaced by random bytes rather than cut short.
    pub garbage: f64,
    /// Of the torn changes, the share replaced by as many zeros: the file's length reached
    /// the disk but its data did not (a journaled size over unwritten blocks).
    pub zeros: f64,
    /// Chance that a file keeps a random subset of its changes instead of a prefix of them.
    pub out_of_order: f64,
    /// Chance that an undurable creation or removal is undone.
    pub entry_lost: f64,
}

impl Default for Tearing {
    fn default() -> Self {
        Tearing {
            torn: 0.5,
            garbage: 0.3,
            zeros: 0.2,
            out_of_order: 0.1,
            entry_lost: 0.5,
        }
    }
}

/// A change made to a file since its last fsync.
#[derive(Debug, Clone)]
enum Change {
    Write { at: u64, bytes: Vec<u8> },
    SetLen(u64),
}

/// Whether a file's directory entry is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// The file exists and will after a power loss.
    Durable,
    /// Created since the directory's last fsync.
    Created,
    /// Removed since the directory's last fsync.
    Removed,
    /// Removed, durably.
    Gone,
}

/// What the simulator knows of one file.
#[derive(Debug, Clone)]
struct FileState {
    durable: Vec<u8>,
    changes: Vec<Change>,
    entry: Entry,
}

/// What a power loss left of a write it tore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tear {
    /// A prefix of the written bytes.
    Prefix,
    /// Random bytes, up to as many as were written.
    Garbage,
    /// As many zeros as were written.
    Zeros,
}

/// A torn or garbled write a power loss left in a file: recovery must cut the file at or
/// before `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornWrite {
    /// The file.
    pub path: PathBuf,
    /// Where the torn write began.
    pub at: u64,
    /// What is left there.
    pub tear: Tear,
    /// The bytes the write meant to put there: a prefix whose missing end would have written
    /// the zeros already there leaves the write whole after all, and recovery rightly keeps it.
    pub written: Vec<u8>,
}

/// The files as a power loss left them, to be written back with [`PowerLoss::apply`].
#[derive(Debug, Clone)]
pub struct PowerLoss {
    /// When the power went.
    pub at: Instant,
    /// Every tracked file: its bytes after the loss, or `None` if it is gone.
    files: BTreeMap<PathBuf, Option<Vec<u8>>>,
    /// The torn and garbled writes left behind.
    pub torn: Vec<TornWrite>,
    /// Unsynced changes that were pending when the power went (kept, torn or lost).
    pub unsynced_changes: usize,
    /// Files whose creation or removal was undone.
    pub entries_undone: usize,
}

impl PowerLoss {
    /// Rewrites the files as the power loss left them.
    pub fn apply(&self) -> io::Result<()> {
        for (path, bytes) in &self.files {
            match bytes {
                Some(bytes) => std::fs::write(path, bytes)?,
                None => match std::fs::remove_file(path) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                },
            }
        }
        Ok(())
    }
}

#[derive(Debug)]
struct Armed {
    /// The power goes with this change (counting writes only when `writes_only`).
    at_op: u64,
    writes_only: bool,
    rng: StdRng,
    tearing: Tearing,
}

#[derive(Debug, Default)]
struct State {
    files: BTreeMap<PathBuf, FileState>,
    ops: u64,
    writes: u64,
    armed: Option<Armed>,
    loss: Option<PowerLoss>,
}

/// One watched directory.
#[derive(Debug)]
struct Disk {
    root: PathBuf,
    crashed: AtomicBool,
    state: Mutex<State>,
}

/// Watches the segment files under a directory and simulates a power loss there. Dropping it
/// stops watching.
#[derive(Debug)]
pub struct SimulatedDisk {
    disk: Arc<Disk>,
}

impl SimulatedDisk {
    /// Starts watching every file under `root`; files already there count as durable.
    pub fn watch(root: &Path) -> SimulatedDisk {
        let disk = Arc::new(Disk {
            root: root.to_path_buf(),
            crashed: AtomicBool::new(false),
            state: Mutex::new(State::default()),
        });
        let mut disks = lock(&DISKS);
        disks.retain(|d| d.strong_count() > 0);
        disks.push(Arc::downgrade(&disk));
        WATCHING.store(true, Ordering::SeqCst);
        SimulatedDisk { disk }
    }

    /// Cuts the power right after the `op`-th change from now (1 is the next one), with
    /// `seed` choosing what of the unsynced changes survives.
    pub fn crash_at_op(&self, op: u64, seed: u64, tearing: Tearing) {
        let mut state = lock(&self.disk.state);
        let at_op = state.ops + op.max(1);
        state.armed = Some(Armed {
            at_op,
            writes_only: false,
            rng: StdRng::seed_from_u64(seed),
            tearing,
        });
    }

    /// Cuts the power right after the `n`-th write from now (1 is the next one): a power
    /// loss that always finds at least that write unsynced.
    pub fn crash_after_write(&self, n: u64, seed: u64, tearing: Tearing) {
        let mut state = lock(&self.disk.state);
        let at_op = state.writes + n.max(1);
        state.armed = Some(Armed {
            at_op,
            writes_only: true,
            rng: StdRng::seed_from_u64(seed),
            tearing,
        });
    }

    /// Cuts the power now (unless it is already cut).
    pub fn power_loss_now(&self, seed: u64, tearing: Tearing) {
        let mut state = lock(&self.disk.state);
        if state.loss.is_none() {
            let mut rng = StdRng::seed_from_u64(seed);
            self.disk.cut_power(&mut state, &mut rng, tearing);
        }
    }

    /// Whether the power is cut. A producer that sees its append answered and then this
    /// false got its answer before the power went.
    pub fn is_crashed(&self) -> bool {
        self.disk.crashed.load(Ordering::SeqCst)
    }

    /// The files as the power loss left them, once the power is cut.
    pub fn power_loss(&self) -> Option<PowerLoss> {
        lock(&self.disk.state).loss.clone()
    }

    /// Changes seen since watching (or since the last [`SimulatedDisk::revive`]).
    pub fn ops(&self) -> u64 {
        lock(&self.disk.state).ops
    }

    /// Powers the disk back on: forgets everything, and the files as they now are count as
    /// durable (call it after [`PowerLoss::apply`]).
    pub fn revive(&self) {
        let mut state = lock(&self.disk.state);
        *state = State::default();
        self.disk.crashed.store(false, Ordering::SeqCst);
    }
}

impl Drop for SimulatedDisk {
    fn drop(&mut self) {
        let mut disks = lock(&DISKS);
        disks.retain(|d| d.strong_count() > 0 && !std::ptr::eq(d.as_ptr(), &*self.disk));
        WATCHING.store(!disks.is_empty(), Ordering::SeqCst);
    }
}

impl Disk {
    /// Counts a change (`write`: a write of bytes) and cuts the power if it is the armed one.
    fn count_op(&self, state: &mut State, write: bool) {
        state.ops += 1;
        state.writes += u64::from(write);
        let due = state.armed.as_ref().is_some_and(|a| match a.writes_only {
            true => write && a.at_op == state.writes,
            false => a.at_op == state.ops,
        });
        if let Some(mut armed) = due.then(|| state.armed.take()).flatten() {
            self.cut_power(state, &mut armed.rng, armed.tearing);
        }
    }

    fn cut_power(&self, state: &mut State, rng: &mut StdRng, tearing: Tearing) {
        let mut loss = PowerLoss {
            at: Instant::now(),
            files: BTreeMap::new(),
            torn: Vec::new(),
            unsynced_changes: 0,
            entries_undone: 0,
        };
        for (path, file) in &state.files {
            loss.unsynced_changes += file.changes.len();
            let undone = rng.gen_bool(tearing.entry_lost);
            let bytes = match (file.entry, undone) {
                (Entry::Gone, _) | (Entry::Removed, false) | (Entry::Created, true) => None,
                (Entry::Removed, true) => Some(file.durable.clone()),
                (Entry::Durable, _) | (Entry::Created, false) => {
                    Some(after_loss(path, file, rng, tearing, &mut loss.torn))
                }
            };
            if matches!(file.entry, Entry::Removed | Entry::Created) && undone {
                loss.entries_undone += 1;
            }
            loss.files.insert(path.clone(), bytes);
        }
        state.loss = Some(loss);
        self.crashed.store(true, Ordering::SeqCst);
    }
}

/// A file's bytes after a power loss: its durable bytes and some of its unsynced changes.
fn after_loss(
    path: &Path,
    file: &FileState,
    rng: &mut StdRng,
    tearing: Tearing,
    torn: &mut Vec<TornWrite>,
) -> Vec<u8> {
    let mut bytes = file.durable.clone();
    let mut tear = |bytes: &mut Vec<u8>, change: &Change, rng: &mut StdRng| {
        if let Change::Write { at, bytes: written } = change
            && rng.gen_bool(tearing.torn)
        {
            let kind: f64 = rng.r#gen();
            let (tear, piece): (Tear, Vec<u8>) = if kind < tearing.garbage {
                let len = rng.gen_range(1..=written.len());
                (Tear::Garbage, (0..len).map(|_| rng.r#gen()).collect())
            } else if kind < tearing.garbage + tearing.zeros {
                (Tear::Zeros, vec![0; written.len()])
            } else if written.len() > 1 {
                (
                    Tear::Prefix,
                    written[..rng.gen_range(1..written.len())].to_vec(),
                )
            } else {
                return;
            };
            write_at(bytes, *at, &piece);
            torn.push(TornWrite {
                path: path.to_path_buf(),
                at: *at,
                tear,
                written: written.clone(),
            });
        }
    };
    if rng.gen_bool(tearing.out_of_order) {
        for change in &file.changes {
            match rng.gen_range(0..3) {
                0 => apply(&mut bytes, change),
                1 => tear(&mut bytes, change, rng),
                _ => {}
            }
        }
    } else {
        let kept = rng.gen_range(0..=file.changes.len());
        file.changes[..kept]
            .iter()
            .for_each(|c| apply(&mut bytes, c));
        if let Some(next) = file.changes.get(kept) {
            tear(&mut bytes, next, rng);
        }
    }
    bytes
}

fn apply(bytes: &mut Vec<u8>, change: &Change) {
    match change {
        Change::Write { at, bytes: written } => write_at(bytes, *at, written),
        Change::SetLen(len) => bytes.resize(usize::try_from(*len).unwrap_or(usize::MAX), 0),
    }
}

fn write_at(bytes: &mut Vec<u8>, at: u64, written: &[u8]) {
    let at = usize::try_from(at).unwrap_or(usize::MAX);
    let end = at.saturating_add(written.len());
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[at..end].copy_from_slice(written);
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The watched directory `path` lies under, if any.
fn disk_of(path: &Path) -> Option<Arc<Disk>> {
    if !WATCHING.load(Ordering::SeqCst) {
        return None;
    }
    lock(&DISKS)
        .iter()
        .filter_map(Weak::upgrade)
        .find(|d| path.starts_with(&d.root))
}

/// Calls `change` with the state of the disk `path` lies under, and counts the change.
fn record(path: &Path, write: bool, change: impl FnOnce(&mut State)) {
    if let Some(disk) = disk_of(path) {
        let mut state = lock(&disk.state);
        if disk.crashed.load(Ordering::SeqCst) {
            return;
        }
        change(&mut state);
        disk.count_op(&mut state, write);
    }
}

/// The hooks the segment code calls (see `disk_events`).
pub(crate) mod hooks {
    use super::*;

    /// Before a change to file or directory `path`: EIO once the power is cut; the first time
    /// a file is seen, its bytes as they are count as durable.
    pub(crate) fn before(path: &Path) -> io::Result<()> {
        let Some(disk) = disk_of(path) else {
            return Ok(());
        };
        let mut state = lock(&disk.state);
        if disk.crashed.load(Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(EIO));
        }
        if !state.files.contains_key(path)
            && let Ok(durable) = std::fs::read(path)
        {
            let file = FileState {
                durable,
                changes: Vec::new(),
                entry: Entry::Durable,
            };
            state.files.insert(path.to_path_buf(), file);
        }
        Ok(())
    }

    /// `bytes` were written at `at` in `path`.
    pub(crate) fn wrote(path: &Path, at: u64, bytes: &[u8]) {
        record(path, true, |state| {
            if let Some(file) = state.files.get_mut(path) {
                file.changes.push(Change::Write {
                    at,
                    bytes: bytes.to_vec(),
                });
            }
        });
    }

    /// `path` was cut (or extended) to `len` bytes.
    pub(crate) fn set_len(path: &Path, len: u64) {
        record(path, false, |state| {
            if let Some(file) = state.files.get_mut(path) {
                file.changes.push(Change::SetLen(len));
            }
        });
    }

    /// An fsync of `path` returned: its bytes and length are durable.
    pub(crate) fn synced(path: &Path) {
        record(path, false, |state| {
            if let Some(file) = state.files.get_mut(path) {
                let changes = std::mem::take(&mut file.changes);
                changes.iter().for_each(|c| apply(&mut file.durable, c));
            }
        });
    }

    /// `path` was created, empty.
    pub(crate) fn created(path: &Path) {
        record(path, false, |state| {
            let file = FileState {
                durable: Vec::new(),
                changes: Vec::new(),
                entry: Entry::Created,
            };
            state.files.insert(path.to_path_buf(), file);
        });
    }

    /// `path` was removed.
    pub(crate) fn removed(path: &Path) {
        record(path, false, |state| {
            if let Some(file) = state.files.get_mut(path) {
                file.entry = match file.entry {
                    Entry::Created => Entry::Gone,
                    _ => Entry::Removed,
                };
            }
        });
    }

    /// An fsync of directory `dir` returned: the creations and removals in it are durable.
    pub(crate) fn dir_synced(dir: &Path) {
        record(dir, false, |state| {
            for (path, file) in &mut state.files {
                if path.parent() == Some(dir) {
                    file.entry = match file.entry {
                        Entry::Created | Entry::Durable => Entry::Durable,
                        Entry::Removed | Entry::Gone => Entry::Gone,
                    };
                }
            }
        });
    }
}

#[cfg(test)]
mod tests;
