//! The `wharf` client commands against a real server on 127.0.0.1:0: the built binary is run
//! as a user would, with stdin, stdout, stderr and the exit code checked.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use gateway::config::{EdgeRaw, RawSettings};
use serde_json::Value;

use crate::support::common::Harness;
use crate::wharf_without_env;

/// The most a CLI run in these tests may take.
const RUN_DEADLINE: Duration = Duration::from_secs(60);
const SECRET: &str = "a-test-secret-of-at-least-thirty-two-bytes";

/// What one run of the CLI did.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn ok(self) -> Run {
        assert_eq!(self.code, Some(0), "wharf failed: {self:?}");
        self
    }

    fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).expect("a JSON document")
    }
}

/// `wharf ARGS` against `url`, with no `WHARF_*` variable from the test's environment.
fn command(url: &str, args: &[&str]) -> Command {
    let mut command = wharf_without_env();
    command.env("WHARF_URL", url).args(args);
    command
}

/// Runs `command` with `stdin`, off the runtime's threads, within [`RUN_DEADLINE`].
async fn run_with(mut command: Command, stdin: Vec<u8>) -> Run {
    let waited = tokio::task::spawn_blocking(move || {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wharf starts");
        let mut pipe = child.stdin.take().expect("stdin");
        let writer = std::thread::spawn(move || pipe.write_all(&stdin));
        let output = child.wait_with_output().expect("wharf runs");
        writer.join().expect("writer").expect("stdin written");
        output
    });
    let output = tokio::time::timeout(RUN_DEADLINE, waited)
        .await
        .expect("wharf finishes within the deadline")
        .expect("the run's thread");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
    }
}

async fn wharf(server: &Harness, args: &[&str]) -> Run {
    run_with(command(&server.url(""), args), Vec::new()).await
}

async fn wharf_stdin(server: &Harness, args: &[&str], stdin: &str) -> Run {
    run_with(command(&server.url(""), args), stdin.as_bytes().to_vec()).await
}

/// Asserts a failed run printed exactly one `error: <code>: …` line and exited with `code`.
fn assert_error(run: &Run, code: i32, problem: &str) {
    assert_eq!(run.code, Some(code), "{run:?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one error line: {run:?}");
    assert!(
        lines[0].starts_with(&format!("error: {problem}")),
        "{problem} expected: {run:?}"
    );
}

