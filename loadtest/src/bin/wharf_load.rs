//! `wharf-load`: Wharf's load generator. Each subcommand runs one scenario against one
//! loopback target, prints a line for the person watching and appends the measurement as one
//! JSON line to `--out`; `report` turns such a file into Markdown and JSON.

#![allow(clippy::print_stdout, reason = "printing results is this binary's job")]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use loadtest::disk::{DiskSpec, append_and_sync};
use loadtest::procfs::{cpu_seconds, open_files_limit, status_kib};
use loadtest::report::{self, Machine, Record, RunInfo, ServerRecord};
use loadtest::scenario::{
    self, BacklogSpec, ConsumeSpec, DelaySpec, E2eSpec, Load, Measurement, OverloadSpec,
    ProduceSpec, RunShape, ScheduleSpec, Tally,
};
use loadtest::target::Target;

/// Longest measured phase one run may ask for: every run stops by itself.
const MAX_DURATION_S: f64 = 600.0;
/// Most connections one run may open.
const MAX_CONNECTIONS: usize = 1024;
/// Most messages a `delay` or `schedule` run may produce.
const MAX_MESSAGES: u64 = 10_000_000;
/// Longest spread of the `delay` scenario's delays: a minute.
const MAX_SPREAD_MS: u64 = 60_000;
/// Largest `overload --factor`: past it the generator, not the server, is what gets measured.
const MAX_OVERLOAD_FACTOR: f64 = 20.0;
/// Most messages one produce request carries: Wharf's bound (API.md: 1..=1000).
const MAX_BATCH: usize = 1000;
/// Open files this process needs beside its connections (the runtime, stdio, `/proc` reads).
const SPARE_OPEN_FILES: u64 = 64;

/// Wharf's load generator (loopback targets only).
#[derive(Debug, Parser)]
#[command(name = "wharf-load", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// produce-1 / produce-batch: POST messages, closed-loop or at a fixed rate.
    Produce(ProduceArgs),
    /// consume: receive + ack from a pre-filled backlog.
    Consume(ConsumeArgs),
    /// e2e: fixed-rate producers, long-polling consumers, publish-to-receive latency.
    E2e(E2eArgs),
    /// backlog: receive latency with N messages behind the cursor.
    Backlog(BacklogArgs),
    /// delay: delayed messages spread over a few seconds, their lateness past deliver_at_ms.
    Delay(DelayArgs),
    /// schedule: the server's memory before and after scheduling many messages a day ahead.
    Schedule(ScheduleArgs),
    /// overload: a closed loop for the sustained rate, then an open loop at 3× it on 1,000
    /// connections: peak RSS, 503s, accepted latency, acked throughput.
    Overload(OverloadArgs),
    /// ceiling-disk: append + fdatasync batches to a file in a folder.
    Disk(DiskArgs),
    /// nats-publish: the NATS JetStream peer of `produce` (built with `--features nats`).
    #[cfg(feature = "nats")]
    NatsPublish(NatsArgs),
    /// Wait until GET /readyz answers 200.
    WaitReady {
        /// The server, http://127.0.0.1:PORT.
        #[arg(long)]
        target: String,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 30.0)]
        timeout_s: f64,
    },
    /// Print a free loopback TCP port.
    FreePort,
    /// Print the JSON body `produce` sends (`--batch` messages of 1 KiB), for wrk's
    /// `loadtest/wrk/produce.lua`.
    ProduceBody {
        /// Messages in the body.
        #[arg(long, default_value_t = 1)]
        batch: usize,
    },
    /// Append a server's lifetime peak RSS and CPU time to the results.
    ServerUsage {
        /// Its process id.
        #[arg(long)]
        pid: u32,
        /// Its label.
        #[arg(long)]
        name: String,
        /// The results file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Write the Markdown and JSON report of a results file.
    Report(ReportArgs),
}

