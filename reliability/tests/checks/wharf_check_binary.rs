//! `wharf-check` run as a process: what it prints and the exit status of each verdict.

use std::path::Path;
use std::process::{Command, Output};

use wharf_reliability::HistoryWriter;
use wharf_reliability::event::Event;

use crate::support;

fn history_file(dir: &Path, events: &[Event]) -> std::path::PathBuf {
    let path = dir.join("history.jsonl");
    let mut writer = HistoryWriter::append_to(&path).expect("the history opens");
    for event in events {
        writer.append(event).expect("the event is written");
    }
    writer.flush().expect("the history is flushed");
    path
}

fn wharf_check(path: &Path) -> (Output, Vec<String>) {
    let output = Command::new(env!("CARGO_BIN_EXE_wharf-check"))
        .arg(path)
        .output()
        .expect("wharf-check runs");
    let stdout = String::from_utf8(output.stdout.clone()).expect("the report is UTF-8");
    (output, stdout.lines().map(str::to_owned).collect())
}

fn summary(lines: &[String]) -> serde_json::Value {
    let last = lines.last().expect("a summary line");
    serde_json::from_str(last).expect("the last line is the JSON summary")
}

#[test]
fn a_valid_history_prints_its_line_and_summary_and_exits_0() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (output, lines) = wharf_check(&history_file(dir.path(), &support::clean()));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("R1 leader-kill seed=42 | attempts 7 |"));
    assert_eq!(summary(&lines)["verdict"], "valid");
    assert_eq!(summary(&lines)["findings"]["queue"]["acknowledged"], 5);
}

#[test]
fn an_invalid_history_prints_its_reasons_and_exits_1() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let events = support::with_logs(support::clean(), 0, &support::PARTITION_0[..2]);
    let (output, lines) = wharf_check(&history_file(dir.path(), &events));
    assert_eq!(output.status.code(), Some(1));
    assert!(lines[0].ends_with("| verdict invalid"));
    assert!(
        lines.contains(&"  1 acknowledged values lost".to_owned()),
        "{lines:?}"
    );
    assert_eq!(
        summary(&lines)["findings"]["queue"]["lost"]["first"][0]["value"],
        "p0-2"
    );
}

#[test]
fn a_history_without_coverage_exits_2() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (output, lines) = wharf_check(&history_file(dir.path(), &[support::run()]));
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(summary(&lines)["verdict"], "unknown");
}

#[test]
fn a_malformed_history_is_unknown_names_the_line_and_exits_2() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = history_file(dir.path(), &[support::run()]);
    std::fs::write(&path, "{\"type\":\"run\"}\n").expect("the bad history is written");
    let (output, lines) = wharf_check(&path);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr.contains("line 1: not a history event"), "{stderr}");
    assert_eq!(summary(&lines)["verdict"], "unknown");
}