/// 10,000 lines, keyed over 25 keys, with text that JSON has to escape.
fn keyed_lines() -> Vec<(String, String)> {
    (0..10_000)
        .map(|i| {
            let key = format!("key-{}", i % 25);
            let value = format!(
                "line {i} \"quoted\" \\ tab\there ünïcödé {}",
                "x".repeat(i % 50)
            );
            (key, value)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_lines_round_trip_from_stdin_to_stdout_in_order_per_key() {
    let server = Harness::start().await;
    wharf(
        &server,
        &["topics", "create", "orders", "--partitions", "4"],
    )
    .await
    .ok();
    let sent = keyed_lines();
    let input: String = sent.iter().map(|(k, v)| format!("{k}|{v}\n")).collect();

    let produced = wharf_stdin(&server, &["produce", "orders", "-K", "|"], &input)
        .await
        .ok();
    assert!(
        produced
            .stderr
            .contains("produced 10000 messages to orders"),
        "{produced:?}"
    );
    let consumed = wharf(
        &server,
        &[
            "consume",
            "orders",
            "billing",
            "--create-subscription",
            "--max",
            "10000",
            "--batch",
            "1000",
        ],
    )
    .await
    .ok();

    let lines = consumed.json_lines();
    assert_eq!(lines.len(), 10_000);
    let mut received: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut partition_of_key = BTreeMap::new();
    for line in &lines {
        let key = line["key"].as_str().expect("a key").to_owned();
        assert_eq!(line["delivery_attempt"], 1);
        assert!(
            line["offset"].is_u64() && line["headers"].is_object(),
            "{line}"
        );
        let partition = line["partition"].as_u64().expect("a partition");
        assert_eq!(
            *partition_of_key.entry(key.clone()).or_insert(partition),
            partition
        );
        let value = line["value"].as_str().expect("a text value").to_owned();
        received.entry(key).or_default().push(value);
    }
    let mut expected: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, value) in sent {
        expected.entry(key).or_default().push(value);
    }
    assert_eq!(received, expected, "every line once, in order per key");
    let partitions: std::collections::BTreeSet<_> = partition_of_key.values().collect();
    assert!(partitions.len() > 1, "25 keys over 4 partitions used one");

    let again = wharf(
        &server,
        &["consume", "orders", "billing", "--wait", "200ms"],
    )
    .await
    .ok();
    assert_eq!(again.stdout, "", "everything printed was acked");
    let stats = wharf(&server, &["stats", "--json"]).await.ok().json();
    let topic = &stats["topics"][0];
    assert_eq!(topic["name"], "orders");
    assert_eq!(topic["subscriptions"][0]["stats"]["acked"], 10_000);
    assert_eq!(topic["subscriptions"][0]["stats"]["backlog"], 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_create_list_describe_and_delete_round_trip() {
    let server = Harness::start().await;
    let created = wharf(
        &server,
        &[
            "topics",
            "create",
            "audit",
            "--partitions",
            "3",
            "--retention",
            "1h",
            "--max-message-bytes",
            "2048",
            "--rate-messages",
            "500",
        ],
    )
    .await
    .ok()
    .json();
    assert_eq!(created["name"], "audit");
    assert_eq!(created["partitions"], 3);
    assert_eq!(created["retention_ms"], 3_600_000);
    assert_eq!(created["max_message_bytes"], 2048);
    assert_eq!(created["rate_limit"]["messages_per_second"], 500);

    let table = wharf(&server, &["topics", "list"]).await.ok();
    let row = table.stdout.lines().nth(1).expect("a row");
    assert!(
        row.starts_with("audit ") && row.contains(" 3 "),
        "{table:?}"
    );
    let list = wharf(&server, &["topics", "list", "--json"])
        .await
        .ok()
        .json();
    assert_eq!(list["topics"][0]["name"], "audit");

    let described = wharf(&server, &["topics", "describe", "audit"])
        .await
        .ok()
        .json();
    assert_eq!(
        described["partition_stats"].as_array().map(Vec::len),
        Some(3)
    );

    let deleted = wharf(&server, &["topics", "delete", "audit"]).await.ok();
    assert_eq!(deleted.stdout, "");
    let gone = wharf(&server, &["topics", "describe", "audit"]).await;
    assert_error(&gone, 1, "topic_not_found: ");
    assert_eq!(gone.stdout, "");
    let list = wharf(&server, &["topics", "list", "--json"])
        .await
        .ok()
        .json();
    assert_eq!(list["topics"], serde_json::json!([]));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_usage_errors_and_an_unreachable_server_have_their_own_exit_codes() {
    let server = Harness::start().await;
    wharf(
        &server,
        &["topics", "create", "small", "--max-message-bytes", "1024"],
    )
    .await
    .ok();
    let exists = wharf(&server, &["topics", "create", "small"]).await;
    assert_error(&exists, 1, "topic_exists: ");
    let unknown = wharf_stdin(&server, &["produce", "nowhere"], "hello\n").await;
    assert_eq!(unknown.code, Some(1), "{unknown:?}");
    assert!(
        unknown.stderr.contains("error: topic_not_found: "),
        "{unknown:?}"
    );
    let too_large = wharf_stdin(&server, &["produce", "small"], &"x".repeat(1025)).await;
    assert_eq!(too_large.code, Some(1), "{too_large:?}");
    assert!(
        too_large.stderr.contains("error: message_too_large: "),
        "{too_large:?}"
    );
    let fits = wharf_stdin(&server, &["produce", "small"], &"x".repeat(1024)).await;
    assert_eq!(fits.code, Some(0), "{fits:?}");
    let no_subscription = wharf(&server, &["consume", "small", "nobody"]).await;
    assert_eq!(no_subscription.code, Some(1), "{no_subscription:?}");
    assert!(
        no_subscription
            .stderr
            .contains("error: subscription_not_found: "),
        "{no_subscription:?}"
    );

    let bad_delay = wharf_stdin(&server, &["produce", "small", "--delay", "soon"], "x").await;
    assert_eq!(bad_delay.code, Some(2), "{bad_delay:?}");
    let bad_url = run_with(command("ftp://example", &["topics", "list"]), Vec::new()).await;
    assert_error(&bad_url, 2, "invalid --url ");

    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a port");
    let url = format!("http://{closed_port}");
    let unreachable = run_with(command(&url, &["topics", "list"]), Vec::new()).await;
    assert_error(&unreachable, 3, "cannot reach ");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_and_wharf_token_work_against_a_server_with_auth_on() {
    let server = Harness::start_with(RawSettings {
        edge: EdgeRaw {
            auth_hs256_secret: Some(SECRET.into()),
            ..EdgeRaw::default()
        },
        ..RawSettings::default()
    })
    .await;
    let mint = |scope: &str| {
        let mut command = command(
            &server.url(""),
            &["token", "--sub", "cli-test", "--scope", scope],
        );
        command.env("WHARF_AUTH_HS256_SECRET", SECRET);
        run_with(command, Vec::new())
    };
    let admin = mint("admin:*").await.ok().stdout.trim().to_owned();
    let producer = mint("produce:other.*").await.ok().stdout.trim().to_owned();

    let anonymous = wharf(&server, &["topics", "list"]).await;
    assert_error(&anonymous, 1, "unauthorized: ");
    wharf(&server, &["--token", &admin, "topics", "create", "secure"])
        .await
        .ok();
    let mut from_env = command(&server.url(""), &["topics", "list", "--json"]);
    from_env.env("WHARF_TOKEN", &admin);
    let listed = run_with(from_env, Vec::new()).await.ok().json();
    assert_eq!(listed["topics"][0]["name"], "secure");
    let forbidden = wharf_stdin(&server, &["produce", "secure", "--token", &producer], "x\n").await;
    assert_eq!(forbidden.code, Some(1), "{forbidden:?}");
    assert!(
        forbidden.stderr.contains("error: forbidden: "),
        "{forbidden:?}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_prints_a_partition_from_an_offset() {
    let server = Harness::start().await;
    wharf(&server, &["topics", "create", "log"]).await.ok();
    let input: String = (0..50).map(|i| format!("record {i}\n")).collect();
    wharf_stdin(&server, &["produce", "log", "-H", "origin=test"], &input)
        .await
        .ok();

    let page = wharf(
        &server,
        &["read", "log", "-p", "0", "--offset", "20", "--max", "5"],
    )
    .await
    .ok()
    .json_lines();
    let offsets: Vec<u64> = page.iter().filter_map(|m| m["offset"].as_u64()).collect();
    assert_eq!(offsets, vec![20, 21, 22, 23, 24]);
    assert_eq!(page[0]["value"], "record 20");
    assert_eq!(page[0]["partition"], 0);
    assert_eq!(page[0]["headers"]["origin"], "test");

    let tail = wharf(&server, &["read", "log", "--offset", "45", "-o", "value"])
        .await
        .ok();
    assert_eq!(
        tail.stdout,
        "record 45\nrecord 46\nrecord 47\nrecord 48\nrecord 49\n"
    );
    let past_end = wharf(&server, &["read", "log", "--offset", "51"]).await;
    assert_error(&past_end, 1, "offset_out_of_range: ");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_produce_waits_for_retry_after_and_sends_everything() {
    let server = Harness::start().await;
    wharf(
        &server,
        &["topics", "create", "slow", "--rate-messages", "100"],
    )
    .await
    .ok();
    let input: String = (0..250).map(|i| format!("m{i}\n")).collect();
    let produced = wharf_stdin(
        &server,
        &["produce", "slow", "--batch-messages", "100"],
        &input,
    )
    .await
    .ok();
    assert!(
        produced.stderr.contains("produced 250 messages"),
        "{produced:?}"
    );
    assert!(
        produced.stderr.contains("retries after 429/503"),
        "{produced:?}"
    );
    let values = wharf(&server, &["read", "slow", "-o", "value"]).await.ok();
    assert_eq!(values.stdout, input, "in order, each once");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_waits_for_new_messages_until_max() {
    let server = Harness::start().await;
    wharf(&server, &["topics", "create", "live"]).await.ok();
    let consumer = tokio::spawn(run_with(
        command(
            &server.url(""),
            &[
                "consume",
                "live",
                "tail",
                "--create-subscription",
                "--start",
                "latest",
                "--follow",
                "--max",
                "3",
                "-o",
                "value",
            ],
        ),
        Vec::new(),
    ));
    wait_for_subscription(&server, "live").await;
    wharf_stdin(&server, &["produce", "live"], "one\ntwo\n")
        .await
        .ok();
    wharf_stdin(&server, &["produce", "live"], "three\nfour\n")
        .await
        .ok();
    let consumed = consumer.await.expect("consumer task").ok();
    assert_eq!(consumed.stdout, "one\ntwo\nthree\n");
    server.stop().await;
}

/// Polls `wharf topics describe` until `topic` has a subscription (a consumer started).
async fn wait_for_subscription(server: &Harness, topic: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let described = wharf(server, &["topics", "describe", topic])
            .await
            .ok()
            .json();
        if described["subscriptions"] == 1 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no subscription in 20 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_closes_stdout_leaves_the_batch_it_missed_unacked() {
    let server = Harness::start().await;
    wharf(&server, &["topics", "create", "wide"]).await.ok();
    let input: String = (0..3000).map(|i| format!("{i:0>100}\n")).collect();
    wharf_stdin(&server, &["produce", "wide"], &input)
        .await
        .ok();

    let mut consume = command(
        &server.url(""),
        &[
            "consume",
            "wide",
            "head",
            "--create-subscription",
            "--batch",
            "100",
            "-o",
            "value",
        ],
    );
    let (status, stderr) = tokio::task::spawn_blocking(move || {
        use std::io::{BufRead, Read};
        let mut child = consume
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wharf starts");
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("a first line");
        assert_eq!(first, format!("{:0>100}\n", 0));
        let status = child.wait().expect("wharf ends");
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut stderr)
            .expect("stderr read");
        (status, stderr)
    })
    .await
    .expect("the run's thread");
    assert!(
        status.success(),
        "a closed stdout is a normal end: {status} {stderr}"
    );
    assert!(!stderr.contains("error"), "{stderr}");

    let stats = wharf(&server, &["stats", "--json"]).await.ok().json();
    let stats = &stats["topics"][0]["subscriptions"][0]["stats"];
    let acked = stats["acked"].as_u64().expect("acked");
    assert!(
        acked < 3000 && acked % 100 == 0,
        "whole printed batches acked: {stats}"
    );
    assert_eq!(
        stats["in_flight"], 100,
        "the batch that failed to print: {stats}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_messages_arrive_later_and_id_prefix_makes_a_rerun_store_nothing() {
    let server = Harness::start().await;
    wharf(&server, &["topics", "create", "later"]).await.ok();
    let produced = wharf_stdin(&server, &["produce", "later", "--delay", "1s"], "soon\n")
        .await
        .ok();
    assert!(
        produced.stderr.contains("produced 1 messages"),
        "{produced:?}"
    );
    let early = wharf(&server, &["read", "later"]).await.ok();
    assert_eq!(
        early.stdout, "",
        "a delayed message is not in the log before it is due"
    );
    let late = wharf(
        &server,
        &[
            "consume",
            "later",
            "s",
            "--create-subscription",
            "--wait",
            "5s",
            "--max",
            "1",
            "-o",
            "value",
        ],
    )
    .await
    .ok();
    assert_eq!(late.stdout, "soon\n");

    wharf(&server, &["topics", "create", "once"]).await.ok();
    let input: String = (0..10).map(|i| format!("m{i}\n")).collect();
    let args = ["produce", "once", "--id-prefix", "import-7-"];
    let first = wharf_stdin(&server, &args, &input).await.ok();
    assert!(!first.stderr.contains("duplicates"), "{first:?}");
    let again = wharf_stdin(&server, &args, &input).await.ok();
    assert!(
        again.stderr.contains("10 duplicates not stored again"),
        "{again:?}"
    );
    let stored = wharf(&server, &["read", "once"]).await.ok().json_lines();
    assert_eq!(stored.len(), 10);
    assert_eq!(stored[3]["id"], "import-7-4");
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_follow_at_once_with_exit_code_0() {
    let server = Harness::start().await;
    wharf(&server, &["topics", "create", "quiet"]).await.ok();
    let mut consume = command(
        &server.url(""),
        &[
            "consume",
            "quiet",
            "tail",
            "--create-subscription",
            "--follow",
        ],
    );
    let child = consume
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wharf starts");
    wait_for_subscription(&server, "quiet").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let interrupted = std::time::Instant::now();
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("the run's thread")
        .expect("wharf ends");
    assert!(
        interrupted.elapsed() < Duration::from_secs(5),
        "not stopped while a 20 s receive waited"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("consumed 0 messages"), "{stderr}");
    server.stop().await;
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The session in the README's "The `wharf` CLI", command by command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_session_runs_as_shown() {
    let server = Harness::start().await;
    wharf(
        &server,
        &["topics", "create", "orders", "--partitions", "3"],
    )
    .await
    .ok();
    let input = "customer-1|order 1\ncustomer-2|order 2\ncustomer-1|order 3\n";
    let args = ["produce", "orders", "-K", "|", "-H", "source=web"];
    let produced = wharf_stdin(&server, &args, input).await.ok();
    assert!(
        produced
            .stderr
            .starts_with("produced 3 messages to orders in 1 requests")
            && produced.stderr.ends_with("; per partition 0:1 1:2\n"),
        "{produced:?}"
    );

    let consumed = wharf(
        &server,
        &["consume", "orders", "billing", "--create-subscription"],
    )
    .await
    .ok();
    assert_eq!(consumed.stderr, "consumed 3 messages from orders/billing\n");
    let mut lines: Vec<(String, String, u64, u64)> = consumed
        .json_lines()
        .iter()
        .map(|line| {
            assert_eq!(line["headers"]["source"], "web");
            assert_eq!(line["delivery_attempt"], 1);
            let text = |field: &str| line[field].as_str().expect("text").to_owned();
            let number = |field: &str| line[field].as_u64().expect("number");
            (
                text("key"),
                text("value"),
                number("partition"),
                number("offset"),
            )
        })
        .collect();
    lines.sort_by_key(|line| (line.2, line.3));
    let expected = [
        ("customer-2", "order 2", 0, 0),
        ("customer-1", "order 1", 1, 0),
        ("customer-1", "order 3", 1, 1),
    ]
    .map(|(key, value, partition, offset)| (key.into(), value.into(), partition, offset));
    assert_eq!(lines, expected);

    let read = wharf(
        &server,
        &["read", "orders", "-p", "1", "--offset", "1", "-o", "value"],
    )
    .await
    .ok();
    assert_eq!(read.stdout, "order 3\n");

    let stats = wharf(&server, &["stats"]).await.ok();
    let rows: Vec<&str> = stats.stdout.lines().collect();
    assert_eq!(rows.len(), 5, "{}", stats.stdout);
    let topic = words(rows[1]);
    assert_eq!(
        (topic[0], topic[1], topic[2], topic[4], topic[5]),
        ("orders", "3", "3", "1", "0")
    );
    assert_eq!(
        words(rows[4]),
        ["orders/billing", "0", "0", "-", "3", "3", "0"]
    );

    let missing = wharf(&server, &["topics", "describe", "nope"]).await;
    assert_error(&missing, 1, "topic_not_found: topic 'nope' does not exist");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_keep_to_the_message_and_byte_limits() {
    let server = Harness::start().await;
    wharf(&server, &["topics", "create", "bulk"]).await.ok();
    let produce = |input: String, extra: &'static [&'static str]| {
        let mut args = vec!["produce", "bulk", "--linger", "10s"];
        args.extend_from_slice(extra);
        run_with(command(&server.url(""), &args), input.into_bytes())
    };
    let lines = |count: usize, width: usize| -> String {
        (0..count).map(|i| format!("{i:0>width$}\n")).collect()
    };

    let full = produce(lines(2500, 8), &[]).await.ok();
    assert!(
        full.stderr
            .contains("produced 2500 messages to bulk in 3 requests"),
        "{full:?}"
    );
    // {"value":"<95 chars>"} is 106 bytes: 9 of them make a 977-byte body, 10 would not fit.
    let by_bytes = produce(lines(30, 95), &["--batch-bytes", "1000"])
        .await
        .ok();
    assert!(
        by_bytes
            .stderr
            .contains("produced 30 messages to bulk in 4 requests"),
        "{by_bytes:?}"
    );
    let alone = produce(lines(1, 2000), &["--batch-bytes", "1000"])
        .await
        .ok();
    assert!(
        alone
            .stderr
            .contains("produced 1 messages to bulk in 1 requests"),
        "{alone:?}"
    );
    let by_count = produce(lines(10, 1), &["--batch-messages", "3"]).await.ok();
    assert!(
        by_count
            .stderr
            .contains("produced 10 messages to bulk in 4 requests"),
        "{by_count:?}"
    );
    for refused in ["0", "1001"] {
        let run = run_with(
            command(
                &server.url(""),
                &["produce", "bulk", "--batch-messages", refused],
            ),
            Vec::new(),
        )
        .await;
        assert_eq!(run.code, Some(2), "{run:?}");
    }
    let stored = wharf(
        &server,
        &["read", "bulk", "--offset", "2530", "-o", "value"],
    )
    .await
    .ok();
    assert_eq!(stored.stdout.lines().next().map(str::len), Some(2000));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_create_list_describe_and_delete_round_trip() {
    let server = Harness::start().await;
    wharf(&server, &["topics", "create", "jobs"]).await.ok();
    let created = wharf(
        &server,
        &[
            "subscriptions",
            "create",
            "jobs",
            "workers",
            "--start",
            "earliest",
            "--ack-timeout",
            "45s",
            "--max-deliveries",
            "3",
            "-t",
            "eu",
            "-t",
            "us",
            "--ordering",
            "key",
        ],
    )
    .await
    .ok()
    .json();
    assert_eq!(created["name"], "workers");
    assert_eq!(created["start"], "earliest");
    assert_eq!(created["ack_timeout_ms"], 45_000);
    assert_eq!(created["max_deliveries"], 3);
    assert_eq!(created["filter"]["tags"], serde_json::json!(["eu", "us"]));
    assert_eq!(created["ordering"], "key");

    let table = wharf(&server, &["subs", "list", "jobs"]).await.ok();
    let rows: Vec<&str> = table.stdout.lines().collect();
    assert_eq!(rows.len(), 2, "{table:?}");
    assert_eq!(words(rows[1])[0], "jobs/workers");
    let listed = wharf(&server, &["subs", "list", "jobs", "--json"])
        .await
        .ok()
        .json();
    assert_eq!(listed["subscriptions"][0]["name"], "workers");
    let described = wharf(&server, &["subs", "describe", "jobs", "workers"])
        .await
        .ok()
        .json();
    assert_eq!(described["stats"]["backlog"], 0);

    let exists = wharf(&server, &["subs", "create", "jobs", "workers"]).await;
    assert_error(&exists, 1, "subscription_exists: ");
    wharf(&server, &["subs", "delete", "jobs", "workers"])
        .await
        .ok();
    let gone = wharf(&server, &["subs", "describe", "jobs", "workers"]).await;
    assert_error(&gone, 1, "subscription_not_found: ");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_the_servers_body_limit_is_split_and_sent_in_order() {
    let server = Harness::start_with(RawSettings {
        max_body_bytes: Some("2048".into()),
        ..RawSettings::default()
    })
    .await;
    wharf(&server, &["topics", "create", "narrow"]).await.ok();
    let input: String = (0..100).map(|i| format!("{i:0>100}\n")).collect();
    let produced = wharf_stdin(&server, &["produce", "narrow", "--linger", "10s"], &input)
        .await
        .ok();
    assert!(
        produced.stderr.contains("produced 100 messages"),
        "{produced:?}"
    );
    assert!(
        produced.stderr.contains("batches split after 413"),
        "{produced:?}"
    );
    let stored = wharf(&server, &["read", "narrow", "-o", "value"])
        .await
        .ok();
    assert_eq!(stored.stdout, input);

    let too_large = format!("before\n{}\nafter\n", "y".repeat(3000));
    let refused = wharf_stdin(
        &server,
        &["produce", "narrow", "--linger", "10s"],
        &too_large,
    )
    .await;
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused.stderr.contains("produced 1 messages"),
        "{refused:?}"
    );
    assert!(
        refused.stderr.contains("error: message_too_large: "),
        "{refused:?}"
    );
    let tail = wharf(
        &server,
        &["read", "narrow", "--offset", "100", "-o", "value"],
    )
    .await
    .ok();
    assert_eq!(
        tail.stdout, "before\n",
        "what came before the refused line, nothing after"
    );
    server.stop().await;
}
