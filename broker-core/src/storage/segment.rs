//! One segment file, `{base_offset:020}.log`: batch frames back to back, nothing else.
//!
//! A [`Segment`] is shared (`Arc`) between the writer, which appends at its tracked size, and
//! readers, which read whole frames at positions the index gives them. Reads and writes are
//! positioned (`pread`/`pwrite`), so neither moves a cursor the other depends on, and a reader
//! holding a segment that retention unlinks keeps reading the open file.
//!
//! Under `fsync always` the writer keeps zeros written (and fsynced) ahead of the active
//! segment's end ([`Segment::zero_ahead`]): an append then overwrites blocks the file already
//! has, and its fdatasync flushes data only, where a growing file also makes it write the
//! inode (measured on this machine's ext4: 0.13 against 0.21 ms per fdatasync of 38 KiB, and
//! 6–32% more produce-1 requests per second in A/B pairs). The file's frames end at
//! [`Segment::size`]; recovery cuts the zeros after a crash, and a sealed segment or a clean
//! shutdown trims them.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::codec::{self, Batch, DecodeError, PREFIX_LEN};
use super::disk_events;
use super::entry_marks::EntryMarks;
use super::reads::MessageFrames;
use crate::error::{BrokerError, Result};
use crate::limits::MAX_FRAME_BYTES;

/// What the frame at a position turned out to be, while scanning a tail.
#[derive(Debug)]
pub(crate) enum ScanStep {
    /// The position is the end of the file.
    End,
    /// A valid frame of `frame_len` bytes.
    Frame {
        /// The decoded batch.
        batch: Batch,
        /// Bytes the whole frame takes.
        frame_len: u64,
    },
    /// A message frame of `frame_len` bytes a replay stepped over: unread, or walked and
    /// found to hold none of the records it reads.
    Skipped {
        /// Bytes the whole frame takes.
        frame_len: u64,
    },
    /// The bytes at the position are not a valid frame (torn, garbled or junk).
    Invalid(String),
    /// The bytes at the position are zeros: space written ahead of the log's end (or a torn
    /// write whose pages never reached the disk).
    Zeros,
}

/// Bytes of zeros written at a time by [`Segment::zero_ahead`].
const ZERO_PIECE: usize = 64 * 1024;
/// The zeros [`Segment::zero_ahead`] writes from.
static ZEROS: [u8; ZERO_PIECE] = [0; ZERO_PIECE];

/// One open segment file.
#[derive(Debug)]
pub(crate) struct Segment {
    base_offset: u64,
    path: PathBuf,
    file: File,
    size: AtomicU64,
    /// The file's length: its frames, then the zeros written ahead of them (writer only).
    file_len: AtomicU64,
    max_ts: Mutex<Option<u64>>,
    /// The Raft index of the first frame, once read (replicated partitions only).
    first_raft_index: Mutex<Option<u64>>,
    /// Positions of Raft entries scans found, sparse (replicated partitions only).
    entry_marks: Mutex<EntryMarks>,
    /// Frames [`Segment::scan`] looked at, for tests of how much a lookup reads.
    #[cfg(test)]
    frames_scanned: AtomicU64,
}

impl Segment {
    /// The file name of the segment whose first offset is `base_offset`.
    pub(crate) fn file_name(base_offset: u64) -> String {
        format!("{base_offset:020}.log")
    }

