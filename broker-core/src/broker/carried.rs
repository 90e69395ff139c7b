//! What a partition snapshot carries of the state the broker derives from the partition's
//! log ([`CarriedTables`]), and its bytes.
//!
//! Format 4 (snapshot version 4), binary, all integers big-endian:
//! - the magic [`CARRIED_MAGIC`];
//! - the subscription tables: their JSON's length (u32) and the JSON (few tables, each
//!   already a compact image);
//! - the delayed messages: their count (u64), then per message its due time (u64), its
//!   sequence number (u64), its schedule entry's length (u32) and the entry;
//! - the ids: their count (u64), then per id its length (u16) and UTF-8 bytes, when it was
//!   produced (u64), a flags byte (1: an offset follows, 2: a due time follows) and those.
//!
//! Versions 2 and 3 carried one JSON object (its first byte `{`, never the magic's), which
//! still decodes: a delayed message's entry in base64 and every field named, about twice
//! the bytes of format 4 for a partition with many delayed messages or ids (see the tests).
//! Lengths and counts from the bytes are checked against what is left before anything is
//! read or allocated by them; anything that does not decode is an error, never a panic.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

use crate::error::{BrokerError, Result};
use crate::subscription::TableImage;

/// First bytes of carried state in format 4.
pub(super) const CARRIED_MAGIC: [u8; 4] = *b"WCT4";
/// Flag of an id whose offset follows.
const HAS_OFFSET: u8 = 1;
/// Flag of an id whose due time follows.
const HAS_DUE: u8 = 2;

/// What one partition's snapshot carries: the subscription tables of every subscription (by
/// uid) that has its start on the partition, and (`None` in a version 2 snapshot) the
/// partition's delayed messages and dedup first results.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct CarriedTables {
    /// The subscription tables.
    pub tables: Vec<CarriedTable>,
    /// The delayed messages not yet due.
    pub schedule: Option<Vec<CarriedDelay>>,
    /// The ids within the dedup window.
    pub ids: Option<Vec<CarriedId>>,
}

impl CarriedTables {
    /// Nothing at all, as a partition's derived state after this node dropped its replica:
    /// no subscription table, no delayed message, no id (unlike a version 2 snapshot's
    /// `None`, which leaves the schedule and index their own).
    pub(super) fn nothing() -> Self {
        CarriedTables {
            tables: Vec::new(),
            schedule: Some(Vec::new()),
            ids: Some(Vec::new()),
        }
    }
}

/// A delayed message not yet due: its schedule entry as sled holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CarriedDelay {
    /// When it is due.
    pub due_ms: u64,
    /// Its sequence number among messages due at the same time.
    pub seq: u64,
    /// Its schedule entry.
    pub entry: Vec<u8>,
}

/// An id's first result in the dedup index (of this partition).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct CarriedId {
    /// The id.
    pub id: String,
    /// When its first message was produced.
    pub produced_ms: u64,
    /// That message's offset, if it had one.
    pub offset: Option<u64>,
    /// That message's due time, if it was delayed.
    pub deliver_at_ms: Option<u64>,
}

/// One subscription's table.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct CarriedTable {
    /// The subscription's uid.
    pub subscription: u64,
    /// Its table.
    pub table: TableImage,
}

/// The JSON form of versions 2 and 3.
#[derive(Debug, Default, Serialize, Deserialize)]
struct JsonTables {
    tables: Vec<CarriedTable>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schedule: Option<Vec<JsonDelay>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ids: Option<Vec<CarriedId>>,
}

/// A delayed message in the JSON form: its entry base64.
#[derive(Debug, Serialize, Deserialize)]
struct JsonDelay {
    due_ms: u64,
    seq: u64,
    entry: String,
}

impl CarriedTables {
    /// Its bytes in format 4.
    pub(super) fn encode(&self) -> Result<Vec<u8>> {
        let tables = serde_json::to_vec(&self.tables)
            .map_err(|e| BrokerError::invalid("snapshot tables", e.to_string()))?;
        let mut out = CARRIED_MAGIC.to_vec();
        put_len32(&mut out, tables.len(), "snapshot tables")?;
        out.extend_from_slice(&tables);
        let schedule = self.schedule.as_deref().unwrap_or_default();
        out.extend_from_slice(&(schedule.len() as u64).to_be_bytes());
        for delay in schedule {
            out.extend_from_slice(&delay.due_ms.to_be_bytes());
            out.extend_from_slice(&delay.seq.to_be_bytes());
            put_len32(&mut out, delay.entry.len(), "a schedule entry")?;
            out.extend_from_slice(&delay.entry);
        }
        let ids = self.ids.as_deref().unwrap_or_default();
        out.extend_from_slice(&(ids.len() as u64).to_be_bytes());
        for id in ids {
            let len = u16::try_from(id.id.len())
                .map_err(|_| BrokerError::invalid("a dedup id", "longer than 65535 bytes"))?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(id.id.as_bytes());
            out.extend_from_slice(&id.produced_ms.to_be_bytes());
            let flags = u8::from(id.offset.is_some()) * HAS_OFFSET
                + u8::from(id.deliver_at_ms.is_some()) * HAS_DUE;
            out.push(flags);
            for value in [id.offset, id.deliver_at_ms].into_iter().flatten() {
                out.extend_from_slice(&value.to_be_bytes());
            }
        }
        Ok(out)
    }

