//! `wharf-ceiling`: the bare axum server the load test measures Wharf against. Same runtime
//! as `wharf` (tokio's multi-thread default), same paths and bodies, no storage.

#![allow(
    clippy::print_stdout,
    reason = "printing the address is how the runner learns it"
)]

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;

/// Serve the HTTP ceiling until Ctrl-C or SIGTERM.
#[derive(Debug, Parser)]
#[command(name = "wharf-ceiling", version)]
struct Args {
    /// Loopback address to serve on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !args.listen.ip().is_loopback() {
        eprintln!(
            "wharf-ceiling: --listen {} is not a loopback address",
            args.listen
        );
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("wharf-ceiling: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        println!("listening on http://{}", listener.local_addr()?);
        axum::serve(listener, loadtest::ceiling::app())
            .with_graceful_shutdown(shutdown_signal())
            .await
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("wharf-ceiling: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let terminate = async {
        match signal(SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        () = terminate => {},
    }
}
