//! A partition snapshot's bytes, the state derived from the log that it carries, and the file
//! a replica keeps its latest snapshot in.
//!
//! A snapshot stands in for the log prefix a purge deletes, so it holds what a replica needs
//! from that prefix: where the log continues (the next offset) and the state the broker
//! derives from the prefix's control entries (subscription tables: see [`DerivedState`]),
//! opaque to this module. Format, version [`SNAPSHOT_VERSION`] (4; versions 2 and 3 have the
//! same framing and are still read, see [`SNAPSHOT_VERSION_2`] and [`SNAPSHOT_VERSION_3`]): the magic [`SNAPSHOT_MAGIC`],
//! the version byte, the next offset (u64), the derived state's length (u64) and bytes, and
//! a CRC32C of everything before it (u32), all big-endian. A version 1 snapshot (JSON
//! `{"next_offset":N}`, built before snapshots carried derived state) still decodes, with no
//! derived state. Anything else (truncated, corrupt, an unknown version) is a
//! [`SnapshotError`], never a panic.

use std::io::Write;
use std::path::Path;

use bytes::Bytes;
use openraft::SnapshotMeta;
use serde::{Deserialize, Serialize};

use super::types::NodeInfo;
use crate::error::{BrokerError, Result};

/// First bytes of a partition snapshot.
pub const SNAPSHOT_MAGIC: [u8; 4] = *b"WSNP";
/// The snapshot format this build writes.
pub const SNAPSHOT_VERSION: u8 = 4;
/// The earlier version with the same framing whose derived state is JSON carrying the delay
/// schedule and dedup ids too; still read (version 4 carries them in a compact binary form,
/// about half the bytes with many delayed messages or ids).
pub const SNAPSHOT_VERSION_3: u8 = 3;
/// The earlier version with the same framing, still read: its derived state carries the
/// subscription tables only (version 3 adds the delay schedule and dedup ids, which the
/// broker finds missing in a version 2 one).
pub const SNAPSHOT_VERSION_2: u8 = 2;
/// Bytes of a version 2, 3 or 4 snapshot besides its derived state: magic, version, next offset,
/// length, checksum.
const FRAMING_BYTES: usize = 4 + 1 + 8 + 8 + 4;
/// The file holding a replica's latest snapshot, in its partition's directory.
pub const SNAPSHOT_FILE: &str = "raft-snapshot";

/// Why snapshot bytes do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// Fewer bytes than the format needs.
    #[error("truncated snapshot: {0} bytes")]
    Truncated(usize),
    /// Not a partition snapshot.
    #[error("not a partition snapshot (bad magic)")]
    BadMagic,
    /// A version this build does not read.
    #[error("unknown snapshot version {0}")]
    UnknownVersion(u8),
    /// The checksum does not match.
    #[error("snapshot checksum mismatch")]
    BadChecksum,
    /// A version 1 (JSON) snapshot that does not parse.
    #[error("bad version 1 snapshot: {0}")]
    BadLegacy(String),
}

/// What a partition snapshot holds besides its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotBody {
    /// The offset the next message gets after the snapshot's last entry.
    pub next_offset: u64,
    /// The broker's derived state as of the snapshot's last entry (empty: none).
    pub derived: Bytes,
}

#[derive(Deserialize)]
struct LegacyBody {
    next_offset: u64,
}

