//! A real `wharf` process for crash and memory tests: started on a free loopback port and a
//! given data folder, waited for until ready, and killed with SIGKILL on request or when
//! dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `wharf serve` child process.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Server {
    /// Starts `wharf serve` on `data_dir` and waits (at most 30 s) until `/readyz` answers 200.
    pub async fn start(data_dir: &Path) -> Server {
        Server::start_with(data_dir, &[]).await
    }

    /// As [`Server::start`], with more `wharf serve` flags.
    pub async fn start_with(data_dir: &Path, flags: &[&str]) -> Server {
        let port = super::free_port().port();
        let child = Command::new(env!("CARGO_BIN_EXE_wharf"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--data-dir",
            ])
            .arg(data_dir)
            .args(flags)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("wharf starts");
        let server = Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        super::wait_ready(&client, &server.base, Duration::from_secs(30)).await;
        server
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A `/proc/<pid>/status` figure in KiB (`VmRSS`, `VmHWM`), 0 if unreadable.
    pub fn memory_kib(&self, field: &str) -> u64 {
        memory_kib(self.pid(), field)
    }

    /// Kills the process with SIGKILL and reaps it.
    pub fn kill_9(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }
}

/// A `/proc/<pid>/status` figure of process `pid` in KiB (`VmRSS:`, `VmHWM:`), 0 if
/// unreadable.
pub fn memory_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with(field))
                .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Every message of a partition, in offset order, read through the offset API in pages.
    pub async fn read_partition(&self, topic: &str, partition: u32) -> Vec<serde_json::Value> {
        let client = reqwest::Client::new();
        let mut messages = Vec::new();
        let mut offset = 0;
        loop {
            let url = format!(
                "{}/v1/topics/{topic}/partitions/{partition}/messages?offset={offset}&max=1000",
                self.base
            );
            let page: serde_json::Value = client
                .get(&url)
                .send()
                .await
                .expect("read")
                .json()
                .await
                .expect("json");
            let batch = page["messages"].as_array().expect("messages");
            if batch.is_empty() {
                return messages;
            }
            messages.extend(batch.iter().cloned());
            offset = page["next_offset"].as_u64().expect("next_offset");
        }
    }
}

/// POSTs `body` as JSON to `url`, asserts a 2xx, and returns the answer's JSON (`Null` if none).
pub async fn post_ok(
    client: &reqwest::Client,
    url: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let response = client.post(url).json(&body).send().await.expect("request");
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or(serde_json::Value::Null);
    assert!(status.is_success(), "POST {url} → {status}: {body}");
    body
}