/// What every load-sending subcommand takes.
#[derive(Debug, Args)]
struct Common {
    /// The server, http://127.0.0.1:PORT (loopback only).
    #[arg(long)]
    target: String,
    /// The target's label in results.
    #[arg(long, default_value = "wharf")]
    name: String,
    #[command(flatten)]
    run: Run,
    /// The server's pid, to measure its CPU and memory.
    #[arg(long)]
    server_pid: Option<u32>,
    /// The pid of every node of the server's cluster (repeat it), to measure their CPU
    /// together: what a replicated write costs over all its replicas.
    #[arg(long = "node-pid")]
    node_pids: Vec<u32>,
    /// Partitions of the topics created.
    #[arg(long, default_value_t = 1)]
    partitions: u32,
}

/// How long and how much one run sends, and where its measurement goes (every load-sending
/// subcommand, Wharf's and the NATS peer's).
#[derive(Debug, Args)]
struct Run {
    /// The round, from 1.
    #[arg(long, default_value_t = 1)]
    round: u32,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    duration_s: f64,
    /// Seconds of load before measuring.
    #[arg(long, default_value_t = 1.0)]
    warmup_s: f64,
    /// Per-request timeout, milliseconds.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// Most requests to send.
    #[arg(long, default_value_t = 10_000_000)]
    max_requests: u64,
    /// Append the measurement as a JSON line to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ProduceArgs {
    #[command(flatten)]
    common: Common,
    /// Messages per request (1: produce-1, 100: produce-batch).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Connections.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Requests per second in total (open loop); closed loop without it.
    #[arg(long)]
    rate: Option<f64>,
    /// Produce to this topic (created if missing) instead of a fresh one.
    #[arg(long)]
    topic: Option<String>,
    /// Key every message so that it lands on this partition (found by probing keys).
    #[arg(long)]
    partition: Option<u32>,
    /// The scenario's name in results (default: produce-1, or produce-batch past one message).
    #[arg(long)]
    scenario: Option<String>,
}

#[derive(Debug, Args)]
struct ConsumeArgs {
    #[command(flatten)]
    common: Common,
    /// Messages to pre-fill (0 against the ceiling, which makes messages up).
    #[arg(long, default_value_t = 200_000)]
    backlog: u64,
    /// Connections.
    #[arg(long, default_value_t = 8)]
    connections: usize,
    /// max_messages per receive.
    #[arg(long, default_value_t = 100)]
    max_messages: usize,
    /// Milliseconds to wait between the fill and the drain, so that work the server does
    /// after taking the fill (indexing it for the message trace) is not counted in the drain.
    #[arg(long, default_value_t = 0)]
    settle_ms: u64,
}

#[derive(Debug, Args)]
struct E2eArgs {
    #[command(flatten)]
    common: Common,
    /// Messages per second.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Producer connections.
    #[arg(long, default_value_t = 4)]
    producers: usize,
    /// Long-polling consumers.
    #[arg(long, default_value_t = 2)]
    consumers: usize,
    /// max_messages per receive.
    #[arg(long, default_value_t = 100)]
    max_messages: usize,
}

#[derive(Debug, Args)]
struct BacklogArgs {
    #[command(flatten)]
    common: Common,
    /// Messages behind the cursor.
    #[arg(long, default_value_t = 0)]
    behind: u64,
    /// Samples, at most.
    #[arg(long, default_value_t = 2_000)]
    samples: u64,
    /// Topic to fill once and reuse across rounds.
    #[arg(long)]
    topic: Option<String>,
    /// Scenario name in results.
    #[arg(long, default_value = "backlog-empty")]
    scenario: String,
}

#[derive(Debug, Args)]
struct DelayArgs {
    /// Common options; `--duration-s` bounds the whole run (producing and receiving).
    #[command(flatten)]
    common: Common,
    /// Messages to produce, all delayed.
    #[arg(long, default_value_t = 10_000)]
    messages: u64,
    /// Delays are uniform over 1..=this many milliseconds.
    #[arg(long, default_value_t = 5_000)]
    spread_ms: u64,
    /// Messages per produce request.
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Producer connections.
    #[arg(long, default_value_t = 4)]
    producers: usize,
    /// Long-polling consumers.
    #[arg(long, default_value_t = 2)]
    consumers: usize,
    /// max_messages per receive.
    #[arg(long, default_value_t = 100)]
    max_messages: usize,
    /// Bytes of each value.
    #[arg(long, default_value_t = 100)]
    value_bytes: usize,
    /// Messages produced per second, paced a batch at a time; 0 produces as fast as the
    /// producers can.
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
}

