//! Reads report lines back (the checker's and [`crate::CaseLine`]'s share one shape:
//! `<ID> <name> | <label> <value> | … | verdict <v>`) and rolls them up into the headline and
//! the Markdown report `reliability/run` writes.

use std::fmt::Write as _;

use crate::catalogue::{CASES, Case};

/// One report line, split into its parts.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The case id, the first word (`R1`).
    pub id: String,
    /// The rest of the first part: the name and the seed, if any.
    pub title: String,
    /// Figures in order: label and value (`acked lost`, `0 of 12`).
    pub figures: Vec<(String, String)>,
    /// The verdict word (`valid`, `invalid`, `unknown`).
    pub verdict: String,
    /// The line as read.
    pub raw: String,
}

impl Line {
    /// Splits a report line; `None` for anything else (a blank line, a log line).
    pub fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        let mut parts = raw.split(" | ");
        let head = parts.next()?;
        let (id, title) = head.split_once(' ')?;
        let id_ok = id.len() >= 2
            && id.starts_with(['D', 'R', 'S', 'G'])
            && id[1..].bytes().all(|b| b.is_ascii_digit());
        if !id_ok {
            return None;
        }
        let mut figures = Vec::new();
        let mut verdict = None;
        for part in parts {
            if let Some(word) = part.strip_prefix("verdict ") {
                verdict = Some(word.to_owned());
            } else if let Some(figure) = split_figure(part) {
                figures.push(figure);
            }
        }
        Some(Self {
            id: id.to_owned(),
            title: title.to_owned(),
            figures,
            verdict: verdict?,
            raw: raw.to_owned(),
        })
    }

    /// The value of figure `label` as a count and an optional total (`0 of 12` → (0, Some(12))).
    pub fn count(&self, label: &str) -> Option<(f64, Option<f64>)> {
        let (_, value) = self.figures.iter().find(|(l, _)| l == label)?;
        let mut words = value.split_whitespace();
        let count = words.next()?.parse().ok()?;
        let total = match (words.next(), words.next()) {
            (Some("of"), Some(total)) => total.parse().ok(),
            _ => None,
        };
        Some((count, total))
    }
}

/// `label value`: the label is every word before the first that reads as a number.
fn split_figure(part: &str) -> Option<(String, String)> {
    let words: Vec<&str> = part.split(' ').collect();
    let at = (1..words.len()).find(|&i| words[i].parse::<f64>().is_ok())?;
    let label = words[..at].join(" ");
    let label = label.trim_end_matches(':').to_owned();
    Some((label, words[at..].join(" ")))
}

/// A count summed over lines, with the number of lines that reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sum {
    /// Sum of the counts.
    pub count: f64,
    /// Sum of the totals (`of N`), where given.
    pub total: f64,
    /// Lines that carried the figure.
    pub lines: usize,
}

impl Sum {
    fn add(&mut self, (count, total): (f64, Option<f64>)) {
        self.count += count;
        self.total += total.unwrap_or(0.0);
        self.lines += 1;
    }

    fn text(&self) -> String {
        if self.lines == 0 {
            return "not measured".to_owned();
        }
        let of = if self.total > 0.0 {
            format!(" of {}", self.total)
        } else {
            String::new()
        };
        format!("{}{of} ({} runs)", self.count, self.lines)
    }
}

/// The figures `ACCEPTANCE` of issue 10 asks the README to state, over every line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Headline {
    /// Acknowledged messages lost, over acknowledged ones (`lost`/`acked` of checker lines and
    /// `acked lost` of case lines).
    pub acked_lost: Sum,
    /// Acks completed by a deposed leader.
    pub deposed_leader_acks: Sum,
    /// Acks by two leaders of one partition at once.
    pub dual_leader_acks: Sum,
    /// Bad tokens accepted.
    pub bad_tokens_accepted: Sum,
    /// Requests that succeeded without the grant they needed.
    pub unauthorized_successes: Sum,
    /// Answers with a 5xx other than 503 and 507.
    pub server_errors: Sum,
    /// The highest `peak RSS MiB` reported.
    pub peak_rss_mib: Option<f64>,
    /// Lines read.
    pub lines: usize,
    /// Lines whose verdict is not `valid`.
    pub not_valid: usize,
}

