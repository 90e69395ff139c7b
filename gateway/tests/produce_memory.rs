//! Bytes held while a JSON batch is parsed, and after, against what is charged for it to the
//! memory budget: `REQUEST_BYTES_HELD_PER_BODY_BYTE` per body byte by the edge before it
//! reads the body; then, once parsed, what `json_messages` says the batch holds (its values,
//! the body when text values are slices of it, `PRODUCE_BYTES_PER_MESSAGE` per message),
//! which the handler sets the charge to while the batch waits for its write. Counted by
//! dhat's heap profiler (every allocation of this test process, so one test in this file).

use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use gateway::api::produce::ProduceQuery;
use gateway::limits::memory::{PRODUCE_BYTES_PER_MESSAGE, REQUEST_BYTES_HELD_PER_BODY_BYTE};
use gateway::routes::produce::json_messages;
use serde_json::json;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// A batch of `count` values of `size` bytes, base64 or text, as the reproduction
/// sends it (100 × 1 KiB base64: 139 KB).
fn batch(count: usize, size: usize, base64: bool) -> Vec<u8> {
    let messages: Vec<_> = (0..count)
        .map(|i| {
            let value: Vec<u8> = (0..size).map(|j| b'a' + ((i + j) % 26) as u8).collect();
            if base64 {
                json!({"value_base64": STANDARD.encode(&value), "key": format!("k{i}")})
            } else {
                json!({"value": String::from_utf8(value).expect("ascii"), "key": format!("k{i}")})
            }
        })
        .collect();
    serde_json::to_vec(&json!({"messages": messages})).expect("json")
}

/// What one parse held and what was charged for it.
struct Figures {
    body: usize,
    messages: usize,
    /// The body and the parse's peak allocations.
    peak: usize,
    /// What the parsed batch keeps once the handler has dropped its own hold on the body.
    kept: usize,
    /// What `json_messages` says it holds: the charge while the batch waits for its write.
    held: usize,
}

/// Parses `body`; the profiler starts once the body exists, so it counts the parse alone.
fn parse(body: Vec<u8>, text_keeps_body: bool) -> Figures {
    let body = Bytes::from(body);
    let profiler = dhat::Profiler::builder().testing().build();
    let (messages, held) =
        json_messages(&ProduceQuery::default(), &HeaderMap::new(), &body).expect("a valid batch");
    let stats = dhat::HeapStats::get();
    let figures = Figures {
        body: body.len(),
        messages: messages.len(),
        peak: body.len() + stats.max_bytes,
        kept: stats.curr_bytes + if text_keeps_body { body.len() } else { 0 },
        held,
    };
    drop(messages);
    drop(profiler);
    figures
}

#[test]
fn a_parsed_batch_holds_no_more_than_is_charged_for_it() {
    let mut measured = Vec::new();
    for (count, size, base64) in [
        (100, 1024, true),
        (100, 1024, false),
        (1000, 100, true),
        (1000, 100, false),
        (4, 1024 * 1024, true),
    ] {
        let figures = parse(batch(count, size, base64), !base64);
        eprintln!(
            "{count} × {size} B {}: body {} B; while parsed {:.2} bytes per body byte, after {:.2} (charged {:.2})",
            if base64 { "base64" } else { "text" },
            figures.body,
            figures.peak as f64 / figures.body as f64,
            figures.kept as f64 / figures.body as f64,
            figures.held as f64 / figures.body as f64,
        );
        measured.push(figures);
    }
    for figures in measured {
        assert!(
            figures.kept <= figures.held,
            "a parsed {} B body keeps {} B, the handler charges {} B",
            figures.body,
            figures.kept,
            figures.held
        );
        // During the parse (synchronous, one per runtime worker at most) the peak may pass
        // the edge's charge by the per-message structures, never by more.
        let bound = figures.body * REQUEST_BYTES_HELD_PER_BODY_BYTE
            + figures.messages * PRODUCE_BYTES_PER_MESSAGE;
        assert!(
            figures.peak <= bound,
            "parsing a {} B body peaked at {} B, over {} B",
            figures.body,
            figures.peak,
            bound
        );
    }
}
