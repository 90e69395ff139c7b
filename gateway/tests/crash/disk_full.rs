//! Disk full (RELIABILITY.md D6): a real `wharf` on a data folder that is a 16 MiB tmpfs.
//! Producing until the disk is full gets 507 `storage_full` and no other 5xx; no batch is
//! half stored; every acknowledged message stays readable; deleting another topic gives the
//! space back and writes resume; a restart opens the folder cleanly. The refusal comes from
//! the free-space reserve (`--min-free-bytes`) before the disk is really full.
//!
//! Mounting needs root (CI runs as root): a test that cannot mount fails, it does not skip.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wharf_reliability::CaseLine;

use crate::support::child::Server;

/// Size of the file system: small enough to fill in seconds, large enough for a few segments
/// of the topics and the broker's own files.
const TMPFS_SIZE: &str = "16m";
/// Segment size: small, so the topics' files are many and deleting one topic frees whole ones.
const SEGMENT_BYTES: &str = "262144";
/// Bytes of each message value: batches of [`BATCH`] make 64 KiB requests.
const VALUE_BYTES: usize = 1024;
/// Messages per produce request.
const BATCH: usize = 64;
/// The free-space reserve (`--min-free-bytes`): produces are refused below it, so the metadata
/// store still has room for the delete that frees space. Without a reserve this test failed:
/// sled hit ENOSPC, and every later metadata write, the topic delete's included, answered 500
/// until a restart (sled keeps the first I/O error as a global one).
const MIN_FREE_BYTES: &str = "4194304";
/// Bound on the filling phase: 16 MiB of 64 KiB requests takes about 260 of them.
const FILL_DEADLINE: Duration = Duration::from_secs(60);

/// A tmpfs mounted on a temporary folder, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().expect("temp dir");
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("mount runs");
        assert!(
            output.status.success(),
            "mounting a tmpfs (needs root): {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Tmpfs { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("data")
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

fn batch(tag: &str, n: usize) -> Value {
    let messages: Vec<Value> = (0..BATCH)
        .map(|i| json!({ "id": format!("{tag}-{n}-{i}"), "value": "v".repeat(VALUE_BYTES) }))
        .collect();
    json!({ "messages": messages })
}

/// What the produces got.
#[derive(Debug, Default)]
struct Tally {
    /// (id, partition, offset) of every acknowledged message.
    acked: Vec<(String, u64, u64)>,
    storage_full: u64,
    other_5xx: Vec<(u16, String)>,
    /// A 200 whose messages do not all have an offset (a batch stored in part).
    partial: u64,
}

/// Produces one batch to `topic`; records what came back; returns the status.
async fn produce(
    client: &reqwest::Client,
    base: &str,
    topic: &str,
    n: usize,
    tally: &mut Tally,
) -> u16 {
    let response = client
        .post(format!("{base}/v1/topics/{topic}/messages"))
        .json(&batch(topic, n))
        .send()
        .await
        .expect("produce answered");
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    match status {
        200 => {
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            if messages.len() != BATCH || messages.iter().any(|m| !m["offset"].is_u64()) {
                tally.partial += 1;
            }
            for m in messages {
                if let (Some(id), Some(p), Some(o)) = (
                    m["id"].as_str(),
                    m["partition"].as_u64(),
                    m["offset"].as_u64(),
                ) {
                    tally.acked.push((id.to_owned(), p, o));
                }
            }
        }
        507 => {
            assert_eq!(body["code"], "storage_full", "{body}");
            tally.storage_full += 1;
        }
        s if s >= 500 && s != 503 => tally.other_5xx.push((s, body.to_string())),
        _ => {}
    }
    status
}

async fn create_topic(client: &reqwest::Client, base: &str, name: &str) {
    let created = client
        .post(format!("{base}/v1/topics"))
        .json(&json!({ "name": name, "partitions": 1 }))
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), 201, "create {name}");
}

