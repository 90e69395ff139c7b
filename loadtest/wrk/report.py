#!/usr/bin/env python3
"""Writes loadtest/results/wrk.md from a loadtest/wrk-check run: the wrk runs' summary lines
(key=value ...), Wharf's subscription stats around each consume round, and wharf-load's
produce-1 measurements on the ceiling (JSON lines) for the instrument check.

req/s counts 2xx replies only; non-2xx replies and socket errors have their own columns.
Medians are over rounds, ranges are [min-max]; a ratio's median is that of the per-round
ratios."""

import argparse
import json
import os
import platform
import statistics


def parse_line(line):
    fields = {}
    for token in line.split():
        key, _, value = token.partition("=")
        try:
            fields[key] = float(value) if "." in value else int(value)
        except ValueError:
            fields[key] = value
    return fields


def rate(run, key):
    return run[key] / run["duration_s"] if run["duration_s"] > 0 else float("nan")


def fmt(value):
    if value != value:  # NaN
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"


def summary(values):
    values = [v for v in values if v == v]
    if not values:
        return "–"
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}–{fmt(max(values))}]"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main():
    parser = argparse.ArgumentParser()
    for name in ("results", "wharf-load", "out", "started", "commit", "wrk", "threads", "duration"):
        parser.add_argument("--" + name, required=True)
    args = parser.parse_args()

    runs, stats = [], {}
    with open(args.results) as lines:
        for line in lines:
            fields = parse_line(line)
            if fields["scenario"] == "consume-stats":
                stats[fields["round"]] = fields
            else:
                runs.append(fields)
    instrument = {}
    if os.path.exists(args.wharf_load):
        with open(args.wharf_load) as lines:
            for line in lines:
                m = json.loads(line)
                instrument[m["round"]] = m

    def pick(scenario, target):
        return {r["round"]: r for r in runs if r["scenario"] == scenario and r["target"] == target}

    rounds = sorted({r["round"] for r in runs if r["scenario"] != "hello-world"})
    out = []
    w = out.append
    w("# wrk cross-check")
    w("")
    w(f"Started {args.started}, commit `{args.commit}`, {len(rounds)} rounds of {args.duration} s per run, "
      f"`{args.wrk}` with `-t{args.threads}` and the scripts in `loadtest/wrk/`. "
      "In every round each scenario runs against Wharf, then against the ceiling (`wharf-ceiling`), back to back. "
      "req/s counts 2xx replies only; non-2xx replies and socket errors are counted apart. "
      "Figures are medians over rounds with the range [min–max]; a ratio is the median of the per-round ratios.")
    w("")
    w(f"Machine: {os.cpu_count()} cores, {cpu_model()}, Linux {platform.release()}. "
      "wrk, Wharf and the ceiling share these cores. Wharf: `wharf serve` with defaults (fsync always), "
      "one partition per topic, a fresh data folder; consume on Wharf drains the backlog the produce-batch rounds left.")
    w("")

    p1w, p1c = pick("produce-1", "wharf"), pick("produce-1", "ceiling-http")
    pbw, pbc = pick("produce-batch", "wharf"), pick("produce-batch", "ceiling-http")
    cw, cc = pick("consume", "wharf"), pick("consume", "ceiling-http")
    hello = [r for r in runs if r["scenario"] == "hello-world"]
    hello_rate = statistics.median([rate(r, "ok") for r in hello]) if hello else float("nan")

    def ratios(a, b, key_a, key_b):
        return [rate(a[n], key_a) / rate(b[n], key_b) for n in rounds if n in a and n in b]

    p1_ratio = ratios(p1w, p1c, "ok", "ok")
    consume_ratio = ratios(cw, pbw, "messages", "messages")
    w("## Targets (issue 8), as wrk measures them")
    w("")
    w("| target | measured | threshold | result |")
    w("|---|---:|---:|---|")
    # Issue 8 asks for produce-1 at ≥ 0.30 of "bare axum" with 1 KiB payloads: the ceiling
    # serving the same body is one reading, a hello-world GET on the same stack the stricter.
    p1_hello = [rate(p1w[n], "ok") / hello_rate for n in rounds if n in p1w]
    for name, values, threshold in (
        ("produce-1 (64 connections) req/s ≥ 0.30 of bare axum serving the same 1 KiB produce", p1_ratio, 0.3),
        ("produce-1 (64 connections) req/s ≥ 0.30 of bare axum's hello-world GET", p1_hello, 0.3),
        ("consume msg/s ≥ 0.50 of produce-batch msg/s (Wharf)", consume_ratio, 0.5),
    ):
        if values:
            median = statistics.median(values)
            verdict = "met" if median >= threshold else "**missed**"
            w(f"| {name} | {fmt(median)} | >= {threshold} | {verdict} ({median / threshold:.2f}× the threshold) |")
    w("| produce-batch MiB/s ≥ 50% of ceiling-disk (100 KiB appends) | see `loadtest/run` (the disk ceiling is its) | | |")
    w("")

    w("## Medians")
    w("")
    w("| scenario | metric | Wharf | against | their figure | ratio [per round] |")
    w("|---|---|---:|---|---:|---:|")

    def row(scenario, metric, mine, key, against, theirs, their_key, their_label):
        mine_v = [rate(mine[n], key) for n in rounds if n in mine]
        their_v = [rate(theirs[n], their_key) for n in rounds if n in theirs]
        per_round = ratios(mine, theirs, key, their_key)
        w(f"| {scenario} | {metric} | {summary(mine_v)} | {their_label} | {summary(their_v)} | {summary(per_round)} |")

    row("produce-1", "req/s", p1w, "ok", None, p1c, "ok", "ceiling-http produce-1 (same body)")
    p1_vals = [rate(p1w[n], "ok") for n in rounds if n in p1w]
    if hello:
        w(f"| produce-1 | req/s vs hello world | {summary(p1_vals)} | ceiling-http GET /healthz | "
          f"{fmt(hello_rate)} | {fmt(statistics.median(p1_vals) / hello_rate) if p1_vals else '–'} |")
    c1 = [rate(p1c[n], "ok") for n in rounds if n in p1c]
    if hello:
        w(f"| ceiling-http produce-1 | req/s vs hello world | {summary(c1)} | ceiling-http GET /healthz | "
          f"{fmt(hello_rate)} | {fmt(statistics.median(c1) / hello_rate) if c1 else '–'} |")
    row("produce-batch", "msg/s", pbw, "messages", None, pbc, "messages", "ceiling-http produce-batch")
    row("produce-batch", "req/s", pbw, "ok", None, pbc, "ok", "ceiling-http produce-batch")
    row("consume", "msg/s (acked)", cw, "messages", None, cc, "messages", "ceiling-http consume")
    row("consume", "msg/s vs Wharf produce-batch msg/s", cw, "messages", None, pbw, "messages",
        "wharf produce-batch")
    w("")

    w("## Every run")
    w("")
    w("| round | scenario | target | connections | s | req/s (2xx) | msg/s | non-2xx | socket errors (connect/read/write/timeout) |")
    w("|---:|---|---|---:|---:|---:|---:|---:|---|")
    for r in runs:
        errors = "/".join(str(r.get(k, 0)) for k in ("connect_errors", "read_errors", "write_errors", "timeouts"))
        w(f"| {r['round']} | {r['scenario']} | {r['target']} | {r['connections']} | {r['duration_s']:.2f} | "
          f"{fmt(rate(r, 'ok'))} | {fmt(rate(r, 'messages'))} | {r['non2xx']} | {errors} |")
    w("")

    w("## Consume on Wharf: what wrk counted and what Wharf says")
    w("")
    w("The script counts messages its acks' replies call acked; Wharf's subscription stats are read before and "
      "after each round. Acks still in flight when wrk stops are acked by Wharf but not counted by wrk.")
    w("")
    w("| round | acked (wrk) | stats.acked +Δ (Wharf) | backlog before → after | in flight after | receives | empty receives | acks with failed receipts |")
    w("|---:|---:|---:|---|---:|---:|---:|---:|")
    for n in rounds:
        if n not in cw or n not in stats:
            continue
        r, s = cw[n], stats[n]
        w(f"| {n} | {r['messages']:,} | {s['after_acked'] - s['before_acked']:,} | "
          f"{s['before_backlog']:,} → {s['after_backlog']:,} | {s['after_in_flight']:,} | "
          f"{r.get('receives', 0):,} | {r.get('empty', 0):,} | {r.get('ack_failures', 0):,} |")
    w("")

    w("## The instrument: wharf-load beside wrk on the ceiling (produce-1, 64 connections)")
    w("")
    w("Each round, right after wrk's produce-1 on the ceiling, `wharf-load produce --batch 1 --connections 64` "
      "runs against the same ceiling with the same body (0.5 s warm-up, then the same length).")
    w("")
    w("| round | wrk req/s | wharf-load req/s | wharf-load / wrk | wharf-load errors | wharf-load CPU s |")
    w("|---:|---:|---:|---:|---:|---:|")
    instrument_ratios = []
    for n in rounds:
        if n not in instrument or n not in p1c:
            continue
        m = instrument[n]
        ratio = m["req_per_s"] / rate(p1c[n], "ok")
        instrument_ratios.append(ratio)
        cpu = m.get("client_cpu_s")
        w(f"| {n} | {fmt(rate(p1c[n], 'ok'))} | {fmt(m['req_per_s'])} | {fmt(ratio)} | "
          f"{sum(m['errors'].values())} | {fmt(cpu) if cpu is not None else '–'} |")
    if instrument_ratios:
        w(f"| median | {summary(c1)} | {summary([m['req_per_s'] for m in instrument.values()])} | "
          f"{summary(instrument_ratios)} | | |")
    w("")
    with open(args.out, "w") as f:
        f.write("\n".join(out))
    print("\n".join(out))


if __name__ == "__main__":
    main()
