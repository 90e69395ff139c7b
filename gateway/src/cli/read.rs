//! `wharf read TOPIC -p P --offset N`: a partition's log from an offset, without leases, one
//! JSON line per record, page after page until `--max` or the end of the log (`--follow`
//! waits at the end for more).

use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::cli::consume::{Format, LONG_POLL_MARGIN, value_bytes};
use crate::cli::error::CliError;
use crate::cli::http::Api;
use crate::cli::output::Output;

/// Most records one page asks for (the server's limit).
const MAX_PAGE: u64 = 1000;
/// How long a `--follow` read waits at the end of the log per request.
const FOLLOW_WAIT_MS: u64 = 20_000;

/// The flags of `wharf read`.
#[derive(Debug, clap::Args)]
pub struct ReadArgs {
    /// Topic.
    pub topic: String,
    /// Partition.
    #[arg(long, short = 'p', default_value_t = 0)]
    pub partition: u32,
    /// First offset (an offset below the partition's start reads from the start).
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// Stop after this many records.
    #[arg(long, short = 'n')]
    pub max: Option<u64>,
    /// At the end of the log, wait for more instead of stopping.
    #[arg(long, short = 'F')]
    pub follow: bool,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Format::Json)]
    pub format: Format,
}

/// One page of the log.
#[derive(Debug, Deserialize)]
struct Page {
    messages: Vec<Map<String, Value>>,
    next_offset: u64,
    end_offset: u64,
}

/// Runs `wharf read`.
pub(crate) async fn run(api: &Api, args: ReadArgs) -> Result<(), CliError> {
    let mut out = Output::new();
    let mut offset = args.offset;
    let mut read = 0u64;
    let partition = args.partition.to_string();
    let segments = [
        "v1",
        "topics",
        &args.topic,
        "partitions",
        &partition,
        "messages",
    ];
    loop {
        let want = match args.max {
            Some(max) => MAX_PAGE.min(max.saturating_sub(read)),
            None => MAX_PAGE,
        };
        if want == 0 {
            break;
        }
        let wait_ms = if args.follow { FOLLOW_WAIT_MS } else { 0 };
        let call = api
            .call(Method::GET, &segments)
            .query(&[
                ("offset", offset.to_string()),
                ("max", want.to_string()),
                ("wait_ms", wait_ms.to_string()),
            ])
            .timeout(Duration::from_millis(wait_ms) + LONG_POLL_MARGIN);
        let page: Page = api.json(call).await?;
        let count = page.messages.len() as u64;
        let empty = page.messages.is_empty();
        for mut message in page.messages {
            match args.format {
                Format::Json => {
                    message.insert("partition".into(), Value::from(args.partition));
                    out.json_line(&message)?;
                }
                Format::Value => out.raw_line(&value_bytes(&message))?,
            }
        }
        out.flush()?;
        read += count;
        offset = page.next_offset;
        if !args.follow && (empty || offset >= page.end_offset) {
            break;
        }
    }
    Ok(())
}
