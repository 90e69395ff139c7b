//! Time in Unix epoch milliseconds, the unit of every `*_ms` field: the node's wall clock
//! ([`now_ms`]) and its steady clock ([`steady_ms`]), which deadlines are timed on.
//!
//! Every read of the wall clock in the broker and the gateway goes through [`now_ms`] (or
//! [`now_secs`]), so that a test can skew one node's clock: see [`OFFSET_FILE_VAR`].
//!
//! - [`now_ms`] follows the system clock, steps included: record timestamps, retention,
//!   dedup windows, absolute `deliver_at_ms` as the client gave it, JWT `exp`/`nbf`.
//! - [`steady_ms`] is the wall clock read once, at the first call, advanced by the monotonic
//!   clock since. A step of the system clock while the node runs (an NTP step, a test jump)
//!   moves none of the deadlines timed on it: message leases and the due times of delayed
//!   messages (`delay_ms` is relative, so it is timed where it is scheduled). It takes up a
//!   step at the node's next start; a constant skew shifts both clocks alike.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// TESTING ONLY. Names a file holding a signed offset in milliseconds (`30000`, `-30000`)
/// added to this process's wall clock ([`now_ms`], [`now_secs`]). The file is re-read at most
/// every [`OFFSET_REREAD_EVERY`], so a test makes the clock jump mid-run by rewriting it; a
/// missing or unparsable file counts as offset 0. Fault-injection tests (reliability case
/// R10, clock skew) set it on one node; never set it in production.
pub const OFFSET_FILE_VAR: &str = "WHARF_TEST_CLOCK_OFFSET_FILE";

/// How often the offset file is read again at most: a jump is seen within this, and a busy
/// node reads the small file at most 20 times a second.
pub const OFFSET_REREAD_EVERY: Duration = Duration::from_millis(50);

/// The test offset named by [`OFFSET_FILE_VAR`], cached.
struct Offset {
    path: PathBuf,
    /// The offset last read, ms.
    offset_ms: AtomicI64,
    /// When to read the file again, in ns since `since`.
    next_read_ns: AtomicU64,
    since: Instant,
}

impl Offset {
    fn current(&self) -> i64 {
        let elapsed = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let due = self.next_read_ns.load(Ordering::Relaxed);
        let next = elapsed.saturating_add(OFFSET_REREAD_EVERY.as_nanos() as u64);
        // One caller per period reads the file; the others use the cached value. The read is
        // a small local file, only ever on a test node.
        if elapsed >= due
            && self
                .next_read_ns
                .compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.offset_ms
                .store(read_offset(&self.path), Ordering::Relaxed);
        }
        self.offset_ms.load(Ordering::Relaxed)
    }
}

fn read_offset(path: &PathBuf) -> i64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0)
}

fn offset() -> Option<&'static Offset> {
    static OFFSET: OnceLock<Option<Offset>> = OnceLock::new();
    OFFSET
        .get_or_init(|| {
            let path = PathBuf::from(std::env::var_os(OFFSET_FILE_VAR)?);
            let offset_ms = AtomicI64::new(read_offset(&path));
            Some(Offset {
                path,
                offset_ms,
                next_read_ns: AtomicU64::new(OFFSET_REREAD_EVERY.as_nanos() as u64),
                since: Instant::now(),
            })
        })
        .as_ref()
}

/// Milliseconds since the Unix epoch by the system clock, plus the test offset of
/// [`OFFSET_FILE_VAR`] if set (0 if the result is before 1970).
pub fn now_ms() -> u64 {
    u64::try_from(now_nanos() / NANOS_PER_MS).unwrap_or(u64::MAX)
}

const NANOS_PER_MS: u128 = 1_000_000;

/// [`now_ms`] in nanoseconds, so that [`steady_ms`] rounds like it.
fn now_nanos() -> u128 {
    let system = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    match offset() {
        None => system,
        Some(offset) => {
            let shift = i128::from(offset.current()) * NANOS_PER_MS as i128;
            u128::try_from((system as i128).saturating_add(shift)).unwrap_or(0)
        }
    }
}

/// Seconds since the Unix epoch by [`now_ms`].
pub fn now_secs() -> u64 {
    now_ms() / 1000
}

/// The steady clock, in Unix epoch milliseconds: [`now_ms`] at this process's first call,
/// plus the monotonic time elapsed since. Deadlines (leases, delayed messages' due times) are
/// timed on it, so a step of the wall clock while the node runs neither expires a lease
/// early nor makes a delayed message due early.
pub fn steady_ms() -> u64 {
    static ANCHOR: OnceLock<(u128, Instant)> = OnceLock::new();
    let (wall, at) = ANCHOR.get_or_init(|| (now_nanos(), Instant::now()));
    // Summed in nanoseconds: without a jump it reads what `now_ms` reads, not up to 2 ms less.
    u64::try_from(wall.saturating_add(at.elapsed().as_nanos()) / NANOS_PER_MS).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steady_clock_starts_at_the_wall_clock_and_never_goes_back() {
        let first = steady_ms();
        let wall = now_ms();
        assert!(first <= wall.saturating_add(1) && wall.saturating_sub(first) < 60_000);
        let later = steady_ms();
        assert!(later >= first);
    }

    #[test]
    fn an_offset_file_is_read_as_signed_milliseconds_and_a_bad_one_as_zero() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("offset");
        std::fs::write(&path, "-30000\n").expect("write");
        assert_eq!(read_offset(&path), -30_000);
        std::fs::write(&path, "soon").expect("write");
        assert_eq!(read_offset(&path), 0);
        assert_eq!(read_offset(&dir.path().join("missing")), 0);
    }
}
