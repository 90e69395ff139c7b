//! The small durable state of a replicated partition's Raft log besides its entries: the
//! vote, the last purged entry's id, the committed entry's id and a repair claim, as bytes
//! the replication layer encodes. One file, `raft_state`, beside the segments, replaced
//! atomically.
//!
//! ```text
//! file  = b"WRST" | version u8 (2) | crc32c(fields) u32 | fields
//! field = present u8 | [len u32 | bytes]      (vote, purged, committed, claim, in that order)
//! ```
//! Version 1 files (no claim) still load.
//! A save writes a temporary file, fsyncs it, renames it over the old one and fsyncs the
//! directory, so a crash leaves the old state or the new one, never a mix. A file that fails
//! its CRC is an error: the vote must never silently go back.

use std::io::Write;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::segment::sync_dir;
use crate::error::{BrokerError, Result};

const FILE_NAME: &str = "raft_state";
const TEMP_NAME: &str = "raft_state.tmp";
const MAGIC: &[u8; 4] = b"WRST";
const VERSION: u8 = 2;
/// The version before the repair claim: three fields.
const VERSION_WITHOUT_CLAIM: u8 = 1;
/// Largest field: a vote and a log id are tens of bytes; this leaves room for any encoding
/// and bounds what a damaged file can make us allocate.
pub const MAX_RAFT_STATE_FIELD: usize = 64 * 1024;

/// The vote, the last purged id and the committed id, opaque.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RaftState {
    /// The node's current vote.
    pub vote: Option<Bytes>,
    /// The id of the last entry purged from the log.
    pub purged: Option<Bytes>,
    /// The id of the last entry known committed.
    pub committed: Option<Bytes>,
    /// While a replica re-syncs entries it lost to damage: the id of the last entry it held
    /// before (see `raft::repair`).
    pub claim: Option<Bytes>,
}

impl RaftState {
    /// The state saved in `dir`; the default when none was ever saved. Blocking file I/O.
    pub fn load(dir: &Path) -> Result<RaftState> {
        let path = dir.join(FILE_NAME);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RaftState::default()),
            Err(e) => return Err(BrokerError::io(&path, e)),
        };
        decode(&bytes).ok_or_else(|| BrokerError::Corrupt {
            path,
            position: 0,
            reason: "the Raft state file is damaged".into(),
        })
    }

    /// Replaces the state saved in `dir`, durably, before it returns. Blocking file I/O.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let bytes = self.encode()?;
        let temp = dir.join(TEMP_NAME);
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(&bytes)?;
            file.sync_all()
        };
        write().map_err(|e| BrokerError::io(&temp, e))?;
        let path: PathBuf = dir.join(FILE_NAME);
        std::fs::rename(&temp, &path).map_err(|e| BrokerError::io(&path, e))?;
        sync_dir(dir)
    }

    /// Deletes the state saved in `dir`, durably (none saved: nothing to do): a replica
    /// dropped from this node starts again from no vote. Blocking file I/O.
    pub fn remove(dir: &Path) -> Result<()> {
        for name in [FILE_NAME, TEMP_NAME] {
            let path = dir.join(name);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(BrokerError::io(&path, e)),
            }
        }
        sync_dir(dir)
    }

    fn encode(&self) -> Result<Vec<u8>> {
        let mut fields = Vec::new();
        for field in [&self.vote, &self.purged, &self.committed, &self.claim] {
            match field {
                None => fields.push(0),
                Some(bytes) if bytes.len() <= MAX_RAFT_STATE_FIELD => {
                    fields.push(1);
                    fields.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    fields.extend_from_slice(bytes);
                }
                Some(bytes) => {
                    let reason = format!("{} bytes, over {MAX_RAFT_STATE_FIELD}", bytes.len());
                    return Err(BrokerError::invalid("raft state", reason));
                }
            }
        }
        let mut out = Vec::with_capacity(9 + fields.len());
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&crc32c::crc32c(&fields).to_le_bytes());
        out.extend_from_slice(&fields);
        Ok(out)
    }
}

