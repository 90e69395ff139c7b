//! `wharf consume TOPIC SUB`: long-poll receives through a subscription, one JSON line per
//! message on stdout, and an ack of each batch once its lines are flushed, so a message is
//! acked only after it was handed to the reader of stdout (at least once: a crash between the
//! two prints it again later).

use std::pin::Pin;
use std::time::Duration;

use base64::Engine;
use futures_util::FutureExt;
use reqwest::Method;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::cli::duration::parse_duration_ms;
use crate::cli::error::CliError;
use crate::cli::http::Api;
use crate::cli::output::Output;

/// Margin on top of a long-poll's wait before the request times out.
pub(crate) const LONG_POLL_MARGIN: Duration = Duration::from_secs(15);
/// The longest wait the server allows (`broker_core::limits::MAX_WAIT_MS`).
const MAX_WAIT_MS: u64 = broker_core::limits::MAX_WAIT_MS;

/// How each message is printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One JSON object per line: partition, offset, id, key, value (or value_base64),
    /// headers, tags, publish_time_ms, delivery_attempt.
    #[default]
    Json,
    /// The value alone (binary values decoded), one per line.
    Value,
}

/// The flags of `wharf consume`.
#[derive(Debug, clap::Args)]
pub struct ConsumeArgs {
    /// Topic.
    pub topic: String,
    /// Subscription (consumer group); it must exist unless --create-subscription.
    pub subscription: String,
    /// Keep long-polling for new messages; without it, stop at the first empty receive.
    #[arg(long, short = 'F')]
    pub follow: bool,
    /// Stop after this many messages.
    #[arg(long, short = 'n')]
    pub max: Option<u64>,
    /// How long one receive waits for a first message (at most 60s); default 1s, or 20s
    /// with --follow.
    #[arg(long, value_parser = parse_duration_ms)]
    pub wait: Option<u64>,
    /// Most messages per receive, 1 to 1000.
    #[arg(long, default_value_t = 100,
        value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub batch: u64,
    /// Lease of received messages (default: the subscription's ack timeout).
    #[arg(long, value_parser = parse_duration_ms)]
    pub ack_timeout: Option<u64>,
    /// Create the subscription first when it does not exist.
    #[arg(long)]
    pub create_subscription: bool,
    /// Where a subscription made by --create-subscription starts.
    #[arg(long, default_value = "earliest", value_parser = ["earliest", "latest"])]
    pub start: String,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Format::Json)]
    pub format: Format,
}

/// The part of a receive reply the CLI needs; each message is kept whole for printing.
#[derive(Debug, Deserialize)]
struct ReceiveReply {
    messages: Vec<Map<String, Value>>,
}

/// The reply to an ack.
#[derive(Debug, Deserialize)]
struct AckReply {
    failed: Vec<FailedAck>,
}

#[derive(Debug, Deserialize)]
struct FailedAck {
    code: String,
}

/// Runs `wharf consume`.
pub(crate) async fn run(api: &Api, args: ConsumeArgs) -> Result<(), CliError> {
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    // Polled once now, so that Ctrl-C is ours (not the default exit) from here on.
    if let Some(Ok(())) = (&mut interrupt).now_or_never() {
        return Ok(());
    }
    if args.create_subscription {
        create_subscription(api, &args).await?;
    }
    let mut out = Output::new();
    let mut consumed = 0u64;
    let result = consume(api, &args, interrupt, &mut out, &mut consumed).await;
    if !matches!(&result, Err(error) if error.is_broken_pipe()) {
        eprintln!(
            "consumed {consumed} messages from {}/{}",
            args.topic, args.subscription
        );
    }
    result
}

