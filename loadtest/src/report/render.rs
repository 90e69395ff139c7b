//! The Markdown form of a [`Report`].

use std::fmt::Write;

use super::{Figure, GOVERNANCE_OFF, GOVERNANCE_ON, GovernanceRow, Report, Row, TargetCheck};
use crate::scenario::Measurement;

/// The report as Markdown.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    header(&mut out, report);
    targets(&mut out, &report.targets);
    rows(&mut out, &report.rows);
    governance(&mut out, &report.governance);
    overload(&mut out, &report.measurements);
    details(&mut out, &report.measurements);
    servers(&mut out, report);
    notes(&mut out, &report.measurements);
    out
}

fn header(out: &mut String, report: &Report) {
    let run = &report.run;
    let m = &report.machine;
    let _ = writeln!(out, "# Wharf load test ({} run)\n", run.mode);
    let _ = writeln!(
        out,
        "Started {}, commit `{}`, {} rounds. In every round each scenario runs against Wharf, then against its ceiling, back to back (A B A B ...). Figures are medians over rounds, with the range [min–max]; ratios are Wharf's median over the other's, with the range of the per-round ratios.\n",
        run.started, run.commit, report.rounds
    );
    let _ = writeln!(
        out,
        "Machine: {} cores, {}, Linux {}, {} MiB memory, load average {} (1, 5, 15 min) just after the runs. The load generator, Wharf and the ceiling server share these cores, so every figure is a lower bound for a machine where the load comes from elsewhere.\n",
        m.cores, m.cpu_model, m.kernel, m.memory_mib, m.load_average
    );
    let _ = writeln!(out, "Wharf: {}\n", run.wharf_settings);
}

fn targets(out: &mut String, targets: &[TargetCheck]) {
    let _ = writeln!(out, "## Targets\n");
    let _ = writeln!(out, "| target | measured | threshold | result |");
    let _ = writeln!(out, "|---|---:|---:|---|");
    for t in targets {
        let result = match (t.met, t.margin) {
            (Some(true), Some(margin)) => format!("met ({margin:.2}× the threshold)"),
            (Some(false), Some(margin)) => format!("**missed** ({margin:.2}× the threshold)"),
            (Some(true), None) => "met".to_owned(),
            (Some(false), None) => "**missed**".to_owned(),
            (None, _) => "not measured".to_owned(),
        };
        let measured = t.measured.map_or_else(|| "–".to_owned(), number);
        let _ = writeln!(
            out,
            "| {} | {} | {} {} | {} |",
            t.target,
            measured,
            t.comparison,
            number(t.threshold),
            result
        );
    }
    out.push('\n');
}

fn rows(out: &mut String, rows: &[Row]) {
    let _ = writeln!(out, "## Wharf beside its ceilings\n");
    let _ = writeln!(
        out,
        "| scenario | metric | Wharf | against | their figure | ratio [per round] | Wharf CPU s (cores busy) | their CPU s (cores busy) | Wharf peak RSS MiB |"
    );
    let _ = writeln!(out, "|---|---|---:|---|---:|---:|---:|---:|---:|");
    for row in rows {
        let ratio = row.ratio.map_or_else(
            || "–".to_owned(),
            |r| {
                let min = row.round_ratios.iter().copied().reduce(f64::min);
                let max = row.round_ratios.iter().copied().reduce(f64::max);
                match min.zip(max) {
                    Some((min, max)) => format!("{r:.2} [{min:.2}–{max:.2}]"),
                    None => format!("{r:.2}"),
                }
            },
        );
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.scenario,
            row.metric,
            figure(row.wharf.as_ref()),
            if row.ceiling_not_applicable {
                "ceiling-http (no storage, no delays)"
            } else {
                row.against.as_deref().unwrap_or("–")
            },
            if row.ceiling_not_applicable {
                "n/a".to_owned()
            } else {
                figure(row.ceiling.as_ref())
            },
            ratio,
            cpu(row.wharf_cpu_s, row.wharf_cpu_cores),
            cpu(row.ceiling_cpu_s, row.ceiling_cpu_cores),
            optional(row.wharf_rss_peak_mib),
        );
    }
    out.push('\n');
}