impl Headline {
    /// Rolls `lines` up.
    pub fn of(lines: &[Line]) -> Self {
        let mut headline = Self {
            lines: lines.len(),
            ..Self::default()
        };
        for line in lines {
            if line.verdict != "valid" {
                headline.not_valid += 1;
            }
            if let (Some((lost, _)), Some((acked, _))) = (line.count("lost"), line.count("acked")) {
                headline.acked_lost.add((lost, Some(acked)));
            }
            let sums = [
                ("acked lost", &mut headline.acked_lost),
                ("deposed-leader acks", &mut headline.deposed_leader_acks),
                ("dual-leader acks", &mut headline.dual_leader_acks),
                ("bad tokens accepted", &mut headline.bad_tokens_accepted),
                (
                    "unauthorized successes",
                    &mut headline.unauthorized_successes,
                ),
                ("5xx other than 503/507", &mut headline.server_errors),
            ];
            for (label, sum) in sums {
                if let Some(count) = line.count(label) {
                    sum.add(count);
                }
            }
            if let Some((rss, _)) = line.count("peak RSS MiB") {
                headline.peak_rss_mib = Some(headline.peak_rss_mib.map_or(rss, |m| m.max(rss)));
            }
        }
        headline
    }

    /// The headline as Markdown bullets.
    pub fn markdown(&self) -> String {
        let rss = self
            .peak_rss_mib
            .map_or_else(|| "not measured".to_owned(), |mib| format!("{mib} MiB"));
        format!(
            "- acknowledged messages lost: {}\n- acks by a deposed leader: {}\n\
             - dual-leader acks: {}\n- bad tokens accepted: {}\n- unauthorized successes: {}\n\
             - 5xx other than 503/507: {}\n- peak RSS under overload: {rss}\n\
             - report lines: {}, not valid: {}\n",
            self.acked_lost.text(),
            self.deposed_leader_acks.text(),
            self.dual_leader_acks.text(),
            self.bad_tokens_accepted.text(),
            self.unauthorized_successes.text(),
            self.server_errors.text(),
            self.lines,
            self.not_valid,
        )
    }
}

/// Where and how a report was produced, for its heading.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// `short` or `full`.
    pub mode: String,
    /// The commit tested.
    pub commit: String,
    /// When the run started (UTC).
    pub started: String,
    /// Wall time of the run, seconds.
    pub seconds: u64,
    /// The machine (cores, memory).
    pub machine: String,
    /// Test commands of the run that failed (their cases may show as not run).
    pub failed_commands: usize,
}

/// The Markdown report of one run: heading, headline, one section row per case of the plan.
pub fn markdown(info: &RunInfo, lines: &[Line]) -> String {
    let headline = Headline::of(lines);
    let mut out = String::new();
    let _ = writeln!(out, "# Wharf reliability report\n");
    let source = if info.mode == "ci" {
        "`.ci/run` on a fresh clone".to_owned()
    } else {
        format!("`reliability/run` ({} mode)", info.mode)
    };
    let _ = writeln!(
        out,
        "{source} on commit `{}`, started {}{}, {}. Every case of `RELIABILITY.md` is \
         listed; each figure comes from a test's report line.\n",
        info.commit,
        info.started,
        match info.seconds {
            0 => String::new(),
            seconds => format!(", {seconds} s"),
        },
        info.machine
    );
    let _ = writeln!(
        out,
        "## Headline\n\n- test commands failed: {} (see the end)\n{}",
        info.failed_commands,
        headline.markdown()
    );
    let _ = writeln!(out, "## Cases\n");
    let _ = writeln!(out, "| id | case | must hold | verdict | report lines |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    for case in CASES {
        let of_case: Vec<&Line> = lines.iter().filter(|l| l.id == case.id).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            case.id,
            case.name,
            case.holds,
            case_verdict(case, &of_case),
            cell(case, &of_case)
        );
    }
    out
}