async fn create_subscription(api: &Api, args: &ConsumeArgs) -> Result<(), CliError> {
    let body = json!({"name": args.subscription, "start": args.start});
    let call = api.call_json(
        Method::POST,
        &["v1", "topics", &args.topic, "subscriptions"],
        &body,
    )?;
    match api.send(call).await {
        Ok(_) => Ok(()),
        Err(error) if error.code() == Some("subscription_exists") => Ok(()),
        Err(error) => Err(error),
    }
}

async fn consume(
    api: &Api,
    args: &ConsumeArgs,
    mut interrupt: Pin<&mut impl Future<Output = std::io::Result<()>>>,
    out: &mut Output,
    consumed: &mut u64,
) -> Result<(), CliError> {
    let default_wait = if args.follow { 20_000 } else { 1_000 };
    let wait_ms = args.wait.unwrap_or(default_wait).min(MAX_WAIT_MS);
    loop {
        let want = match args.max {
            Some(max) => args.batch.min(max.saturating_sub(*consumed)),
            None => args.batch,
        };
        if want == 0 {
            return Ok(());
        }
        let receive = receive(api, args, want, wait_ms);
        let messages = tokio::select! {
            messages = receive => messages?,
            Ok(()) = interrupt.as_mut() => return Ok(()),
        };
        if messages.is_empty() {
            if args.follow {
                continue;
            }
            return Ok(());
        }
        let receipts = print(out, args.format, messages)?;
        out.flush()?;
        *consumed += receipts.len() as u64;
        ack(api, args, receipts).await?;
    }
}

/// One receive of at most `want` messages.
async fn receive(
    api: &Api,
    args: &ConsumeArgs,
    want: u64,
    wait_ms: u64,
) -> Result<Vec<Map<String, Value>>, CliError> {
    let mut body = json!({"max_messages": want, "wait_ms": wait_ms});
    if let Some(lease) = args.ack_timeout {
        body["ack_timeout_ms"] = json!(lease);
    }
    let segments = [
        "v1",
        "topics",
        &args.topic,
        "subscriptions",
        &args.subscription,
        "receive",
    ];
    let call = api
        .call_json(Method::POST, &segments, &body)?
        .timeout(Duration::from_millis(wait_ms) + LONG_POLL_MARGIN);
    Ok(api.json::<ReceiveReply>(call).await?.messages)
}

/// Prints the messages and returns their receipts, in order.
fn print(
    out: &mut Output,
    format: Format,
    messages: Vec<Map<String, Value>>,
) -> Result<Vec<String>, CliError> {
    let mut receipts = Vec::with_capacity(messages.len());
    for mut message in messages {
        if let Some(Value::String(receipt)) = message.remove("receipt") {
            receipts.push(receipt);
        }
        match format {
            Format::Json => out.json_line(&message)?,
            Format::Value => out.raw_line(&value_bytes(&message))?,
        }
    }
    Ok(receipts)
}

/// A message's value as bytes: `value` as text, or `value_base64` decoded (printed as sent
/// should it not decode).
pub(crate) fn value_bytes(message: &Map<String, Value>) -> Vec<u8> {
    if let Some(Value::String(text)) = message.get("value") {
        return text.as_bytes().to_vec();
    }
    match message.get("value_base64") {
        Some(Value::String(encoded)) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap_or_else(|_| encoded.as_bytes().to_vec()),
        _ => Vec::new(),
    }
}

async fn ack(api: &Api, args: &ConsumeArgs, receipts: Vec<String>) -> Result<(), CliError> {
    if receipts.is_empty() {
        return Ok(());
    }
    let segments = [
        "v1",
        "topics",
        &args.topic,
        "subscriptions",
        &args.subscription,
        "ack",
    ];
    let call = api.call_json(Method::POST, &segments, &json!({"receipts": receipts}))?;
    let reply: AckReply = api.json(call).await?;
    if let Some(first) = reply.failed.first() {
        eprintln!(
            "warning: {} of {} acks failed ({}): those messages will be delivered again",
            reply.failed.len(),
            receipts.len(),
            first.code
        );
    }
    Ok(())
}
