//! `wharf produce TOPIC`: lines from stdin (or `--file`) become messages, sent in order as JSON
//! batches of at most 1,000 messages and `--batch-bytes`, one batch in flight at a time.
//!
//! A reader thread hands lines over a bounded channel; a batch is sent when it is full or when
//! no new line arrived for `--linger`, so a line typed at a terminal goes out at once and a
//! piped file goes out in full batches.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::cli::batch::{Batch, Encoder, strip_newline};
use crate::cli::duration::parse_duration_ms;
use crate::cli::error::CliError;
use crate::cli::http::Api;

/// The server's most messages per batch (`broker_core::limits`).
pub(crate) const MAX_BATCH_MESSAGES: usize = broker_core::limits::MAX_BATCH_MESSAGES;
/// Default body size of a batch: an eighth of the server's default `max_body_bytes` (8 MiB),
/// so a batch is never refused for size and costs the server's memory budget little.
pub(crate) const DEFAULT_BATCH_BYTES: usize = 1024 * 1024;
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
    splits: u64,
    duplicates: u64,
    per_partition: BTreeMap<u32, u64>,
}

/// Runs `wharf produce`.
pub(crate) async fn run(api: &Api, args: ProduceArgs) -> Result<(), CliError> {
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
        while (batch.count() as u64) < args.batch_messages && !input_done {
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

/// Sends `batch`; one the server refuses as too large (413) goes again as two halves, in
/// order, down to single messages, so a server whose `max_body_bytes` is below
/// `--batch-bytes` still gets everything (a 413 stores nothing).
async fn send_batch(
    api: &Api,
    args: &ProduceArgs,
    batch: Batch,
    tally: &mut Tally,
) -> Result<(), CliError> {
    let mut queue = VecDeque::from([batch]);
    while let Some(batch) = queue.pop_front() {
        match send_request(api, args, &batch, tally).await {
            Err(error) if error.status() == Some(413) && batch.count() > 1 => {
                tally.splits += 1;
                let (first, second) = batch.split();
                queue.push_front(second);
                queue.push_front(first);
            }
            result => result?,
        }
    }
    Ok(())
}

async fn send_request(
    api: &Api,
    args: &ProduceArgs,
    batch: &Batch,
    tally: &mut Tally,
) -> Result<(), CliError> {
    let count = batch.count();
    let body = batch.body();
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
    let splits = match tally.splits {
        0 => String::new(),
        n => format!(", {n} batches split after 413"),
    };
    let retries = match retries {
        0 => String::new(),
        n => format!(", {n} retries after 429/503"),
    };
    eprintln!(
        "produced {} messages to {topic} in {} requests ({} body bytes) in {:.2}s; per partition {}{duplicates}{splits}{retries}",
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

    #[test]
    fn headers_need_a_name_and_an_equals_sign() {
        assert_eq!(parse_header("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_header("=b").is_err());
        assert!(parse_header("ab").is_err());
    }
}
