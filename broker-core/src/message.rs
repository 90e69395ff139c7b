//! Messages as producers hand them in and as the log stores and returns them.

use std::net::IpAddr;
use std::sync::Arc;

use bytes::Bytes;

use crate::trace_context::TraceContext;

/// One message as stored in the log. The broker assigns `id` (unless the producer chose one)
/// and `timestamp_ms`; the log assigns the offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Opaque message id, at most [`crate::limits::MAX_ID_BYTES`] bytes.
    pub id: String,
    /// Publish time, Unix epoch milliseconds.
    pub timestamp_ms: u64,
    /// Partitioning key, if any.
    pub key: Option<String>,
    /// The payload.
    pub value: Bytes,
    /// Whether the producer sent the value as binary (base64 or octet-stream) rather than text;
    /// consumers get it back the same way.
    pub binary: bool,
    /// It came off the delay schedule: `timestamp_ms` is the time it is due, and neither a
    /// subscription nor an offset read hands it out before then (it is appended a little
    /// ahead, see [`crate::broker::PRESTAGE_LEAD_MS`]).
    pub scheduled: bool,
    /// The producer chose `id` and the topic remembers it for its dedup window: the dedup
    /// index is derived from the records (and scheduled events) that carry this mark, so a
    /// restart or a replica rebuilds it from the log.
    pub client_id: bool,
    /// Application headers, in the order given.
    pub headers: Vec<(String, String)>,
    /// Tags for subscription filters.
    pub tags: Vec<String>,
    /// The producer's W3C trace context, handed back on every delivery.
    pub trace: Option<TraceContext>,
    /// Who produced it, for the message trace and admins only (never shown to consumers).
    /// Shared by the records of one produce: the log stores it once per run of records
    /// with the same origin.
    pub origin: Option<Arc<Origin>>,
}

/// Who produced a message, from where, through which node. Its time is the record's
/// `timestamp_ms`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Origin {
    /// The token's `sub`; none on a server without auth.
    pub principal: Option<String>,
    /// The client's address (behind a trusted proxy, the one it forwarded for).
    pub address: Option<IpAddr>,
    /// The node that took the produce from the client; none on a single node.
    pub node: Option<u64>,
}

impl Record {
    /// Approximate bytes this record occupies, for size limits and accounting.
    pub fn approx_size(&self) -> usize {
        let headers: usize = self.headers.iter().map(|(k, v)| k.len() + v.len()).sum();
        let tags: usize = self.tags.iter().map(String::len).sum();
        let trace = self.trace.as_ref().map_or(0, TraceContext::len);
        self.id.len()
            + self.key.as_ref().map_or(0, String::len)
            + self.value.len()
            + headers
            + tags
            + trace
    }
}

/// A record read back from the log, with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord {
    /// The record's offset within its partition.
    pub offset: u64,
    /// The leader epoch of the batch that holds it.
    pub leader_epoch: u64,
    /// The record itself.
    pub record: Record,
}
