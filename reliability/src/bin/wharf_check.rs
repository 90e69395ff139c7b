//! `wharf-check`: reads a JSONL history, prints its report line, the reasons for a verdict other
//! than `valid`, and a JSON summary as the last line; exits 0 (valid), 1 (invalid) or 2
//! (unknown, including a history that cannot be read).

#![allow(
    clippy::print_stdout,
    reason = "printing the report is this binary's job"
)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use wharf_reliability::reader::read_file;
use wharf_reliability::{Verdict, check};

/// Check a reliability run's history.
#[derive(Debug, Parser)]
#[command(name = "wharf-check", version)]
struct Args {
    /// The history file: one JSON event per line.
    history: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let history = match read_file(&args.history) {
        Ok(history) => history,
        Err(error) => return unreadable(&args.history, &error.to_string()),
    };
    let report = check(&history);
    println!("{}", report.line());
    for reason in &report.reasons {
        println!("  {reason}");
    }
    match serde_json::to_string(&report) {
        Ok(summary) => println!("{summary}"),
        Err(error) => return unreadable(&args.history, &error.to_string()),
    }
    ExitCode::from(report.verdict.exit_code())
}

fn unreadable(path: &std::path::Path, error: &str) -> ExitCode {
    eprintln!("wharf-check: {}: {error}", path.display());
    println!("verdict unknown: {error}");
    let summary = serde_json::json!({ "verdict": Verdict::Unknown, "error": error });
    println!("{summary}");
    ExitCode::from(Verdict::Unknown.exit_code())
}
