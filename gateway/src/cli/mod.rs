//! The client commands of the `wharf` binary: `topics`, `subscriptions`, `produce`,
//! `consume`, `read` and `stats` talk to a running server over HTTP, as `kcat` does for Kafka.
//!
//! # Layout
//! - [`ClientArgs`]: `--url`, `--token`, `--timeout`, `--retry-for` (global flags, with
//!   `WHARF_URL` and `WHARF_TOKEN`); [`ClientCommand`]: the subcommands; [`run`]: runs one.
//! - [`http`]: [`http::Api`], every call with a timeout, 429/503 retried after
//!   `Retry-After`, problem+json turned into [`CliError`].
//! - [`error`]: [`CliError`], the one error, and the exit codes.
//! - [`topics`], [`subscriptions`], [`produce`], [`consume`], [`read`], [`stats`]: one file per command;
//!   [`batch`]: lines into produce batches; [`output`]: JSON lines on stdout; [`duration`]: `250ms`, `10s`, `5m`, `1h`, `7d`.

pub(crate) mod batch;
pub(crate) mod consume;
pub(crate) mod duration;
pub(crate) mod error;
pub(crate) mod http;
pub(crate) mod output;
pub(crate) mod produce;
pub(crate) mod read;
pub(crate) mod stats;
pub(crate) mod subscriptions;
pub(crate) mod topics;

use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;

pub use error::CliError;

use crate::cli::duration::parse_duration_ms;
use crate::cli::http::{Api, ApiConfig};

/// Flags every client command takes.
#[derive(Debug, Clone, clap::Args)]
#[command(
    next_help_heading = "Client options (topics, subscriptions, produce, consume, read, stats)"
)]
pub struct ClientArgs {
    /// The server's base URL.
    #[arg(
        long,
        global = true,
        env = "WHARF_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub url: String,
    /// Bearer token (see `wharf token`), for a server with auth on.
    #[arg(long, global = true, env = "WHARF_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Timeout of each request that does not long-poll (long-polls get their wait + 15s).
    #[arg(long, global = true, default_value = "30s", value_parser = parse_duration_ms)]
    pub timeout: u64,
    /// How long to keep retrying 429 and 503 answers (after their Retry-After) before failing.
    #[arg(long, global = true, default_value = "60s", value_parser = parse_duration_ms)]
    pub retry_for: u64,
}

/// The client subcommands.
#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Create, list, describe or delete topics.
    #[command(subcommand)]
    Topics(topics::TopicsCommand),
    /// Create, list, describe or delete a topic's subscriptions (consumer groups).
    #[command(subcommand, visible_alias = "subs")]
    Subscriptions(subscriptions::SubscriptionsCommand),
    /// Produce stdin lines (or a file's) to a topic, batched, in order.
    Produce(produce::ProduceArgs),
    /// Receive through a subscription, print JSON lines, ack after printing.
    Consume(consume::ConsumeArgs),
    /// Read a partition by offset, without leases, as JSON lines.
    Read(read::ReadArgs),
    /// An overview of topics and their subscriptions.
    Stats(stats::StatsArgs),
}

/// Runs one client command to the end; errors are one `error: …` line on stderr and an exit
/// code of [`error`]'s.
pub fn run(args: &ClientArgs, command: ClientCommand) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(source) => return CliError::io("cannot start the async runtime", source).report(),
    };
    match runtime.block_on(dispatch(args, command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => error.report(),
    }
}

async fn dispatch(args: &ClientArgs, command: ClientCommand) -> Result<(), CliError> {
    let api = Api::new(&ApiConfig {
        url: args.url.clone(),
        token: args.token.clone(),
        timeout: Duration::from_millis(args.timeout.max(1)),
        retry_for: Duration::from_millis(args.retry_for),
    })?;
    match command {
        ClientCommand::Topics(command) => topics::run(&api, command).await,
        ClientCommand::Subscriptions(command) => subscriptions::run(&api, command).await,
        ClientCommand::Produce(args) => produce::run(&api, args).await,
        ClientCommand::Consume(args) => consume::run(&api, args).await,
        ClientCommand::Read(args) => read::run(&api, args).await,
        ClientCommand::Stats(args) => stats::run(&api, args).await,
    }
}
