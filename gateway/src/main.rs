//! The `wharf` binary: `wharf serve` runs a node; `wharf openapi` prints the API document;
//! `wharf token` mints a bearer token from the configured HS256 secret; `topics`, `produce`,
//! `consume`, `read` and `stats` are clients of a running node ([`gateway::cli`]).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use gateway::auth::{DEFAULT_KID, TokenRequest, mint_hs256, parse_ttl};
use gateway::cli::{ClientArgs, ClientCommand};
use gateway::config::ServeArgs;
use gateway::http::server::{serve, shutdown_signal};
use tracing_subscriber::EnvFilter;

/// jemalloc, configured in `.cargo/config.toml`: it hands freed memory back to the system
/// within a second, where glibc's malloc kept the peak of a burst resident.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Wharf: an HTTP/REST messaging gateway in front of an embedded broker.
#[derive(Debug, Parser)]
#[command(name = "wharf", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HTTP API until Ctrl-C or SIGTERM.
    Serve(Box<ServeArgs>),
    /// Print the OpenAPI document to stdout.
    Openapi,
    /// Mint a bearer token (HS256) from the server's secret and print it to stdout.
    Token(TokenArgs),
    #[command(flatten)]
    Client(ClientCommand),
}

/// The flags of `wharf token`.
#[derive(Debug, clap::Args)]
struct TokenArgs {
    /// The principal (`sub` claim), e.g. svc-orders.
    #[arg(long)]
    sub: String,
    /// Space-separated grants, e.g. 'produce:orders.* consume:orders.*' or 'admin:*'.
    #[arg(long, default_value = "")]
    scope: String,
    /// Lifetime: 90s, 30m, 1h, 7d, or seconds.
    #[arg(long, default_value = "1h")]
    ttl: String,
    /// Key id to sign as.
    #[arg(long, default_value = DEFAULT_KID)]
    kid: String,
    /// The HS256 secret (at least 32 bytes); the same variable `wharf serve` reads.
    #[arg(
        long = "secret",
        env = "WHARF_AUTH_HS256_SECRET",
        hide_env_values = true
    )]
    secret: Option<String>,
    /// A file holding the HS256 secret instead.
    #[arg(long)]
    secret_file: Option<PathBuf>,
    /// The `iss` claim (needed when the server sets auth_issuer).
    #[arg(long, env = "WHARF_AUTH_ISSUER")]
    issuer: Option<String>,
    /// The `aud` claim (needed when the server sets auth_audience).
    #[arg(long, env = "WHARF_AUTH_AUDIENCE")]
    audience: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Openapi => print_openapi(),
        Command::Serve(args) => run_server(*args),
        Command::Token(args) => mint_token(args),
        Command::Client(command) => gateway::cli::run(&cli.client, command),
    }
}

fn mint_token(args: TokenArgs) -> ExitCode {
    let Some(ttl_secs) = parse_ttl(&args.ttl) else {
        eprintln!(
            "wharf: invalid --ttl {:?}: expected e.g. 90s, 30m, 1h, 7d",
            args.ttl
        );
        return ExitCode::from(2);
    };
    let secret = match (args.secret, &args.secret_file) {
        (_, Some(path)) => match std::fs::read_to_string(path) {
            Ok(text) => text.trim_end().to_owned(),
            Err(error) => {
                eprintln!("wharf: cannot read {}: {error}", path.display());
                return ExitCode::from(2);
            }
        },
        (Some(secret), None) => secret,
        (None, None) => {
            eprintln!("wharf: no secret: set WHARF_AUTH_HS256_SECRET or pass --secret-file");
            return ExitCode::from(2);
        }
    };
    let request = TokenRequest {
        subject: args.sub,
        scope: args.scope,
        ttl_secs,
        kid: args.kid,
        issuer: args.issuer.filter(|text| !text.is_empty()),
        audience: args.audience.filter(|text| !text.is_empty()),
    };
    match mint_hs256(secret.as_bytes(), &request) {
        Ok(token) => {
            let mut stdout = std::io::stdout().lock();
            match writeln!(stdout, "{token}") {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Err(error) => {
            eprintln!("wharf: {error}");
            ExitCode::from(2)
        }
    }
}

fn print_openapi() -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(gateway::openapi::pretty_json().as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("wharf: cannot write the document: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The log filter without `RUST_LOG`: Wharf at info; openraft at warn (at info it narrates
/// every vote and membership step, tens of lines per election per group); its replication
/// tasks and their progress handler quiet, which log every failed heartbeat and two errors
/// every 500 ms backoff for each group while a peer is down (a hundred partitions would
/// write hundreds of lines a second; three nodes with one killed went from 295 lines in 8 s
/// to 16). `GET /v1/cluster` shows a peer that stopped answering.
const DEFAULT_LOG: &str = "info,openraft=warn,openraft::replication=off,openraft::engine::handler::replication_handler=error";

fn run_server(args: ServeArgs) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let settings = match args.load() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("wharf: {error}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("wharf: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let signal = shutdown_signal();
        let listener = gateway::http::accept::bind(settings.listen())?;
        serve(listener, settings, signal).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("wharf: {error}");
            ExitCode::FAILURE
        }
    }
}
