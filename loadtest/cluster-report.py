#!/usr/bin/env python3
"""Writes loadtest/results/cluster.md and cluster.json from a loadtest/cluster run: wharf-load's
measurements (JSON lines, `kind: measurement`) and the script's facts (the durability header,
each kill, an e2e that could not run).

Targets (issue 9): produce unavailability after kill -9 of a leader, p50 <= 1 s and max <= 3 s
over the kills; produce-batch MiB/s at RF 3 (to the partition leader's node) >= 0.30 x RF 1;
e2e at 1,000 msg/s on RF 3, p99 <= 10 ms. Figures are medians over rounds with [min-max];
a ratio's median is that of the per-round ratios. The spread rows sum three concurrent
wharf-load processes (one per node); their latencies are the worst of the three."""

import argparse
import json
import os
import platform
import re
import statistics

TARGETS = ["rf1", "rf3-leader", "rf3-forwarded", "rf3-spread", "rf3-any"]
LABELS = {
    "rf1": "RF 1 (one plain node)",
    "rf3-any": "RF 3, through node 1 (gathers from every partition's leader)",
    "rf3-leader": "RF 3, to partition 0's leader",
    "rf3-forwarded": "RF 3, to another node (forwarded)",
    "rf3-spread": "RF 3, spread over the 3 nodes (sum)",
}


def fmt(value, digits=3):
    if value is None or value != value:
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def summary(values, digits=3):
    values = [v for v in values if v is not None and v == v]
    if not values:
        return "–"
    if len(values) == 1:
        return fmt(values[0], digits)
    return f"{fmt(statistics.median(values), digits)} [{fmt(min(values), digits)}–{fmt(max(values), digits)}]"


def median(values):
    values = [v for v in values if v is not None and v == v]
    return statistics.median(values) if values else None


def ms(us):
    return us / 1000.0


def machine():
    def field(path, name):
        try:
            with open(path) as text:
                for line in text:
                    if line.startswith(name):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return ""

    try:
        with open("/proc/sys/kernel/osrelease") as release:
            kernel = release.read().strip()
    except OSError:
        kernel = platform.release()
    memory = field("/proc/meminfo", "MemTotal").split()
    return {
        "cores": os.cpu_count(),
        "cpu_model": field("/proc/cpuinfo", "model name") or platform.machine(),
        "kernel": kernel,
        "memory_mib": int(memory[0]) // 1024 if memory else 0,
    }


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as lines:
        return [json.loads(line) for line in lines if line.strip()]


STAGES = ("queue", "log_append", "replicate", "follower_append", "apply")


def errors(m):
    return sum(m.get("errors", {}).values())


def server_cpu_s(m):
    """CPU seconds the servers of a measurement used: every node of a cluster when they were
    measured together (`cluster_cpu_s`), else the one server of a single node (RF 1); None for
    a process of a cluster run that did not measure them (another process of its spread did)."""
    server = m.get("server") or {}
    if server.get("cluster_cpu_s") is not None:
        return server["cluster_cpu_s"]
    if m["target"] == "rf1":
        return server.get("cpu_s")
    return None


def cpu_per_msg_us(row):
    """Server CPU microseconds per message of a per-round row, or NaN when not measured."""
    if row.get("cpu_s") is None or not row.get("messages"):
        return float("nan")
    return row["cpu_s"] * 1e6 / row["messages"]


def cores(row):
    """Cores the servers kept busy while measuring, or NaN when not measured."""
    if row.get("cpu_s") is None or not row.get("elapsed_s"):
        return float("nan")
    return row["cpu_s"] / row["elapsed_s"]


