//! The governance cost: produce-1 and consume on a Wharf with the message trace and the
//! per-minute history on (the defaults) beside a Wharf with both off (`--trace-index false
//! --history false`), each round measuring the two back to back, and the ratio on/off that
//! the issue asks to stay at [`GOVERNANCE_GOAL`] or above.

use serde::{Deserialize, Serialize};

use super::rows::{Figure, TargetCheck, check, figure};
use crate::scenario::Measurement;

/// The target label of the Wharf with the trace and the history on (the defaults).
pub const GOVERNANCE_ON: &str = "wharf-govon";
/// The target label of the Wharf with the trace and the history off.
pub const GOVERNANCE_OFF: &str = "wharf-govoff";
/// The goal: with governance on, at least this share of the rate without it.
pub const GOVERNANCE_GOAL: f64 = 0.90;

/// One scenario's rate with governance on and off.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GovernanceRow {
    /// The scenario (`produce-1`, `consume`).
    pub scenario: String,
    /// The rate measured, with its unit.
    pub metric: String,
    /// With the trace and the history on.
    pub on: Figure,
    /// With both off.
    pub off: Figure,
    /// On's median over off's.
    pub ratio: Option<f64>,
    /// Per-round ratios, each of two runs back to back.
    pub round_ratios: Vec<f64>,
}

/// Reads one rate out of a measurement.
type Rate = fn(&Measurement) -> f64;

/// The scenarios compared, the metric's name and how it is read.
const COMPARED: [(&str, &str, Rate); 2] = [
    ("produce-1", "req/s", |m| m.req_per_s),
    ("consume", "msg/s", |m| m.msg_per_s),
];

/// Every compared scenario measured on both Wharfs.
pub fn governance(ms: &[Measurement]) -> Vec<GovernanceRow> {
    COMPARED
        .iter()
        .filter_map(|(scenario, metric, read)| {
            let on = figure(ms, scenario, GOVERNANCE_ON, *read)?;
            let off = figure(ms, scenario, GOVERNANCE_OFF, *read)?;
            let ratio = (off.median != 0.0).then(|| on.median / off.median);
            let round_ratios = on
                .rounds
                .iter()
                .filter_map(|(round, value)| {
                    off.rounds
                        .iter()
                        .find(|(r, v)| r == round && *v != 0.0)
                        .map(|(_, v)| value / v)
                })
                .collect();
            Some(GovernanceRow {
                scenario: (*scenario).to_owned(),
                metric: (*metric).to_owned(),
                on,
                off,
                ratio,
                round_ratios,
            })
        })
        .collect()
}

/// The target for each compared scenario.
pub fn checks(rows: &[GovernanceRow]) -> Vec<TargetCheck> {
    rows.iter()
        .map(|row| {
            check(
                &format!(
                    "{} {} with trace and history on ≥ {GOVERNANCE_GOAL:.2} × off",
                    row.scenario, row.metric
                ),
                row.ratio,
                true,
                GOVERNANCE_GOAL,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(scenario: &str, target: &str, round: u32, rate: f64) -> Measurement {
        Measurement {
            scenario: scenario.to_owned(),
            target: target.to_owned(),
            round,
            mode: "closed".to_owned(),
            connections: 1,
            rate_per_s: None,
            elapsed_s: 1.0,
            requests: 0,
            errors: Default::default(),
            messages: 0,
            payload_bytes: 0,
            req_per_s: rate,
            msg_per_s: rate,
            mib_per_s: 0.0,
            latency: Default::default(),
            latencies: Default::default(),
            backlog: None,
            server: None,
            client_cpu_s: None,
            figures: Default::default(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_ratio_is_on_over_off_with_each_rounds_pair() {
        let ms = vec![
            measured("produce-1", GOVERNANCE_ON, 1, 90.0),
            measured("produce-1", GOVERNANCE_OFF, 1, 100.0),
            measured("produce-1", GOVERNANCE_ON, 2, 110.0),
            measured("produce-1", GOVERNANCE_OFF, 2, 100.0),
        ];
        let rows = governance(&ms);
        assert_eq!(rows.len(), 1, "consume was not measured");
        assert_eq!(rows[0].ratio, Some(1.0));
        assert_eq!(rows[0].round_ratios, vec![0.9, 1.1]);
        let checks = checks(&rows);
        assert_eq!(checks[0].met, Some(true));
    }
}
