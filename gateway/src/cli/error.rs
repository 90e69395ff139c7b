//! The one error of the client commands, and the exit code each kind ends the process with.

use std::process::ExitCode;

/// Exit code: the server answered with a 4xx (a problem of the request: unknown topic, bad
/// input, no grant).
pub(crate) const EXIT_REFUSED: u8 = 1;
/// Exit code: the command line or a local input was wrong (clap uses 2 as well).
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit code: the server could not be reached, timed out, answered 5xx or something that is
/// not the API (worth retrying later).
pub(crate) const EXIT_UNAVAILABLE: u8 = 3;
/// Exit code: reading stdin or a file, or writing stdout, failed.
pub(crate) const EXIT_LOCAL_IO: u8 = 4;

/// Why a client command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A flag's value could not be used.
    #[error("invalid {flag} {value:?}: {reason}")]
    Usage {
        /// The flag, e.g. `--header`.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What was expected.
        reason: &'static str,
    },
    /// The server answered with a problem (RFC 9457) or another error status.
    #[error("{code}: {detail}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// The problem's stable `code`, or `http_<status>` when the body was not a problem.
        code: String,
        /// The problem's `detail` (or title, or the start of the body).
        detail: String,
    },
    /// The request did not get an answer.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// The transport error, with its causes.
        reason: String,
    },
    /// The server answered 2xx with a body that is not what the API promises.
    #[error("unexpected reply from {url}: {reason}")]
    BadReply {
        /// The URL asked.
        url: String,
        /// What did not parse.
        reason: String,
    },
    /// Local input or output failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being read or written.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl CliError {
    /// The process exit code for this error (documented in the README's "Clients").
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage { .. } => EXIT_USAGE,
            CliError::Server { status, .. } if *status < 500 => EXIT_REFUSED,
            CliError::Server { .. } | CliError::Unreachable { .. } | CliError::BadReply { .. } => {
                EXIT_UNAVAILABLE
            }
            CliError::Io { .. } => EXIT_LOCAL_IO,
        }
    }

    /// The stable problem `code` when the server sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            CliError::Server { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The HTTP status when the server answered with an error.
    pub fn status(&self) -> Option<u16> {
        match self {
            CliError::Server { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether stdout was closed by its reader (`wharf consume … | head`): a normal end.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// Prints `error: …` as one line on stderr and returns the exit code.
    pub fn report(&self) -> ExitCode {
        if self.is_broken_pipe() {
            return ExitCode::SUCCESS;
        }
        eprintln!("error: {self}");
        ExitCode::from(self.exit_code())
    }

    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> CliError {
        CliError::Io {
            what: what.into(),
            source,
        }
    }
}
