//! Writing a history with [`HistoryWriter`] and reading it back; what the reader refuses, and the
//! line it names.

use std::io::Cursor;

use wharf_reliability::HistoryWriter;
use wharf_reliability::event::{Event, Outcome};
use wharf_reliability::history::HistoryError;
use wharf_reliability::reader::{ReadError, read, read_file};
use wharf_reliability::{History, Verdict, check};

use crate::support;

fn written(events: &[Event]) -> Vec<u8> {
    let mut writer = HistoryWriter::new(Vec::new());
    for event in events {
        writer.append(event).expect("writing to a Vec cannot fail");
    }
    writer.into_inner().expect("flushing a Vec cannot fail")
}

#[test]
fn a_written_history_reads_back_as_the_same_events() {
    let events = support::clean();
    let read_back = read(Cursor::new(written(&events))).expect("the history reads back");
    let expected = History::from_events(events).expect("the clean history is a history");
    assert_eq!(read_back, expected);
    assert_eq!(check(&read_back).verdict, Verdict::Valid);
}

#[test]
fn each_event_is_one_line_tagged_by_type_without_absent_fields() {
    let event = support::produce(3, "p3-17", None, None, (5, 9), Outcome::Info);
    let line = String::from_utf8(written(&[event])).expect("JSON is UTF-8");
    assert_eq!(
        line,
        "{\"type\":\"produce\",\"process\":3,\"value\":\"p3-17\",\"node\":1,\"invoke_ms\":5,\
         \"complete_ms\":9,\"outcome\":\"info\"}\n"
    );
}

#[test]
fn the_file_writer_appends_to_an_existing_history() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("history.jsonl");
    for event in [support::run(), support::drained(1, 0, 0)] {
        let mut writer = HistoryWriter::append_to(&path).expect("the history opens");
        writer.append(&event).expect("the event is written");
        writer.flush().expect("the event is flushed");
    }
    let history = read_file(&path).expect("the history reads back");
    assert!(history.run.is_some());
    assert_eq!(history.drained.len(), 1);
}

#[test]
fn a_malformed_line_is_an_error_naming_its_line_number() {
    let mut input = written(&[support::run()]);
    input.extend_from_slice(b"\n{\"type\":\"produce\",\"process\":\n");
    let error = read(Cursor::new(input)).expect_err("line 3 is cut short");
    assert!(
        matches!(error, ReadError::Json { line: 3, .. }),
        "{error:?}"
    );
    assert!(error.to_string().starts_with("line 3: "), "{error}");
}

#[test]
fn a_misspelt_field_is_refused_rather_than_ignored() {
    let input = "{\"type\":\"leader\",\"partition\":0,\"node\":1,\"term\":1,\"at\":5}\n";
    let error = read(Cursor::new(input)).expect_err("`at` is not a field");
    assert!(
        matches!(error, ReadError::Json { line: 1, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("unknown field `at`"), "{error}");
}

#[test]
fn an_unknown_event_type_is_refused() {
    let error = read(Cursor::new("{\"type\":\"teleport\"}\n")).expect_err("no such event");
    assert!(
        matches!(error, ReadError::Json { line: 1, .. }),
        "{error:?}"
    );
}

#[test]
fn a_second_run_header_is_refused_with_its_line() {
    let input = written(&[support::run(), support::drained(1, 0, 0), support::run()]);
    let error = read(Cursor::new(input)).expect_err("two runs in one file");
    assert!(
        matches!(
            error,
            ReadError::History {
                line: 3,
                source: HistoryError::SecondRun { .. }
            }
        ),
        "{error:?}"
    );
}

#[test]
fn blank_lines_are_skipped() {
    let mut input = b"\n".to_vec();
    input.extend(written(&[support::run()]));
    input.extend_from_slice(b"   \n");
    let history = read(Cursor::new(input)).expect("blank lines are not events");
    assert!(history.run.is_some() && history.is_empty());
}

#[test]
fn a_missing_file_is_an_error_naming_the_path() {
    let error = read_file(std::path::Path::new("/nonexistent/history.jsonl"))
        .expect_err("there is no such file");
    assert!(
        error.to_string().contains("/nonexistent/history.jsonl"),
        "{error}"
    );
}
