//! Message values on the wire: text travels as `value`, binary as `value_base64`, and each
//! record goes back out the way it came in.

use std::borrow::Cow;
use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use broker_core::Record;
use bytes::Bytes;
use serde::de::{self, Deserialize, Deserializer, Visitor};

use crate::http::problem::ApiError;

/// A JSON string that borrows from the body when it can (it has no escapes) and owns a copy
/// only when it must. serde borrows a `Cow<str>` only as a field's own type, not inside an
/// `Option`, so message values use this instead.
#[derive(Debug)]
pub struct WireStr<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for WireStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Visit<'a> {
            type Value = WireStr<'a>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(WireStr(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(WireStr(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(WireStr(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(Visit(std::marker::PhantomData))
    }
}

impl std::ops::Deref for WireStr<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// The values of a JSON produce, each as a client sent it: `(value, value_base64)`, exactly
/// one of which must be set, parsed from `body`. A text value that is a part of `body` (it
/// had no JSON escapes) becomes a slice of the body, no copy; base64 values (and escaped
/// text) are decoded into ONE buffer whose slices become the messages' values: one
/// allocation per batch, 3/4 of the base64 text, and nothing else held beside the body.
pub(crate) fn decode_values(
    body: &Bytes,
    values: &[(Option<&str>, Option<&str>)],
) -> Result<Decoded, ApiError> {
    let capacity = values
        .iter()
        .map(|pair| match pair {
            (Some(text), None) if within(body, text.as_bytes()) => 0,
            (Some(text), None) => text.len(),
            (None, Some(encoded)) => base64::decoded_len_estimate(encoded.len()),
            _ => 0,
        })
        .sum();
    let mut buffer = Vec::with_capacity(capacity);
    let mut ranges = Vec::with_capacity(values.len());
    for (index, pair) in values.iter().enumerate() {
        let start = buffer.len();
        let binary = match pair {
            (Some(text), None) if within(body, text.as_bytes()) => {
                ranges.push(Value::Body(body.slice_ref(text.as_bytes())));
                continue;
            }
            (Some(text), None) => {
                buffer.extend_from_slice(text.as_bytes());
                false
            }
            (None, Some(encoded)) => {
                STANDARD
                    .decode_vec(encoded.as_bytes(), &mut buffer)
                    .map_err(|error| {
                        ApiError::invalid(format!(
                            "messages[{index}].value_base64: invalid base64: {error}"
                        ))
                    })?;
                true
            }
            _ => {
                return Err(ApiError::invalid(format!(
                    "messages[{index}]: exactly one of value and value_base64 is required"
                )));
            }
        };
        ranges.push(Value::Decoded(start..buffer.len(), binary));
    }
    let keeps_body = ranges.iter().any(|value| matches!(value, Value::Body(_)));
    let held_bytes = buffer.capacity() + if keeps_body { body.len() } else { 0 };
    let shared = Bytes::from(buffer);
    let values = ranges
        .into_iter()
        .map(|value| match value {
            Value::Body(text) => (text, false),
            Value::Decoded(range, binary) => (shared.slice(range), binary),
        })
        .collect();
    Ok(Decoded { values, held_bytes })
}

/// The values of a batch, and the memory they keep.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// Each value, and whether it came as base64.
    pub values: Vec<(Bytes, bool)>,
    /// Bytes the values keep alive: their decoded buffer, and the body if any of them is a
    /// slice of it.
    pub held_bytes: usize,
}

/// Where one decoded value lives.
enum Value {
    /// A slice of the request body (text without escapes).
    Body(Bytes),
    /// A range of the batch's decoded buffer, and whether it was base64.
    Decoded(std::ops::Range<usize>, bool),
}

/// Whether `part` lies inside `whole`'s memory (a string borrowed from the body).
fn within(whole: &Bytes, part: &[u8]) -> bool {
    let start = whole.as_ptr() as usize;
    let at = part.as_ptr() as usize;
    !part.is_empty() && at >= start && at + part.len() <= start + whole.len()
}

/// A stored record's value as `(value, value_base64)`: text records whose bytes are UTF-8 go
/// out as `value` ([`text_value`]), everything else as `value_base64`.
pub(crate) fn encode_value(record: &Record) -> (Option<String>, Option<String>) {
    match text_value(record) {
        Some(text) => (Some(text.to_owned()), None),
        None => (None, Some(STANDARD.encode(&record.value))),
    }
}

/// The value as text, when it goes out as `value`: the record was produced as text and its
/// bytes are UTF-8. `None`: it goes out as `value_base64`.
pub(crate) fn text_value(record: &Record) -> Option<&str> {
    if record.binary {
        return None;
    }
    std::str::from_utf8(&record.value).ok()
}

/// Headers as a JSON object (a later header of the same name wins).
pub(crate) fn headers_map(headers: &[(String, String)]) -> BTreeMap<String, String> {
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
            client_id: false,
            headers: Vec::new(),
            tags: Vec::new(),
            trace: None,
            origin: None,
        }
    }

    #[test]
    fn exactly_one_value_field_is_required() {
        let body = Bytes::new();
        assert!(decode_values(&body, &[(None, None)]).is_err());
        assert!(decode_values(&body, &[(Some("a"), Some("YQ=="))]).is_err());
        assert!(decode_values(&body, &[(None, Some("not base64!"))]).is_err());
    }

    #[test]
    fn a_batch_decodes_into_slices_of_one_buffer_in_order() {
        let body = Bytes::from_static(b"text from the body");
        let borrowed = std::str::from_utf8(&body[5..9]).expect("utf-8");
        let decoded = decode_values(
            &body,
            &[
                (None, Some("YQ==")),
                (Some("hé"), None),
                (None, Some("")),
                (None, Some("AAEC")),
                (Some(borrowed), None),
            ],
        )
        .expect("valid");
        let body_len = body.len();
        assert!(
            decoded.held_bytes >= 1 + 2 + 3 + body_len,
            "buffer and body"
        );
        let decoded = decoded.values;
        let values: Vec<(&[u8], bool)> = decoded.iter().map(|(v, b)| (v.as_ref(), *b)).collect();
        assert_eq!(
            values,
            vec![
                (&b"a"[..], true),
                ("hé".as_bytes(), false),
                (&b""[..], true),
                (&[0u8, 1, 2][..], true),
                (&b"from"[..], false),
            ]
        );
        let base = decoded[0].0.as_ptr() as usize;
        assert_eq!(decoded[1].0.as_ptr() as usize, base + 1, "one buffer");
        assert_eq!(
            decoded[4].0.as_ptr(),
            body[5..].as_ptr(),
            "no copy of body text"
        );
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
