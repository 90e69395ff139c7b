//! [`Report`]: the verdict, the report line and the JSON summary of one history.

use serde::Serialize;

use crate::findings::Findings;
use crate::history::History;
use crate::verdict::{Verdict, judge};

/// The checker's report on one history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The test's ID (`?` without a run header).
    pub id: String,
    /// The test's name (`?` without a run header).
    pub name: String,
    /// The run's seed, if the history had a header.
    pub seed: Option<u64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why the verdict is not `valid`.
    pub reasons: Vec<String>,
    /// What every check found.
    pub findings: Findings,
}

impl Report {
    /// Checks `history` and judges it.
    pub fn of(history: &History) -> Self {
        let findings = Findings::of(history);
        let judgement = judge(&findings);
        let run = history.run.as_ref();
        Self {
            id: run.map_or_else(|| "?".to_owned(), |run| run.id.clone()),
            name: run.map_or_else(|| "?".to_owned(), |run| run.name.clone()),
            seed: run.map(|run| run.seed),
            verdict: judgement.verdict,
            reasons: judgement.reasons,
            findings,
        }
    }

    /// The one-line report every reliability test prints (see `RELIABILITY.md`).
    pub fn line(&self) -> String {
        let seed = self
            .seed
            .map_or_else(|| "?".to_owned(), |seed| seed.to_string());
        format!(
            "{} {} seed={seed} | {} | {}{}{}{} | verdict {}",
            self.id,
            self.name,
            self.counts_text(),
            self.run_text(),
            self.consumption_text(),
            self.idempotence_text(),
            self.backlog_text(),
            self.verdict
        )
    }

    /// Ids stored twice, duplicate replies and divergent offsets, when the run promised each
    /// id stored once.
    fn idempotence_text(&self) -> String {
        let ids = &self.findings.idempotence;
        if !ids.enforced {
            return String::new();
        }
        format!(
            " | ids stored twice {} of {} | retried {} | duplicate replies {} \
             | divergent offsets {}",
            ids.stored_twice.count,
            ids.stored,
            ids.retried,
            ids.duplicate_replies.count,
            self.findings.divergence.count,
        )
    }

    /// The backlog when the producers stopped, when the run bounds its delivery.
    fn backlog_text(&self) -> String {
        let backlog = &self.findings.backlog;
        let Some(bound) = backlog.bound_ms else {
            return String::new();
        };
        format!(
            " | backlog at idle {} | longest backlog wait {:.1} s \
             | stalled after idle {} (bound {:.1} s)",
            backlog.at_idle,
            backlog.longest_wait_ms as f64 / 1000.0,
            backlog.stalled.count,
            bound as f64 / 1000.0,
        )
    }

    fn counts_text(&self) -> String {
        let q = &self.findings.queue;
        format!(
            "attempts {} | acked {} | lost {} | unexpected {} | duplicated {} | recovered {} \
             | unknown {} | per-node lost {}",
            q.attempts,
            q.acknowledged,
            q.lost.count,
            q.unexpected.count,
            q.duplicated.count,
            q.recovered.count,
            q.unknown,
            q.per_node_lost.count,
        )
    }

    /// The consumers' figures, when the run consumed through a subscription to the end.
    fn consumption_text(&self) -> String {
        let c = &self.findings.consumption;
        if c.subscriptions.is_empty() {
            return String::new();
        }
        let after_ack = &self.findings.delivered_after_ack;
        format!(
            " | delivered {} (distinct {}, acked {}) | undelivered {} \
             | redelivered {} ({:.2}%, attempt not raised {}) \
             | delivered after ack {} (receive in flight {})",
            c.deliveries,
            c.distinct,
            c.acked,
            c.undelivered.count,
            c.redelivered,
            c.redelivered_rate * 100.0,
            c.attempt_not_raised,
            after_ack.late.count,
            after_ack.in_flight.count,
        )
    }

    fn run_text(&self) -> String {
        let f = &self.findings;
        let c = &f.coverage;
        format!(
            "faults {} ({}/{}) | leader changes {} | max unavailability {:.1} s \
             | 5xx other than 503/507: {}",
            c.fault_injections,
            c.installed,
            c.skipped,
            f.leadership.total_changes(),
            f.unavailability.max_ms as f64 / 1000.0,
            f.server_errors.count,
        ) + &self.deposed_text()
    }

    /// Acks by a deposed leader, when the run paused a node.
    fn deposed_text(&self) -> String {
        let deposed = &self.findings.deposed;
        if deposed.resumes == 0 {
            return String::new();
        }
        format!(
            " | deposed-leader acks {} of {}",
            deposed.unbacked.count, deposed.checked
        )
    }
}
