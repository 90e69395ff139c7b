//! W3C Trace Context (level 1) carried by a message: the producer's `traceparent` and
//! `tracestate`, checked once at produce and handed back verbatim on every delivery, so a
//! consumer's span can link to its producer's.
//!
//! Versions: `00` must be exactly `00-<trace-id>-<parent-id>-<flags>`. A higher version
//! (`01`..=`fe`) is accepted as the spec asks of a receiver: its first 55 characters must
//! parse as version 00 does, and anything after them must start with `-`; it is stored as
//! given. Version `ff` is invalid.

/// Characters of a version-00 `traceparent`: `2 + 1 + 32 + 1 + 16 + 1 + 2`.
pub const TRACEPARENT_V0_LEN: usize = 55;
/// Longest `traceparent` kept: a future version may append fields, but a message's metadata
/// stays small; 255 is over four times the version-00 form and fits the one-byte length the
/// log stores it with.
pub const MAX_TRACEPARENT_BYTES: usize = 255;
/// Longest `tracestate`: the spec lets a carrier cut it at 512 characters, so no longer one
/// can be expected to survive other hops either.
pub const MAX_TRACESTATE_BYTES: usize = 512;
/// Most list members in a `tracestate`: the spec's limit of 32.
pub const MAX_TRACESTATE_MEMBERS: usize = 32;

/// A message's W3C trace context: a valid `traceparent`, and a `tracestate` if one was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
}

/// Why a `traceparent` or `tracestate` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceContextError {
    /// The `traceparent` does not follow `vv-<32 hex>-<16 hex>-<2 hex>` in lowercase.
    #[error("traceparent must be `00-<32 lowercase hex>-<16 lowercase hex>-<2 lowercase hex>`")]
    Malformed,
    /// Version `ff` is reserved as invalid.
    #[error("traceparent version ff is invalid")]
    InvalidVersion,
    /// The trace id or the parent id is all zeros.
    #[error("traceparent {0} must not be all zeros")]
    ZeroId(&'static str),
    /// Longer than [`MAX_TRACEPARENT_BYTES`].
    #[error("traceparent is longer than {MAX_TRACEPARENT_BYTES} characters")]
    TraceparentTooLong,
    /// A `tracestate` not of the spec's list syntax, or over its bounds.
    #[error(
        "tracestate must be at most {MAX_TRACESTATE_BYTES} printable ASCII characters of at most {MAX_TRACESTATE_MEMBERS} comma-separated key=value members"
    )]
    BadTracestate,
    /// A `tracestate` without a `traceparent`.
    #[error("tracestate needs a traceparent")]
    TracestateAlone,
}

impl TraceContext {
    /// Checks a `traceparent` and an optional `tracestate` (empty counts as absent, as the
    /// spec says of an empty header).
    pub fn parse(
        traceparent: &str,
        tracestate: Option<&str>,
    ) -> Result<TraceContext, TraceContextError> {
        check_traceparent(traceparent)?;
        let tracestate = tracestate.filter(|state| !state.is_empty());
        if let Some(state) = tracestate {
            check_tracestate(state)?;
        }
        Ok(TraceContext {
            traceparent: traceparent.to_owned(),
            tracestate: tracestate.map(str::to_owned),
        })
    }

    /// The trace context of optional fields: none without either; refused for a
    /// `tracestate` alone or a bad field.
    pub fn from_fields(
        traceparent: Option<&str>,
        tracestate: Option<&str>,
    ) -> Result<Option<TraceContext>, TraceContextError> {
        match (traceparent, tracestate) {
            (Some(parent), state) => TraceContext::parse(parent, state).map(Some),
            (None, Some(state)) if !state.is_empty() => Err(TraceContextError::TracestateAlone),
            (None, _) => Ok(None),
        }
    }

    /// A context read back from the log, where it was checked before it was written.
    pub(crate) fn stored(traceparent: String, tracestate: Option<String>) -> TraceContext {
        TraceContext {
            traceparent,
            tracestate,
        }
    }

    /// The `traceparent`, as the producer gave it.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate`, as the producer gave it, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// Bytes of its two strings.
    pub fn len(&self) -> usize {
        self.traceparent.len() + self.tracestate.as_ref().map_or(0, String::len)
    }

    /// Never: a context always has a `traceparent` (for clippy's `len` rule).
    pub fn is_empty(&self) -> bool {
        self.traceparent.is_empty()
    }
}

