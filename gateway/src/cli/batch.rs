//! Turning input lines into produce batches: a line becomes one message's JSON (key split
//! off, text or base64, headers, tags, delay, id), and messages join a batch body whose size
//! is known before each one is added.

use std::collections::BTreeMap;

use base64::Engine;
use bytes::Bytes;
use serde::Serialize;

use crate::cli::error::CliError;

/// One message of a batch, as the produce body spells it.
#[derive(Debug, Serialize)]
struct OutgoingMessage<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    headers: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    tags: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    delay_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
}

/// Turns input lines into encoded messages.
#[derive(Debug)]
pub(crate) struct Encoder {
    pub(crate) key: Option<String>,
    pub(crate) key_delimiter: Option<String>,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) tags: Vec<String>,
    pub(crate) delay_ms: Option<u64>,
    pub(crate) id_prefix: Option<String>,
    pub(crate) encoded: u64,
}

impl Encoder {
    /// The JSON of the next message, made of `line` (without its newline).
    pub(crate) fn encode(&mut self, line: &[u8]) -> Result<Vec<u8>, CliError> {
        self.encoded += 1;
        let (key, value) = self.split(line);
        let text = std::str::from_utf8(value).ok();
        let message = OutgoingMessage {
            value: text,
            value_base64: match text {
                Some(_) => None,
                None => Some(base64::engine::general_purpose::STANDARD.encode(value)),
            },
            key: key.or(self.key.as_deref()),
            headers: &self.headers,
            tags: &self.tags,
            delay_ms: self.delay_ms,
            id: self
                .id_prefix
                .as_ref()
                .map(|prefix| format!("{prefix}{}", self.encoded)),
        };
        serde_json::to_vec(&message)
            .map_err(|error| CliError::io("cannot encode a message", std::io::Error::from(error)))
    }

    /// The key (when `--key-delimiter` splits the line) and the value.
    fn split<'a>(&self, line: &'a [u8]) -> (Option<&'a str>, &'a [u8]) {
        let Some(delimiter) = self.key_delimiter.as_deref().map(str::as_bytes) else {
            return (None, line);
        };
        let found = line
            .windows(delimiter.len().max(1))
            .position(|window| window == delimiter);
        match found {
            Some(at) if !delimiter.is_empty() => match std::str::from_utf8(&line[..at]) {
                Ok(key) => (Some(key), &line[at + delimiter.len()..]),
                Err(_) => (None, line),
            },
            _ => (None, line),
        }
    }
}

/// Drops a trailing `\n` or `\r\n`.
pub(crate) fn strip_newline(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    line
}

/// Encoded messages waiting to be sent as one request, in input order.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    messages: Vec<Vec<u8>>,
    message_bytes: usize,
}

impl Batch {
    const OPEN: &'static [u8] = b"{\"messages\":[";
    const CLOSE: &'static [u8] = b"]}";

    /// Adds a message at the end.
    pub(crate) fn push(&mut self, message: Vec<u8>) {
        self.message_bytes += message.len();
        self.messages.push(message);
    }

    /// How many messages it holds.
    pub(crate) fn count(&self) -> usize {
        self.messages.len()
    }

    /// The size of the request body with `message` added.
    pub(crate) fn body_len_with(&self, message: &[u8]) -> usize {
        let count = self.messages.len() + 1;
        Self::OPEN.len() + self.message_bytes + message.len() + (count - 1) + Self::CLOSE.len()
    }

    /// The request body: `{"messages":[…]}`.
    pub(crate) fn body(&self) -> Bytes {
        let mut body = Vec::with_capacity(self.message_bytes + self.messages.len() + 16);
        body.extend_from_slice(Self::OPEN);
        for (index, message) in self.messages.iter().enumerate() {
            if index > 0 {
                body.push(b',');
            }
            body.extend_from_slice(message);
        }
        body.extend_from_slice(Self::CLOSE);
        Bytes::from(body)
    }

    /// The first half and the second half, in order (a batch the server found too large is
    /// sent again as two).
    pub(crate) fn split(mut self) -> (Batch, Batch) {
        let second = self.messages.split_off(self.messages.len() / 2);
        let halves = [self.messages, second].map(|messages| Batch {
            message_bytes: messages.iter().map(Vec::len).sum(),
            messages,
        });
        let [first, second] = halves;
        (first, second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoder(key_delimiter: Option<&str>) -> Encoder {
        Encoder {
            key: Some("fallback".into()),
            key_delimiter: key_delimiter.map(Into::into),
            headers: BTreeMap::from([("h".to_owned(), "v".to_owned())]),
            tags: vec![],
            delay_ms: None,
            id_prefix: Some("run-".into()),
            encoded: 0,
        }
    }

    fn json(bytes: Vec<u8>) -> serde_json::Value {
        serde_json::from_slice(&bytes).expect("JSON")
    }

    #[test]
    fn a_line_splits_at_the_first_delimiter_and_falls_back_to_the_key() {
        let mut encoder = encoder(Some("\t"));
        let message = json(encoder.encode(b"k1\tv\t1").expect("encodes"));
        assert_eq!(message["key"], "k1");
        assert_eq!(message["id"], "run-1");
        assert_eq!(message["value"], "v\t1");
        assert_eq!(message["headers"]["h"], "v");
        let message = json(encoder.encode(b"no delimiter").expect("encodes"));
        assert_eq!(message["key"], "fallback");
        assert_eq!(message["value"], "no delimiter");
        assert_eq!(message["id"], "run-2");
    }

    #[test]
    fn bytes_that_are_not_utf8_go_as_base64() {
        let message = json(encoder(None).encode(&[0xff, 0x00, b'a']).expect("encodes"));
        assert_eq!(message["value_base64"], "/wBh");
        assert!(message.get("value").is_none());
    }

    #[test]
    fn newlines_are_stripped_once() {
        assert_eq!(strip_newline(b"a\r\n".to_vec()), b"a");
        assert_eq!(strip_newline(b"a\n".to_vec()), b"a");
        assert_eq!(strip_newline(b"a".to_vec()), b"a");
        assert_eq!(strip_newline(b"\n".to_vec()), b"");
    }

    #[test]
    fn a_batch_body_is_a_json_batch_and_its_size_is_known_before_adding() {
        let mut batch = Batch::default();
        assert_eq!(batch.body_len_with(b"{}"), b"{\"messages\":[{}]}".len());
        batch.push(b"{\"value\":\"a\"}".to_vec());
        let next = b"{\"value\":\"b\"}".to_vec();
        let predicted = batch.body_len_with(&next);
        batch.push(next);
        let body = batch.body();
        assert_eq!(body.len(), predicted);
        let parsed: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(parsed["messages"][1]["value"], "b");
    }

    #[test]
    fn a_split_batch_keeps_its_order_in_two_halves() {
        let mut batch = Batch::default();
        for value in ["1", "2", "3"] {
            batch.push(format!("{{\"value\":\"{value}\"}}").into_bytes());
        }
        let (first, second) = batch.split();
        let values = |batch: &Batch| -> Vec<String> {
            let parsed: serde_json::Value = serde_json::from_slice(&batch.body()).expect("JSON");
            let messages = parsed["messages"].as_array().expect("messages").clone();
            messages
                .iter()
                .map(|m| m["value"].as_str().expect("text").to_owned())
                .collect()
        };
        assert_eq!(
            (values(&first), values(&second)),
            (vec!["1".to_owned()], vec!["2".to_owned(), "3".to_owned()])
        );
        assert_eq!(second.body_len_with(b"x"), second.body().len() + 2);
    }
}
