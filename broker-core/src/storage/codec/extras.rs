//! The optional tail of a record: its W3C trace context and its origin, each behind a flag
//! bit of the record so that records without them (and every record written before the
//! bits existed) keep their old bytes.
//!
//! ```text
//! trace  (flag 8)  = traceparent: u8 len, bytes | tracestate: u16 len, bytes (0: none)
//! origin (flag 16) = fields u8 (bit 0: principal, bit 1: IPv4, bit 2: IPv6, bit 3: node)
//!                    | principal: varint len, bytes | address: 4 or 16 bytes | node: varint
//! origin (flag 32) = nothing: the same origin as the record before it in the frame
//! ```
//! A produce's records share one origin, so a frame (or a Raft entry, which may join several
//! produces) stores it once per run of records with the same origin: the first record of
//! every frame body, and of every joined body, carries it in full. Varints are unsigned
//! LEB128, at most 10 bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use super::{Cursor, DecodeError, put_u16_bytes, too_big};
use crate::error::Result;
use crate::message::{Origin, Record};
use crate::trace_context::TraceContext;

/// The record carries a trace context.
pub(super) const FLAG_TRACE: u8 = 8;
/// The record carries its origin in full.
pub(super) const FLAG_ORIGIN: u8 = 16;
/// The record's origin is the one of the record before it in the same frame.
pub(super) const FLAG_ORIGIN_AS_BEFORE: u8 = 32;

const HAS_PRINCIPAL: u8 = 1;
const HAS_IPV4: u8 = 2;
const HAS_IPV6: u8 = 4;
const HAS_NODE: u8 = 8;
/// Longest varint of a u64.
const MAX_VARINT_BYTES: usize = 10;

/// The flag bits for `record`'s extras, given the record encoded before it in the frame.
pub(super) fn flags(record: &Record, previous: Option<&Record>) -> u8 {
    let trace = if record.trace.is_some() {
        FLAG_TRACE
    } else {
        0
    };
    let origin = match (&record.origin, previous.and_then(|p| p.origin.as_ref())) {
        (None, _) => 0,
        (Some(origin), Some(before)) if origin == before => FLAG_ORIGIN_AS_BEFORE,
        (Some(_), _) => FLAG_ORIGIN,
    };
    trace | origin
}

/// Bytes the extras take at most (an origin is counted in full).
pub(super) fn encoded_len(record: &Record) -> usize {
    let trace = record.trace.as_ref().map_or(0, |t| {
        1 + t.traceparent().len() + 2 + t.tracestate().map_or(0, str::len)
    });
    let origin = record.origin.as_ref().map_or(0, |o| {
        let principal = o
            .principal
            .as_ref()
            .map_or(0, |p| MAX_VARINT_BYTES + p.len());
        1 + principal + 16 + MAX_VARINT_BYTES
    });
    trace + origin
}

/// Appends the extras that `flags` (from [`flags`]) announces.
pub(super) fn put(buf: &mut Vec<u8>, record: &Record, flags: u8) -> Result<()> {
    if let Some(trace) = &record.trace {
        let parent = trace.traceparent().as_bytes();
        let len = u8::try_from(parent.len())
            .map_err(|_| too_big(format!("a traceparent of {} bytes", parent.len())))?;
        buf.push(len);
        buf.extend_from_slice(parent);
        put_u16_bytes(
            buf,
            trace.tracestate().unwrap_or("").as_bytes(),
            "tracestate",
        )?;
    }
    if let Some(origin) = record
        .origin
        .as_deref()
        .filter(|_| flags & FLAG_ORIGIN != 0)
    {
        put_origin(buf, origin);
    }
    Ok(())
}