#[derive(Debug, Args)]
struct ScheduleArgs {
    /// Common options; `--duration-s` bounds the producing (a time limit).
    #[command(flatten)]
    common: Common,
    /// Messages to schedule.
    #[arg(long, default_value_t = 1_000_000)]
    messages: u64,
    /// Messages per produce request.
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Bytes of each value.
    #[arg(long, default_value_t = 100)]
    value_bytes: usize,
    /// delay_ms of every message (a day by default).
    #[arg(long, default_value_t = 86_400_000)]
    delay_ms: u64,
    /// Producer connections.
    #[arg(long, default_value_t = 8)]
    connections: usize,
}

#[derive(Debug, Args)]
struct OverloadArgs {
    /// Common options; `--duration-s` and `--warmup-s` are each phase's (loadtest/run passes
    /// `--partitions 4`).
    #[command(flatten)]
    common: Common,
    /// Connections of the overload phase, one request at a time each.
    #[arg(long, default_value_t = 1000)]
    connections: usize,
    /// Connections of the unloaded phase (closed loop).
    #[arg(long, default_value_t = 16)]
    unloaded_connections: usize,
    /// The overload phase offers this many times the unloaded phase's acked req/s.
    #[arg(long, default_value_t = 3.0)]
    factor: f64,
    /// Messages per produce request.
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Random bytes of each message (sent as value_base64).
    #[arg(long, default_value_t = 1024)]
    value_bytes: usize,
}

#[derive(Debug, Args)]
struct DiskArgs {
    /// Folder to write in.
    #[arg(long)]
    dir: PathBuf,
    /// Bytes per append.
    #[arg(long, default_value_t = 1024)]
    batch_bytes: usize,
    /// Seconds to append for.
    #[arg(long, default_value_t = 10.0)]
    duration_s: f64,
    /// The round, from 1.
    #[arg(long, default_value_t = 1)]
    round: u32,
    /// Scenario name in results.
    #[arg(long, default_value = "disk-1k")]
    scenario: String,
    /// Append the measurement as a JSON line to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// The results file (JSON lines).
    #[arg(long)]
    input: PathBuf,
    /// Where to write the Markdown.
    #[arg(long)]
    markdown: PathBuf,
    /// Where to write the JSON.
    #[arg(long)]
    json: PathBuf,
    /// `quick` or `full`.
    #[arg(long, default_value = "full")]
    mode: String,
    /// When the run started.
    #[arg(long, default_value = "")]
    started: String,
    /// The commit measured.
    #[arg(long, default_value = "")]
    commit: String,
    /// How Wharf was run.
    #[arg(long, default_value = "")]
    wharf_settings: String,
}

/// `nats-publish`'s options.
#[cfg(feature = "nats")]
#[derive(Debug, Args)]
struct NatsArgs {
    /// The servers, comma-separated `nats://127.0.0.1:PORT` (loopback only); connection `i`
    /// uses server `i % count`.
    #[arg(long, value_delimiter = ',')]
    servers: Vec<String>,
    /// The target's label in results.
    #[arg(long, default_value = "nats-r3")]
    name: String,
    /// The scenario's name in results.
    #[arg(long, default_value = "produce-1")]
    scenario: String,
    #[command(flatten)]
    run: Run,
    /// The stream (and its subject), created when missing.
    #[arg(long, default_value = "load")]
    stream: String,
    /// The stream's replicas.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Connections (clients).
    #[arg(long, default_value_t = 8)]
    connections: usize,
    /// Publishes per second in total (open loop); closed loop without it.
    #[arg(long)]
    rate: Option<f64>,
    /// The pid of every server (repeat it), to measure their CPU together.
    #[arg(long = "node-pid")]
    node_pids: Vec<u32>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return fail(format!("cannot start the async runtime: {error}")),
    };
    match runtime.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(message),
    }
}

