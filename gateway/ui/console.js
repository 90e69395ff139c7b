// The Wharf console: one page, hash routing, plain DOM. It reads the HTTP API of the server
// that served it, with the bearer token entered on the sign-in page (kept in sessionStorage).
// Text from the server is only ever set as text (never parsed as HTML).
"use strict";

(function () {
  const TOKEN_KEY = "wharf.console.token";
  // Topics whose subscriptions and produce rate the topic list loads (two requests each).
  const MAX_TOPICS_DETAILED = 50;
  // Minutes of history the charts show.
  const CHART_MINUTES = 60;
  // Minutes the produce rate of the topic list averages over.
  const RATE_MINUTES = 5;
  // Dead letters shown on a subscription page, per partition of the dead-letter topic.
  const DLQ_SHOWN = 20;
  // Rows of each ranking.
  const RANKING_ROWS = 10;

  const view = () => document.getElementById("view");
  // What to do once the page being built is in the document (drawing its charts).
  let afterRender = [];

  // ---- DOM helpers ------------------------------------------------------------------------

  /** An element with attributes (`class`, `data-*`, `href`, event handlers `on*`) and children. */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
      else if (name === "class") el.className = value;
      else el.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function link(text, hash) {
    return h("a", { href: hash }, text);
  }

  function table(headers, rows, attrs) {
    return h("table", attrs,
      h("thead", null, h("tr", null, headers.map((x) => h("th", { class: x.num ? "num" : null }, x.label ?? x)))),
      h("tbody", null, rows));
  }

  function num(value) {
    return h("td", { class: "num" }, value === null || value === undefined ? "—" : format(value));
  }

  function format(value) {
    return typeof value === "number" ? value.toLocaleString("en") : String(value);
  }

  function duration(ms) {
    if (ms === null || ms === undefined) return "—";
    if (ms < 1000) return `${ms} ms`;
    if (ms < 120000) return `${(ms / 1000).toFixed(1)} s`;
    if (ms < 7200000) return `${(ms / 60000).toFixed(1)} min`;
    return `${(ms / 3600000).toFixed(1)} h`;
  }

  function time(ms) {
    return ms ? new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC") : "—";
  }

  function figure(label, value, key) {
    return h("div", { class: "figure", "data-figure": key },
      h("div", { class: "label" }, label),
      h("div", { class: "value" }, value));
  }

  function note(text, cls) {
    return h("p", { class: cls || "note" }, text);
  }

  function enc(part) {
    return encodeURIComponent(part);
  }

  // ---- API ---------------------------------------------------------------------------------

  function token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }

  /**
   * Calls the API. Never throws: the answer is `{status, ok, body}` plus `kind`:
   * "ok", "unauthorized" (401), "forbidden" (403), "unavailable" (the route does not exist on
   * this server: 404 `route_not_found` or 405 `method_not_allowed`), "error" (anything else,
   * a network failure included: status 0).
   */
  async function api(method, path, body) {
    const headers = { accept: "application/json" };
    if (token()) headers.authorization = `Bearer ${token()}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    let response;
    try {
      response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (e) {
      return { status: 0, ok: false, kind: "error", body: { detail: String(e) } };
    }
    let parsed = null;
    const text = await response.text();
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = { detail: text };
    }
    const code = parsed && parsed.code;
    let kind = "error";
    if (response.ok) kind = "ok";
    else if (response.status === 401) kind = "unauthorized";
    else if (response.status === 403 && code !== "origin_not_allowed" && code !== "host_not_allowed") kind = "forbidden";
    else if ((response.status === 404 && code === "route_not_found") || response.status === 405) kind = "unavailable";
    if (kind === "unauthorized") showBanner("This server needs a token: sign in.", "#/signin");
    return { status: response.status, ok: response.ok, kind, body: parsed };
  }

  /**
   * What to show instead of data that did not come: "not allowed" for a 403, `unavailable`
   * (e.g. "history not available") when the route is missing, the problem's detail otherwise.
   */
  function refusal(answer, unavailable) {
    switch (answer.kind) {
      case "forbidden": return note("not allowed", "not-allowed");
      case "unauthorized": return note("sign in to see this", "not-allowed");
      case "unavailable": return note(unavailable || "not available on this server");
      default: {
        const detail = answer.body && (answer.body.detail || answer.body.title);
        return note(`error ${answer.status}: ${detail || "no answer"}`, "error");
      }
    }
  }

  function showBanner(text, hash) {
    const banner = document.getElementById("banner");
    banner.replaceChildren(text, " ", hash ? link("Sign in", hash) : "");
    banner.hidden = false;
  }

  // ---- charts ------------------------------------------------------------------------------

  /**
   * A per-minute chart: `points` from the history route, `series` as [{field, label, color}].
   * The container gets `data-points` (points drawn) and `data-nonzero` (whether any value is
   * above zero), for the browser test.
   */
  function chart(title, points, series, key) {
    const box = h("div", { class: "chart", "data-chart": key }, h("h3", null, title));
    const xs = points.map((p) => Math.floor(p.time_ms / 1000));
    const columns = series.map((s) => points.map((p) => (typeof p[s.field] === "number" ? p[s.field] : null)));
    box.dataset.points = String(points.length);
    box.dataset.nonzero = String(columns.some((col) => col.some((v) => v > 0)));
    if (points.length === 0) {
      box.append(note("no data in this period"));
      return box;
    }
    // uPlot sizes itself to its container, so it is drawn once the page is in the document.
    afterRender.push(() => {
      if (typeof uPlot !== "function") {
        box.append(note("chart library not loaded", "error"));
        return;
      }
      const width = Math.max(300, box.clientWidth - 16);
      const windowEnd = Math.max(Math.floor(Date.now() / 1000), xs[xs.length - 1] + 60);
      const options = {
        width,
        height: 200,
        legend: { show: true },
        // The whole window, so one point is not drawn alone on an axis of years.
        scales: { x: { time: true, range: () => [windowEnd - CHART_MINUTES * 60, windowEnd] } },
        series: [{}].concat(series.map((s) => ({ label: s.label, stroke: s.color, width: 2, points: { show: points.length < 3 } }))),
        axes: [{}, { size: 60 }],
      };
      new uPlot(options, [xs, ...columns], box);
    });
    return box;
  }

  // ---- pages -------------------------------------------------------------------------------

  async function topicsPage() {
    const root = h("div", null, h("h1", null, "Topics"));
    const answer = await api("GET", "/v1/topics");
    if (!answer.ok) {
      root.append(refusal(answer));
      return root;
    }
    const topics = answer.body.topics || [];
    if (topics.length === 0) root.append(note("No topics yet."));
    const detailed = topics.slice(0, MAX_TOPICS_DETAILED);
    const details = await Promise.all(detailed.map(async (t) => ({
      subs: await api("GET", `/v1/topics/${enc(t.name)}/subscriptions`),
      history: await api("GET", `/v1/stats/history?topic=${enc(t.name)}&minutes=${RATE_MINUTES}`),
    })));
    const rows = topics.map((t, i) => {
      const stats = t.partition_stats || [];
      const stored = stats.reduce((sum, p) => sum + (p.end_offset - p.start_offset), 0);
      const produced = stats.reduce((sum, p) => sum + p.end_offset, 0);
      const d = details[i];
      return h("tr", { "data-topic": t.name },
        h("td", null, link(t.name, `#/topic/${enc(t.name)}`)),
        num(t.partitions),
        num(stored),
        num(produced),
        h("td", { class: "num" }, d ? rate(d.history) : "—"),
        h("td", null, d ? backlogs(t.name, d.subs) : h("span", { class: "muted" }, `${t.subscriptions} subscriptions`)));
    });
    root.append(table([
      "topic", { label: "partitions", num: true }, { label: "stored messages", num: true },
      { label: "produced (all time)", num: true }, { label: `produce rate (msg/min, last ${RATE_MINUTES} min)`, num: true },
      "backlog per subscription"], rows, { id: "topic-list" }));
    if (topics.length > MAX_TOPICS_DETAILED) {
      root.append(note(`Rates and backlogs shown for the first ${MAX_TOPICS_DETAILED} topics.`));
    }
    root.append(h("h2", null, `Rankings (last ${CHART_MINUTES} minutes)`));
    const rankings = h("div", { class: "rankings" });
    root.append(rankings);
    const boards = await Promise.all(["backlog", "produced", "consumed"].map(async (by) => ({
      by, answer: await api("GET", `/v1/stats/top?by=${by}&limit=${RANKING_ROWS}&minutes=${CHART_MINUTES}`),
    })));
    for (const { by, answer: a } of boards) {
      const box = h("div", { "data-ranking": by }, h("h3", null, `by ${by}`));
      if (!a.ok) box.append(refusal(a, "history not available"));
      else if ((a.body.items || []).length === 0) box.append(note("nothing yet"));
      else {
        box.append(table(["topic", "subscription", { label: by, num: true }], a.body.items.map((item) => h("tr", null,
          h("td", null, link(item.topic, `#/topic/${enc(item.topic)}`)),
          h("td", null, item.subscription ? link(item.subscription, `#/sub/${enc(item.topic)}/${enc(item.subscription)}`) : "—"),
          num(item.value)))));
      }
      rankings.append(box);
    }
    return root;
  }

  function rate(history) {
    if (history.kind === "unavailable") return h("span", { class: "muted", title: "history not available" }, "—");
    if (!history.ok) return h("span", { class: "muted", title: history.kind }, "—");
    const points = history.body.points || [];
    if (points.length === 0) return "0";
    const total = points.reduce((sum, p) => sum + (p.produced_messages || 0), 0);
    return format(Math.round((total / Math.max(points.length, 1)) * 10) / 10);
  }

  function backlogs(topic, answer) {
    if (!answer.ok) return refusal(answer);
    const subs = answer.body.subscriptions || [];
    if (subs.length === 0) return h("span", { class: "muted" }, "no subscriptions");
    return h("span", null, subs.map((s, i) => [i ? ", " : "",
      link(s.name, `#/sub/${enc(topic)}/${enc(s.name)}`), ": ",
      h("span", { "data-backlog": s.name }, format(s.stats.backlog))]));
  }

  async function topicPage(topic) {
    const root = h("div", null, h("h1", null, "Topic ", h("code", null, topic)));
    const [described, subs, history] = await Promise.all([
      api("GET", `/v1/topics/${enc(topic)}`),
      api("GET", `/v1/topics/${enc(topic)}/subscriptions`),
      api("GET", `/v1/stats/history?topic=${enc(topic)}&minutes=${CHART_MINUTES}`),
    ]);
    if (!described.ok) {
      root.append(refusal(described));
      return root;
    }
    const t = described.body;
    const stats = t.partition_stats || [];
    root.append(h("div", { class: "figures" },
      figure("partitions", format(t.partitions), "partitions"),
      figure("stored messages", format(stats.reduce((s, p) => s + (p.end_offset - p.start_offset), 0)), "stored"),
      figure("bytes on disk", format(stats.reduce((s, p) => s + p.bytes, 0)), "bytes"),
      figure("delayed", format(t.delayed), "delayed"),
      figure("retention", t.retention_ms ? duration(t.retention_ms) : "forever", "retention")));
    root.append(h("h2", null, `Per minute (last ${CHART_MINUTES} minutes)`));
    if (!history.ok) root.append(refusal(history, "history not available"));
    else {
      const points = history.body.points || [];
      root.append(h("div", { class: "charts" },
        chart("Produced messages / minute", points, [{ field: "produced_messages", label: "produced", color: "#1f6feb" }], "produced"),
        chart("Consumed messages / minute", points, [{ field: "consumed_messages", label: "consumed", color: "#1a7f37" }], "consumed")));
    }
    root.append(h("h2", null, "Subscriptions"));
    if (!subs.ok) root.append(refusal(subs));
    else if ((subs.body.subscriptions || []).length === 0) root.append(note("No subscriptions."));
    else {
      root.append(table(["subscription", { label: "backlog", num: true }, { label: "in flight", num: true },
        { label: "oldest unacked", num: true }, { label: "dead-lettered", num: true }],
      subs.body.subscriptions.map((s) => h("tr", { "data-subscription": s.name },
        h("td", null, link(s.name, `#/sub/${enc(topic)}/${enc(s.name)}`)),
        num(s.stats.backlog), num(s.stats.in_flight),
        h("td", { class: "num" }, duration(s.stats.oldest_unacked_age_ms)),
        num(s.stats.dead_lettered)))));
    }
    root.append(h("h2", null, "Partitions"));
    root.append(table([{ label: "partition", num: true }, { label: "start offset", num: true }, { label: "end offset", num: true },
      { label: "bytes", num: true }, "leader"],
    stats.map((p) => h("tr", null, num(p.partition), num(p.start_offset), num(p.end_offset), num(p.bytes), h("td", null, p.leader)))));
    root.append(h("h2", null, "Find a message"));
    root.append(lookupForm(topic));
    return root;
  }

  async function subscriptionPage(topic, sub) {
    const base = `/v1/topics/${enc(topic)}/subscriptions/${enc(sub)}`;
    const root = h("div", null, h("h1", null, "Subscription ",
      h("code", null, sub), " on ", link(topic, `#/topic/${enc(topic)}`)));
    const [described, history] = await Promise.all([
      api("GET", base),
      api("GET", `/v1/stats/history?topic=${enc(topic)}&subscription=${enc(sub)}&minutes=${CHART_MINUTES}`),
    ]);
    if (!described.ok) {
      root.append(refusal(described));
      return root;
    }
    const s = described.body;
    const st = s.stats;
    root.append(h("div", { class: "figures", id: "sub-figures" },
      figure("backlog", format(st.backlog), "backlog"),
      figure("oldest unacked", duration(st.oldest_unacked_age_ms), "oldest_unacked_age"),
      figure("in flight", format(st.in_flight), "in_flight"),
      figure("waiting retry", format(st.waiting_retry), "waiting_retry"),
      figure("delivered", format(st.delivered), "delivered"),
      figure("redelivered", format(st.redelivered), "redelivered"),
      figure("acked", format(st.acked), "acked"),
      figure("filtered", format(st.filtered), "filtered"),
      figure("dead-lettered", format(st.dead_lettered), "dead_lettered")));
    root.append(h("p", { class: "muted" },
      `lease ${duration(s.ack_timeout_ms)} · at most ${s.max_deliveries} deliveries · ordering ${s.ordering} · dead letters to `,
      link(s.dead_letter_topic, `#/topic/${enc(s.dead_letter_topic)}`)));
    root.append(h("h2", null, `Backlog per minute (last ${CHART_MINUTES} minutes)`));
    if (!history.ok) root.append(refusal(history, "history not available"));
    else {
      const points = history.body.points || [];
      root.append(h("div", { class: "charts" },
        chart("Backlog", points, [{ field: "backlog", label: "backlog", color: "#9a6700" },
          { field: "backlog_max", label: "max in minute", color: "#cf222e" }], "backlog"),
        chart("Delivered and acked / minute", points, [{ field: "delivered_messages", label: "delivered", color: "#1f6feb" },
          { field: "acks", label: "acks", color: "#1a7f37" }, { field: "dead_letters", label: "dead letters", color: "#cf222e" }], "delivered")));
    }
    root.append(h("h2", null, "Dead letters"));
    root.append(await deadLetters(topic, sub, s));
    root.append(h("h2", null, "Seek"));
    root.append(seekForm(base));
    return root;
  }

  async function deadLetters(topic, sub, s) {
    const box = h("div", { id: "dead-letters" });
    const dlq = await api("GET", `/v1/topics/${enc(s.dead_letter_topic)}`);
    if (dlq.status === 404 && dlq.body && dlq.body.code === "topic_not_found") {
      box.append(note("No dead letters yet (the dead-letter topic is created with the first one)."));
    } else if (!dlq.ok) {
      box.append(refusal(dlq));
    } else {
      const stats = dlq.body.partition_stats || [];
      const stored = stats.reduce((sum, p) => sum + (p.end_offset - p.start_offset), 0);
      box.append(h("p", null, "The dead-letter topic ", link(s.dead_letter_topic, `#/topic/${enc(s.dead_letter_topic)}`),
        ` holds ${format(stored)} messages (all subscriptions' dead letters sent there, redriven or not).`));
      const rows = [];
      for (const p of stats) {
        if (p.end_offset === p.start_offset) continue;
        const from = Math.max(p.start_offset, p.end_offset - DLQ_SHOWN);
        const page = await api("GET", `/v1/topics/${enc(s.dead_letter_topic)}/partitions/${p.partition}/messages?offset=${from}&max=${DLQ_SHOWN}`);
        if (!page.ok) {
          box.append(refusal(page));
          break;
        }
        for (const m of page.body.messages || []) {
          // A dead letter names its original in `wharf-dlq-*` headers; its trace is the original's.
          const hd = m.headers || {};
          const original = hd["wharf-dlq-id"];
          const from = hd["wharf-dlq-topic"] || topic;
          rows.push(h("tr", { "data-dead-letter": m.id }, num(p.partition), num(m.offset),
            h("td", null, original ? link(original, `#/message?${new URLSearchParams({ topic: from, id: original })}`) : h("code", null, m.id)),
            h("td", null, m.key ?? "—"), h("td", null, hd["wharf-dlq-subscription"] ?? "—"),
            num(hd["wharf-dlq-attempts"] === undefined ? null : Number(hd["wharf-dlq-attempts"])),
            h("td", null, hd["wharf-dlq-error"] ?? "—"), h("td", null, time(m.publish_time_ms))));
        }
      }
      if (rows.length) {
        box.append(table([{ label: "partition", num: true }, { label: "offset", num: true }, "original message (trace)", "key",
          "subscription", { label: "attempts", num: true }, "last error", "dead-lettered"], rows));
      }
    }
    const result = h("div", { class: "result", id: "redrive-result" });
    const max = h("input", { type: "number", min: 1, name: "max_messages", placeholder: "all" });
    box.append(h("form", {
      class: "inline", id: "redrive-form",
      onsubmit: async (e) => {
        e.preventDefault();
        const body = max.value ? { max_messages: Number(max.value) } : {};
        const answer = await api("POST", `/v1/topics/${enc(topic)}/subscriptions/${enc(sub)}/redrive`, body);
        if (answer.ok) {
          result.replaceChildren(h("span", { class: "ok" }, `Redriven: ${format(answer.body.redriven)} dead letters.`));
          await render();
          const again = document.getElementById("redrive-result");
          if (again) again.replaceChildren(h("span", { class: "ok" }, `Redriven: ${format(answer.body.redriven)} dead letters.`));
        } else {
          result.replaceChildren(refusal(answer));
        }
      },
    }, h("label", null, "at most", max), h("button", { type: "submit", class: "primary", id: "redrive" }, "Redrive dead letters")));
    box.append(result);
    return box;
  }

  function seekForm(base) {
    const result = h("div", { class: "result", id: "seek-result" });
    const to = h("select", { name: "to" },
      h("option", { value: "earliest" }, "earliest (replay everything stored)"),
      h("option", { value: "latest" }, "latest (skip the backlog)"),
      h("option", { value: "time" }, "a point in time"));
    const when = h("input", { type: "datetime-local", name: "when", step: 1 });
    const form = h("form", {
      class: "inline", id: "seek-form",
      onsubmit: async (e) => {
        e.preventDefault();
        let body;
        if (to.value === "time") {
          const ms = Date.parse(when.value);
          if (Number.isNaN(ms)) {
            result.replaceChildren(note("Pick a point in time.", "error"));
            return;
          }
          body = { timestamp_ms: ms };
        } else body = { to: to.value };
        const answer = await api("POST", `${base}/seek`, body);
        if (answer.ok) {
          const positions = Object.entries(answer.body.positions || {}).map(([p, o]) => `partition ${p} → ${o}`).join(", ");
          await render();
          const again = document.getElementById("seek-result");
          if (again) again.replaceChildren(h("span", { class: "ok" }, `Moved: ${positions || "no partition"}.`));
        } else result.replaceChildren(refusal(answer));
      },
    }, h("label", null, "to", to), h("label", null, "time (local)", when),
    h("button", { type: "submit", class: "danger" }, "Seek"));
    return h("div", null, form, result);
  }

  function lookupForm(topic, id, key) {
    const topicInput = h("input", { type: "text", name: "topic", value: topic || "", required: true });
    const idInput = h("input", { type: "text", name: "id", value: id || "", placeholder: "message id" });
    const keyInput = h("input", { type: "text", name: "key", value: key || "", placeholder: "or a key" });
    return h("form", {
      class: "inline", id: "lookup-form",
      onsubmit: (e) => {
        e.preventDefault();
        const params = new URLSearchParams({ topic: topicInput.value });
        if (idInput.value) params.set("id", idInput.value);
        else if (keyInput.value) params.set("key", keyInput.value);
        location.hash = `#/message?${params}`;
      },
    }, h("label", null, "topic", topicInput), h("label", null, "id", idInput), h("label", null, "key", keyInput),
    h("button", { type: "submit", class: "primary" }, "Look up"));
  }

  async function messagePage(params) {
    const topic = params.get("topic") || "";
    const id = params.get("id") || "";
    const key = params.get("key") || "";
    const root = h("div", null, h("h1", null, "Message lookup"), lookupForm(topic, id, key));
    if (!topic || (!id && !key)) return root;
    if (id) {
      const answer = await api("GET", `/v1/topics/${enc(topic)}/messages/${enc(id)}`);
      if (!answer.ok) root.append(refusal(answer, "trace not available on this server"));
      else root.append(trace(answer.body));
    } else {
      const answer = await api("GET", `/v1/topics/${enc(topic)}/messages?key=${enc(key)}&limit=50`);
      if (!answer.ok) root.append(refusal(answer, "trace not available on this server"));
      else {
        const messages = Array.isArray(answer.body) ? answer.body : answer.body.messages || [];
        if (messages.length === 0) root.append(note("No recent message with this key."));
        else {
          root.append(table(["id", { label: "partition", num: true }, { label: "offset", num: true }, "published"],
            messages.map((m) => {
              const msg = m.message || m;
              return h("tr", null,
                h("td", null, link(msg.id, `#/message?${new URLSearchParams({ topic, id: msg.id })}`)),
                num(msg.partition), num(msg.offset), h("td", null, time(msg.publish_time_ms)));
            }), { id: "key-results" }));
        }
      }
    }
    return root;
  }

  /** A message's trace: the message, then every event in time order. */
  function trace(body) {
    const box = h("div", { id: "trace" });
    const m = body.message || {};
    box.append(h("h2", null, "Message"));
    box.append(table(["field", "value"], [
      ["id", m.id], ["key", m.key], ["partition", body.produced && body.produced.partition],
      ["offset", body.produced && body.produced.offset], ["tags", (m.tags || []).join(", ")],
      ["headers", Object.entries(m.headers || {}).map(([k, v]) => `${k}: ${v}`).join("\n")],
      ["traceparent", m.traceparent ?? (body.produced && body.produced.traceparent)],
      ["tracestate", m.tracestate ?? (body.produced && body.produced.tracestate)], ["value", m.value ?? (m.value_base64 ? `(binary, base64) ${m.value_base64}` : null)],
    ].filter(([, v]) => v !== undefined && v !== null && v !== "").map(([k, v]) =>
      h("tr", null, h("th", null, k), h("td", { class: "mono" }, String(v))))));
    const subs = body.subscriptions || [];
    if (subs.length) {
      box.append(h("h2", null, "State per subscription"));
      box.append(table(["subscription", "state", { label: "events", num: true }], subs.map((s) =>
        h("tr", null, h("td", null, s.name), h("td", { "data-state": s.state }, s.state), num((s.events || []).length)))));
    }
    const events = [];
    if (body.produced) {
      const p = body.produced;
      events.push({ time_ms: p.time_ms, kind: "produced", who: who(p),
        detail: `node ${p.node ?? "—"}, partition ${p.partition}, offset ${p.offset}` });
    }
    subs.forEach((s) => (s.events || []).forEach((e) => events.push({
      time_ms: e.time_ms, kind: e.kind, sub: s.name, who: e.consumer ? who(e.consumer) : "",
      detail: [e.attempt ? `attempt ${e.attempt}` : "", e.error ? `error: ${e.error}` : ""].filter(Boolean).join(", "),
    })));
    // A stable sort keeps the server's order for events of the same millisecond.
    events.sort((a, b) => a.time_ms - b.time_ms);
    box.append(h("h2", null, "Timeline"));
    box.append(h("ol", { class: "timeline", id: "timeline" }, events.map((e) => h("li", { "data-kind": e.kind },
      h("span", { class: "when" }, time(e.time_ms)),
      h("span", { class: "kind" }, e.kind.replaceAll("_", " ")),
      e.sub ? h("span", null, "on ", h("code", null, e.sub), " ") : "",
      e.who ? h("span", { class: "muted" }, `by ${e.who} `) : "",
      e.detail ? h("span", null, e.detail) : ""))));
    return box;
  }

  function who(actor) {
    return [actor.principal, actor.client_addr].filter(Boolean).join(" from ");
  }

  async function alertsPage() {
    const root = h("div", null, h("h1", null, "Alerts"));
    const [active, rules] = await Promise.all([api("GET", "/v1/alerts"), api("GET", "/v1/alerts/rules")]);
    root.append(h("h2", null, "Active"));
    root.append(active.ok ? generic(active.body, "alerts", "No active alerts.") : refusal(active, "alerts not available on this server"));
    root.append(h("h2", null, "Rules"));
    root.append(rules.ok ? generic(rules.body, "rules", "No rules.") : refusal(rules, "alert rules not available on this server"));
    return root;
  }

  /** A table of a list of flat objects, whatever their fields (the alert routes are young). */
  function generic(body, field, empty) {
    const items = Array.isArray(body) ? body : body[field] || [];
    if (items.length === 0) return note(empty);
    const columns = [...new Set(items.flatMap((item) => Object.keys(item)))];
    return table(columns, items.map((item) => h("tr", null, columns.map((c) => {
      const v = item[c];
      const text = v === null || v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : c.endsWith("_ms") && v > 1e12 ? time(v) : format(v);
      return h("td", null, text);
    }))), { "data-list": field });
  }

  async function clusterPage() {
    const root = h("div", null, h("h1", null, "Cluster"));
    const answer = await api("GET", "/v1/cluster");
    if (!answer.ok) {
      root.append(refusal(answer, "cluster view not available on this server"));
      return root;
    }
    const c = answer.body;
    if (c.mode !== "cluster") {
      root.append(note("A single node (no cluster settings): every partition is led here."));
      return root;
    }
    root.append(h("p", null, `Answered by node ${c.node_id}; controller `,
      c.controller ? `led by node ${c.controller.leader ?? "— (election)"}, term ${c.controller.term ?? "—"}` : "unknown", "."));
    root.append(h("h2", null, "Nodes"));
    root.append(table([{ label: "id", num: true }, "zone", "public address", "state", "live", "last seen"],
      c.nodes.map((n) => h("tr", { "data-node": String(n.id) }, num(n.id), h("td", null, n.zone), h("td", null, n.public_addr), h("td", null, n.state),
        h("td", { class: n.live ? "ok" : "error" }, n.live ? "yes" : "no"), h("td", null, n.last_seen_ms === null ? "—" : `${duration(n.last_seen_ms)} ago`))),
      { "data-list": "cluster-nodes" }));
    root.append(h("h2", null, "Partitions"));
    // Internal topics (`__…`, the synthetic probes') are Raft groups like any other: listed
    // last, marked as the server's.
    const partitions = [...c.partitions].sort((a, b) =>
      Number(a.topic.startsWith("__")) - Number(b.topic.startsWith("__")) || a.topic.localeCompare(b.topic) || a.partition - b.partition);
    const replicas = (p) => (p.replicas || []).map((r) => (r.lag === null || r.lag === undefined ? `${r.node}` : `${r.node} (lag ${format(r.lag)})`)).join(", ");
    root.append(table(["topic", { label: "partition", num: true }, { label: "leader", num: true }, { label: "term", num: true }, "replicas"],
      partitions.map((p) => h("tr", { "data-topic": p.topic, "data-partition": String(p.partition) },
        h("td", null, p.topic.startsWith("__") ? `${p.topic} (internal)` : p.topic), num(p.partition), num(p.leader), num(p.term),
        h("td", { class: "replicas" }, replicas(p)))),
      { "data-list": "cluster-partitions" }));
    return root;
  }

  function signInPage() {
    const input = h("input", { type: "password", id: "token", autocomplete: "off", placeholder: "a JWT" });
    const status = h("div", { class: "result", id: "signin-result" });
    const check = async () => {
      const answer = await api("GET", "/v1/topics");
      if (answer.ok) status.replaceChildren(h("span", { class: "ok" }, token() ? "Signed in." : "This server needs no token."));
      else status.replaceChildren(refusal(answer));
      document.getElementById("banner").hidden = answer.kind === "unauthorized" ? false : true;
      // Asked before signing in, the cluster view was refused: ask again with this token.
      await clusterNav();
    };
    const form = h("form", {
      class: "inline", id: "signin-form",
      onsubmit: async (e) => {
        e.preventDefault();
        sessionStorage.setItem(TOKEN_KEY, input.value.trim());
        input.value = "";
        await check();
      },
    }, h("label", null, "bearer token", input), h("button", { type: "submit", class: "primary" }, "Sign in"),
    h("button", { type: "button", onclick: async () => { sessionStorage.removeItem(TOKEN_KEY); await check(); } }, "Sign out"));
    const root = h("div", null, h("h1", null, "Sign in"),
      h("p", null, "The console calls this server's API with this token; it is kept in this tab's session storage only. ",
        "It shows what the token's grants allow; the rest reads \"not allowed\". Without auth on the server, no token is needed."),
      form, status);
    check();
    return root;
  }

  // ---- routing -----------------------------------------------------------------------------

  /** The page for the current `location.hash`, and the nav entry it belongs to. */
  function route() {
    const hash = location.hash.replace(/^#\/?/, "");
    const [path, query] = hash.split("?");
    const parts = path.split("/").map(decodeURIComponent);
    switch (parts[0]) {
      case "topic": return ["topics", () => topicPage(parts[1])];
      case "sub": return ["topics", () => subscriptionPage(parts[1], parts[2])];
      case "message": return ["message", () => messagePage(new URLSearchParams(query || ""))];
      case "alerts": return ["alerts", alertsPage];
      case "cluster": return ["cluster", clusterPage];
      case "signin": return ["signin", async () => signInPage()];
      default: return ["topics", topicsPage];
    }
  }

  let rendering = 0;

  /** Renders the current page; a newer render (the hash changed meanwhile) wins. */
  async function render() {
    const mine = ++rendering;
    afterRender = [];
    const [nav, page] = route();
    for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("current", a.dataset.nav === nav);
    document.body.dataset.loading = "true";
    let content;
    try {
      content = await page();
    } catch (e) {
      content = note(`The console failed: ${e}`, "error");
    }
    if (mine !== rendering) return;
    view().replaceChildren(content);
    for (const draw of afterRender) draw();
    afterRender = [];
    document.body.dataset.loading = "false";
    document.body.dataset.rendered = String(mine);
  }

  /** Shows the Cluster menu entry when this server is a cluster node the token may ask. */
  async function clusterNav() {
    const cluster = await api("GET", "/v1/cluster");
    document.getElementById("nav-cluster").hidden = !(cluster.ok && cluster.body.mode === "cluster");
  }

  async function start() {
    document.getElementById("refresh").addEventListener("click", render);
    window.addEventListener("hashchange", render);
    await clusterNav();
    await render();
  }

  document.addEventListener("DOMContentLoaded", start);
})();
