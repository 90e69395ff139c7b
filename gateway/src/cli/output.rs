//! Standard output: JSON lines (one message per line), pretty documents and tables, all
//! through one buffered writer that is flushed before anything is acked.

use std::io::{BufWriter, Stdout, Write};

use serde::Serialize;

use crate::cli::error::CliError;

/// Buffered standard output.
#[derive(Debug)]
pub(crate) struct Output {
    out: BufWriter<Stdout>,
}

impl Default for Output {
    fn default() -> Self {
        Output::new()
    }
}

impl Output {
    /// Standard output, buffered.
    pub(crate) fn new() -> Output {
        Output {
            out: BufWriter::new(std::io::stdout()),
        }
    }

    /// Writes `value` as one line of compact JSON.
    pub(crate) fn json_line(&mut self, value: &impl Serialize) -> Result<(), CliError> {
        serde_json::to_writer(&mut self.out, value)
            .map_err(|error| CliError::io("cannot write to stdout", std::io::Error::from(error)))?;
        self.line("")
    }

    /// Writes `value` as indented JSON and a newline.
    pub(crate) fn pretty(&mut self, value: &impl Serialize) -> Result<(), CliError> {
        serde_json::to_writer_pretty(&mut self.out, value)
            .map_err(|error| CliError::io("cannot write to stdout", std::io::Error::from(error)))?;
        self.line("")
    }

    /// Writes `text` and a newline.
    pub(crate) fn line(&mut self, text: &str) -> Result<(), CliError> {
        writeln!(self.out, "{text}")
            .map_err(|source| CliError::io("cannot write to stdout", source))
    }

    /// Writes `bytes` and a newline (a message value printed raw).
    pub(crate) fn raw_line(&mut self, bytes: &[u8]) -> Result<(), CliError> {
        self.out
            .write_all(bytes)
            .and_then(|()| self.out.write_all(b"\n"))
            .map_err(|source| CliError::io("cannot write to stdout", source))
    }

    /// Hands everything written so far to the operating system.
    pub(crate) fn flush(&mut self) -> Result<(), CliError> {
        self.out
            .flush()
            .map_err(|source| CliError::io("cannot write to stdout", source))
    }
}
