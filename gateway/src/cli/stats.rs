//! `wharf stats`: every topic the token can see with its partitions, messages and bytes, and
//! under it each subscription's backlog, in flight, oldest unacked age and counters.
//!
//! The server has no aggregate stats endpoint yet (`/v1/stats/…` of API.md is not served), so
//! this is `GET /v1/topics` plus `GET /v1/topics/{topic}/subscriptions` per topic.

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cli::error::CliError;
use crate::cli::http::Api;
use crate::cli::output::Output;
use crate::cli::topics::{TopicListView, TopicView, print_table};

/// The flags of `wharf stats`.
#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Print one JSON document instead of tables: `{"topics": [topic]}`, each topic as
    /// `topics describe` prints it with its `subscriptions` (settings and stats) in place of
    /// their count.
    #[arg(long)]
    pub json: bool,
}

/// A subscription as the stats show it.
#[derive(Debug, Deserialize, Serialize)]
pub(crate) struct SubscriptionView {
    name: String,
    stats: SubscriptionStats,
}

/// The counters of a subscription the table shows.
#[derive(Debug, Deserialize, Serialize)]
struct SubscriptionStats {
    backlog: u64,
    in_flight: u64,
    oldest_unacked_age_ms: Option<u64>,
    delivered: u64,
    acked: u64,
    dead_lettered: u64,
}

/// The list of topics as the server sent it.
#[derive(Debug, Deserialize)]
struct RawTopicList {
    topics: Vec<Value>,
}

/// The raw list of subscriptions.
#[derive(Debug, Deserialize)]
pub(crate) struct SubscriptionListRaw {
    pub(crate) subscriptions: Vec<Value>,
}

/// Table rows of one topic's subscriptions (those that parse).
pub(crate) fn subscription_rows(
    topic: &str,
    subscriptions: Vec<Value>,
) -> Vec<(String, SubscriptionView)> {
    subscriptions
        .into_iter()
        .filter_map(|raw| serde_json::from_value::<SubscriptionView>(raw).ok())
        .map(|view| (topic.to_owned(), view))
        .collect()
}

/// Runs `wharf stats`.
pub(crate) async fn run(api: &Api, args: StatsArgs) -> Result<(), CliError> {
    let url = api.call(Method::GET, &["v1", "topics"]);
    let raw: RawTopicList = api.json(url).await?;
    let list: TopicListView = serde_json::from_value(serde_json::json!({"topics": raw.topics}))
        .map_err(|error| CliError::BadReply {
            url: "/v1/topics".into(),
            reason: error.to_string(),
        })?;
    let mut out = Output::new();
    let mut documents = Vec::new();
    let mut tables = Vec::new();
    for (topic, mut document) in list.topics.iter().zip(raw.topics) {
        let subscriptions = subscriptions(api, topic).await?;
        if args.json {
            document["subscriptions"] = Value::Array(subscriptions);
            documents.push(document);
        } else {
            tables.extend(subscription_rows(&topic.name, subscriptions));
        }
    }
    if args.json {
        out.pretty(&serde_json::json!({ "topics": documents }))?;
    } else {
        print_table(&mut out, &list.topics)?;
        out.line("")?;
        print_subscriptions(&mut out, &tables)?;
    }
    out.flush()
}

async fn subscriptions(api: &Api, topic: &TopicView) -> Result<Vec<Value>, CliError> {
    let call = api.call(Method::GET, &["v1", "topics", &topic.name, "subscriptions"]);
    let list: SubscriptionListRaw = api.json(call).await?;
    Ok(list.subscriptions)
}

/// Prints subscriptions, named `topic/subscription`, as an aligned table.
pub(crate) fn print_subscriptions(
    out: &mut Output,
    rows: &[(String, SubscriptionView)],
) -> Result<(), CliError> {
    let width = rows
        .iter()
        .map(|(topic, view)| topic.len() + 1 + view.name.len())
        .max()
        .unwrap_or(0)
        .max("SUBSCRIPTION".len());
    out.line(&format!(
        "{:<width$}  {:>10}  {:>9}  {:>14}  {:>10}  {:>10}  {:>13}",
        "SUBSCRIPTION",
        "BACKLOG",
        "IN_FLIGHT",
        "OLDEST_UNACKED",
        "DELIVERED",
        "ACKED",
        "DEAD_LETTERED"
    ))?;
    for (topic, view) in rows {
        let stats = &view.stats;
        let oldest = stats
            .oldest_unacked_age_ms
            .map_or("-".to_owned(), |ms| format!("{ms}ms"));
        out.line(&format!(
            "{:<width$}  {:>10}  {:>9}  {:>14}  {:>10}  {:>10}  {:>13}",
            format!("{topic}/{}", view.name),
            stats.backlog,
            stats.in_flight,
            oldest,
            stats.delivered,
            stats.acked,
            stats.dead_lettered
        ))?;
    }
    Ok(())
}