    /// Decodes carried state of any format: empty (none), JSON (versions 2 and 3) or
    /// format 4.
    pub(super) fn decode(bytes: &[u8]) -> Result<CarriedTables> {
        if bytes.is_empty() {
            return Ok(CarriedTables::default());
        }
        if bytes.starts_with(&CARRIED_MAGIC) {
            let mut reader = Reader(&bytes[CARRIED_MAGIC.len()..]);
            let carried = decode_binary(&mut reader)?;
            if !reader.0.is_empty() {
                return Err(undecodable("bytes after the ids"));
            }
            return Ok(carried);
        }
        let json: JsonTables =
            serde_json::from_slice(bytes).map_err(|e| undecodable(&e.to_string()))?;
        let schedule = match json.schedule {
            Some(delays) => Some(
                delays
                    .into_iter()
                    .map(|d| {
                        Ok(CarriedDelay {
                            due_ms: d.due_ms,
                            seq: d.seq,
                            entry: BASE64
                                .decode(&d.entry)
                                .map_err(|e| undecodable(&e.to_string()))?,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?,
            ),
            None => None,
        };
        Ok(CarriedTables {
            tables: json.tables,
            schedule,
            ids: json.ids,
        })
    }

    /// Its bytes in the JSON form of version 3 (what earlier builds wrote and read), less
    /// its tables (the samples of the tests have none).
    #[cfg(test)]
    fn encode_json(&self) -> Vec<u8> {
        let json = JsonTables {
            tables: Vec::new(),
            schedule: self.schedule.as_ref().map(|delays| {
                delays
                    .iter()
                    .map(|d| JsonDelay {
                        due_ms: d.due_ms,
                        seq: d.seq,
                        entry: BASE64.encode(&d.entry),
                    })
                    .collect()
            }),
            ids: self.ids.clone(),
        };
        serde_json::to_vec(&json).unwrap_or_default()
    }
}

fn decode_binary(reader: &mut Reader<'_>) -> Result<CarriedTables> {
    let tables_len = reader.u32()? as usize;
    let tables = serde_json::from_slice(reader.take(tables_len)?)
        .map_err(|e| undecodable(&e.to_string()))?;
    // Each delay takes at least 20 bytes and each id 11, so a count larger than the bytes
    // left allow is refused before it drives a loop (never an allocation: the vectors grow
    // as entries decode).
    let delays = reader.count(20)?;
    let mut schedule = Vec::new();
    for _ in 0..delays {
        let due_ms = reader.u64()?;
        let seq = reader.u64()?;
        let len = reader.u32()? as usize;
        let entry = reader.take(len)?.to_vec();
        schedule.push(CarriedDelay { due_ms, seq, entry });
    }
    let count = reader.count(11)?;
    let mut ids = Vec::new();
    for _ in 0..count {
        let len = usize::from(reader.u16()?);
        let id = std::str::from_utf8(reader.take(len)?)
            .map_err(|_| undecodable("an id that is not UTF-8"))?
            .to_owned();
        let produced_ms = reader.u64()?;
        let flags = reader.take(1)?[0];
        if flags & !(HAS_OFFSET | HAS_DUE) != 0 {
            return Err(undecodable("unknown id flags"));
        }
        let offset = (flags & HAS_OFFSET != 0)
            .then(|| reader.u64())
            .transpose()?;
        let deliver_at_ms = (flags & HAS_DUE != 0).then(|| reader.u64()).transpose()?;
        ids.push(CarriedId {
            id,
            produced_ms,
            offset,
            deliver_at_ms,
        });
    }
    Ok(CarriedTables {
        tables,
        schedule: Some(schedule),
        ids: Some(ids),
    })
}

fn put_len32(out: &mut Vec<u8>, len: usize, what: &'static str) -> Result<()> {
    let len = u32::try_from(len).map_err(|_| BrokerError::invalid(what, "4 GiB or more"))?;
    out.extend_from_slice(&len.to_be_bytes());
    Ok(())
}

/// The bytes of format 4 not yet read.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        if len > self.0.len() {
            return Err(undecodable("truncated"));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    fn u16(&mut self) -> Result<u16> {
        self.array().map(u16::from_be_bytes)
    }

    fn u32(&mut self) -> Result<u32> {
        self.array().map(u32::from_be_bytes)
    }

    fn u64(&mut self) -> Result<u64> {
        self.array().map(u64::from_be_bytes)
    }

    /// A count of items of at least `min_bytes` each, refused when the bytes left cannot
    /// hold that many.
    fn count(&mut self, min_bytes: usize) -> Result<u64> {
        let count = self.u64()?;
        let most = (self.0.len() / min_bytes) as u64;
        if count > most {
            return Err(undecodable("a count larger than the bytes left"));
        }
        Ok(count)
    }
}

/// The error of carried state that does not decode.
pub(super) fn undecodable(why: &str) -> BrokerError {
    BrokerError::Corrupt {
        path: "raft snapshot".into(),
        position: 0,
        reason: format!("the snapshot's carried state does not decode: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schedule entry's length for a small message: the partition, a one-record frame with
    /// a 36-byte id, a short key and a 100-byte value.
    const ENTRY_BYTES: usize = 200;

    fn sample(delays: u64, ids: u64) -> CarriedTables {
        let schedule = (0..delays)
            .map(|i| CarriedDelay {
                due_ms: 1_764_620_000_000 + i * 7,
                seq: i,
                entry: (0..ENTRY_BYTES).map(|b| (b as u64 ^ i) as u8).collect(),
            })
            .collect();
        let ids = (0..ids)
            .map(|i| CarriedId {
                id: format!("{i:08x}-1c2d-4e5f-8a9b-0c1d2e3f4a5b"),
                produced_ms: 1_764_610_000_000 + i,
                offset: (i % 3 != 0).then_some(i * 2),
                deliver_at_ms: (i % 3 == 0).then_some(1_764_620_000_000 + i),
            })
            .collect();
        CarriedTables {
            tables: Vec::new(),
            schedule: Some(schedule),
            ids: Some(ids),
        }
    }

    #[test]
    fn format_4_decodes_back_and_the_json_form_still_decodes() {
        let carried = sample(50, 50);
        let binary = carried.encode().expect("encodes");
        assert_eq!(CarriedTables::decode(&binary).expect("decodes"), carried);
        let json = carried.encode_json();
        assert_eq!(json.first(), Some(&b'{'));
        assert_eq!(CarriedTables::decode(&json).expect("decodes"), carried);
        let version_2 = br#"{"tables":[]}"#;
        assert_eq!(
            CarriedTables::decode(version_2).expect("decodes"),
            CarriedTables::default()
        );
        assert_eq!(
            CarriedTables::decode(&[]).expect("decodes"),
            CarriedTables::default()
        );
    }

    #[test]
    fn every_truncation_and_a_huge_count_are_errors() {
        let binary = sample(3, 3).encode().expect("encodes");
        for len in 1..binary.len() {
            assert!(
                CarriedTables::decode(&binary[..len]).is_err(),
                "{len} of {} bytes decoded",
                binary.len()
            );
        }
        let mut longer = binary.clone();
        longer.push(0);
        assert!(CarriedTables::decode(&longer).is_err());
        let empty = CarriedTables::default().encode().expect("encodes");
        let mut huge = empty[..empty.len() - 16].to_vec();
        huge.extend_from_slice(&u64::MAX.to_be_bytes());
        huge.extend_from_slice(&0u64.to_be_bytes());
        assert!(CarriedTables::decode(&huge).is_err());
    }

    /// 10k delayed messages and 10k ids: format 4 against the JSON of version 3 (at 100k of
    /// each, 27.5 MB against 42.9 MB; the ids alone 5.5 MB against 11.3 MB).
    #[test]
    fn format_4_is_much_smaller_than_json_for_many_delays_and_ids() {
        let carried = sample(10_000, 10_000);
        let json = carried.encode_json().len();
        let binary = carried.encode().expect("encodes").len();
        eprintln!(
            "10k delays of {ENTRY_BYTES} bytes and 10k ids: JSON {json} bytes, format 4 {binary} bytes"
        );
        let only_ids = sample(0, 10_000);
        eprintln!(
            "10k ids alone: JSON {} bytes, format 4 {} bytes",
            only_ids.encode_json().len(),
            only_ids.encode().expect("encodes").len()
        );
        assert!(binary * 10 < json * 7, "JSON {json}, format 4 {binary}");
    }
}
