//! The report: reads the measurements of every round (one JSON object per line), takes the
//! median and range of each figure over the rounds, sets Wharf beside its ceiling with their
//! ratio (the ratio of medians, and the range of the per-round ratios, each round's pair
//! measured back to back), checks the targets, and writes Markdown and JSON.

mod governance;
mod render;
mod rows;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use governance::{GOVERNANCE_GOAL, GOVERNANCE_OFF, GOVERNANCE_ON, GovernanceRow, governance};
pub use render::markdown;
pub use rows::{Figure, Row, TargetCheck, rows, targets};

use crate::scenario::Measurement;

/// One line of the results file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// One scenario run against one target.
    Measurement(Box<Measurement>),
    /// A server's totals, read just before it was stopped.
    Server(ServerRecord),
}

/// A server's lifetime totals.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerRecord {
    /// The target's label.
    pub target: String,
    /// Peak resident memory over the whole run (`VmHWM`), KiB.
    pub hwm_kib: u64,
    /// CPU seconds over the whole run.
    pub cpu_total_s: f64,
}

/// The machine the run was on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Machine {
    /// Cores available.
    pub cores: usize,
    /// `model name` from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Kernel release.
    pub kernel: String,
    /// `MemTotal`, MiB.
    pub memory_mib: u64,
    /// The load averages over 1, 5 and 15 minutes (`/proc/loadavg`) when the report was
    /// made, right after the runs: how busy the machine was while they ran.
    #[serde(default)]
    pub load_average: String,
}

impl Machine {
    /// Reads this machine's description.
    pub fn detect() -> Machine {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let field = |text: &str, name: &str| {
            text.lines()
                .find(|line| line.starts_with(name))
                .and_then(|line| line.split_once(':'))
                .map(|(_, value)| value.trim().to_owned())
                .unwrap_or_default()
        };
        let memory_kib: u64 = field(&read("/proc/meminfo"), "MemTotal")
            .split_whitespace()
            .next()
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0);
        Machine {
            cores: std::thread::available_parallelism().map_or(0, usize::from),
            cpu_model: field(&read("/proc/cpuinfo"), "model name"),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
            memory_mib: memory_kib / 1024,
            load_average: read("/proc/loadavg")
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// Who ran what, for the header.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunInfo {
    /// `quick` or `full`.
    pub mode: String,
    /// When the run started (as the script gave it).
    pub started: String,
    /// The commit measured.
    pub commit: String,
    /// How Wharf was run.
    pub wharf_settings: String,
}

/// Everything the report says, as written to JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// The run.
    pub run: RunInfo,
    /// The machine.
    pub machine: Machine,
    /// Rounds found in the results.
    pub rounds: u32,
    /// Wharf beside its ceilings.
    pub rows: Vec<Row>,
    /// The targets, met or missed.
    pub targets: Vec<TargetCheck>,
    /// The governance cost: produce-1 and consume with the trace and history on and off.
    #[serde(default)]
    pub governance: Vec<GovernanceRow>,
    /// Servers' lifetime totals.
    pub servers: Vec<ServerRecord>,
    /// Every measurement, as recorded.
    pub measurements: Vec<Measurement>,
}

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The results file could not be read or a report file written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A line of the results file is not a record.
    #[error("{path} line {line}: {source}")]
    Parse {
        /// The file.
        path: String,
        /// Its line number, from 1.
        line: usize,
        /// The error.
        source: serde_json::Error,
    },
}

/// Reads a results file: one [`Record`] per non-empty line.
pub fn read_records(path: &Path) -> Result<Vec<Record>, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Io {
        path: path.display().to_string(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line).map_err(|source| ReportError::Parse {
                path: path.display().to_string(),
                line: index + 1,
                source,
            })
        })
        .collect()
}

/// Builds the report from the records.
pub fn build(run: RunInfo, machine: Machine, records: Vec<Record>) -> Report {
    let mut measurements = Vec::new();
    let mut servers = Vec::new();
    for record in records {
        match record {
            Record::Measurement(m) => measurements.push(*m),
            Record::Server(s) => servers.push(s),
        }
    }
    let governance = governance(&measurements);
    let mut targets = targets(&measurements, &servers);
    targets.extend(governance::checks(&governance));
    Report {
        run,
        machine,
        rounds: measurements.iter().map(|m| m.round).max().unwrap_or(0),
        rows: rows(&measurements),
        targets,
        governance,
        servers,
        measurements,
    }
}
