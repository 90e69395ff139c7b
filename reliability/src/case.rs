//! The report line of a reliability case that is not a queue-checker run: durability,
//! delivery semantics, bad input (`D*`, `S*`, `G*` in `RELIABILITY.md`). A test that exercises
//! a case builds a [`CaseLine`] from what it counted and [`CaseLine::record`]s it, so that
//! `reliability/run` and `.ci/run` can show the figure even though `cargo test` hides a passing
//! test's output.
//!
//! ```text
//! D3 power-loss-always seeds=200 | acked lost 0 of 5123 | torn tails truncated 37 of 37 | verdict valid
//! ```
//!
//! The file the lines go to is [`report_path`]; `reliability/run` reads it back into
//! `reliability/results/latest.md`.

use std::io::Write;
use std::path::PathBuf;

use crate::verdict::Verdict;

/// Environment variable naming the report file; without it, [`report_path`] picks one in the
/// target directory.
pub const REPORT_ENV: &str = "WHARF_RELIABILITY_REPORT";

/// One case's report line: its id, its name, its figures in order, and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseLine {
    id: String,
    name: String,
    seed: Option<u64>,
    figures: Vec<(String, String)>,
    verdict: Verdict,
}

impl CaseLine {
    /// A line for case `id` (`D3`) named `name` (`power-loss-always`), `valid` until a figure
    /// or [`CaseLine::verdict`] says otherwise.
    pub fn new(id: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            seed: None,
            figures: Vec::new(),
            verdict: Verdict::Valid,
        }
    }

    /// The seed of a randomized run, printed after the name.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Adds a figure: `label value` (`acked lost`, `0 of 5123`).
    #[must_use]
    pub fn figure(mut self, label: impl Into<String>, value: impl ToString) -> Self {
        self.figures.push((label.into(), value.to_string()));
        self
    }

    /// Adds a count that must be zero (`bad tokens accepted`, `0 of 25`): a count above zero
    /// makes the verdict `invalid`.
    #[must_use]
    pub fn must_be_zero(mut self, label: impl Into<String>, count: u64, of: u64) -> Self {
        if count > 0 {
            self.verdict = Verdict::Invalid;
        }
        self.figures
            .push((label.into(), format!("{count} of {of}")));
        self
    }

    /// Sets the verdict; `invalid` set by [`CaseLine::must_be_zero`] is kept.
    #[must_use]
    pub fn verdict(mut self, verdict: Verdict) -> Self {
        if self.verdict != Verdict::Invalid {
            self.verdict = verdict;
        }
        self
    }

    /// The case's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The line's verdict.
    pub fn current_verdict(&self) -> Verdict {
        self.verdict
    }

    /// The line as printed: `<ID> <name>[ seed=<s>] | <label> <value> | … | verdict <v>`.
    pub fn line(&self) -> String {
        let mut line = format!("{} {}", self.id, self.name);
        if let Some(seed) = self.seed {
            line.push_str(&format!(" seed={seed}"));
        }
        for (label, value) in &self.figures {
            line.push_str(&format!(" | {label} {value}"));
        }
        line.push_str(&format!(" | verdict {}", self.verdict));
        line
    }

    /// Prints the line to stderr and appends it to [`report_path`]. Writing the file is best
    /// effort: a test's verdict is its assertions, not this file.
    pub fn record(&self) {
        let line = self.line();
        eprintln!("{line}");
        record_line(&line);
    }
}

/// Appends `line` to [`report_path`] (best effort, as [`CaseLine::record`]).
pub fn record_line(line: &str) {
    let path = report_path();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path);
    if let Ok(mut file) = file {
        let _ = writeln!(file, "{line}");
    }
}

/// Where report lines go: `$WHARF_RELIABILITY_REPORT`, else `reliability-report.txt` in the
/// target directory of the running test binary (`<target>/debug/deps/<test>` → `<target>`),
/// else in the current directory.
pub fn report_path() -> PathBuf {
    if let Some(path) = std::env::var_os(REPORT_ENV) {
        return PathBuf::from(path);
    }
    let target = std::env::current_exe().ok().and_then(|exe| {
        exe.ancestors()
            .find(|dir| dir.file_name().is_some_and(|name| name == "deps"))
            .and_then(|deps| deps.parent())
            .and_then(|profile| profile.parent())
            .map(PathBuf::from)
    });
    target
        .unwrap_or_else(|| PathBuf::from("."))
        .join("reliability-report.txt")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_lists_its_figures_in_order_and_ends_with_the_verdict() {
        let line = CaseLine::new("D3", "power-loss-always")
            .seed(7)
            .figure("seeds", 200)
            .must_be_zero("acked lost", 0, 5123)
            .line();
        assert_eq!(
            line,
            "D3 power-loss-always seed=7 | seeds 200 | acked lost 0 of 5123 | verdict valid"
        );
    }

    #[test]
    fn a_count_that_must_be_zero_and_is_not_makes_the_line_invalid_for_good() {
        let case = CaseLine::new("G1", "jwt-matrix")
            .must_be_zero("bad tokens accepted", 1, 25)
            .verdict(Verdict::Valid);
        assert_eq!(case.current_verdict(), Verdict::Invalid);
        assert!(
            case.line()
                .ends_with("| bad tokens accepted 1 of 25 | verdict invalid")
        );
    }
}