/// Every acknowledged message of `topic` not found at its position.
async fn missing(server: &Server, topic: &str, acked: &[(String, u64, u64)]) -> usize {
    let stored: Vec<Value> = server.read_partition(topic, 0).await;
    let at: std::collections::HashMap<u64, String> = stored
        .iter()
        .filter_map(|m| Some((m["offset"].as_u64()?, m["id"].as_str()?.to_owned())))
        .collect();
    acked
        .iter()
        .filter(|(id, _, offset)| id.starts_with(topic) && at.get(offset) != Some(id))
        .count()
}

fn flags() -> [&'static str; 4] {
    [
        "--segment-bytes",
        SEGMENT_BYTES,
        "--min-free-bytes",
        MIN_FREE_BYTES,
    ]
}

async fn start(data: &Path) -> Server {
    Server::start_with(data, &flags()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_answers_507_loses_nothing_acknowledged_and_writes_resume_after_a_delete() {
    let tmpfs = Tmpfs::mount(TMPFS_SIZE);
    let data = tmpfs.path();
    let server = start(&data).await;
    let base = server.base.clone();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    create_topic(&client, &base, "kept").await;
    create_topic(&client, &base, "filler").await;

    // Fill: half the batches to each topic, until the disk refuses three in a row.
    let mut tally = Tally::default();
    let started = Instant::now();
    let mut refused_in_a_row = 0;
    let mut n = 0;
    while refused_in_a_row < 3 {
        assert!(started.elapsed() < FILL_DEADLINE, "never full: {tally:?}");
        let topic = if n % 2 == 0 { "kept" } else { "filler" };
        let status = produce(&client, &base, topic, n, &mut tally).await;
        refused_in_a_row = if status == 507 {
            refused_in_a_row + 1
        } else {
            0
        };
        n += 1;
    }
    let acked_when_full = tally.acked.len();
    let alive = client.get(format!("{base}/healthz")).send().await;
    assert!(
        alive.is_ok_and(|r| r.status().is_success()),
        "the process stays up"
    );

    // Space back: delete the filler topic; writes to the other one resume.
    let deleted = client
        .delete(format!("{base}/v1/topics/filler"))
        .send()
        .await
        .expect("delete");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let resume_deadline = Instant::now() + Duration::from_secs(20);
    let mut resumed = false;
    while !resumed && Instant::now() < resume_deadline {
        resumed = produce(&client, &base, "kept", n, &mut tally).await == 200;
        n += 1;
        if !resumed {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let lost_before_restart = missing(&server, "kept", &tally.acked).await;

    // A restart on the same folder opens cleanly and serves every acknowledged message.
    server.kill_9();
    let server = start(&data).await;
    let lost_after_restart = missing(&server, "kept", &tally.acked).await;
    let kept = tally
        .acked
        .iter()
        .filter(|(id, ..)| id.starts_with("kept"))
        .count();

    CaseLine::new("D6", "disk-full-tmpfs-16m")
        .figure("acked before full", acked_when_full)
        .figure("507 storage_full", tally.storage_full)
        .must_be_zero(
            "5xx other than 503/507",
            tally.other_5xx.len() as u64,
            n as u64,
        )
        .must_be_zero("partial acks", tally.partial, n as u64)
        .must_be_zero(
            "acked lost",
            lost_after_restart.max(lost_before_restart) as u64,
            kept as u64,
        )
        .must_be_zero("not resumed after delete", u64::from(!resumed), 1)
        .record();
    assert!(tally.storage_full > 0, "the disk never filled: {tally:?}");
    assert!(tally.other_5xx.is_empty(), "{:?}", tally.other_5xx);
    assert_eq!(tally.partial, 0, "a batch was acknowledged in part");
    assert!(resumed, "writes did not resume after the delete");
    assert_eq!(lost_before_restart, 0, "acknowledged messages missing");
    assert_eq!(
        lost_after_restart, 0,
        "acknowledged messages missing after a restart"
    );
    drop(server);
}