def per_round(measurements, scenario):
    """{target: {round: figures}} for one scenario, the processes of a spread run (targets
    NAME-spread-N) summed into NAME-spread with their worst p50 and p99."""
    table = {}
    for m in measurements:
        if m["scenario"] != scenario:
            continue
        target = re.sub(r"-spread-\d+$", "-spread", m["target"])
        row = table.setdefault(target, {}).setdefault(m["round"], {
            "msg_per_s": 0.0, "mib_per_s": 0.0, "req_per_s": 0.0, "errors": 0,
            "p50_ms": 0.0, "p99_ms": 0.0, "processes": 0, "messages": 0, "cpu_s": None,
            "elapsed_s": 0.0,
        })
        cpu = server_cpu_s(m)
        if cpu is not None:
            row["cpu_s"] = (row["cpu_s"] or 0.0) + cpu
        row["messages"] += m.get("messages", 0)
        row["elapsed_s"] = max(row["elapsed_s"], m.get("elapsed_s", 0.0))
        row["msg_per_s"] += m["msg_per_s"]
        row["mib_per_s"] += m["mib_per_s"]
        row["req_per_s"] += m["req_per_s"]
        row["errors"] += errors(m)
        row["p50_ms"] = max(row["p50_ms"], ms(m["latency"]["p50_us"]))
        row["p99_ms"] = max(row["p99_ms"], ms(m["latency"]["p99_us"]))
        row["processes"] += 1
    return table


PEER_SCENARIOS = ("peer-200", "peer-1000", "peer-closed-1")
PEER_TARGETS = ("wharf-always", "wharf-never", "nats-r3")


def peer_rounds(measurements):
    """{(scenario, target): {round: row}} of the NATS comparison (a spread run counts as its
    target: Wharf's open loops are spread, its closed loop and NATS's runs are not)."""
    return {(scenario, target.removesuffix("-spread")): rows
            for scenario in PEER_SCENARIOS
            for target, rows in per_round(measurements, scenario).items()}


def per_row(rows, figure):
    """A figure of each round's row, leaving out rounds where it was not measured."""
    values = [figure(rows[r]) for r in sorted(rows)]
    return [v for v in values if v == v]


def peer_figure(peer, scenario, target, key):
    rows = peer.get((scenario, target), {})
    return [rows[r][key] for r in sorted(rows)]


def peer_ratio(peer, scenario, key):
    """Per round: Wharf (fsync always) over NATS."""
    wharf = peer.get((scenario, "wharf-always"), {})
    nats = peer.get((scenario, "nats-r3"), {})
    return [wharf[r][key] / nats[r][key] for r in sorted(wharf) if r in nats and nats[r][key] > 0]


def ratios(table, target, key):
    base = table.get("rf1", {})
    rows = table.get(target, {})
    return [rows[r][key] / base[r][key] for r in sorted(rows) if r in base and base[r][key] > 0]


def verdict(value, goal, smaller_is_better):
    if value is None:
        return "not measured"
    met = value <= goal if smaller_is_better else value >= goal
    return "met" if met else "**missed**"