fn fail(message: String) -> ExitCode {
    eprintln!("wharf-load: {message}");
    ExitCode::FAILURE
}

async fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Produce(args) => {
            let load = load(&args.common, args.connections)?;
            let scenario = match (&args.scenario, args.batch) {
                (Some(name), _) => name.clone(),
                (None, 1) => "produce-1".to_owned(),
                (None, _) => "produce-batch".to_owned(),
            };
            let spec = ProduceSpec {
                scenario,
                batch: args.batch,
                partitions: args.common.partitions,
                connections: args.connections,
                rate_per_s: args.rate,
                topic: args.topic,
                partition: args.partition,
            };
            emit(&args.common.run.out, scenario::produce(&load, &spec).await)
        }
        Command::Consume(args) => {
            let load = load(&args.common, args.connections)?;
            let spec = ConsumeSpec {
                backlog: args.backlog,
                partitions: args.common.partitions,
                connections: args.connections,
                max_messages: args.max_messages,
                fill_limit: Duration::from_secs(300),
                settle: Duration::from_millis(args.settle_ms),
            };
            emit(&args.common.run.out, scenario::consume(&load, &spec).await)
        }
        Command::E2e(args) => {
            let load = load(&args.common, args.producers + 2 * args.consumers)?;
            let spec = E2eSpec {
                rate_per_s: args.rate,
                producers: args.producers,
                consumers: args.consumers,
                max_messages: args.max_messages,
                partitions: args.common.partitions,
            };
            emit(&args.common.run.out, scenario::e2e(&load, &spec).await)
        }
        Command::Backlog(args) => {
            let load = load(&args.common, 1)?;
            let spec = BacklogSpec {
                scenario: args.scenario,
                behind: args.behind,
                samples: args.samples,
                topic: args.topic,
                fill_limit: Duration::from_secs(600),
            };
            emit(&args.common.run.out, scenario::backlog(&load, &spec).await)
        }
        Command::Delay(args) => {
            let load = load(&args.common, args.producers + 2 * args.consumers)?;
            let spec = DelaySpec {
                messages: args.messages.min(MAX_MESSAGES),
                spread_ms: args.spread_ms.min(MAX_SPREAD_MS),
                batch: args.batch.clamp(1, MAX_BATCH),
                producers: args.producers.max(1),
                consumers: args.consumers.max(1),
                max_messages: args.max_messages.clamp(1, 1000),
                value_bytes: args.value_bytes.clamp(1, 1024 * 1024),
                partitions: args.common.partitions,
                rate_per_s: (args.rate > 0.0).then_some(args.rate),
            };
            emit(&args.common.run.out, scenario::delay(&load, &spec).await)
        }
        Command::Schedule(args) => {
            let load = load(&args.common, args.connections)?;
            let spec = ScheduleSpec {
                messages: args.messages.min(MAX_MESSAGES),
                batch: args.batch.clamp(1, MAX_BATCH),
                value_bytes: args.value_bytes.clamp(1, 1024 * 1024),
                delay_ms: args.delay_ms,
                connections: args.connections,
                partitions: args.common.partitions,
            };
            emit(&args.common.run.out, scenario::schedule(&load, &spec).await)
        }
        Command::Overload(args) => overload(args).await,
        #[cfg(feature = "nats")]
        Command::NatsPublish(args) => nats_publish(args).await,
        Command::Disk(args) => disk(args).await,
        Command::WaitReady { target, timeout_s } => wait_ready(&target, timeout_s).await,
        Command::FreePort => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
            let port = listener.local_addr().map_err(|e| e.to_string())?.port();
            println!("{port}");
            Ok(())
        }
        Command::ProduceBody { batch } => {
            let body = loadtest::wire::produce_body(
                batch.clamp(1, MAX_BATCH),
                loadtest::wire::MESSAGE_BYTES,
            );
            std::io::stdout()
                .write_all(&body)
                .map_err(|e| format!("stdout: {e}"))
        }
        Command::ServerUsage { pid, name, out } => {
            let record = Record::Server(ServerRecord {
                target: name,
                hwm_kib: status_kib(Some(pid), "VmHWM").unwrap_or(0),
                cpu_total_s: cpu_seconds(Some(pid)).unwrap_or(0.0),
            });
            append(&out, &record)
        }
        Command::Report(args) => write_report(args),
    }
}