    /// The base offset a segment file name encodes, if it is one.
    pub(crate) fn parse_file_name(name: &str) -> Option<u64> {
        let digits = name.strip_suffix(".log")?;
        let all_digits = digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit());
        all_digits.then(|| digits.parse().ok()).flatten()
    }

    /// Creates a new, empty segment in `dir`; fails if the file exists.
    pub(crate) fn create(dir: &Path, base_offset: u64) -> Result<Segment> {
        let path = dir.join(Self::file_name(base_offset));
        let file = disk_events::before(&path)
            .and_then(|()| {
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path)
            })
            .map_err(|e| BrokerError::io(&path, e))?;
        disk_events::created(&path);
        sync_dir(dir)?;
        Ok(Self::with_file(base_offset, path, file, 0))
    }

    /// Opens an existing segment file.
    pub(crate) fn open(path: PathBuf, base_offset: u64) -> Result<Segment> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| BrokerError::io(&path, e))?;
        let size = file
            .metadata()
            .map_err(|e| BrokerError::io(&path, e))?
            .len();
        Ok(Self::with_file(base_offset, path, file, size))
    }

    fn with_file(base_offset: u64, path: PathBuf, file: File, size: u64) -> Segment {
        Segment {
            base_offset,
            path,
            file,
            size: AtomicU64::new(size),
            file_len: AtomicU64::new(size),
            max_ts: Mutex::new(None),
            first_raft_index: Mutex::new(None),
            entry_marks: Mutex::new(EntryMarks::default()),
            #[cfg(test)]
            frames_scanned: AtomicU64::new(0),
        }
    }

    /// Offset of the first record this segment holds (or will hold).
    pub(crate) fn base_offset(&self) -> u64 {
        self.base_offset
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of frames in the file.
    pub(crate) fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    /// The cached largest timestamp of a sealed segment, if computed.
    pub(crate) fn cached_max_ts(&self) -> Option<u64> {
        *crate::sync::lock(&self.max_ts)
    }

    /// Caches the largest timestamp of this segment once it is sealed.
    pub(crate) fn cache_max_ts(&self, max_ts: u64) {
        *crate::sync::lock(&self.max_ts) = Some(max_ts);
    }

    /// Appends a frame at the end; returns its position. Only the writer calls this. On a
    /// failed write the file is cut back so no partial frame stays behind.
    pub(crate) fn append(&self, frame: &[u8]) -> Result<u64> {
        let position = self.size();
        if let Err(e) = self.write_frame(frame, position) {
            match self.set_len(position) {
                Ok(()) => self.file_len.store(position, Ordering::Release),
                Err(cut) => {
                    tracing::error!(path = %self.path.display(), error = %cut, "could not cut back a failed append");
                }
            }
            return Err(BrokerError::io(&self.path, e));
        }
        let end = position + frame.len() as u64;
        self.size.store(end, Ordering::Release);
        self.file_len.fetch_max(end, Ordering::AcqRel);
        Ok(position)
    }

    /// Bytes of zeros the file has after its frames.
    pub(crate) fn zeros_ahead(&self) -> u64 {
        self.file_len
            .load(Ordering::Acquire)
            .saturating_sub(self.size())
    }

    /// Writes zeros from the file's end up to byte `end` (nothing if the file reaches it);
    /// whether it wrote any, which the caller then fsyncs. Only the writer calls this. On a
    /// failed write the file is cut back to where it ended: the frames are untouched.
    pub(crate) fn zero_ahead(&self, end: u64) -> Result<bool> {
        let start = self.file_len.load(Ordering::Acquire).max(self.size());
        let mut at = start;
        while at < end {
            let len = usize::try_from(end - at).map_or(ZERO_PIECE, |n| n.min(ZERO_PIECE));
            if let Err(e) = self.write_at(&ZEROS[..len], at) {
                if self.set_len(start).is_ok() {
                    self.file_len.store(start, Ordering::Release);
                }
                return Err(BrokerError::io(&self.path, e));
            }
            at += len as u64;
        }
        self.file_len.store(at, Ordering::Release);
        Ok(at > start)
    }

    /// Cuts the zeros written ahead (and makes that durable), leaving the file exactly its
    /// frames: a segment is trimmed when it is sealed and at a clean shutdown.
    pub(crate) fn trim(&self) -> Result<()> {
        match self.zeros_ahead() {
            0 => Ok(()),
            _ => self.truncate(self.size()),
        }
    }

    /// Writes `frame` at `position`. Failpoint `segment::append`: a short write, the first
    /// half of the frame reaches the file and then the disk is full.
    fn write_frame(&self, frame: &[u8], position: u64) -> std::io::Result<()> {
        fail::fail_point!("segment::append", |_| -> std::io::Result<()> {
            self.write_at(&frame[..frame.len() / 2], position)?;
            Err(std::io::ErrorKind::StorageFull.into())
        });
        self.write_at(frame, position)
    }

    /// Writes `bytes` at `position`, reporting the write (see `disk_events`).
    fn write_at(&self, bytes: &[u8], position: u64) -> std::io::Result<()> {
        disk_events::before(&self.path)?;
        write_all_at(&self.file, bytes, position)?;
        disk_events::wrote(&self.path, position, bytes);
        Ok(())
    }

    /// Sets the file's length, reporting it.
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        disk_events::before(&self.path)?;
        self.file.set_len(len)?;
        disk_events::set_len(&self.path, len);
        Ok(())
    }

    /// `fdatasync` (or `fsync` when `all`), reporting it once it returned.
    fn flush(&self, all: bool) -> std::io::Result<()> {
        disk_events::before(&self.path)?;
        match all {
            true => self.file.sync_all()?,
            false => self.file.sync_data()?,
        }
        disk_events::synced(&self.path);
        Ok(())
    }

    /// Removes the file (the caller fsyncs the directory, see [`sync_dir`]); an open
    /// [`Segment`] keeps reading it.
    pub(crate) fn remove_file(&self) -> Result<()> {
        disk_events::before(&self.path)
            .and_then(|()| std::fs::remove_file(&self.path))
            .map_err(|e| BrokerError::io(&self.path, e))?;
        disk_events::removed(&self.path);
        Ok(())
    }

    /// Flushes the file's data to the disk. Failpoint `segment::sync`: the fdatasync fails
    /// with EIO, as after a failed writeback.
    pub(crate) fn sync(&self) -> Result<()> {
        fail::fail_point!("segment::sync", |_| {
            /// The errno of EIO on Linux (and the BSDs).
            const EIO: i32 = 5;
            let eio = std::io::Error::from_raw_os_error(EIO);
            Err(BrokerError::io(&self.path, eio))
        });
        self.flush(false)
            .map_err(|e| BrokerError::io(&self.path, e))
    }

    /// Cuts the file to `len` bytes and makes that durable.
    pub(crate) fn truncate(&self, len: u64) -> Result<()> {
        self.set_len(len)
            .and_then(|()| self.flush(true))
            .map_err(|e| BrokerError::io(&self.path, e))?;
        self.size.store(len, Ordering::Release);
        self.file_len.store(len, Ordering::Release);
        crate::sync::lock(&self.entry_marks).cut(len);
        Ok(())
    }

    /// Reads and decodes the frame of `frame_len` bytes at `position` for serving: anything
    /// but a valid frame is [`BrokerError::Corrupt`].
    pub(crate) fn read_frame(&self, position: u64, frame_len: u64) -> Result<Batch> {
        let fits = position
            .checked_add(frame_len)
            .is_some_and(|end| end <= self.size());
        if !fits || frame_len > MAX_FRAME_BYTES as u64 {
            return Err(self.corrupt(
                position,
                format!("a frame of {frame_len} bytes does not fit"),
            ));
        }
        let bytes = self.read_bytes(position, frame_len)?;
        codec::decode_frame(bytes).map_err(|e| self.corrupt(position, e.to_string()))
    }

    /// The length its prefix gives the frame at `position` (bad or not), when the prefix
    /// parses and the frame fits in the file: how to step over a frame whose body is bad.
    pub(crate) fn claimed_frame_len(&self, position: u64) -> Result<Option<u64>> {
        let available = self.size().saturating_sub(position);
        if available <= PREFIX_LEN as u64 {
            return Ok(None);
        }
        let mut prefix = [0; PREFIX_LEN];
        read_exact_at(&self.file, &mut prefix, position)
            .map_err(|e| BrokerError::io(&self.path, e))?;
        Ok(frame_len_within(prefix, available).ok())
    }

    /// Looks at the frame starting at `position` while recovering: I/O errors are errors,
    /// bad bytes are [`ScanStep::Invalid`].
    pub(crate) fn scan_at(&self, position: u64) -> Result<ScanStep> {
        self.scan_for_replay(position, MessageFrames::All)
    }

    /// [`Segment::scan_at`] for a read or a replay over frames recovery already checked: it
    /// reads the message frames `messages` asks for and steps over the others by their length.
    pub(crate) fn scan_for_replay(
        &self,
        position: u64,
        messages: MessageFrames,
    ) -> Result<ScanStep> {
        #[cfg(test)]
        self.frames_scanned.fetch_add(1, Ordering::Relaxed);
        let available = self.size().saturating_sub(position);
        if available == 0 {
            return Ok(ScanStep::End);
        }
        if available <= PREFIX_LEN as u64 {
            return Ok(ScanStep::Invalid(format!(
                "{available} bytes left, a partial frame prefix"
            )));
        }
        let mut head = [0; PREFIX_LEN + 1];
        read_exact_at(&self.file, &mut head, position)
            .map_err(|e| BrokerError::io(&self.path, e))?;
        if head.iter().all(|b| *b == 0) {
            return Ok(ScanStep::Zeros);
        }
        let mut prefix = [0; PREFIX_LEN];
        prefix.copy_from_slice(&head[..PREFIX_LEN]);
        let frame_len = match frame_len_within(prefix, available) {
            Ok(len) => len,
            Err(reason) => return Ok(ScanStep::Invalid(reason)),
        };
        let message_frame = matches!(head[PREFIX_LEN], codec::MAGIC | codec::RAFT_MAGIC);
        if message_frame && messages == MessageFrames::Skip {
            return Ok(ScanStep::Skipped { frame_len });
        }
        let bytes = self.read_bytes(position, frame_len)?;
        let decoded = if message_frame && messages == MessageFrames::Marked {
            codec::marks::decode_frame_if_marked(bytes)
        } else {
            codec::decode_frame(bytes).map(Some)
        };
        Ok(match decoded {
            Ok(Some(batch)) => ScanStep::Frame { batch, frame_len },
            Ok(None) => ScanStep::Skipped { frame_len },
            Err(e) => ScanStep::Invalid(e.to_string()),
        })
    }

    /// The whole frame at `position`, undecoded: its bytes are bounded by the frame limit
    /// and the file size, and the caller checks its CRC. `None` at the end of the frames.
    pub(crate) fn read_raw(&self, position: u64) -> Result<Option<Bytes>> {
        let available = self.size().saturating_sub(position);
        if available == 0 {
            return Ok(None);
        }
        let mut prefix = [0; PREFIX_LEN];
        if available < PREFIX_LEN as u64 {
            return Err(self.corrupt(position, "a partial frame prefix"));
        }
        read_exact_at(&self.file, &mut prefix, position)
            .map_err(|e| BrokerError::io(&self.path, e))?;
        let (body_len, _) =
            codec::parse_prefix(prefix).map_err(|e| self.corrupt(position, e.to_string()))?;
        let frame_len = PREFIX_LEN as u64 + body_len as u64;
        if frame_len > available {
            return Err(self.corrupt(position, "a frame runs past the end of the file"));
        }
        self.read_bytes(position, frame_len).map(Some)
    }

    /// The Raft index of the segment's first frame (`None` while it has none), read once.
    pub(crate) fn first_raft_index(&self) -> Result<Option<u64>> {
        if let Some(index) = *crate::sync::lock(&self.first_raft_index) {
            return Ok(Some(index));
        }
        let Some(frame) = self.read_raw(0)? else {
            return Ok(None);
        };
        let (header, _) =
            codec::raft::split_entry(frame).map_err(|e| self.corrupt(0, e.to_string()))?;
        *crate::sync::lock(&self.first_raft_index) = header.raft_index;
        Ok(header.raft_index)
    }

    /// Where a forward scan for Raft entry `index` should start: at most about
    /// [`super::entry_marks::MARK_EVERY_BYTES`] of frames before it once scans passed it.
    /// Also the cuts so far, to note what the scan finds with ([`Segment::note_entry`]).
    pub(crate) fn entry_scan_start(&self, index: u64) -> (u64, u64) {
        let marks = crate::sync::lock(&self.entry_marks);
        (marks.scan_start(index), marks.cuts())
    }

    /// The cuts so far, read before a scan that notes its finds ([`Segment::note_entry`]).
    pub(crate) fn entry_cuts(&self) -> u64 {
        crate::sync::lock(&self.entry_marks).cuts()
    }

    /// Notes that a scan begun at `cuts` ([`Segment::entry_cuts`]) found Raft entry
    /// `index`'s frame at `position` (ignored when the file was cut since).
    pub(crate) fn note_entry(&self, index: u64, position: u64, cuts: u64) {
        crate::sync::lock(&self.entry_marks).note(index, position, cuts);
    }

    /// How many frames [`Segment::scan`] looked at so far.
    #[cfg(test)]
    pub(crate) fn frames_scanned(&self) -> u64 {
        self.frames_scanned.load(Ordering::Relaxed)
    }

    /// Forgets the cached first Raft index (the segment was cut to nothing).
    pub(crate) fn forget_first_raft_index(&self) {
        *crate::sync::lock(&self.first_raft_index) = None;
    }

    /// Reads `len` bytes at `position`; the caller has bounded `len` by the file size.
    #[expect(
        clippy::slow_vector_initialization,
        reason = "vec![0; len] is calloc, which is what costs here (see below)"
    )]
    fn read_bytes(&self, position: u64, len: u64) -> Result<Bytes> {
        // Not `vec![0; len]`: that is calloc, which jemalloc serves for a frame-sized buffer by
        // zeroing pages with madvise, and the TLB shootdowns and page faults of that were 12%
        // of Wharf's CPU in a consume profile; a plain allocation and a memset reuse pages.
        let mut buf = Vec::with_capacity(len as usize);
        buf.resize(len as usize, 0);
        read_exact_at(&self.file, &mut buf, position)
            .map_err(|e| BrokerError::io(&self.path, e))?;
        Ok(Bytes::from(buf))
    }

    /// A [`BrokerError::Corrupt`] about this file.
    pub(crate) fn corrupt(&self, position: u64, reason: impl Into<String>) -> BrokerError {
        BrokerError::Corrupt {
            path: self.path.clone(),
            position,
            reason: reason.into(),
        }
    }
}