impl SnapshotBody {
    /// The snapshot's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(FRAMING_BYTES + self.derived.len());
        bytes.extend_from_slice(&SNAPSHOT_MAGIC);
        bytes.push(SNAPSHOT_VERSION);
        bytes.extend_from_slice(&self.next_offset.to_be_bytes());
        bytes.extend_from_slice(&(self.derived.len() as u64).to_be_bytes());
        bytes.extend_from_slice(&self.derived);
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_be_bytes());
        bytes
    }

    /// Decodes snapshot bytes of any version this build reads.
    pub fn decode(bytes: &[u8]) -> std::result::Result<SnapshotBody, SnapshotError> {
        if bytes.first() == Some(&b'{') {
            let legacy: LegacyBody = serde_json::from_slice(bytes)
                .map_err(|e| SnapshotError::BadLegacy(e.to_string()))?;
            return Ok(SnapshotBody {
                next_offset: legacy.next_offset,
                derived: Bytes::new(),
            });
        }
        if bytes.len() < 5 {
            return Err(SnapshotError::Truncated(bytes.len()));
        }
        if bytes[..4] != SNAPSHOT_MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        if ![SNAPSHOT_VERSION, SNAPSHOT_VERSION_3, SNAPSHOT_VERSION_2].contains(&bytes[4]) {
            return Err(SnapshotError::UnknownVersion(bytes[4]));
        }
        if bytes.len() < FRAMING_BYTES {
            return Err(SnapshotError::Truncated(bytes.len()));
        }
        let next_offset = u64_at(bytes, 5);
        let derived_len = usize::try_from(u64_at(bytes, 13)).unwrap_or(usize::MAX);
        if bytes.len() != FRAMING_BYTES.saturating_add(derived_len) {
            return Err(SnapshotError::Truncated(bytes.len()));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let crc_bytes: [u8; 4] = crc.try_into().map_err(|_| SnapshotError::BadChecksum)?;
        if crc32c::crc32c(body) != u32::from_be_bytes(crc_bytes) {
            return Err(SnapshotError::BadChecksum);
        }
        Ok(SnapshotBody {
            next_offset,
            derived: Bytes::copy_from_slice(&body[21..]),
        })
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(word)
}

/// The state the broker derives from one partition's log (its subscription tables), which a
/// snapshot carries for the log prefix a purge deletes. Both calls are blocking (the state
/// machine runs them on the blocking pool).
pub trait DerivedState: Send + Sync {
    /// The index the next snapshot should end at: the last entry retention would delete now
    /// (`None`: nothing to delete; the snapshot ends at the last applied entry). A snapshot
    /// ends no later, so a follower installing it still gets every entry the leader keeps.
    fn snapshot_point(&self) -> Result<Option<u64>>;

    /// The derived state as of the log's frames before `until` (the end of the snapshot's
    /// last entry; every entry up to it is visible to readers), or of a little more of the
    /// log: the replica installing it replays the log after the snapshot on top, and
    /// replaying a stretch again changes nothing.
    fn capture(&self, until: crate::storage::LogPosition) -> Result<Bytes>;

    /// Replaces the derived state with `derived` (what [`DerivedState::capture`] returned
    /// on the replica that built the snapshot; empty: a snapshot that carries none), after
    /// the log was reset to continue where the snapshot ends.
    fn install(&self, derived: &[u8]) -> Result<()>;
}

/// Derived state of a log the broker derives nothing from (the controller's, tests' logs).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDerivedState;

impl DerivedState for NoDerivedState {
    fn snapshot_point(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    fn capture(&self, _until: crate::storage::LogPosition) -> Result<Bytes> {
        Ok(Bytes::new())
    }

    fn install(&self, _derived: &[u8]) -> Result<()> {
        Ok(())
    }
}

/// The latest snapshot a replica built or installed, as its file holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct SnapshotFile {
    /// Its metadata.
    pub meta: SnapshotMeta<u64, NodeInfo>,
    /// Its bytes ([`SnapshotBody::encode`]).
    #[serde(with = "bytes_as_base64")]
    pub bytes: Vec<u8>,
}

mod bytes_as_base64 {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

impl SnapshotFile {
    /// Writes it to `dir`'s snapshot file, durably (a new file renamed over the old one).
    /// Blocking.
    pub fn save(&self, dir: &Path) -> Result<()> {
        let path = dir.join(SNAPSHOT_FILE);
        let temporary = dir.join(format!("{SNAPSHOT_FILE}.tmp"));
        let text = serde_json::to_vec(self)
            .map_err(|e| BrokerError::invalid("raft snapshot", e.to_string()))?;
        let mut file =
            std::fs::File::create(&temporary).map_err(|e| BrokerError::io(&temporary, e))?;
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(|e| BrokerError::io(&temporary, e))?;
        std::fs::rename(&temporary, &path).map_err(|e| BrokerError::io(&path, e))?;
        crate::storage::sync_dir(dir)
    }

    /// The snapshot in `dir`'s snapshot file, if there is one; a file that does not decode is
    /// an error. Blocking.
    pub fn load(dir: &Path) -> Result<Option<SnapshotFile>> {
        let path = dir.join(SNAPSHOT_FILE);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(BrokerError::io(&path, e)),
        };
        let file: SnapshotFile =
            serde_json::from_slice(&text).map_err(|e| BrokerError::Corrupt {
                path: path.clone(),
                position: 0,
                reason: format!("snapshot file: {e}"),
            })?;
        SnapshotBody::decode(&file.bytes).map_err(|e| BrokerError::Corrupt {
            path,
            position: 0,
            reason: e.to_string(),
        })?;
        Ok(Some(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> SnapshotBody {
        SnapshotBody {
            next_offset: 42,
            derived: Bytes::from_static(b"tables"),
        }
    }

    #[test]
    fn a_body_decodes_back() {
        assert_eq!(SnapshotBody::decode(&body().encode()), Ok(body()));
    }

    #[test]
    fn a_version_1_body_decodes_with_no_derived_state() {
        let decoded = SnapshotBody::decode(br#"{"next_offset":7}"#);
        assert_eq!(
            decoded,
            Ok(SnapshotBody {
                next_offset: 7,
                derived: Bytes::new()
            })
        );
    }

    #[test]
    fn version_2_and_3_bodies_still_decode_and_this_build_writes_version_4() {
        assert_eq!(body().encode()[4], 4);
        for version in [SNAPSHOT_VERSION_2, SNAPSHOT_VERSION_3] {
            let mut bytes = body().encode();
            bytes[4] = version;
            let end = bytes.len() - 4;
            let crc = crc32c::crc32c(&bytes[..end]);
            bytes[end..].copy_from_slice(&crc.to_be_bytes());
            assert_eq!(SnapshotBody::decode(&bytes), Ok(body()));
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = body().encode();
        for len in 0..bytes.len() {
            assert!(
                SnapshotBody::decode(&bytes[..len]).is_err(),
                "{len} bytes decoded"
            );
        }
    }

    #[test]
    fn a_flipped_bit_an_unknown_version_and_a_foreign_file_are_errors() {
        let mut flipped = body().encode();
        flipped[22] ^= 1;
        assert_eq!(
            SnapshotBody::decode(&flipped),
            Err(SnapshotError::BadChecksum)
        );
        let mut later = body().encode();
        later[4] = SNAPSHOT_VERSION + 1;
        assert_eq!(
            SnapshotBody::decode(&later),
            Err(SnapshotError::UnknownVersion(SNAPSHOT_VERSION + 1))
        );
        assert_eq!(
            SnapshotBody::decode(b"PK\x03\x04 not a snapshot at all"),
            Err(SnapshotError::BadMagic)
        );
    }
}
