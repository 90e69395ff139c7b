//! The parts of Wharf's HTTP API (API.md) the scenarios speak: paths, request bodies built
//! once and reused, and the reply fields they read. Unknown reply fields are ignored.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Payload size of one message in every scenario: 1 KiB of text.
pub const MESSAGE_BYTES: usize = 1024;

/// `/v1/topics`.
pub const TOPICS_PATH: &str = "/v1/topics";

/// `/v1/topics/{topic}`.
pub fn topic_path(topic: &str) -> String {
    format!("{TOPICS_PATH}/{topic}")
}

/// `/v1/topics/{topic}/messages`.
pub fn messages_path(topic: &str) -> String {
    format!("{TOPICS_PATH}/{topic}/messages")
}

/// `/v1/topics/{topic}/subscriptions`.
pub fn subscriptions_path(topic: &str) -> String {
    format!("{TOPICS_PATH}/{topic}/subscriptions")
}

/// `/v1/topics/{topic}/subscriptions/{sub}/{action}` (`receive`, `ack`).
pub fn subscription_action_path(topic: &str, sub: &str, action: &str) -> String {
    format!("{TOPICS_PATH}/{topic}/subscriptions/{sub}/{action}")
}

/// A text value of exactly `bytes` printable ASCII bytes.
pub fn text_value(bytes: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..bytes)
        .map(|i| char::from(ALPHABET[i % ALPHABET.len()]))
        .collect()
}

/// `{"messages":[{"value":"<value_bytes of text>"} × count]}`.
pub fn produce_body(count: usize, value_bytes: usize) -> Bytes {
    keyed_produce_body(count, value_bytes, None)
}

/// [`produce_body`] with every message carrying `key`, if given (so all land on the
/// partition the key maps to).
pub fn keyed_produce_body(count: usize, value_bytes: usize, key: Option<&str>) -> Bytes {
    let value = text_value(value_bytes);
    let message = match key {
        Some(key) => json!({ "value": value, "key": key }),
        None => json!({ "value": value }),
    };
    let messages = vec![message; count];
    Bytes::from(json!({ "messages": messages }).to_string())
}

/// `{"messages":[{"value_base64":"<value_bytes random bytes>"} × count]}`, each value drawn
/// from `rng`.
pub fn random_produce_body(
    rng: &mut impl rand::RngCore,
    count: usize,
    value_bytes: usize,
) -> Bytes {
    let mut value = vec![0u8; value_bytes];
    let messages: Vec<_> = (0..count)
        .map(|_| {
            rng.fill_bytes(&mut value);
            json!({ "value_base64": base64(&value) })
        })
        .collect();
    Bytes::from(json!({ "messages": messages }).to_string())
}

/// Standard base64 with padding (RFC 4648 §4), as `value_base64` takes it.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let word = chunk.iter().enumerate().fold(0u32, |word, (i, byte)| {
            word | u32::from(*byte) << (16 - 8 * i)
        });
        for i in 0..4 {
            if i <= chunk.len() {
                let sextet = (word >> (18 - 6 * i)) & 0x3f;
                out.push(char::from(ALPHABET[sextet as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// One message whose value starts with `stamp` (nanoseconds, 20 digits) and a colon, padded
/// with text to `value_bytes`.
pub fn stamped_produce_body(stamp: u64, value_bytes: usize) -> Bytes {
    let head = format!("{stamp:020}:");
    let pad = text_value(value_bytes.saturating_sub(head.len()));
    Bytes::from(json!({ "messages": [{ "value": format!("{head}{pad}") }] }).to_string())
}

/// The stamp [`stamped_produce_body`] put in a value.
pub fn parse_stamp(value: &str) -> Option<u64> {
    value.split_once(':')?.0.parse().ok()
}

/// `{"messages":[{"value":"<index>:<text>", "delay_ms"} ...]}`: one message per
/// `(index, delay_ms)`, each value starting with its index and a colon, padded with text to
/// `value_bytes`.
pub fn delayed_produce_body(messages: &[(u64, u64)], value_bytes: usize) -> Bytes {
    let messages: Vec<_> = messages
        .iter()
        .map(|(index, delay_ms)| {
            let head = format!("{index}:");
            let pad = text_value(value_bytes.saturating_sub(head.len()));
            json!({ "value": format!("{head}{pad}"), "delay_ms": delay_ms })
        })
        .collect();
    Bytes::from(json!({ "messages": messages }).to_string())
}

/// `/v1/topics/{topic}/subscriptions/{sub}`.
pub fn subscription_path(topic: &str, sub: &str) -> String {
    format!("{TOPICS_PATH}/{topic}/subscriptions/{sub}")
}

/// `{"name", "partitions"}`.
pub fn create_topic_body(name: &str, partitions: u32) -> Bytes {
    Bytes::from(json!({ "name": name, "partitions": partitions }).to_string())
}

/// `{"name", "start", "ack_timeout_ms"}`.
pub fn create_subscription_body(name: &str, start: &str, ack_timeout_ms: u64) -> Bytes {
    Bytes::from(
        json!({ "name": name, "start": start, "ack_timeout_ms": ack_timeout_ms }).to_string(),
    )
}

/// `{"max_messages", "wait_ms"}`.
pub fn receive_body(max_messages: usize, wait_ms: u64) -> Bytes {
    Bytes::from(json!({ "max_messages": max_messages, "wait_ms": wait_ms }).to_string())
}

/// `{"receipts": [...]}`.
pub fn ack_body(receipts: &[String]) -> Bytes {
    Bytes::from(json!({ "receipts": receipts }).to_string())
}

/// The reply to a receive.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReceiveReply {
    /// The leased messages.
    pub messages: Vec<ReceivedMessage>,
}

/// One leased message, as far as the scenarios read it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReceivedMessage {
    /// Acks the delivery.
    pub receipt: String,
    /// The text payload.
    #[serde(default)]
    pub value: Option<String>,
}

/// The reply to a receive, read for its receipts alone: the values are skipped, not copied,
/// so a consumer that only acks spends less per message than the server it measures.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ReceiptsReply {
    /// The leased messages' receipts.
    pub messages: Vec<Receipt>,
}

/// One leased message's receipt.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Receipt {
    /// Acks the delivery.
    pub receipt: String,
}

/// The reply to an ack.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AckReply {
    /// Receipts acked.
    pub acked: usize,
}