/// Appends `origin` in full (also a subscription event's consumer, see
/// `subscription::events`).
pub(crate) fn put_origin(buf: &mut Vec<u8>, origin: &Origin) {
    let address = match origin.address {
        None => 0,
        Some(IpAddr::V4(_)) => HAS_IPV4,
        Some(IpAddr::V6(_)) => HAS_IPV6,
    };
    let principal = if origin.principal.is_some() {
        HAS_PRINCIPAL
    } else {
        0
    };
    let node = if origin.node.is_some() { HAS_NODE } else { 0 };
    buf.push(principal | address | node);
    if let Some(principal) = &origin.principal {
        put_varint(buf, principal.len() as u64);
        buf.extend_from_slice(principal.as_bytes());
    }
    match origin.address {
        Some(IpAddr::V4(v4)) => buf.extend_from_slice(&v4.octets()),
        Some(IpAddr::V6(v6)) => buf.extend_from_slice(&v6.octets()),
        None => {}
    }
    if let Some(node) = origin.node {
        put_varint(buf, node);
    }
}

fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

/// Reads the trace context a record with `flags` carries.
pub(super) fn get_trace(
    cursor: &mut Cursor,
    flags: u8,
) -> Result<Option<TraceContext>, DecodeError> {
    if flags & FLAG_TRACE == 0 {
        return Ok(None);
    }
    let parent_len = cursor.u8()?.into();
    let traceparent = cursor.string(parent_len, "traceparent")?;
    let state_len = cursor.u16()?.into();
    let tracestate = cursor.string(state_len, "tracestate")?;
    let tracestate = (!tracestate.is_empty()).then_some(tracestate);
    Ok(Some(TraceContext::stored(traceparent, tracestate)))
}

/// Reads the origin a record with `flags` carries, `previous` being the origin of the record
/// before it in the frame.
pub(super) fn get_origin(
    cursor: &mut Cursor,
    flags: u8,
    previous: Option<&Arc<Origin>>,
) -> Result<Option<Arc<Origin>>, DecodeError> {
    match (flags & FLAG_ORIGIN != 0, flags & FLAG_ORIGIN_AS_BEFORE != 0) {
        (false, false) => Ok(None),
        (true, false) => Ok(Some(Arc::new(get_origin_fields(cursor)?))),
        (false, true) => previous
            .cloned()
            .map(Some)
            .ok_or(DecodeError::BadFlags(flags)),
        (true, true) => Err(DecodeError::BadFlags(flags)),
    }
}

/// Steps over the trace context and origin a record with `flags` carries (a walk that keeps
/// neither: `codec::marks`).
pub(super) fn step_over(cursor: &mut Cursor, flags: u8) -> Result<(), DecodeError> {
    get_trace(cursor, flags)?;
    if flags & FLAG_ORIGIN != 0 {
        get_origin_fields(cursor)?;
    }
    Ok(())
}

/// Reads an origin written by [`put_origin`].
pub(crate) fn get_origin_fields(cursor: &mut Cursor) -> Result<Origin, DecodeError> {
    let fields = cursor.u8()?;
    if fields & !(HAS_PRINCIPAL | HAS_IPV4 | HAS_IPV6 | HAS_NODE) != 0
        || fields & (HAS_IPV4 | HAS_IPV6) == HAS_IPV4 | HAS_IPV6
    {
        return Err(DecodeError::BadHeader("unknown origin fields"));
    }
    let principal = match fields & HAS_PRINCIPAL {
        0 => None,
        _ => {
            let len = usize::try_from(get_varint(cursor)?).unwrap_or(usize::MAX);
            Some(cursor.string(len, "principal")?)
        }
    };
    let address = if fields & HAS_IPV4 != 0 {
        Some(IpAddr::V4(Ipv4Addr::from(cursor.array::<4>()?)))
    } else if fields & HAS_IPV6 != 0 {
        Some(IpAddr::V6(Ipv6Addr::from(cursor.array::<16>()?)))
    } else {
        None
    };
    let node = match fields & HAS_NODE {
        0 => None,
        _ => Some(get_varint(cursor)?),
    };
    Ok(Origin {
        principal,
        address,
        node,
    })
}

fn get_varint(cursor: &mut Cursor) -> Result<u64, DecodeError> {
    let mut value = 0u64;
    for index in 0..MAX_VARINT_BYTES {
        let byte = cursor.u8()?;
        let bits = u64::from(byte & 0x7f);
        value |= bits.checked_shl(7 * index as u32).unwrap_or(0);
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::BadHeader("a varint longer than 10 bytes"))
}