def main():
    parser = argparse.ArgumentParser()
    for name in ("results", "facts", "mode", "out", "started", "commit"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args()
    records = read_lines(args.results)
    measurements = [r for r in records if r.get("kind") == "measurement"]
    facts = read_lines(args.facts)
    fact = lambda name: next((f for f in facts if f["fact"] == name), None)
    batch = per_round(measurements, "produce-batch")
    single = per_round(measurements, "produce-1")
    consume = per_round(measurements, "consume")
    rounds = max([m["round"] for m in measurements if m["scenario"].startswith("produce-")] or [0])
    open_loops = [m for m in measurements if m["scenario"] == "produce-1000"]
    e2e = next((m for m in measurements if m["scenario"] == "e2e" and m["target"] == "rf3"), None)
    peer = peer_rounds(measurements)
    e2e_8 = [m for m in measurements if m["scenario"] == "e2e" and m["target"] == "wharf-always-e2e-8"]
    kills = sorted((m for m in measurements if m["scenario"] == "failover"), key=lambda m: m["round"])
    gaps_s = [m["figures"].get("max_gap_ms", float("nan")) / 1000.0 for m in kills]

    batch_ratio = ratios(batch, "rf3-leader", "mib_per_s")
    single_spread = ratios(single, "rf3-spread", "mib_per_s")
    batch_spread = ratios(batch, "rf3-spread", "mib_per_s")
    consume_any = ratios(consume, "rf3-any", "msg_per_s")
    e2e_p99 = ms(e2e["latencies"]["e2e"]["p99_us"]) if e2e and "e2e" in e2e.get("latencies", {}) else None
    e2e_failed = fact("e2e_failed")
    targets = [
        ("produce unavailability after kill -9 of a leader, p50 over the kills (s)", "≤ 1",
         median(gaps_s), 1.0, True, summary(gaps_s)),
        ("produce unavailability after kill -9 of a leader, max over the kills (s)", "≤ 3",
         max(gaps_s) if gaps_s else None, 3.0, True, fmt(max(gaps_s)) if gaps_s else "–"),
        ("produce-batch MiB/s, RF 3 ack=all (to the leader's node) / RF 1", "≥ 0.30",
         median(batch_ratio), 0.30, False, summary(batch_ratio)),
        ("e2e at 1,000 msg/s, RF 3 ack=all: p99 (ms)", "≤ 10", e2e_p99, 10.0, True,
         fmt(e2e_p99) if e2e_p99 is not None else "not measured"),
        ("produce-1 MiB/s, RF 3 spread over the nodes / RF 1", "≥ 0.6",
         median(single_spread), 0.6, False, summary(single_spread)),
        ("produce-batch MiB/s, RF 3 spread over the nodes / RF 1", "≥ 0.5",
         median(batch_spread), 0.5, False, summary(batch_spread)),
        ("consume msg/s, RF 3 through any node / RF 1", "≥ 0.5",
         median(consume_any), 0.5, False, summary(consume_any)),
    ]
    if peer:
        p50 = peer_figure(peer, "peer-1000", "wharf-always", "p50_ms")
        p99 = peer_figure(peer, "peer-1000", "wharf-always", "p99_ms")
        e2e8_p50 = [ms(m["latencies"]["e2e"]["p50_us"]) for m in e2e_8 if "e2e" in m.get("latencies", {})]
        e2e8_p99 = [ms(m["latencies"]["e2e"]["p99_us"]) for m in e2e_8 if "e2e" in m.get("latencies", {})]
        closed = peer_figure(peer, "peer-closed-1", "wharf-always", "msg_per_s")
        vs_p50 = peer_ratio(peer, "peer-1000", "p50_ms")
        vs_p99 = peer_ratio(peer, "peer-1000", "p99_ms")
        targets += [
            ("produce at 1,000 msg/s over 8 connections spread, fsync always: p50 (ms)", "≤ 3",
             median(p50), 3.0, True, summary(p50)),
            ("produce at 1,000 msg/s over 8 connections spread, fsync always: p99 (ms)", "≤ 10",
             median(p99), 10.0, True, summary(p99)),
            ("e2e at 1,000 msg/s, 8 producers: p50 (ms)", "≤ 5", median(e2e8_p50), 5.0, True,
             summary(e2e8_p50)),
            ("e2e at 1,000 msg/s, 8 producers: p99 (ms)", "≤ 15", median(e2e8_p99), 15.0, True,
             summary(e2e8_p99)),
            ("produce p50 at 1,000 msg/s, Wharf (fsync always) ÷ NATS JetStream R3", "≤ 1",
             median(vs_p50), 1.0, True, summary(vs_p50)),
            ("produce p99 at 1,000 msg/s, Wharf (fsync always) ÷ NATS JetStream R3", "≤ 1",
             median(vs_p99), 1.0, True, summary(vs_p99)),
            ("one connection, closed loop: produces a second", "≥ 400", median(closed), 400.0,
             False, summary(closed)),
        ]
    m = machine()
    durability = (fact("durability") or {}).get("value", "")
    lines = [
        f"# Wharf cluster load test ({args.mode} run)",
        "",
        f"Started {args.started}, commit `{args.commit}`, {rounds} round(s). In every round each "
        "produce scenario runs against RF 1, then RF 3 to the leader, forwarded, and spread, back "
        "to back; figures are medians over rounds with the range [min–max], a ratio's median is "
        "that of the per-round ratios.",
        "",
        f"Machine: {m['cores']} cores, {m['cpu_model']}, Linux {m['kernel']}, {m['memory_mib']} MiB "
        "memory. The load generator, the RF 1 node and the three cluster nodes share these cores "
        "and one disk (RF 3 writes and fsyncs three copies on it), so every figure is a lower bound.",
        "",
        "Wharf: RF 1 is `wharf serve` with defaults (fsync always, one partition per topic); RF 3 is "
        "three `wharf serve` nodes on loopback (fsync always), topics of 3 "
        "partitions with replication factor 3, all started fresh for this run and all running "
        "throughout the rounds. The produce default waits for the Raft commit (a majority "
        f"fsynced), as `ack=all` does; a produce's reply says `Wharf-Durability: {durability or '?'}`.",
        "",
        "## Targets",
        "",
        "| target | goal | measured | verdict |",
        "|---|---:|---:|---|",
    ]
    json_targets = []
    for name, goal, value, threshold, smaller, shown in targets:
        v = verdict(value, threshold, smaller)
        lines.append(f"| {name} | {goal} | {shown} | {v} |")
        json_targets.append({"target": name, "goal": goal, "measured": value, "verdict": v.strip("*")})
    lines += ["", "## Throughput: RF 3 beside RF 1", "",
              "Closed loop, 1 KiB messages: produce-batch is 16 connections × 100 per request, "
              "produce-1 64 connections × 1 (spread: the same connections split over the three "
              "nodes). \"To the leader\" and \"forwarded\" key every message to partition 0 and send "
              "it to its leader's node or to another node (which forwards it: one more hop). "
              "consume is 8 connections each repeating receive (100) then ack, from a backlog on "
              "a topic of 3 partitions; through node 1 it gathers from every partition's leader.", "",
              "",
              "Server CPU: the CPU time (user + system, from `/proc`) of every server process the "
              "run's writes cost, per message: the one node for RF 1, all three nodes for RF 3 "
              "(a replicated write costs work on every replica); cores is that CPU time over the "
              "measured seconds. The machine has 2 cores for the servers and the load generator "
              "together, so a closed loop saturates it: a scenario's msg/s is at most about the "
              "cores it gets divided by its CPU per message.", "",
              "| scenario | target | MiB/s | msg/s | req/s | p50 ms | p99 ms | errors | MiB/s ÷ RF 1 | server CPU µs/msg | cores |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    json_rows = []
    for scenario, table in (("produce-batch", batch), ("produce-1", single), ("consume", consume)):
        for target in TARGETS:
            rows = table.get(target, {})
            if not rows:
                continue
            col = lambda key: [rows[r][key] for r in sorted(rows)]
            ratio = ratios(table, target, "mib_per_s") if target != "rf1" else []
            lines.append(
                f"| {scenario} | {LABELS[target]} | {summary(col('mib_per_s'))} | {summary(col('msg_per_s'))} "
                f"| {summary(col('req_per_s'))} | {summary(col('p50_ms'))} | {summary(col('p99_ms'))} "
                f"| {sum(col('errors'))} | {summary(ratio) if ratio else '1'} "
                f"| {summary(per_row(rows, cpu_per_msg_us))} | {summary(per_row(rows, cores))} |")
            json_rows.append({"scenario": scenario, "target": target, "rounds": rows,
                              "ratio_to_rf1": ratio})
    lines += ["", "## Latency at 1,000 msg/s, RF 3", "",
              "Open loop, latency from the intended send time, one message per request, to node 1 "
              "(unkeyed: to the partitions it leads); e2e's producers are the 32 connections of the "
              "1,000 msg/s row (the normal run's 4 cannot offer 1,000 msg/s at RF 3 here), its 2 "
              "consumers long-poll node 1, which gathers from every partition's leader.", "",
              "| scenario | msg/s | p50 ms | p99 ms | max ms | errors |", "|---|---:|---:|---:|---:|---:|"]
    for open_loop in open_loops:
        lat = open_loop["latency"]
        lines.append(f"| produce at 1,000 msg/s, ack=all, {open_loop['connections']} connections "
                     f"| {fmt(open_loop['msg_per_s'])} | {fmt(ms(lat['p50_us']))} "
                     f"| {fmt(ms(lat['p99_us']))} | {fmt(ms(lat['max_us']))} | {errors(open_loop)} |")
    if e2e:
        lat = e2e["latencies"].get("e2e", {})
        lines.append(f"| e2e (publish to receive) | {fmt(e2e['msg_per_s'])} | {fmt(ms(lat.get('p50_us', 0)))} "
                     f"| {fmt(ms(lat.get('p99_us', 0)))} | {fmt(ms(lat.get('max_us', 0)))} | {errors(e2e)} |")
    else:
        reason = e2e_failed["value"].strip() if e2e_failed else "no measurement"
        lines.append(f"| e2e | not measured: {reason} | | | | |")
        if e2e_failed:
            lines += ["", f"e2e setup answered: `{reason}`"]
    staged = [m for m in measurements if m["scenario"] in ("produce-1", "produce-1000", "peer-1000")
              and m["target"].startswith(("rf3", "wharf-always"))
              and "appends_busy" in m.get("figures", {})]
    if staged:
        lines += ["", "## Where a replicated produce's time goes", "",
                  "From `wharf_write_stage_seconds{stage}` on the node each load process hit "
                  "(a spread run: one row per process), scraped when measuring started and ended: p50 / p99 ms of each "
                  "stage, interpolated within the server's buckets (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 ms…). "
                  "queue: a proposal waiting for a place in Raft on the leader; log_append: entries "
                  "written and fsynced to this node's log; replicate: an append to one follower until "
                  "its answer; follower_append: on this node as a follower; apply: committed entries "
                  "applied. busy: appends a follower refused (each a 50–200 ms backoff).", "",
                  "| scenario | target | round | " + " | ".join(STAGES) + " | busy |",
                  "|---|---|---:|" + "---:|" * (len(STAGES) + 1)]
        for m_ in sorted(staged, key=lambda m: (m["scenario"], m["target"], m["round"])):
            f = m_["figures"]
            cells = [f"{fmt(f[f'stage_{s}_ms_p50'])} / {fmt(f[f'stage_{s}_ms_p99'])}"
                     if f"stage_{s}_ms_p50" in f else "–" for s in STAGES]
            lines.append(f"| {m_['scenario']} | {m_['target']} | {m_['round']} | "
                         + " | ".join(cells) + f" | {fmt(f['appends_busy'])} |")
    if peer:
        lines += ["", "## Beside NATS JetStream R3", "",
                  "Per round, on fresh clusters: Wharf RF 3 (`ack=all`) with fsync always, then "
                  "with `--fsync never`, then NATS JetStream (Debian's nats-server, three servers on "
                  "loopback, a stream of 3 replicas on file storage, which NATS fsyncs on an "
                  "interval, not per message), driven through the NATS project's Rust client "
                  "(`async-nats`). One 1 KiB message per request; open loop at 200 and 1,000 msg/s "
                  "over 8 connections spread over the three nodes (Wharf: one load process per node "
                  "at its share of the rate, unkeyed to a topic of 3 partitions whose leaders the "
                  "placement spreads; the worst process's p50 and p99 are taken), latency from the "
                  "intended send time; and one connection in a closed loop (Wharf: to node 1). "
                  "Medians over rounds [min–max].", "",
                  "Server CPU µs/msg: the three servers' CPU time while measuring, per message "
                  "(Wharf's nodes or NATS's servers).", "",
                  "| shape | target | msg/s | p50 ms | p99 ms | errors | server CPU µs/msg |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        shapes = {"peer-200": "200 msg/s, 8 connections", "peer-1000": "1,000 msg/s, 8 connections",
                  "peer-closed-1": "1 connection, closed loop"}
        names = {"wharf-always": "Wharf, fsync always", "wharf-never": "Wharf, fsync never",
                 "nats-r3": "NATS JetStream R3"}
        for scenario in PEER_SCENARIOS:
            for target in PEER_TARGETS:
                if (scenario, target) not in peer:
                    continue
                col = lambda key: peer_figure(peer, scenario, target, key)
                lines.append(f"| {shapes[scenario]} | {names[target]} | {summary(col('msg_per_s'))} "
                             f"| {summary(col('p50_ms'))} | {summary(col('p99_ms'))} "
                             f"| {int(sum(col('errors')))} "
                             f"| {summary(per_row(peer[(scenario, target)], cpu_per_msg_us))} |")
        for m_ in e2e_8:
            lat = m_["latencies"].get("e2e", {})
            prod = m_["latency"]
            lines.append(f"| e2e 1,000 msg/s, 8 producers, 2 consumers on node 1 (round {m_['round']}) "
                         f"| Wharf, fsync always | {fmt(m_['msg_per_s'])} | produce {fmt(ms(prod['p50_us']))}, "
                         f"e2e {fmt(ms(lat.get('p50_us', 0)))} | produce {fmt(ms(prod['p99_us']))}, "
                         f"e2e {fmt(ms(lat.get('p99_us', 0)))} | {errors(m_)} | – |")
    lines += ["", "## Failover: kill -9 of partition 0's leader", "",
              "On a fresh three-node cluster holding only this topic (3 partitions). Each kill: an "
              f"open-loop produce ({fmt(kills[0]['rate_per_s']) if kills else '?'} msg/s, "
              f"{kills[0]['connections'] if kills else '?'} connections, every message keyed to "
              "partition 0, 5 s request timeout) runs against a node that does not lead partition 0; "
              "its leader is SIGKILLed about 2 s into the measured window. Unavailability is "
              "the longest time between two successful replies (the window's ends count as replies). "
              "The killed node is then restarted and waited for until every replica's lag is 0.", "",
              "| kill | killed | producing to | new leader | unavailability s | failed requests | p99 ms (every request) |",
              "|---:|---:|---:|---:|---:|---|---:|"]
    kill_facts = {f["round"]: f for f in facts if f["fact"] == "kill"}
    for m_, gap in zip(kills, gaps_s):
        f = kill_facts.get(m_["round"], {})
        errs = ", ".join(f"{k} {v}" for k, v in sorted(m_["errors"].items())) or "0"
        lines.append(f"| {m_['round']} | {f.get('killed', '?')} | {f.get('survivor', '?')} | "
                     f"{f.get('new_leader') or '?'} | {fmt(gap)} | {errs} | {fmt(ms(m_['latency']['p99_us']))} |")
    misses = [t for t in json_targets if t["verdict"] == "missed"]
    if misses:
        lines += ["", "## Misses", ""]
        lines += [f"- {t['target']}: {fmt(t['measured'])} against {t['goal']}." for t in misses]
    lines.append("")
    with open(args.out + ".md", "w") as out:
        out.write("\n".join(lines))
    with open(args.out + ".json", "w") as out:
        json.dump({"mode": args.mode, "started": args.started, "commit": args.commit,
                   "machine": m, "durability": durability, "targets": json_targets,
                   "throughput": json_rows, "produce_1000": open_loops, "e2e": e2e,
                   "e2e_failed": e2e_failed, "failover": kills, "kills": list(kill_facts.values()),
                   "peer": {f"{s} {t}": rows for (s, t), rows in peer.items()}, "e2e_8": e2e_8},
                  out, indent=2)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