fn decode(bytes: &[u8]) -> Option<RaftState> {
    let (head, fields) = bytes.split_at_checked(9)?;
    if &head[..4] != MAGIC || (head[4] != VERSION && head[4] != VERSION_WITHOUT_CLAIM) {
        return None;
    }
    let version = head[4];
    let crc = u32::from_le_bytes(head[5..9].try_into().ok()?);
    if crc32c::crc32c(fields) != crc {
        return None;
    }
    let mut rest = fields;
    let mut next = || -> Option<Option<Bytes>> {
        let (&present, after) = rest.split_first()?;
        rest = after;
        if present == 0 {
            return Some(None);
        }
        let (len, after) = rest.split_at_checked(4)?;
        let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
        if len > MAX_RAFT_STATE_FIELD {
            return None;
        }
        let (value, after) = after.split_at_checked(len)?;
        rest = after;
        Some(Some(Bytes::copy_from_slice(value)))
    };
    let state = RaftState {
        vote: next()?,
        purged: next()?,
        committed: next()?,
        claim: match version {
            VERSION_WITHOUT_CLAIM => None,
            _ => next()?,
        },
    };
    rest.is_empty().then_some(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_state_loads_back_and_a_missing_one_is_empty() {
        let dir = tempfile::tempdir().expect("dir");
        assert_eq!(
            RaftState::load(dir.path()).expect("loads"),
            RaftState::default()
        );
        let state = RaftState {
            vote: Some(Bytes::from_static(b"term 3, node 2")),
            purged: None,
            committed: Some(Bytes::new()),
            claim: Some(Bytes::from_static(b"term 3, entry 40")),
        };
        state.save(dir.path()).expect("saves");
        assert_eq!(RaftState::load(dir.path()).expect("loads"), state);
        let newer = RaftState {
            purged: Some(Bytes::from_static(b"1-40")),
            ..state
        };
        newer.save(dir.path()).expect("saves");
        assert_eq!(RaftState::load(dir.path()).expect("loads"), newer);
    }

    #[test]
    fn a_version_1_file_without_a_claim_still_loads() {
        let dir = tempfile::tempdir().expect("dir");
        let mut fields = vec![1];
        fields.extend_from_slice(&4u32.to_le_bytes());
        fields.extend_from_slice(b"vote");
        fields.extend_from_slice(&[0, 0]);
        let mut file = MAGIC.to_vec();
        file.push(VERSION_WITHOUT_CLAIM);
        file.extend_from_slice(&crc32c::crc32c(&fields).to_le_bytes());
        file.extend_from_slice(&fields);
        std::fs::write(dir.path().join(FILE_NAME), &file).expect("writes");
        let loaded = RaftState::load(dir.path()).expect("loads");
        assert_eq!(loaded.vote.as_deref(), Some(&b"vote"[..]));
        assert_eq!(
            (loaded.purged, loaded.committed, loaded.claim),
            (None, None, None)
        );
    }

    #[test]
    fn a_damaged_state_file_is_an_error_never_an_empty_vote() {
        let dir = tempfile::tempdir().expect("dir");
        let state = RaftState {
            vote: Some(Bytes::from_static(b"vote")),
            ..RaftState::default()
        };
        state.save(dir.path()).expect("saves");
        let path = dir.path().join(FILE_NAME);
        let good = std::fs::read(&path).expect("reads");
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            std::fs::write(&path, &bad).expect("writes");
            assert!(
                RaftState::load(dir.path()).is_err(),
                "flipping byte {at} loaded"
            );
        }
        for cut in 0..good.len() {
            std::fs::write(&path, &good[..cut]).expect("writes");
            assert!(
                RaftState::load(dir.path()).is_err(),
                "a file cut at {cut} loaded"
            );
        }
    }
}