fn seconds(value: f64, what: &str) -> Result<Duration, String> {
    if !(0.0..=MAX_DURATION_S).contains(&value) {
        return Err(format!(
            "{what} must be within 0..={MAX_DURATION_S} seconds, not {value}"
        ));
    }
    Ok(Duration::from_secs_f64(value))
}

fn load(common: &Common, connections: usize) -> Result<Load, String> {
    if !(1..=MAX_CONNECTIONS).contains(&connections) {
        return Err(format!(
            "connections must be within 1..={MAX_CONNECTIONS}, not {connections}"
        ));
    }
    Ok(Load {
        target: Target::parse(&common.target).map_err(|e| e.to_string())?,
        target_name: common.name.clone(),
        round: common.run.round,
        timeout: Duration::from_millis(common.run.timeout_ms.clamp(1, 120_000)),
        duration: seconds(common.run.duration_s, "--duration-s")?,
        warmup: seconds(common.run.warmup_s, "--warmup-s")?,
        max_requests: common.run.max_requests,
        server_pid: common.server_pid,
        node_pids: common.node_pids.clone(),
    })
}

#[cfg(feature = "nats")]
async fn nats_publish(args: NatsArgs) -> Result<(), String> {
    if !(1..=MAX_CONNECTIONS).contains(&args.connections) {
        return Err(format!(
            "connections must be within 1..={MAX_CONNECTIONS}, not {}",
            args.connections
        ));
    }
    for server in &args.servers {
        let as_http = server.replacen("nats://", "http://", 1);
        if !server.starts_with("nats://") || Target::parse(&as_http).is_err() {
            return Err(format!("{server}: a nats://127.0.0.1:PORT loopback server"));
        }
    }
    let spec = scenario::NatsSpec {
        scenario: args.scenario,
        target_name: args.name,
        round: args.run.round,
        servers: args.servers,
        stream: args.stream,
        replicas: args.replicas,
        connections: args.connections,
        rate_per_s: args.rate,
        timeout: Duration::from_millis(args.run.timeout_ms.clamp(1, 120_000)),
        warmup: seconds(args.run.warmup_s, "--warmup-s")?,
        duration: seconds(args.run.duration_s, "--duration-s")?,
        max_requests: args.run.max_requests,
        node_pids: args.node_pids,
    };
    emit(&args.run.out, scenario::nats_publish(&spec).await)
}

fn emit(
    out: &Option<PathBuf>,
    measurement: Result<Measurement, scenario::ScenarioError>,
) -> Result<(), String> {
    let measurement = measurement.map_err(|e| e.to_string())?;
    println!("{}", measurement.headline());
    match out {
        Some(path) => append(path, &Record::Measurement(Box::new(measurement))),
        None => Ok(()),
    }
}

