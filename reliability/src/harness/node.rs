//! [`NodeProcess`]: one `wharf serve` child: spawning it with its log file, signalling it,
//! waiting for `/readyz`, reading its log.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::error::HarnessError;
use super::probe::readyz_status;
use crate::event::NodeId;

/// Pause between two readiness probes, or two looks at an exiting process: short beside a
/// node's start-up (tens of milliseconds), long enough not to busy the 2 shared cores.
pub const POLL_INTERVAL: Duration = Duration::from_millis(25);

/// Longest the harness waits for a SIGKILLed process to be reaped; the kernel takes
/// milliseconds, so reaching this means the process is stuck in the kernel (D state).
pub const KILL_WAIT: Duration = Duration::from_secs(5);

/// Lines of a node's log quoted in an error.
pub const ERROR_LOG_LINES: usize = 20;

/// One node: how to start it, and its process while it runs.
#[derive(Debug)]
pub struct NodeProcess {
    /// The node's id, 1 to n.
    pub id: NodeId,
    /// The public (HTTP API) address.
    pub public: SocketAddr,
    /// The broker's data folder.
    pub data_dir: PathBuf,
    /// The file receiving its stdout and stderr, across restarts.
    pub log_path: PathBuf,
    binary: PathBuf,
    args: Vec<String>,
    exe: Option<PathBuf>,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

impl NodeProcess {
    /// A node not yet started: `binary args…`, output appended to `log_path`.
    pub fn new(
        id: NodeId,
        public: SocketAddr,
        data_dir: PathBuf,
        log_path: PathBuf,
        binary: PathBuf,
        args: Vec<String>,
    ) -> Self {
        Self {
            id,
            public,
            data_dir,
            log_path,
            binary,
            args,
            exe: None,
            env: Vec::new(),
            child: None,
        }
    }

    /// Makes every start check, once the node is ready, that its process runs `exe`: for a
    /// node started through a launcher that must exec it (`ip netns exec … wharf`), so that
    /// signals reach the node itself.
    #[must_use]
    pub fn expecting_exe(mut self, exe: PathBuf) -> Self {
        self.exe = Some(exe);
        self
    }

    /// Sets `env` (name, value) on the process at every start, after the test's own
    /// `WHARF_*` variables are removed.
    #[must_use]
    pub fn with_env(mut self, env: Vec<(String, String)>) -> Self {
        self.env = env;
        self
    }

