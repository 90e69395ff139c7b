//! `wharf produce TOPIC`: lines from stdin (or `--file`) become messages, sent in order as JSON
//! batches of at most 1,000 messages and `--batch-bytes`, one batch in flight at a time.
//!
//! A reader thread hands lines over a bounded channel; a batch is sent when it is full or when
//! no new line arrived for `--linger`, so a line typed at a terminal goes out at once and a
//! piped file goes out in full batches.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use reqwest::Method;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::cli::duration::parse_duration_ms;
use crate::cli::error::CliError;
use crate::cli::http::Api;

/// The server's most messages per batch (`broker_core::limits`).
pub const MAX_BATCH_MESSAGES: usize = broker_core::limits::MAX_BATCH_MESSAGES;
/// Default body size of a batch: an eighth of the server's default `max_body_bytes` (8 MiB),
/// so a batch is never refused for size and costs the server's memory budget little.
pub const DEFAULT_BATCH_BYTES: usize = 1024 * 1024;
/// Lines read ahead of the batch being sent: enough for a few full batches.
const READ_AHEAD_LINES: usize = 4 * MAX_BATCH_MESSAGES;

/// The flags of `wharf produce`.
#[derive(Debug, clap::Args)]
pub struct ProduceArgs {
    /// Topic to produce to.
    pub topic: String,
    /// Read lines from this file instead of stdin.
    #[arg(long, short = 'f')]
    pub file: Option<PathBuf>,
    /// Key of every message (messages with one key keep their order on one partition).
    #[arg(short, long)]
    pub key: Option<String>,
    /// Split each line at the first DELIM into key and value (a line without it: no key,
    /// or --key).
    #[arg(short = 'K', long, value_name = "DELIM")]
    pub key_delimiter: Option<String>,
    /// Deliver each message this much later: 500ms, 10s, 5m, or milliseconds.
    #[arg(long, value_parser = parse_duration_ms)]
    pub delay: Option<u64>,
    /// A message header, NAME=VALUE; repeatable.
    #[arg(long = "header", short = 'H', value_name = "NAME=VALUE", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Give message n (from 1, in input order) the id PREFIXn: a re-run of the same input
    /// within the topic's dedup window, or a retried request, stores nothing twice.
    #[arg(long, value_name = "PREFIX")]
    pub id_prefix: Option<String>,
    /// A tag (for subscription filters); repeatable.
    #[arg(long = "tag", short = 't')]
    pub tags: Vec<String>,
    /// When the server answers: none (202, before the write), leader (default), all.
    #[arg(long, value_parser = ["none", "leader", "all"])]
    pub ack: Option<String>,
    /// Most messages per request, 1 to 1000.
    #[arg(long, default_value_t = MAX_BATCH_MESSAGES as u64,
        value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub batch_messages: u64,
    /// Most bytes per request body (keep under the server's max_body_bytes, 8 MiB by default);
    /// a single larger message goes alone.
    #[arg(long, default_value_t = DEFAULT_BATCH_BYTES)]
    pub batch_bytes: usize,
    /// How long to wait for more lines before sending a partial batch.
    #[arg(long, default_value = "10ms", value_parser = parse_duration_ms)]
    pub linger: u64,
}

/// Parses `NAME=VALUE`.
fn parse_header(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("{text:?}: expected NAME=VALUE")),
    }
}

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

/// The part of a produce reply the summary counts.
#[derive(Debug, Deserialize)]
struct ProduceReply {
    messages: Vec<ProducedEntry>,
}

#[derive(Debug, Deserialize)]
struct ProducedEntry {
    partition: u32,
    #[serde(default)]
    duplicate: bool,
}

/// What was produced so far.
#[derive(Debug, Default)]
struct Tally {
    messages: u64,
    bytes: u64,
    batches: u64,
    duplicates: u64,
    per_partition: BTreeMap<u32, u64>,
}

/// Turns input lines into encoded messages.
#[derive(Debug)]
struct Encoder {
    key: Option<String>,
    key_delimiter: Option<String>,
    headers: BTreeMap<String, String>,
    tags: Vec<String>,
    delay_ms: Option<u64>,
    id_prefix: Option<String>,
    encoded: u64,
}

