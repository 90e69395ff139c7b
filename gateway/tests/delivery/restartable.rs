//! A server over a data folder that outlives it: stop it and start a new one on the same
//! folder, as a restart. A [`Node`] is a [`Harness`] (its helpers) that can be restarted, with
//! a few more helpers.

use std::ops::Deref;

use gateway::config::RawSettings;
use serde_json::{Value, json};
use tempfile::TempDir;

pub use crate::support::common::{Harness, json_of};

/// A server that can be restarted on its data folder.
pub struct Node {
    harness: Option<Harness>,
    data: TempDir,
}

impl Deref for Node {
    type Target = Harness;

    fn deref(&self) -> &Harness {
        self.harness.as_ref().expect("a running server")
    }
}

impl Node {
    /// A server with default settings on a new temporary folder.
    pub async fn start() -> Node {
        let data = tempfile::tempdir().expect("temp dir");
        let harness = Harness::start_in(data.path(), RawSettings::default()).await;
        Node {
            harness: Some(harness),
            data,
        }
    }

    /// Stops the server gracefully and starts a new one on the same folder (a new port). A
    /// stopped server has released its data folder (the broker stops its background tasks at
    /// shutdown), so the new one opens it at once.
    pub async fn restart(&mut self) {
        self.stop_server().await;
        self.harness = Some(Harness::start_in(self.data.path(), RawSettings::default()).await);
    }

    /// Stops the server gracefully.
    pub async fn stop(mut self) {
        self.stop_server().await;
    }

    async fn stop_server(&mut self) {
        if let Some(harness) = self.harness.take() {
            harness.stop().await;
        }
    }

    /// GET a path and return the JSON, asserting 200.
    pub async fn get_ok(&self, path: &str) -> Value {
        json_of(self.get(path).await, 200).await
    }

    /// Acks, asserting 200 and that every receipt took effect.
    pub async fn ack(&self, topic: &str, sub: &str, receipts: &[String]) {
        let path = format!("/v1/topics/{topic}/subscriptions/{sub}/ack");
        let reply = self
            .post_ok(&path, &json!({ "receipts": receipts }), 200)
            .await;
        assert_eq!(reply["acked"], receipts.len(), "{reply}");
    }

    /// Nacks one receipt with an error text, asserting it took effect.
    pub async fn nack(&self, topic: &str, sub: &str, receipt: &str, error: &str) {
        let path = format!("/v1/topics/{topic}/subscriptions/{sub}/nack");
        let body = json!({ "receipts": [receipt], "error": error });
        let reply = self.post_ok(&path, &body, 200).await;
        assert_eq!(reply["nacked"], 1, "{reply}");
    }

    /// A subscription's stats.
    pub async fn stats(&self, topic: &str, sub: &str) -> Value {
        self.get_ok(&format!("/v1/topics/{topic}/subscriptions/{sub}"))
            .await["stats"]
            .clone()
    }

    /// The sum of a topic's partition end offsets: how many messages it ever stored.
    pub async fn stored(&self, topic: &str) -> u64 {
        total_end_offset(&self.get_ok(&format!("/v1/topics/{topic}")).await)
    }
}

/// The sum of the partition end offsets of a topic JSON.
pub fn total_end_offset(topic: &Value) -> u64 {
    topic["partition_stats"]
        .as_array()
        .expect("partition_stats")
        .iter()
        .map(|p| p["end_offset"].as_u64().expect("end_offset"))
        .sum()
}

/// A received message's string field.
pub fn text(message: &Value, field: &str) -> String {
    message[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {message}"))
        .to_owned()
}
