//! Reading a JSONL history; every error names the line it is about.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::event::Event;
use crate::history::{History, HistoryError};

/// Why a history could not be read.
#[derive(Debug, Error)]
pub enum ReadError {
    /// The file could not be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The path given.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// Reading a line failed (an I/O error, or bytes that are not UTF-8).
    #[error("line {line}: cannot read: {source}")]
    Io {
        /// The line's number, from 1.
        line: usize,
        /// The reason.
        source: io::Error,
    },
    /// A line is not a valid event.
    #[error("line {line}: not a history event: {source}")]
    Json {
        /// The line's number, from 1.
        line: usize,
        /// What serde_json found wrong.
        source: serde_json::Error,
    },
    /// A line is a valid event that cannot join the history.
    #[error("line {line}: {source}")]
    History {
        /// The line's number, from 1.
        line: usize,
        /// Why it cannot join.
        source: HistoryError,
    },
}

/// Reads the history file at `path`.
pub fn read_file(path: &Path) -> Result<History, ReadError> {
    let file = File::open(path).map_err(|source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    read(BufReader::new(file))
}

/// Reads a history, one JSON event per line; blank lines are skipped.
pub fn read(input: impl BufRead) -> Result<History, ReadError> {
    let mut history = History::default();
    for (index, text) in input.lines().enumerate() {
        let line = index + 1;
        let text = text.map_err(|source| ReadError::Io { line, source })?;
        if text.trim().is_empty() {
            continue;
        }
        let event = parse_line(line, &text)?;
        history
            .push(event)
            .map_err(|source| ReadError::History { line, source })?;
    }
    Ok(history)
}

fn parse_line(line: usize, text: &str) -> Result<Event, ReadError> {
    serde_json::from_str(text).map_err(|source| ReadError::Json { line, source })
}
