//! The disk ceiling (`ceiling-disk`): append a batch and `fdatasync`, again and again, to one
//! file in the data folder: what the storage under Wharf can do at best for the same batch
//! sizes, with the same durability (an fsync before every answer) and no group commit.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::latency::Latencies;
use crate::wire;

/// The file is cut back to empty past this size, as a log rolls to a new segment, so a long
/// run never fills the disk.
pub const ROLL_BYTES: u64 = 256 * 1024 * 1024;

/// What to append.
#[derive(Debug, Clone)]
pub struct DiskSpec {
    /// The folder to write in (Wharf's data folder, so the same filesystem).
    pub dir: PathBuf,
    /// Bytes per append (1 KiB, 100 KiB).
    pub batch_bytes: usize,
    /// How long to append.
    pub duration: Duration,
    /// Most appends.
    pub max_appends: u64,
}

/// What the appends achieved.
#[derive(Debug)]
pub struct DiskRun {
    /// Appends done (each fdatasynced).
    pub appends: u64,
    /// Bytes appended.
    pub bytes: u64,
    /// Time taken.
    pub elapsed: Duration,
    /// Latency of each write + fdatasync.
    pub latency: Latencies,
}

/// Appends + fdatasyncs for `spec.duration`, then removes the file. Blocking.
pub fn append_and_sync(spec: &DiskSpec) -> std::io::Result<DiskRun> {
    let path = spec
        .dir
        .join(format!("ceiling-disk-{:08x}.tmp", rand::random::<u32>()));
    let result = run(&path, spec);
    let _removed = std::fs::remove_file(&path);
    result
}

fn run(path: &Path, spec: &DiskSpec) -> std::io::Result<DiskRun> {
    let mut file: File = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)?;
    let batch = wire::text_value(spec.batch_bytes).into_bytes();
    let mut latency = Latencies::new();
    let (mut appends, mut written) = (0u64, 0u64);
    let started = Instant::now();
    while started.elapsed() < spec.duration && appends < spec.max_appends {
        if written >= ROLL_BYTES {
            file.set_len(0)?;
            file.sync_all()?;
            written = 0;
        }
        let start = Instant::now();
        file.write_all(&batch)?;
        file.sync_data()?;
        latency.record(start.elapsed());
        appends += 1;
        written += batch.len() as u64;
    }
    Ok(DiskRun {
        appends,
        bytes: appends * batch.len() as u64,
        elapsed: started.elapsed(),
        latency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_are_counted_and_the_file_is_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let spec = DiskSpec {
            dir: dir.path().to_owned(),
            batch_bytes: 1024,
            duration: Duration::from_secs(5),
            max_appends: 20,
        };
        let run = append_and_sync(&spec).expect("appends");
        assert_eq!(run.appends, 20);
        assert_eq!(run.bytes, 20 * 1024);
        assert_eq!(run.latency.count(), 20);
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }
}