fn append(path: &Path, record: &Record) -> Result<(), String> {
    let mut line = serde_json::to_string(record).map_err(|e| e.to_string())?;
    line.push('\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // One write of the whole line: the processes of a spread run append to one file at once,
    // and `writeln!` wrote the line and its newline apart, so two records could interleave.
    file.write_all(line.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

async fn overload(args: OverloadArgs) -> Result<(), String> {
    let load = load(
        &args.common,
        args.connections.max(args.unloaded_connections),
    )?;
    if !(1.0..=MAX_OVERLOAD_FACTOR).contains(&args.factor) {
        return Err(format!(
            "--factor must be within 1..={MAX_OVERLOAD_FACTOR}, not {}",
            args.factor
        ));
    }
    let needed = args.connections as u64 + SPARE_OPEN_FILES;
    if let Some(limit) = open_files_limit().filter(|limit| *limit < needed) {
        return Err(format!(
            "{} connections need {needed} open files and the limit is {limit}: raise it (ulimit -n {needed}) or pass fewer --connections",
            args.connections
        ));
    }
    let spec = OverloadSpec {
        connections: args.connections,
        unloaded_connections: args.unloaded_connections.max(1),
        factor: args.factor,
        batch: args.batch.clamp(1, MAX_BATCH),
        value_bytes: args.value_bytes.clamp(1, 1024 * 1024),
        partitions: args.common.partitions,
    };
    let run = scenario::overload(&load, &spec)
        .await
        .map_err(|e| e.to_string())?;
    let notes = run.overloaded.notes.clone();
    emit(&args.common.run.out, Ok(run.unloaded))?;
    emit(&args.common.run.out, Ok(run.overloaded))?;
    for note in notes {
        println!("  {note}");
    }
    Ok(())
}

async fn disk(args: DiskArgs) -> Result<(), String> {
    let spec = DiskSpec {
        dir: args.dir,
        batch_bytes: args.batch_bytes.clamp(1, 64 * 1024 * 1024),
        duration: seconds(args.duration_s, "--duration-s")?,
        max_appends: 10_000_000,
    };
    let client_cpu = cpu_seconds(None);
    let run = tokio::task::spawn_blocking(move || append_and_sync(&spec).map(|run| (run, spec)))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("disk ceiling: {e}"))?;
    let (run, spec) = run;
    let load = Load {
        target: Target::parse("http://127.0.0.1:1").map_err(|e| e.to_string())?,
        target_name: "ceiling-disk".to_owned(),
        round: args.round,
        timeout: Duration::ZERO,
        duration: spec.duration,
        warmup: Duration::ZERO,
        max_requests: spec.max_appends,
        server_pid: None,
        node_pids: Vec::new(),
    };
    let tally = Tally {
        requests: run.appends,
        messages: run.bytes / loadtest::wire::MESSAGE_BYTES as u64,
        payload_bytes: run.bytes,
        latency: run.latency,
        ..Tally::default()
    };
    let shape = RunShape::new(args.scenario, 1, None);
    let client = cpu_seconds(None)
        .zip(client_cpu)
        .map(|(end, start)| end - start);
    let mut measurement = Measurement::from_tally(&load, shape, tally, run.elapsed, (None, client));
    measurement.notes.push(format!(
        "one thread: write {} bytes then fdatasync, in a file in the data folder",
        spec.batch_bytes
    ));
    emit(&args.out, Ok(measurement))
}

async fn wait_ready(target: &str, timeout_s: f64) -> Result<(), String> {
    let target = Target::parse(target).map_err(|e| e.to_string())?;
    let deadline = tokio::time::Instant::now() + seconds(timeout_s, "--timeout-s")?;
    let mut connection = loadtest::client::Connection::new(target, Duration::from_secs(1));
    while tokio::time::Instant::now() < deadline {
        if let Ok(reply) = connection.get("/readyz").await
            && reply.is_success()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("not ready within {timeout_s} s"))
}

fn write_report(args: ReportArgs) -> Result<(), String> {
    let records = report::read_records(&args.input).map_err(|e| e.to_string())?;
    let run = RunInfo {
        mode: args.mode,
        started: args.started,
        commit: args.commit,
        wharf_settings: args.wharf_settings,
    };
    let report = report::build(run, Machine::detect(), records);
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(&args.json, json).map_err(|e| format!("{}: {e}", args.json.display()))?;
    let markdown = report::markdown(&report);
    std::fs::write(&args.markdown, &markdown)
        .map_err(|e| format!("{}: {e}", args.markdown.display()))?;
    println!("{markdown}");
    Ok(())
}