fn case_verdict(case: &Case, lines: &[&Line]) -> String {
    if lines.is_empty() {
        return if case.tests.is_empty() {
            "no test yet".to_owned()
        } else {
            "not run".to_owned()
        };
    }
    let bad: Vec<&str> = lines
        .iter()
        .map(|l| l.verdict.as_str())
        .filter(|v| *v != "valid")
        .collect();
    match bad.first() {
        None => format!("valid ({} runs)", lines.len()),
        Some(first) => format!("**{first}** ({} of {} runs)", bad.len(), lines.len()),
    }
}

fn cell(case: &Case, lines: &[&Line]) -> String {
    if lines.is_empty() {
        return if case.tests.is_empty() {
            String::new()
        } else {
            format!("({})", case.tests)
        };
    }
    lines
        .iter()
        .map(|l| format!("`{}`", l.raw.replace('|', "\\|")))
        .collect::<Vec<_>>()
        .join("<br>")
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECKER: &str = "R1 kill-leader-x5 seed=7 | attempts 3 | acked 2 | lost 1 | per-node lost 1 \
                           | faults 1 (1/0) | 5xx other than 503/507: 2 | verdict invalid";
    const CASE: &str = "G1 jwt-matrix | bad tokens accepted 0 of 25 | acked lost 0 of 10 | peak RSS MiB 41.5 | verdict valid";

    #[test]
    fn a_checker_line_splits_into_labels_and_values() {
        let line = Line::parse(CHECKER).expect("a report line");
        assert_eq!(line.id, "R1");
        assert_eq!(line.title, "kill-leader-x5 seed=7");
        assert_eq!(line.count("per-node lost"), Some((1.0, None)));
        assert_eq!(line.count("faults"), Some((1.0, None)));
        assert_eq!(line.count("5xx other than 503/507"), Some((2.0, None)));
        assert_eq!(line.verdict, "invalid");
        assert_eq!(Line::parse("running 3 tests"), None);
        assert_eq!(Line::parse("R1 no verdict | lost 0"), None);
    }

    #[test]
    fn the_headline_sums_both_kinds_of_line_and_counts_what_is_not_valid() {
        let lines: Vec<Line> = [CHECKER, CASE]
            .iter()
            .filter_map(|l| Line::parse(l))
            .collect();
        let headline = Headline::of(&lines);
        assert_eq!(headline.acked_lost.count, 1.0);
        assert_eq!(headline.acked_lost.total, 12.0);
        assert_eq!(headline.acked_lost.lines, 2);
        assert_eq!(headline.bad_tokens_accepted.total, 25.0);
        assert_eq!(headline.server_errors.count, 2.0);
        assert_eq!(headline.peak_rss_mib, Some(41.5));
        assert_eq!(headline.dual_leader_acks.lines, 0);
        assert_eq!(headline.not_valid, 1);
        assert!(
            headline
                .markdown()
                .contains("- dual-leader acks: not measured\n")
        );
    }

    #[test]
    fn the_report_lists_every_case_and_says_which_ran() {
        let lines: Vec<Line> = [CHECKER, CASE]
            .iter()
            .filter_map(|l| Line::parse(l))
            .collect();
        let report = markdown(&RunInfo::default(), &lines);
        assert!(report.contains("| R1 | leader kill -9, five times |"));
        assert!(report.contains("| **invalid** (1 of 1 runs) |"));
        assert!(report.contains(
            "| G1 | JWT matrix | every bad token gets 401 and changes nothing | valid (1 runs) |"
        ));
        assert!(report.contains(
            "| R10 | clock skew | no early delayed delivery, no spurious lease expiry | not run | \
             (reliability/tests/faults/clock_skew.rs) |"
        ));
        if CASES.iter().any(|case| case.tests.is_empty()) {
            assert!(report.contains(" | no test yet |"));
        }
        assert!(report.contains("| D2 | kill -9, fsync interval |"));
        assert!(report.contains("| not run | (gateway/tests/crash/crash_recovery.rs) |"));
        assert_eq!(report.matches("\n| ").count(), CASES.len() + 1);
    }
}
