//! The `wharf` binary: `openapi` prints the document; `serve` logs one line, reads its settings
//! from flags over env, and stops with exit code 0 on SIGTERM.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{free_port, wait_ready};
use crate::wharf_without_env;

fn wharf() -> Command {
    let mut command = wharf_without_env();
    command.env_remove("RUST_LOG");
    command
}

#[test]
fn openapi_subcommand_prints_the_document() {
    let output = wharf().arg("openapi").output().expect("wharf runs");
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).expect("UTF-8"),
        gateway::openapi::pretty_json()
    );
}

#[test]
fn a_bad_setting_is_named_with_its_value_and_flags_beat_env() {
    let output = wharf()
        .args(["serve", "--listen", "not-an-address"])
        .env("WHARF_LISTEN", "127.0.0.1:0")
        .env("WHARF_FSYNC", "sometimes")
        .output()
        .expect("wharf runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("listen") && stderr.contains("not-an-address"),
        "{stderr}"
    );

    let output = wharf()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("WHARF_FSYNC", "sometimes")
        .output()
        .expect("wharf runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("fsync") && stderr.contains("sometimes"),
        "{stderr}"
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_logs_one_line_and_exits_0_on_sigterm() {
    let data = tempfile::tempdir().expect("temp dir");
    let address = free_port().to_string();
    let mut child = wharf()
        .arg("serve")
        .env("WHARF_LISTEN", &address)
        .env("WHARF_DATA_DIR", data.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wharf starts");

    let client = reqwest::Client::new();
    wait_ready(
        &client,
        &format!("http://{address}"),
        Duration::from_secs(30),
    )
    .await;

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "wharf did not stop within 30 s of SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "exit status {status}");

    let mut logs = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut logs)
        .expect("read logs");
    let info: Vec<&str> = logs.lines().filter(|line| line.contains("INFO")).collect();
    assert_eq!(
        info.len(),
        1,
        "expected one info line at start, got:\n{logs}"
    );
    let data_dir = data.path().display().to_string();
    assert!(
        info[0].contains(&address) && info[0].contains(&data_dir),
        "{}",
        info[0]
    );
}