/// The governance cost: each compared scenario's rate with the trace and history on, off,
/// and the ratio on/off.
fn governance(out: &mut String, rows: &[GovernanceRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Governance cost\n");
    let _ = writeln!(
        out,
        "Two fresh Wharfs side by side: `{GOVERNANCE_ON}` with the defaults (message trace and per-minute history on) and `{GOVERNANCE_OFF}` with `--trace-index false --history false`; in every round each scenario runs against both, back to back, the one with governance on first in odd rounds and second in even ones.\n"
    );
    let _ = writeln!(
        out,
        "| scenario | metric | governance on | governance off | ratio on/off [per round] |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|");
    for row in rows {
        let min = row.round_ratios.iter().copied().reduce(f64::min);
        let max = row.round_ratios.iter().copied().reduce(f64::max);
        let ratio = match (row.ratio, min.zip(max)) {
            (Some(r), Some((min, max))) => format!("{r:.2} [{min:.2}–{max:.2}]"),
            (Some(r), None) => format!("{r:.2}"),
            (None, _) => "–".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            row.scenario,
            row.metric,
            figure(Some(&row.on)),
            figure(Some(&row.off)),
            ratio
        );
    }
    out.push('\n');
}

/// Every overload run's outcomes: where each request meant to start in the window went.
fn overload(out: &mut String, measurements: &[Measurement]) {
    let mut runs: Vec<&Measurement> = measurements
        .iter()
        .filter(|m| m.scenario == "overload")
        .collect();
    if runs.is_empty() {
        return;
    }
    runs.sort_by(|a, b| (a.round, &a.target).cmp(&(b.round, &b.target)));
    let _ = writeln!(
        out,
        "## Overload outcomes
"
    );
    let _ = writeln!(
        out,
        "| round | target | offered req/s | sent | not sent | 2xx | 503 (without Retry-After) | 503 share | 429 | other status | connect failed | resets | timeouts | acked req/s (× unloaded) | accepted p99 ms | peak RSS MiB |"
    );
    let _ = writeln!(
        out,
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for m in runs {
        let named = |name: &str| optional(m.figures.get(name).copied());
        let count = |name: &str| {
            m.figures
                .get(name)
                .map_or_else(|| "–".to_owned(), |v| format!("{v:.0}"))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} |",
            m.round,
            m.target,
            named("offered_req_per_s"),
            m.requests,
            count("not_sent"),
            count("accepted"),
            count("status_503"),
            count("status_503_without_retry_after"),
            named("share_503"),
            count("status_429"),
            count("status_other"),
            count("connect_failed"),
            count("resets"),
            count("timeouts"),
            number(m.req_per_s),
            named("acked_vs_unloaded"),
            ms(m.latency.p99_us),
            named("peak_rss_mib"),
        );
    }
    out.push('\n');
}

fn details(out: &mut String, measurements: &[Measurement]) {
    let _ = writeln!(out, "## Every run\n");
    let _ = writeln!(
        out,
        "| round | scenario | target | mode | conns | s | req/s | msg/s | MiB/s | p50 ms | p99 ms | p99.9 ms | max ms | other latencies (p50/p99/max ms) | errors | server CPU s | CPU ms per 1k msg | RSS MiB | load-gen CPU s |"
    );
    let _ = writeln!(
        out,
        "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|"
    );
    let mut sorted: Vec<&Measurement> = measurements.iter().collect();
    sorted
        .sort_by(|a, b| (&a.scenario, a.round, &a.target).cmp(&(&b.scenario, b.round, &b.target)));
    for m in sorted {
        let other = m
            .latencies
            .iter()
            .map(|(name, l)| format!("{name} {}/{}/{}", ms(l.p50_us), ms(l.p99_us), ms(l.max_us)))
            .collect::<Vec<_>>()
            .join("; ");
        let errors = m
            .errors
            .iter()
            .map(|(kind, count)| format!("{kind} {count}"))
            .collect::<Vec<_>>()
            .join(", ");
        let cpu_per_k = m
            .server
            .filter(|_| m.messages > 0)
            .map(|s| s.cpu_s * 1000.0 * 1000.0 / m.messages as f64);
        let mode = match m.rate_per_s {
            Some(rate) => format!("{} {}/s", m.mode, number(rate)),
            None => m.mode.clone(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            m.round,
            m.scenario,
            m.target,
            mode,
            m.connections,
            m.elapsed_s,
            number(m.req_per_s),
            number(m.msg_per_s),
            number(m.mib_per_s),
            ms(m.latency.p50_us),
            ms(m.latency.p99_us),
            ms(m.latency.p999_us),
            ms(m.latency.max_us),
            if other.is_empty() {
                "–".to_owned()
            } else {
                other
            },
            if errors.is_empty() {
                "0".to_owned()
            } else {
                errors
            },
            optional(m.server.map(|s| s.cpu_s)),
            optional(cpu_per_k),
            optional(m.server.map(|s| s.rss_peak_kib as f64 / 1024.0)),
            optional(m.client_cpu_s),
        );
    }
    out.push('\n');
}

fn servers(out: &mut String, report: &Report) {
    if report.servers.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Servers over the whole run\n");
    let _ = writeln!(out, "| server | peak RSS (VmHWM) MiB | CPU s |");
    let _ = writeln!(out, "|---|---:|---:|");
    for s in &report.servers {
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} |",
            s.target,
            s.hwm_kib as f64 / 1024.0,
            s.cpu_total_s
        );
    }
    out.push('\n');
}

fn notes(out: &mut String, measurements: &[Measurement]) {
    let mut notes: Vec<String> = measurements
        .iter()
        .filter(|m| m.round == 1)
        .flat_map(|m| {
            m.notes
                .iter()
                .map(move |n| format!("{} ({}): {n}", m.scenario, m.target))
        })
        .collect();
    notes.sort();
    notes.dedup();
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Notes (round 1)\n");
    for note in notes {
        let _ = writeln!(out, "- {note}");
    }
    out.push('\n');
}

fn figure(figure: Option<&Figure>) -> String {
    figure.map_or_else(
        || "–".to_owned(),
        |f| format!("{} [{}–{}]", number(f.median), number(f.min), number(f.max)),
    )
}

fn cpu(seconds: Option<f64>, cores: Option<f64>) -> String {
    match (seconds, cores) {
        (Some(s), Some(c)) => format!("{} ({c:.2})", number(s)),
        _ => "–".to_owned(),
    }
}

fn optional(value: Option<f64>) -> String {
    value
        .filter(|v| v.is_finite())
        .map_or_else(|| "–".to_owned(), number)
}

fn ms(us: u64) -> String {
    number(us as f64 / 1000.0)
}

/// Three significant figures, or whole numbers from 1,000 up.
fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1000.0 {
        format!("{value:.0}")
    } else if magnitude >= 100.0 {
        format!("{value:.1}")
    } else if magnitude >= 10.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}
