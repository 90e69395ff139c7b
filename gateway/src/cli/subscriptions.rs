//! `wharf subscriptions create|list|describe|delete` (alias `subs`): consumer groups of a
//! topic.

use reqwest::Method;
use serde::Serialize;
use serde_json::{Value, json};

use crate::cli::duration::parse_duration_ms;
use crate::cli::error::CliError;
use crate::cli::http::Api;
use crate::cli::output::Output;
use crate::cli::stats::{SubscriptionListRaw, print_subscriptions, subscription_rows};

/// The `subscriptions` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SubscriptionsCommand {
    /// Create a subscription and print it as JSON.
    Create(CreateArgs),
    /// List a topic's subscriptions with their stats: a table, or JSON with --json.
    List {
        /// Topic.
        topic: String,
        /// Print the server's JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a subscription's settings and stats as JSON.
    Describe {
        /// Topic.
        topic: String,
        /// Subscription.
        name: String,
    },
    /// Delete a subscription.
    Delete {
        /// Topic.
        topic: String,
        /// Subscription.
        name: String,
    },
}

/// The flags of `subscriptions create`, one per field of the create body.
#[derive(Debug, clap::Args, Serialize)]
pub struct CreateArgs {
    /// Topic.
    #[serde(skip)]
    pub topic: String,
    /// Subscription name: [A-Za-z0-9._-]{1,200}.
    pub name: String,
    /// Where it starts: latest (server default) or earliest.
    #[arg(long, value_parser = ["earliest", "latest"])]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Lease of a received message (1s to 12h; server default 30s).
    #[arg(long = "ack-timeout", value_parser = parse_duration_ms)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_timeout_ms: Option<u64>,
    /// Deliveries before a message moves to the dead-letter topic (server default 16).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_deliveries: Option<u32>,
    /// Dead-letter topic (server default `<topic>.<name>.dlq`).
    #[arg(long)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letter_topic: Option<String>,
    /// Deliver only messages with one of these tags; repeatable.
    #[arg(long = "tag", short = 't')]
    #[serde(skip)]
    pub tags: Vec<String>,
    /// Delivery order: none (server default) or key (per key, one at a time).
    #[arg(long, value_parser = ["none", "key"])]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordering: Option<String>,
}

/// Runs a `subscriptions` subcommand.
pub(crate) async fn run(api: &Api, command: SubscriptionsCommand) -> Result<(), CliError> {
    let mut out = Output::new();
    match command {
        SubscriptionsCommand::Create(args) => {
            let mut body = serde_json::to_value(&args).unwrap_or_else(|_| json!({}));
            if !args.tags.is_empty() {
                body["filter"] = json!({ "tags": args.tags });
            }
            let segments = ["v1", "topics", &args.topic, "subscriptions"];
            let created: Value = api
                .json(api.call_json(Method::POST, &segments, &body)?)
                .await?;
            out.pretty(&created)?;
        }
        SubscriptionsCommand::List { topic, json } => {
            let call = api.call(Method::GET, &["v1", "topics", &topic, "subscriptions"]);
            let list: SubscriptionListRaw = api.json(call).await?;
            if json {
                out.pretty(&json!({ "subscriptions": list.subscriptions }))?;
            } else {
                print_subscriptions(&mut out, &subscription_rows(&topic, list.subscriptions))?;
            }
        }
        SubscriptionsCommand::Describe { topic, name } => {
            let segments = ["v1", "topics", &topic, "subscriptions", &name];
            let described: Value = api.json(api.call(Method::GET, &segments)).await?;
            out.pretty(&described)?;
        }
        SubscriptionsCommand::Delete { topic, name } => {
            let segments = ["v1", "topics", &topic, "subscriptions", &name];
            api.send(api.call(Method::DELETE, &segments)).await?;
            eprintln!("deleted subscription {topic}/{name}");
        }
    }
    out.flush()
}
