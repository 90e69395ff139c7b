//! `wharf-report`: reads the report lines a reliability run's tests recorded and writes the
//! Markdown report (`reliability/results/latest.md`): heading, headline, every case of the plan.
//! Exits 1 when a line's verdict is not `valid`, 0 otherwise.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use wharf_reliability::summary::{Headline, Line, RunInfo, markdown};

/// Write the reliability report from recorded report lines.
#[derive(Debug, Parser)]
#[command(name = "wharf-report", version)]
struct Args {
    /// The file of report lines (one per test run; other lines are skipped).
    lines: PathBuf,
    /// Where to write the Markdown report.
    #[arg(long)]
    out: PathBuf,
    /// `short` or `full`.
    #[arg(long, default_value = "short")]
    mode: String,
    /// The commit tested.
    #[arg(long, default_value = "?")]
    commit: String,
    /// When the run started.
    #[arg(long, default_value = "?")]
    started: String,
    /// Wall time of the run, seconds.
    #[arg(long, default_value_t = 0)]
    seconds: u64,
    /// The machine.
    #[arg(long, default_value = "?")]
    machine: String,
    /// How many test commands of the run failed.
    #[arg(long, default_value_t = 0)]
    failed_commands: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let text = match std::fs::read_to_string(&args.lines) {
        Ok(text) => text,
        Err(error) => {
            eprintln!(
                "wharf-report: cannot read {}: {error}",
                args.lines.display()
            );
            return ExitCode::from(2);
        }
    };
    let lines: Vec<Line> = text.lines().filter_map(Line::parse).collect();
    let info = RunInfo {
        mode: args.mode,
        commit: args.commit,
        started: args.started,
        seconds: args.seconds,
        machine: args.machine,
        failed_commands: args.failed_commands,
    };
    if let Err(error) = std::fs::write(&args.out, markdown(&info, &lines)) {
        eprintln!("wharf-report: cannot write {}: {error}", args.out.display());
        return ExitCode::from(2);
    }
    let headline = Headline::of(&lines);
    eprint!("{}", headline.markdown());
    if headline.not_valid > 0 {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
