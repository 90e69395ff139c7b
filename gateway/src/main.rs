//! The `wharf` binary: `wharf serve` runs a node; `wharf openapi` prints the API document.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use gateway::config::ServeArgs;
use gateway::server::{serve, shutdown_signal};
use tracing_subscriber::EnvFilter;

/// Wharf: an HTTP/REST messaging gateway in front of an embedded broker.
#[derive(Debug, Parser)]
#[command(name = "wharf", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the HTTP API until Ctrl-C or SIGTERM.
    Serve(ServeArgs),
    /// Print the OpenAPI document to stdout.
    Openapi,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Openapi => print_openapi(),
        Command::Serve(args) => run_server(args),
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

fn run_server(args: ServeArgs) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
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
        let listener = tokio::net::TcpListener::bind(settings.listen()).await?;
        serve(listener, settings, shutdown_signal()).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("wharf: {error}");
            ExitCode::FAILURE
        }
    }
}