/// Makes a directory's entries (a created or removed file) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    disk_events::before(dir)
        .and_then(|()| File::open(dir))
        .and_then(|d| d.sync_all())
        .map_err(|e| BrokerError::io(dir, e))?;
    disk_events::dir_synced(dir);
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], position: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, position)
}

#[cfg(unix)]
fn write_all_at(file: &File, buf: &[u8], position: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, position)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut position: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, position)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                position += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(windows)]
fn write_all_at(file: &File, mut buf: &[u8], mut position: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_write(buf, position)? {
            0 => return Err(std::io::ErrorKind::WriteZero.into()),
            n => {
                buf = &buf[n..];
                position += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

/// The length of the frame whose prefix is `prefix`, when the prefix parses and the frame
/// fits in the `available` bytes; why not, otherwise.
fn frame_len_within(prefix: [u8; PREFIX_LEN], available: u64) -> std::result::Result<u64, String> {
    let (body_len, _) = codec::parse_prefix(prefix).map_err(|e| e.to_string())?;
    let frame_len = PREFIX_LEN as u64 + body_len as u64;
    if frame_len > available {
        let e = DecodeError::Truncated {
            needed: frame_len as usize,
            available: available as usize,
        };
        return Err(e.to_string());
    }
    Ok(frame_len)
}
