//! [`HistoryWriter`]: appends events to a history, one JSON line each.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::event::Event;

/// Appends one JSON line per event to a history.
///
/// Each line is encoded whole before it is written, so a writer that fails mid-run leaves at most
/// one truncated last line, which the reader reports with its line number.
#[derive(Debug)]
pub struct HistoryWriter<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl HistoryWriter<BufWriter<File>> {
    /// Opens (creating it if needed) the history file at `path` for appending.
    pub fn append_to(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self::new(BufWriter::new(file)))
    }
}

impl<W: Write> HistoryWriter<W> {
    /// Wraps `out`; lines are appended to whatever it already holds.
    pub fn new(out: W) -> Self {
        Self {
            out,
            line: Vec::new(),
        }
    }

    /// Appends `event` as one line.
    pub fn append(&mut self, event: &Event) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, event)?;
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }

    /// Flushes buffered lines to the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}