/// The reply to a produce.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ProduceReply {
    /// One entry per message, in request order.
    #[serde(default)]
    pub messages: Vec<ProducedMessage>,
}

/// One produced message, as far as the scenarios read it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ProducedMessage {
    /// The partition it went to.
    #[serde(default)]
    pub partition: Option<u32>,
    /// When a delayed message becomes deliverable, Unix epoch milliseconds.
    #[serde(default)]
    pub deliver_at_ms: Option<u64>,
}

/// The reply to a subscription describe, as far as the `schedule` scenario reads it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SubscriptionReply {
    /// Its stats.
    #[serde(default)]
    pub stats: SubscriptionStats,
}

/// A subscription's stats, as far as the scenarios read them.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SubscriptionStats {
    /// Delayed messages of the topic not yet due.
    #[serde(default)]
    pub delayed: u64,
}

/// The reply to a topic describe, as far as the backlog scenario reads it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TopicReply {
    /// Per-partition offsets.
    #[serde(default)]
    pub partition_stats: Vec<PartitionStats>,
}

/// One partition's offsets.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PartitionStats {
    /// One past the last stored offset.
    #[serde(default)]
    pub end_offset: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_produce_body_has_the_asked_count_and_value_size() {
        let body: serde_json::Value = serde_json::from_slice(&produce_body(3, 1024)).expect("json");
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0]["value"].as_str().expect("value").len(), 1024);
    }

    #[test]
    fn a_keyed_body_keys_every_message_and_an_unkeyed_one_none() {
        let keyed: serde_json::Value =
            serde_json::from_slice(&keyed_produce_body(3, 8, Some("k-1"))).expect("json");
        let keys: Vec<_> = keyed["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["key"].clone())
            .collect();
        assert_eq!(keys, vec![json!("k-1"); 3]);
        let unkeyed = String::from_utf8(produce_body(2, 8).to_vec()).expect("utf-8");
        assert!(!unkeyed.contains("key"));
    }

    #[test]
    fn a_delayed_body_carries_indexes_and_delays() {
        let body: serde_json::Value =
            serde_json::from_slice(&delayed_produce_body(&[(7, 1234), (8, 0)], 100)).expect("json");
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 2);
        let value = messages[0]["value"].as_str().expect("value");
        assert_eq!(value.len(), 100);
        assert_eq!(parse_stamp(value), Some(7));
        assert_eq!(messages[0]["delay_ms"], 1234);
        assert_eq!(messages[1]["delay_ms"], 0);
    }

    #[test]
    fn base64_matches_the_rfc_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain:?}");
        }
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn a_random_body_carries_base64_values_of_the_asked_size() {
        let mut rng = rand::rngs::mock::StepRng::new(7, 13);
        let body: serde_json::Value =
            serde_json::from_slice(&random_produce_body(&mut rng, 100, 1024)).expect("json");
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 100);
        let value = messages[0]["value_base64"].as_str().expect("value_base64");
        assert_eq!(value.len(), 1368);
        assert_ne!(messages[0], messages[1]);
    }

    #[test]
    fn a_stamp_survives_the_round_trip() {
        let body: serde_json::Value =
            serde_json::from_slice(&stamped_produce_body(123_456_789, 1024)).expect("json");
        let value = body["messages"][0]["value"].as_str().expect("value");
        assert_eq!(value.len(), 1024);
        assert_eq!(parse_stamp(value), Some(123_456_789));
        assert_eq!(parse_stamp("no stamp here"), None);
    }
}
