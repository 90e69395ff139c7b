//! [`run`]: one short system command (`ip …`) with a deadline, its failure an error quoting the
//! command line and what it wrote to stderr.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::error::HarnessError;

/// Pause between two looks at a running command: `ip` answers within milliseconds.
const POLL: Duration = Duration::from_millis(5);

/// Runs `program args…` to its end within `timeout` and returns its stdout. A command that
/// cannot start, exits with a failure, or is still running at the deadline (then killed) is a
/// [`HarnessError::Command`] naming the command line and quoting its stderr.
pub fn run(program: &str, args: &[&str], timeout: Duration) -> Result<String, HarnessError> {
    let line = command_line(program, args);
    let failed = |detail: String| HarnessError::Command {
        command: line.clone(),
        detail,
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot start: {e}")))?;
    let status = wait(&mut child, timeout).map_err(failed)?;
    let stdout = read_all(child.stdout.take());
    let stderr = read_all(child.stderr.take());
    if status.success() {
        Ok(stdout)
    } else {
        Err(failed(format!("{status}: {}", stderr.trim())))
    }
}

/// Waits for `child` until `timeout`; kills and reaps it then.
fn wait(child: &mut Child, timeout: Duration) -> Result<std::process::ExitStatus, String> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("still running after {timeout:?}; killed"));
            }
            Err(error) => return Err(format!("cannot wait for it: {error}")),
        }
    }
}

/// Everything left in a pipe of a finished command (its output is a few lines, well within
/// the pipe's buffer, so it never blocks the command).
fn read_all(pipe: Option<impl Read>) -> String {
    let mut text = String::new();
    if let Some(mut pipe) = pipe {
        let _ = pipe.read_to_string(&mut text);
    }
    text
}

fn command_line(program: &str, args: &[&str]) -> String {
    std::iter::once(program)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_gives_its_output() {
        let out = run("echo", &["hello"], Duration::from_secs(5)).expect("echo runs");
        assert_eq!(out.trim(), "hello");
    }

    #[test]
    fn a_failing_command_names_itself_and_quotes_its_stderr() {
        let error = run(
            "sh",
            &["-c", "echo broken >&2; exit 3"],
            Duration::from_secs(5),
        )
        .expect_err("exit 3 fails");
        let text = error.to_string();
        assert!(text.contains("sh -c"), "{text}");
        assert!(text.contains("broken"), "{text}");
    }

    #[test]
    fn a_command_past_its_deadline_is_killed_and_an_error() {
        let started = Instant::now();
        let error = run("sleep", &["5"], Duration::from_millis(100)).expect_err("too slow");
        assert!(error.to_string().contains("still running"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(4));
    }
}