impl Encoder {
    /// The JSON of the next message, made of `line` (without its newline).
    fn encode(&mut self, line: &[u8]) -> Result<Vec<u8>, CliError> {
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

/// Runs `wharf produce`.
pub async fn run(api: &Api, args: ProduceArgs) -> Result<(), CliError> {
    let input: Box<dyn Read + Send> =
        match &args.file {
            Some(path) => Box::new(std::fs::File::open(path).map_err(|source| {
                CliError::io(format!("cannot open {}", path.display()), source)
            })?),
            None => Box::new(std::io::stdin()),
        };
    let lines = spawn_reader(input);
    let mut encoder = Encoder {
        key: args.key.clone(),
        key_delimiter: args.key_delimiter.clone(),
        headers: args.headers.iter().cloned().collect(),
        tags: args.tags.clone(),
        delay_ms: args.delay,
        id_prefix: args.id_prefix.clone(),
        encoded: 0,
    };
    let started = Instant::now();
    let mut tally = Tally::default();
    let result = produce_all(api, &args, &mut encoder, lines, &mut tally).await;
    report(&args.topic, &tally, api.retries(), started.elapsed());
    result
}

/// Reads lines on a thread of its own (stdin is blocking) into a bounded channel.
fn spawn_reader(input: Box<dyn Read + Send>) -> mpsc::Receiver<Result<Vec<u8>, CliError>> {
    let (sender, receiver) = mpsc::channel(READ_AHEAD_LINES);
    std::thread::spawn(move || {
        let mut reader = BufReader::new(input);
        loop {
            let mut line = Vec::new();
            let item = match reader.read_until(b'\n', &mut line) {
                Ok(0) => return,
                Ok(_) => Ok(strip_newline(line)),
                Err(source) => Err(CliError::io("cannot read the input", source)),
            };
            let failed = item.is_err();
            if sender.blocking_send(item).is_err() || failed {
                return;
            }
        }
    });
    receiver
}

/// Drops a trailing `\n` or `\r\n`.
fn strip_newline(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    line
}

async fn produce_all(
    api: &Api,
    args: &ProduceArgs,
    encoder: &mut Encoder,
    mut lines: mpsc::Receiver<Result<Vec<u8>, CliError>>,
    tally: &mut Tally,
) -> Result<(), CliError> {
    let linger = Duration::from_millis(args.linger);
    let mut carried: Option<Vec<u8>> = None;
    let mut input_done = false;
    while !input_done || carried.is_some() {
        let mut batch = Batch::default();
        if let Some(message) = carried.take() {
            batch.push(message);
        } else {
            match lines.recv().await {
                Some(line) => batch.push(encoder.encode(&line?)?),
                None => break,
            }
        }
        while (batch.count as u64) < args.batch_messages && !input_done {
            let line = match tokio::time::timeout(linger, lines.recv()).await {
                Err(_elapsed) => break,
                Ok(None) => {
                    input_done = true;
                    break;
                }
                Ok(Some(line)) => line?,
            };
            let message = encoder.encode(&line)?;
            if batch.body_len_with(&message) > args.batch_bytes {
                carried = Some(message);
                break;
            }
            batch.push(message);
        }
        send_batch(api, args, batch, tally).await?;
    }
    Ok(())
}

/// Encoded messages waiting to be sent as one request.
#[derive(Debug, Default)]
struct Batch {
    body: Vec<u8>,
    count: usize,
}

impl Batch {
    const OPEN: &'static [u8] = b"{\"messages\":[";
    const CLOSE: &'static [u8] = b"]}";

    fn push(&mut self, message: Vec<u8>) {
        if self.count == 0 {
            self.body.extend_from_slice(Self::OPEN);
        } else {
            self.body.push(b',');
        }
        self.body.extend_from_slice(&message);
        self.count += 1;
    }

    /// The size of the request body with `message` added.
    fn body_len_with(&self, message: &[u8]) -> usize {
        self.body.len() + 1 + message.len() + Self::CLOSE.len()
    }

    fn finish(mut self) -> Bytes {
        self.body.extend_from_slice(Self::CLOSE);
        Bytes::from(self.body)
    }
}

async fn send_batch(
    api: &Api,
    args: &ProduceArgs,
    batch: Batch,
    tally: &mut Tally,
) -> Result<(), CliError> {
    let count = batch.count;
    let body = batch.finish();
    let bytes = body.len() as u64;
    let mut call = api.call_encoded(
        Method::POST,
        &["v1", "topics", &args.topic, "messages"],
        body,
    );
    if let Some(ack) = &args.ack {
        call = call.query(&[("ack", ack.clone())]);
    }
    let reply: ProduceReply = api.json(call).await?;
    if reply.messages.len() != count {
        return Err(CliError::BadReply {
            url: format!("/v1/topics/{}/messages", args.topic),
            reason: format!(
                "{count} messages sent, {} in the reply",
                reply.messages.len()
            ),
        });
    }
    tally.messages += count as u64;
    tally.bytes += bytes;
    tally.batches += 1;
    for entry in reply.messages {
        tally.duplicates += u64::from(entry.duplicate);
        *tally.per_partition.entry(entry.partition).or_default() += 1;
    }
    Ok(())
}

/// The one-line summary on stderr.
fn report(topic: &str, tally: &Tally, retries: u64, elapsed: Duration) {
    let partitions: Vec<String> = tally
        .per_partition
        .iter()
        .map(|(partition, count)| format!("{partition}:{count}"))
        .collect();
    let duplicates = match tally.duplicates {
        0 => String::new(),
        n => format!(", {n} duplicates not stored again"),
    };
    let retries = match retries {
        0 => String::new(),
        n => format!(", {n} retries after 429/503"),
    };
    eprintln!(
        "produced {} messages to {topic} in {} requests ({} body bytes) in {:.2}s; per partition {}{duplicates}{retries}",
        tally.messages,
        tally.batches,
        tally.bytes,
        elapsed.as_secs_f64(),
        if partitions.is_empty() {
            "-".to_owned()
        } else {
            partitions.join(" ")
        },
    );
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
        batch.push(b"{\"value\":\"a\"}".to_vec());
        let next = b"{\"value\":\"b\"}".to_vec();
        let predicted = batch.body_len_with(&next);
        batch.push(next);
        let body = batch.finish();
        assert_eq!(body.len(), predicted);
        let parsed: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(parsed["messages"][1]["value"], "b");
    }

    #[test]
    fn headers_need_a_name_and_an_equals_sign() {
        assert_eq!(parse_header("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_header("=b").is_err());
        assert!(parse_header("ab").is_err());
    }
}
