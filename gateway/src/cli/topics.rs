//! `wharf topics create|list|describe|delete`.

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cli::duration::parse_duration_ms;
use crate::cli::error::CliError;
use crate::cli::http::Api;
use crate::cli::output::Output;

/// The `topics` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TopicsCommand {
    /// Create a topic and print it as JSON.
    Create(CreateArgs),
    /// List topics: a table, or JSON with --json.
    List(ListArgs),
    /// Print a topic's settings and per-partition offsets as JSON.
    Describe {
        /// Topic name.
        name: String,
    },
    /// Delete a topic with its messages and subscriptions.
    Delete {
        /// Topic name.
        name: String,
    },
}

/// The flags of `topics create`, one per field of `POST /v1/topics`.
#[derive(Debug, clap::Args, Serialize)]
pub struct CreateArgs {
    /// Topic name: [A-Za-z0-9._-]{1,200}, not starting with `__`.
    pub name: String,
    /// Number of partitions (server default 1).
    #[arg(short, long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<u32>,
    /// Delete segments older than this (at least 1m): 7d, 12h, or milliseconds.
    #[arg(long = "retention", value_parser = parse_duration_ms)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention_ms: Option<u64>,
    /// Delete the oldest segments while a partition is larger than this many bytes.
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention_bytes: Option<u64>,
    /// Largest message value in bytes (server default 1 MiB, at most 16 MiB).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_message_bytes: Option<u64>,
    /// Copies of each partition (a single node keeps 1).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication_factor: Option<u32>,
    /// How long client message ids are remembered for deduplication (0 turns it off).
    #[arg(long = "dedup-window", value_parser = parse_duration_ms)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedup_window_ms: Option<u64>,
    /// Produce rate limit, messages per second.
    #[arg(long = "rate-messages")]
    #[serde(skip)]
    pub messages_per_second: Option<u32>,
    /// Produce rate limit, value bytes per second.
    #[arg(long = "rate-bytes")]
    #[serde(skip)]
    pub bytes_per_second: Option<u64>,
}

/// The flags of `topics list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print the server's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A topic as the CLI reads it (the fields it shows).
#[derive(Debug, Deserialize, Serialize)]
pub(crate) struct TopicView {
    /// Name.
    pub name: String,
    /// Number of partitions.
    pub partitions: u32,
    /// Subscriptions on it.
    #[serde(default)]
    pub subscriptions: u64,
    /// Delayed messages not yet due.
    #[serde(default)]
    pub delayed: u64,
    /// Per-partition offsets and sizes.
    #[serde(default)]
    pub partition_stats: Vec<PartitionView>,
}

/// One partition's offsets and size.
#[derive(Debug, Deserialize, Serialize)]
pub(crate) struct PartitionView {
    /// Partition number.
    pub partition: u32,
    /// First offset stored.
    pub start_offset: u64,
    /// Next offset to be written.
    pub end_offset: u64,
    /// Bytes on disk.
    pub bytes: u64,
}

impl TopicView {
    /// Messages stored over all partitions.
    pub(crate) fn messages(&self) -> u64 {
        self.partition_stats
            .iter()
            .map(|p| p.end_offset.saturating_sub(p.start_offset))
            .sum()
    }

    /// Bytes on disk over all partitions.
    pub(crate) fn bytes(&self) -> u64 {
        self.partition_stats.iter().map(|p| p.bytes).sum()
    }
}

/// The list of topics.
#[derive(Debug, Deserialize)]
pub(crate) struct TopicListView {
    /// The topics, by name.
    pub topics: Vec<TopicView>,
}

/// Runs a `topics` subcommand.
pub(crate) async fn run(api: &Api, command: TopicsCommand) -> Result<(), CliError> {
    let mut out = Output::new();
    match command {
        TopicsCommand::Create(args) => {
            let topic: Value = api.json(create_call(api, &args)?).await?;
            out.pretty(&topic)?;
        }
        TopicsCommand::List(args) if args.json => {
            let list: Value = api.json(api.call(Method::GET, &["v1", "topics"])).await?;
            out.pretty(&list)?;
        }
        TopicsCommand::List(_) => {
            let list: TopicListView = api.json(api.call(Method::GET, &["v1", "topics"])).await?;
            print_table(&mut out, &list.topics)?;
        }
        TopicsCommand::Describe { name } => {
            let topic: Value = api
                .json(api.call(Method::GET, &["v1", "topics", &name]))
                .await?;
            out.pretty(&topic)?;
        }
        TopicsCommand::Delete { name } => {
            api.send(api.call(Method::DELETE, &["v1", "topics", &name]))
                .await?;
            eprintln!("deleted topic {name}");
        }
    }
    out.flush()
}

fn create_call(api: &Api, args: &CreateArgs) -> Result<crate::cli::http::Call, CliError> {
    let mut body = serde_json::to_value(args).map_err(|error| CliError::Usage {
        flag: "topics create",
        value: error.to_string(),
        reason: "cannot be encoded as JSON",
    })?;
    if args.messages_per_second.is_some() || args.bytes_per_second.is_some() {
        body["rate_limit"] = serde_json::json!({
            "messages_per_second": args.messages_per_second,
            "bytes_per_second": args.bytes_per_second,
        });
    }
    api.call_json(Method::POST, &["v1", "topics"], &body)
}

/// Prints topics as an aligned table.
pub(crate) fn print_table(out: &mut Output, topics: &[TopicView]) -> Result<(), CliError> {
    let width = topics
        .iter()
        .map(|topic| topic.name.len())
        .max()
        .unwrap_or(0)
        .max("TOPIC".len());
    out.line(&format!(
        "{:<width$}  {:>10}  {:>12}  {:>14}  {:>13}  {:>8}",
        "TOPIC", "PARTITIONS", "MESSAGES", "BYTES", "SUBSCRIPTIONS", "DELAYED"
    ))?;
    for topic in topics {
        out.line(&format!(
            "{:<width$}  {:>10}  {:>12}  {:>14}  {:>13}  {:>8}",
            topic.name,
            topic.partitions,
            topic.messages(),
            topic.bytes(),
            topic.subscriptions,
            topic.delayed
        ))?;
    }
    Ok(())
}
