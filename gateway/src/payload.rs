//! Message values on the wire: text travels as `value`, binary as `value_base64`, and each
//! record goes back out the way it came in.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use broker_core::Record;
use bytes::Bytes;

use crate::problem::ApiError;

/// A message value as a client sends it in a JSON produce: exactly one of the two fields.
pub fn decode_value(
    index: usize,
    value: Option<String>,
    value_base64: Option<String>,
) -> Result<(Bytes, bool), ApiError> {
    match (value, value_base64) {
        (Some(text), None) => Ok((Bytes::from(text), false)),
        (None, Some(encoded)) => STANDARD
            .decode(encoded.as_bytes())
            .map(|bytes| (Bytes::from(bytes), true))
            .map_err(|error| {
                ApiError::invalid(format!(
                    "messages[{index}].value_base64: invalid base64: {error}"
                ))
            }),
        _ => Err(ApiError::invalid(format!(
            "messages[{index}]: exactly one of value and value_base64 is required"
        ))),
    }
}

/// A stored record's value as `(value, value_base64)`: text records whose bytes are UTF-8 go
/// out as `value`, everything else as `value_base64`.
pub fn encode_value(record: &Record) -> (Option<String>, Option<String>) {
    if !record.binary
        && let Ok(text) = std::str::from_utf8(&record.value)
    {
        return (Some(text.to_owned()), None);
    }
    (None, Some(STANDARD.encode(&record.value)))
}

/// Headers as a JSON object (a later header of the same name wins).
pub fn headers_map(headers: &[(String, String)]) -> BTreeMap<String, String> {
    headers.iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(value: &[u8], binary: bool) -> Record {
        Record {
            id: "m".into(),
            timestamp_ms: 0,
            key: None,
            value: Bytes::copy_from_slice(value),
            binary,
            scheduled: false,
            headers: Vec::new(),
            tags: Vec::new(),
        }
    }

    #[test]
    fn exactly_one_value_field_is_required() {
        assert!(decode_value(0, None, None).is_err());
        assert!(decode_value(0, Some("a".into()), Some("YQ==".into())).is_err());
        assert_eq!(
            decode_value(0, None, Some("YQ==".into())).ok(),
            Some((Bytes::from("a"), true))
        );
        assert!(decode_value(0, None, Some("not base64!".into())).is_err());
    }

    #[test]
    fn values_go_back_out_the_way_they_came_in() {
        assert_eq!(
            encode_value(&record(b"hi", false)),
            (Some("hi".into()), None)
        );
        assert_eq!(
            encode_value(&record(b"hi", true)),
            (None, Some("aGk=".into()))
        );
        assert_eq!(
            encode_value(&record(&[0xff], false)),
            (None, Some("/w==".into()))
        );
    }
}
