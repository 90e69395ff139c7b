//! The tri-state [`Verdict`] and the rule that reaches it.

use std::fmt;

use serde::Serialize;

use crate::findings::Findings;

/// A run's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every check passed and the run covered what it set out to.
    Valid,
    /// A check found an anomaly.
    Invalid,
    /// Nothing was found, but the run proves nothing: coverage unmet, or no usable history.
    Unknown,
}

impl Verdict {
    /// `wharf-check`'s exit status for this verdict: 0, 1 or 2.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Valid => 0,
            Self::Invalid => 1,
            Self::Unknown => 2,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Valid => "valid",
            Self::Invalid => "invalid",
            Self::Unknown => "unknown",
        })
    }
}

/// A verdict and the reasons for it (empty when valid).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// Each anomaly or unmet coverage condition, in words.
    pub reasons: Vec<String>,
}

/// `invalid` if any check found an anomaly (duplicates excepted: at-least-once allows them,
/// unless the run header promised each id stored once); else `unknown` if coverage is unmet
/// (or such a run retried nothing); else `valid`.
pub fn judge(findings: &Findings) -> Judgement {
    let anomalies = anomalies(findings);
    if !anomalies.is_empty() {
        return Judgement {
            verdict: Verdict::Invalid,
            reasons: anomalies,
        };
    }
    let mut problems = findings.coverage.problems();
    problems.extend(findings.idempotence.problems());
    let verdict = if problems.is_empty() {
        Verdict::Valid
    } else {
        Verdict::Unknown
    };
    Judgement {
        verdict,
        reasons: problems,
    }
}

/// Each nonzero anomaly counter, as `"<count> <what>"`.
fn anomalies(findings: &Findings) -> Vec<String> {
    let queue = &findings.queue;
    let counters = [
        (queue.lost.count, "acknowledged values lost"),
        (
            findings.deposed.unbacked.count,
            "acks by a deposed leader (a resumed node's ok the drained logs do not back)",
        ),
        (
            queue.per_node_lost.count,
            "acknowledged values missing on a node",
        ),
        (queue.unexpected.count, "unexpected values"),
        (
            findings.divergence.count,
            "divergent offsets between replicas",
        ),
        (
            findings.offset_mismatch.count,
            "acknowledged offsets holding another value",
        ),
        (findings.log.failures(), "log-check failures"),
        (
            findings.delivered_after_ack.late.count,
            "deliveries after a confirmed ack",
        ),
        (
            findings.consumption.undelivered.count,
            "acknowledged values never delivered",
        ),
        (findings.order.count, "per-key order violations"),
        (
            findings.idempotence.anomalies(),
            "ids stored twice (a value at two positions of one node's log)",
        ),
        (
            findings.backlog.anomalies(),
            "acknowledged values not delivered within the idle bound",
        ),
        (
            findings.leadership.dual_leaders.count,
            "terms with two leaders",
        ),
    ];
    counters
        .into_iter()
        .filter(|&(count, _)| count > 0)
        .map(|(count, what)| format!("{count} {what}"))
        .collect()
}