fn check_traceparent(text: &str) -> Result<(), TraceContextError> {
    if text.len() > MAX_TRACEPARENT_BYTES {
        return Err(TraceContextError::TraceparentTooLong);
    }
    let bytes = text.as_bytes();
    if bytes.len() < TRACEPARENT_V0_LEN {
        return Err(TraceContextError::Malformed);
    }
    let (head, rest) = bytes.split_at(TRACEPARENT_V0_LEN);
    let fields: Vec<&[u8]> = head.split(|b| *b == b'-').collect();
    let [version, trace_id, parent_id, flags] = fields.as_slice() else {
        return Err(TraceContextError::Malformed);
    };
    let shaped = [(version, 2), (trace_id, 32), (parent_id, 16), (flags, 2)]
        .iter()
        .all(|(field, len)| field.len() == *len && field.iter().all(is_lower_hex));
    if !shaped {
        return Err(TraceContextError::Malformed);
    }
    match *version {
        b"ff" => return Err(TraceContextError::InvalidVersion),
        b"00" if !rest.is_empty() => return Err(TraceContextError::Malformed),
        _ => {}
    }
    let future_tail_ok =
        rest.is_empty() || (rest[0] == b'-' && rest.iter().all(|b| b.is_ascii_graphic()));
    if !future_tail_ok {
        return Err(TraceContextError::Malformed);
    }
    if trace_id.iter().all(|b| *b == b'0') {
        return Err(TraceContextError::ZeroId("trace-id"));
    }
    if parent_id.iter().all(|b| *b == b'0') {
        return Err(TraceContextError::ZeroId("parent-id"));
    }
    Ok(())
}

fn is_lower_hex(byte: &u8) -> bool {
    matches!(byte, b'0'..=b'9' | b'a'..=b'f')
}

/// The spec's list syntax, simply: printable ASCII, at most 32 non-empty members, each a
/// non-empty key, `=`, and a value.
fn check_tracestate(text: &str) -> Result<(), TraceContextError> {
    let printable = text.bytes().all(|b| (b' '..=b'~').contains(&b));
    if text.len() > MAX_TRACESTATE_BYTES || !printable {
        return Err(TraceContextError::BadTracestate);
    }
    let mut members = 0;
    for member in text.split(',').map(|m| m.trim_matches([' ', '\t'])) {
        if member.is_empty() {
            continue;
        }
        members += 1;
        let well_formed = member
            .split_once('=')
            .is_some_and(|(key, value)| !key.is_empty() && !value.is_empty());
        if !well_formed || members > MAX_TRACESTATE_MEMBERS {
            return Err(TraceContextError::BadTracestate);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_specs_example_is_accepted_with_and_without_tracestate() {
        let context = TraceContext::parse(GOOD, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"))
            .expect("valid");
        assert_eq!(context.traceparent(), GOOD);
        assert_eq!(
            context.tracestate(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        );
        let bare = TraceContext::parse(GOOD, Some("")).expect("valid");
        assert_eq!(bare.tracestate(), None);
    }

    #[test]
    fn malformed_traceparents_are_refused_for_the_right_reason() {
        let zero_trace = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        let zero_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
        let upper = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
        let version_ff = "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let v00_longer = format!("{GOOD}-extra");
        let cases = [
            (zero_trace, TraceContextError::ZeroId("trace-id")),
            (zero_parent, TraceContextError::ZeroId("parent-id")),
            (upper, TraceContextError::Malformed),
            (version_ff, TraceContextError::InvalidVersion),
            (&GOOD[..54], TraceContextError::Malformed),
            (v00_longer.as_str(), TraceContextError::Malformed),
            ("not a traceparent", TraceContextError::Malformed),
        ];
        for (text, error) in cases {
            assert_eq!(TraceContext::parse(text, None), Err(error), "{text}");
        }
    }

    #[test]
    fn a_future_version_is_accepted_with_a_dash_led_tail_and_kept_verbatim() {
        let future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-next";
        let context = TraceContext::parse(future, None).expect("valid");
        assert_eq!(context.traceparent(), future);
        let no_dash = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x";
        assert_eq!(
            TraceContext::parse(no_dash, None),
            Err(TraceContextError::Malformed)
        );
        let too_long = format!("{future}{}", "-a".repeat(MAX_TRACEPARENT_BYTES));
        assert_eq!(
            TraceContext::parse(&too_long, None),
            Err(TraceContextError::TraceparentTooLong)
        );
    }

    #[test]
    fn tracestate_bounds_are_checked_on_both_sides() {
        let members = |n: usize| (0..n).map(|i| format!("k{i}=v")).collect::<Vec<_>>();
        let thirty_two = members(32).join(",");
        assert!(TraceContext::parse(GOOD, Some(&thirty_two)).is_ok());
        let thirty_three = members(33).join(",");
        assert_eq!(
            TraceContext::parse(GOOD, Some(&thirty_three)),
            Err(TraceContextError::BadTracestate)
        );
        let longest = format!("k={}", "v".repeat(MAX_TRACESTATE_BYTES - 2));
        assert!(TraceContext::parse(GOOD, Some(&longest)).is_ok());
        let over = format!("{longest}v");
        assert!(TraceContext::parse(GOOD, Some(&over)).is_err());
        for bad in ["novalue", "=v", "k=v,\u{7f}=x", "k=é"] {
            assert!(TraceContext::parse(GOOD, Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tracestate_alone_is_refused_and_nothing_is_none() {
        assert_eq!(
            TraceContext::from_fields(None, Some("a=b")),
            Err(TraceContextError::TracestateAlone)
        );
        assert_eq!(TraceContext::from_fields(None, None), Ok(None));
        assert!(TraceContext::from_fields(Some(GOOD), None).is_ok_and(|c| c.is_some()));
    }
}
