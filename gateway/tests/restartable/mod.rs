//! A server over a data folder that outlives it: stop it and start a new one on the same
//! folder, as a restart. Helpers mirror `common::Harness`.
#![allow(dead_code)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use gateway::config::RawSettings;
use gateway::{ServeError, serve};
use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// One run of the server: its address, its stop signal and its task.
struct Running {
    address: std::net::SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), ServeError>>,
}

/// A server that can be restarted on its data folder.
pub struct Node {
    server: Option<Running>,
    /// The HTTP client.
    pub client: Client,
    data: TempDir,
}

impl Node {
    /// A server with default settings on a new temporary folder.
    pub async fn start() -> Node {
        let data = tempfile::tempdir().expect("temp dir");
        let server = start_server(&data).await;
        let client = Client::builder()
            .timeout(Duration::from_secs(90))
            .build()
            .expect("client");
        let mut node = Node {
            server: Some(server),
            client,
            data,
        };
        node.wait_until_ready().await;
        node
    }

    /// Stops the server gracefully and starts a new one on the same folder (a new port).
    pub async fn restart(&mut self) {
        self.stop_server().await;
        self.server = Some(start_server(&self.data).await);
        self.wait_until_ready().await;
    }

    /// Stops the server gracefully.
    pub async fn stop(mut self) {
        self.stop_server().await;
    }

    async fn stop_server(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = server.stop.send(());
            server
                .task
                .await
                .expect("server task")
                .expect("server stops cleanly");
        }
    }

    /// Waits for `/readyz`. A stopped server has released its data folder (the broker stops
    /// its background tasks at shutdown), so a restart must open it at once.
    async fn wait_until_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if self.server.as_ref().is_some_and(|s| s.task.is_finished()) {
                let server = self.server.take().expect("server");
                panic!("the server ended at start: {:?}", server.task.await);
            }
            let ready = self.client.get(self.url("/readyz")).send().await;
            if ready.is_ok_and(|response| response.status() == StatusCode::OK) {
                return;
            }
            assert!(Instant::now() < deadline, "server not ready within 20 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The URL of a path on the current server.
    pub fn url(&self, path: &str) -> String {
        let address = self.server.as_ref().expect("a running server").address;
        format!("http://{address}{path}")
    }

    /// GET a path and return the JSON, asserting 200.
    pub async fn get_ok(&self, path: &str) -> Value {
        let response = self
            .client
            .get(self.url(path))
            .send()
            .await
            .expect("request");
        json_of(response, 200).await
    }

    /// POST a JSON body.
    pub async fn post_json(&self, path: &str, body: &Value) -> Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("request")
    }

    /// POST a JSON body and return the reply's JSON, asserting the status.
    pub async fn post_ok(&self, path: &str, body: &Value, status: u16) -> Value {
        json_of(self.post_json(path, body).await, status).await
    }

    /// Creates a topic, asserting 201.
    pub async fn create_topic(&self, body: Value) -> Value {
        self.post_ok("/v1/topics", &body, 201).await
    }

    /// Creates a subscription, asserting 201.
    pub async fn create_subscription(&self, topic: &str, body: Value) -> Value {
        self.post_ok(&format!("/v1/topics/{topic}/subscriptions"), &body, 201)
            .await
    }

    /// Produces a JSON batch, asserting 200; returns the `messages` array.
    pub async fn produce(&self, topic: &str, messages: Vec<Value>) -> Vec<Value> {
        let path = format!("/v1/topics/{topic}/messages");
        let reply = self
            .post_ok(&path, &json!({ "messages": messages }), 200)
            .await;
        reply["messages"].as_array().expect("messages").clone()
    }

    /// Receives, asserting 200; returns the `messages` array.
    pub async fn receive(&self, topic: &str, sub: &str, body: Value) -> Vec<Value> {
        let path = format!("/v1/topics/{topic}/subscriptions/{sub}/receive");
        let reply = self.post_ok(&path, &body, 200).await;
        reply["messages"].as_array().expect("messages").clone()
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

async fn start_server(data: &TempDir) -> Running {
    let settings = RawSettings {
        listen: Some("127.0.0.1:0".into()),
        data_dir: Some(data.path().to_owned()),
        ..RawSettings::default()
    }
    .freeze()
    .expect("valid settings");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stopped.await;
    };
    let task = tokio::spawn(serve(listener, settings, shutdown));
    Running {
        address,
        stop,
        task,
    }
}

/// Asserts the status and parses the JSON body.
pub async fn json_of(response: Response, status: u16) -> Value {
    let actual = response.status().as_u16();
    let text = response.text().await.expect("body");
    assert_eq!(actual, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
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

/// Unix epoch milliseconds now (client and server share the clock).
pub fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970");
    u64::try_from(since.as_millis()).expect("millis fit")
}

/// A received message's string field.
pub fn text(message: &Value, field: &str) -> String {
    message[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {message}"))
        .to_owned()
}