    /// Spawns the process, appending a marker line and then its output to the log file. The
    /// test's own `WHARF_*` variables are removed, so only the arguments (and the node's own
    /// [`NodeProcess::with_env`]) configure the node.
    pub fn spawn(&mut self) -> Result<(), HarnessError> {
        if self.is_running() {
            return Err(HarnessError::AlreadyRunning { node: self.id });
        }
        let mut log = self.open_log()?;
        writeln!(log, "--- harness: starting node {} ---", self.id).map_err(HarnessError::io(
            format!("writing {}", self.log_path.display()),
        ))?;
        let stderr = log
            .try_clone()
            .map_err(HarnessError::io("cloning the log file handle"))?;
        let mut command = Command::new(&self.binary);
        command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(stderr));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("WHARF_") {
                command.env_remove(name);
            }
        }
        command.envs(self.env.iter().map(|(name, value)| (name, value)));
        let child = command.spawn().map_err(HarnessError::io(format!(
            "spawning {} for node {}",
            self.binary.display(),
            self.id
        )))?;
        self.child = Some(child);
        Ok(())
    }

    fn open_log(&self) -> Result<File, HarnessError> {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .map_err(HarnessError::io(format!(
                "opening {}",
                self.log_path.display()
            )))
    }

    /// The running process's id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process runs (a paused process runs). Reaps it if it exited.
    pub fn is_running(&mut self) -> bool {
        self.exit_status().is_none() && self.child.is_some()
    }

    /// The exit status, if the process exited; the child is then forgotten.
    fn exit_status(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => {
                self.child = None;
                Some(status.to_string())
            }
            Ok(None) => None,
            Err(error) => {
                self.child = None;
                Some(format!("unknown status: {error}"))
            }
        }
    }

    /// Sends SIGKILL and waits (at most [`KILL_WAIT`]) until the process is reaped.
    pub fn kill9(&mut self) -> Result<(), HarnessError> {
        let mut child = self
            .child
            .take()
            .ok_or(HarnessError::NotRunning { node: self.id })?;
        child
            .kill()
            .map_err(HarnessError::io(format!("SIGKILL to node {}", self.id)))?;
        let deadline = Instant::now() + KILL_WAIT;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL_INTERVAL),
                Ok(None) => {
                    return Err(HarnessError::Io {
                        action: format!("reaping node {} after SIGKILL", self.id),
                        source: std::io::ErrorKind::TimedOut.into(),
                    });
                }
                Err(error) => return Err(HarnessError::io("waiting for a killed node")(error)),
            }
        }
    }

    /// Sends `signal` (`STOP`, `CONT`) with `kill(1)`.
    pub fn signal(&mut self, signal: &'static str) -> Result<(), HarnessError> {
        let pid = self
            .pid()
            .ok_or(HarnessError::NotRunning { node: self.id })?;
        let failed = |detail: String| HarnessError::Signal {
            node: self.id,
            signal,
            pid,
            detail,
        };
        let output = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .output()
            .map_err(|e| failed(e.to_string()))?;
        match output.status.success() {
            true => Ok(()),
            false => Err(failed(String::from_utf8_lossy(&output.stderr).into_owned())),
        }
    }

    /// Polls `GET /readyz` until it answers 200, the process exits, or `timeout` passes.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<(), HarnessError> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.exit_status() {
                return Err(HarnessError::NodeExited {
                    node: self.id,
                    status,
                    log_tail: self.log_tail(ERROR_LOG_LINES),
                });
            }
            if self.child.is_none() {
                return Err(HarnessError::NotRunning { node: self.id });
            }
            let last_probe = match readyz_status(self.public) {
                Ok(200) => return self.check_exe(),
                Ok(status) => format!("HTTP {status}"),
                Err(error) => error,
            };
            if start.elapsed() >= timeout {
                return Err(HarnessError::NotReady {
                    node: self.id,
                    waited: start.elapsed(),
                    last_probe,
                    log_tail: self.log_tail(ERROR_LOG_LINES),
                });
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Checks that the process runs the expected executable, if one was set.
    fn check_exe(&self) -> Result<(), HarnessError> {
        let (Some(expected), Some(pid)) = (&self.exe, self.pid()) else {
            return Ok(());
        };
        let found = std::fs::read_link(format!("/proc/{pid}/exe"))
            .map(|p| p.display().to_string())
            .unwrap_or_else(|e| format!("unreadable /proc/{pid}/exe: {e}"));
        let expected_path = std::fs::canonicalize(expected).unwrap_or_else(|_| expected.clone());
        // A binary rebuilt while the node runs shows as "<path> (deleted)".
        match found.trim_end_matches(" (deleted)") == expected_path.display().to_string() {
            true => Ok(()),
            false => Err(HarnessError::NotWharf {
                node: self.id,
                pid,
                found,
                expected: expected_path.display().to_string(),
            }),
        }
    }

    /// The command line after the binary.
    #[cfg(test)]
    pub fn args_for_test(&self) -> &[String] {
        &self.args
    }

    /// The last `lines` lines of the node's log (lossy UTF-8); empty if it cannot be read.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log_path, lines)
    }
}

/// The last `lines` lines of the file at `path`.
fn tail(path: &Path, lines: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.kill9();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("log");
        std::fs::write(&path, "a\nb\nc\n").expect("write");
        assert_eq!(tail(&path, 2), "b\nc");
        assert_eq!(tail(&path, 10), "a\nb\nc");
        assert_eq!(tail(&dir.path().join("absent"), 3), "");
    }
}
