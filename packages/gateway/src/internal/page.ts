/**
 * The history web page (`GET /`): one self-contained HTML document with inline CSS and plain
 * JavaScript, served as a string, so there is no build step and no file to find at run time.
 * It authenticates like any client: a bearer token in the `Authorization` header (pasted, or
 * obtained by exchanging the one-time `#code=` of `forkjoin serve --open-url`), kept in
 * `sessionStorage`; the event stream is read with `fetch` (EventSource cannot send headers).
 * Everything it shows is text inserted with `textContent`, never parsed as HTML. Besides the
 * runs, the timeline, diffs and file history, it lists the agent sessions the token sees
 * (`/v1/agents`) and shows one in full (`/v1/agents/{agentId}`), and the conflicts of held
 * rollbacks (`/v1/conflicts`, those of kind `rollback`), grouped by the transaction rolled
 * back, with the same resolve buttons as a join's.
 */
import { type ChildOutcomeClass, statusesOf } from "@forkjoin/schema/MergeRun"

// A child's status is coloured by its class (landed green; held back or failed red); the run's
// own statuses (`applied`, `blocked`, `failed`) after it.
const statusRule = (cls: ChildOutcomeClass, colour: string): string =>
  `${statusesOf(cls).map((s) => `.status-${s}`).join(",")}{color:var(--${colour})}`

export const PAGE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>forkjoin — history</title>
<style>
:root{--fg:#1d1f21;--mute:#6a737d;--line:#e1e4e8;--bg:#fafbfc;--add:#e6ffed;--del:#ffeef0;--warn:#fff5b1;--ok:#22863a;--bad:#cb2431}
*{box-sizing:border-box}body{margin:0;font:14px/1.4 system-ui,sans-serif;color:var(--fg);background:#fff}
header{display:flex;gap:12px;align-items:center;padding:8px 16px;border-bottom:1px solid var(--line);background:var(--bg)}
header h1{font-size:16px;margin:0}#live{font-size:12px;color:var(--mute)}#live.on{color:var(--ok)}
main{display:grid;grid-template-columns:minmax(320px,1fr) minmax(320px,1fr) minmax(360px,1.3fr);gap:12px;padding:12px}
section{border:1px solid var(--line);border-radius:6px;padding:8px 10px;min-width:0}
h2{font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:var(--mute);margin:0 0 6px}
ul{list-style:none;margin:0;padding:0}li{padding:4px 0;border-bottom:1px solid var(--line)}
button{font:inherit;padding:2px 8px;border:1px solid var(--line);border-radius:4px;background:#fff;cursor:pointer}
button:hover{background:var(--bg)}.rec{cursor:pointer}.rec:hover{background:var(--bg)}
.mono,pre{font:12px/1.35 ui-monospace,SFMono-Regular,monospace}pre{margin:4px 0;white-space:pre-wrap;word-break:break-all}
.tag{display:inline-block;font-size:11px;padding:0 5px;border-radius:8px;background:var(--bg);border:1px solid var(--line);margin-left:4px}
${statusRule("landed", "ok")}${statusRule("held", "bad")}${statusRule("failed", "bad")}.status-applied{color:var(--ok)}.status-blocked,.status-failed{color:var(--bad)}
.turn{margin-top:6px;font-weight:600;color:var(--mute);font-size:12px}.add{background:var(--add)}.del{background:var(--del)}.hunk{color:var(--mute)}
.conflict{border:1px solid var(--warn);background:#fffdf0;padding:6px;margin:6px 0;border-radius:4px}
#login{padding:24px;max-width:560px}#login input{width:100%;padding:6px;font:12px ui-monospace,monospace}
.err{color:var(--bad)}.hidden{display:none}.sel{background:var(--bg)}
</style></head>
<body>
<header><h1>forkjoin</h1><span id="who" data-testid="who"></span><span id="live" data-testid="live">offline</span><span id="error" class="err" data-testid="error"></span></header>
<div id="login" class="hidden" data-testid="login">
  <p>Paste a token from <code>forkjoin token create --thread T --workspace DIR</code>, or open the one-time link printed by <code>forkjoin serve --open-url</code>.</p>
  <input id="token" data-testid="token-input" placeholder="fjt_…" autocomplete="off"><p><button id="use" data-testid="token-submit">Use token</button></p>
</div>
<main id="app" class="hidden">
  <section><h2>Merge runs</h2><ul id="runs" data-testid="runs"></ul>
    <h2 style="margin-top:12px">Held rollbacks <button id="rollbacks-refresh" data-testid="rollbacks-refresh">Refresh</button></h2>
    <ul id="rollbacks" data-testid="rollbacks"></ul>
    <h2 style="margin-top:12px">Agents <button id="agents-refresh" data-testid="agents-refresh">Refresh</button></h2>
    <ul id="agents" data-testid="agents"></ul>
    <div id="agent" data-testid="agent-detail"></div>
  </section>
  <section><h2>Timeline</h2><ul id="timeline" data-testid="timeline"></ul></section>
  <section>
    <h2>Diff</h2><div id="diff" data-testid="diff" class="mono">Click a record.</div>
    <h2 style="margin-top:12px">File history</h2>
    <form id="fileform"><input id="path" data-testid="file-input" placeholder="src/file.ts" style="width:70%"> <button data-testid="file-submit">Show</button></form>
    <ul id="file" data-testid="file"></ul>
  </section>
</main>
<script>
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
    }
    for (const kid of kids) if (kid !== undefined && kid !== null) e.append(typeof kid === "string" ? document.createTextNode(kid) : kid);
    return e;
  };
  let token = sessionStorage.getItem("forkjoin.token") || "";
  const api = async (path, init) => {
    const r = await fetch(path, { ...init, headers: { ...(init && init.headers), authorization: "Bearer " + token, ...(init && init.body ? { "content-type": "application/json" } : {}) } });
    const body = await r.json().catch(() => ({}));
    if (r.status === 401) { showLogin(body.message || "token refused"); throw new Error("unauthorized"); }
    if (!r.ok) throw new Error(body.message || body.detail || ("HTTP " + r.status));
    return body;
  };
  const fail = (e) => { if (e.message !== "unauthorized") $("error").textContent = e.message; };
  const showLogin = (why) => { $("login").classList.remove("hidden"); $("app").classList.add("hidden"); $("error").textContent = why || ""; };

  // How a join merged a path: "merged (line)", "merged (structured, typescript)".
  const mergedNote = (m) => "merged (" + m.method + (m.language ? ", " + m.language : "") + ")";
  const renderDiff = (page) => {
    const box = $("diff"); box.textContent = "";
    for (const f of page.items) {
      box.append(el("div", { class: "turn" }, f.kind + " " + (f.moveFrom ? f.moveFrom + " → " : "") + f.path + "  +" + f.linesAdded + " −" + f.linesRemoved,
        f.merge ? el("span", { class: "tag", "data-testid": "diff-merge" }, mergedNote(f.merge)) : null));
      const pre = el("pre", { "data-testid": "diff-text" });
      for (const line of f.diff.split("\\n")) {
        pre.append(el("div", { class: line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "" }, line));
      }
      box.append(pre);
    }
    if (page.truncated) box.append(el("div", { class: "err" }, "(cut: the diff is over the response cap)"));
  };
  const showDiff = (recordId) => api("/v1/diff?target=" + encodeURIComponent(recordId)).then(renderDiff).catch(fail);

  const recordItem = (r) => el("li", { class: "rec", "data-testid": "record", "data-record": r.recordId, onclick: () => showDiff(r.recordId) },
    el("span", { class: "mono" }, "#" + r.commitOrdinal + " "),
    r.changes.map((c) => c.path).join(", "),
    el("span", { class: "tag", "data-testid": "record-thread" }, r.threadId),
    el("span", { class: "tag" }, r.exactness),
    r.outcome !== "applied" ? el("span", { class: "tag err" }, r.outcome) : null);

  const timeline = new Map();
  const addRecord = (r) => {
    if (timeline.has(r.recordId)) return;
    timeline.set(r.recordId, r);
    const list = $("timeline");
    let lastTurn = null;
    list.textContent = "";
    for (const rec of [...timeline.values()].sort((a, b) => a.commitOrdinal - b.commitOrdinal)) {
      const turn = rec.threadId + " · " + rec.turnId;
      if (turn !== lastTurn) { list.append(el("li", { class: "turn" }, turn)); lastTurn = turn; }
      list.append(recordItem(rec));
    }
  };
  const loadTimeline = async () => {
    let cursor = null;
    do {
      const page = await api("/v1/timeline?descendants=true&limit=200" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
      page.items.forEach(addRecord);
      cursor = page.nextCursor;
    } while (cursor);
  };

  const APPLY_HINT = "Takes the child's side of the conflicting hunks onto the live file as it is now (its other changes stay); " +
    "a conflict without hunks (binary, deleted, added on both sides, moved and edited) takes the child's whole file.";
  const resolve = (conflictId, kind) =>
    api("/v1/conflicts/" + encodeURIComponent(conflictId) + "/resolve", { method: "POST", body: JSON.stringify({ kind }) })
      .then(() => Promise.all([loadRuns(), loadRollbacks()])).catch(fail);
  const runItem = (run, conflicts) => el("li", { "data-testid": "run", "data-run": run.runId },
    el("div", {}, el("strong", { class: "mono" }, run.runId), el("span", { class: "tag status-" + run.status, "data-testid": "run-status" }, run.status)),
    el("ul", {}, ...run.outcomes.map((o) => el("li", { "data-testid": "outcome", "data-child": o.childId },
      o.childId + " ", el("span", { class: "status-" + o.status }, o.status), o.reason ? el("span", { class: "tag" }, o.reason) : null,
      ...(o.mergedPaths || []).map((m) => el("span", { class: "tag", "data-testid": "outcome-merge" }, m.path + " " + mergedNote(m)))))),
    ...conflicts.map((c) => el("div", { class: "conflict", "data-testid": "conflict", "data-conflict": c.conflictId },
      el("div", {}, c.path + " ", el("span", { class: "tag" }, c.status), el("span", { class: "tag" }, c.reason)),
      el("pre", {}, c.text || ""),
      c.status === "open" ? el("div", {},
        el("button", { "data-testid": "resolve-apply", title: APPLY_HINT, onclick: () => resolve(c.conflictId, "apply") },
          "Take the child's side of the conflicting hunks"), " ",
        el("button", { "data-testid": "resolve-discard", onclick: () => resolve(c.conflictId, "discard") }, "Discard")) : null)));
  const loadRuns = async () => {
    const { runs } = await api("/v1/runs");
    const details = await Promise.all(runs.map((r) => api("/v1/runs/" + encodeURIComponent(r.runId))));
    const list = $("runs"); list.textContent = "";
    for (const d of details) list.append(runItem(d.run, d.conflicts));
    if (details.length === 0) list.append(el("li", {}, "No merge run yet."));
  };
  // A rollback's conflicts: --apply takes the earlier side, as before the transaction.
  const ROLLBACK_APPLY_HINT = "Takes the side from before the rolled-back transaction for the conflicting lines (a conflict " +
    "without hunks: the earlier file whole); nothing is written until the rollback's last conflict is resolved.";
  const rollbackConflictItem = (c) => el("div", { class: "conflict", "data-testid": "rollback-conflict", "data-conflict": c.conflictId },
    el("div", {}, el("span", { class: "mono", "data-testid": "rollback-conflict-path" }, c.path), " ",
      el("span", { class: "tag", "data-testid": "rollback-conflict-kind" }, c.kind),
      el("span", { class: "tag", "data-testid": "rollback-conflict-status" }, c.status), el("span", { class: "tag" }, c.reason)),
    el("pre", {}, c.text || ""),
    c.status === "open" ? el("div", {},
      el("button", { "data-testid": "resolve-apply", title: ROLLBACK_APPLY_HINT, onclick: () => resolve(c.conflictId, "apply") },
        "Take the earlier side of the conflicting lines"), " ",
      el("button", { "data-testid": "resolve-discard", onclick: () => resolve(c.conflictId, "discard") }, "Keep the file as it is")) : null);
  const loadRollbacks = async () => {
    const { conflicts } = await api("/v1/conflicts");
    const held = new Map();
    for (const c of conflicts) if (c.kind === "rollback") held.set(c.transactionId, [...(held.get(c.transactionId) || []), c]);
    const list = $("rollbacks"); list.textContent = "";
    for (const [tx, cs] of held) {
      const open = cs.filter((c) => c.status === "open").length;
      list.append(el("li", { "data-testid": "rollback", "data-transaction": tx },
        el("div", {}, "rollback of ", el("strong", { class: "mono", "data-testid": "rollback-transaction" }, tx),
          el("span", { class: "tag", "data-testid": "rollback-open" }, open === 0 ? "all resolved" : open + " open")),
        ...cs.map(rollbackConflictItem)));
    }
    if (held.size === 0) list.append(el("li", {}, "No held rollback."));
  };
  const modelOf = (s) => s.provider !== null && s.model !== null ? s.provider + "/" + s.model : s.kind === "mcp" ? "no model" : "model not recorded";
  const agentItem = (s) => el("li", { class: "rec", "data-testid": "agent", "data-agent": s.agentId, onclick: () => showAgent(s.agentId) },
    el("div", {}, el("strong", { class: "mono", "data-testid": "agent-id" }, s.agentId),
      el("span", { class: "tag", "data-testid": "agent-kind" }, s.kind),
      el("span", { class: "tag status-" + s.status, "data-testid": "agent-status" }, s.status)),
    el("div", { class: "mono" },
      el("span", { "data-testid": "agent-model" }, modelOf(s)), " · ",
      el("span", { "data-testid": "agent-started" }, "started " + (s.startedAt || "(not recorded)")), " · ",
      el("span", { "data-testid": "agent-runs" }, s.runIds.length + " run(s) started")));
  const loadAgents = async () => {
    const { agents } = await api("/v1/agents");
    const list = $("agents"); list.textContent = "";
    for (const s of agents) list.append(agentItem(s));
    if (agents.length === 0) list.append(el("li", {}, "No agent session yet."));
  };
  const showAgent = (agentId) => api("/v1/agents/" + encodeURIComponent(agentId)).then(({ agent, runs }) => {
    const s = agent.session;
    for (const li of $("agents").children) li.classList.toggle("sel", li.getAttribute("data-agent") === agentId);
    const box = $("agent"); box.textContent = "";
    box.append(
      el("div", { class: "turn", "data-testid": "agent-title" }, s.kind + " " + s.agentId + ": " + s.status + (s.stop ? " (" + s.stop.reason + ")" : "")),
      el("div", { "data-testid": "agent-facts" }, "thread " + (s.threadId || "(not recorded)") + " · " + modelOf(s) + " · " +
        (s.kind === "agent" ? "task: " + s.task : "client: " + (s.client ? s.client.name + " " + s.client.version : "unknown"))),
      el("div", { class: "mono", "data-testid": "agent-usage" }, s.steps + " step(s), " + s.usage.modelCalls + " model call(s), " +
        s.usage.inputTokens + " input + " + s.usage.outputTokens + " output tokens; started " + (s.startedAt || "?") + ", ended " + (s.endedAt || "not yet")),
      el("div", { class: "turn" }, "Tool calls (" + agent.toolCalls.length + ")"),
      el("ol", {}, ...agent.toolCalls.map((c) => el("li", { "data-testid": "agent-call" }, el("span", { class: "mono" }, c.name),
        el("span", { class: "tag " + (c.ok === false ? "err" : "") }, c.ok === null ? "no result" : c.ok ? "ok" : "failed"),
        c.message ? " " + c.message : ""))),
      el("div", { class: "turn" }, "Runs started (" + s.runIds.length + ")"),
      el("ul", {}, ...s.runIds.map((id) => {
        const run = runs.find((r) => r.runId === id);
        return el("li", { "data-testid": "agent-run", "data-run": id }, el("span", { class: "mono" }, id + " "),
          run ? el("span", { class: "status-" + run.status }, run.status) : "not visible",
          run ? " " + (run.outcomes.map((o) => o.childId + " " + o.status).join(", ") || "no children") : "");
      })));
  }).catch(fail);
  $("agents-refresh").addEventListener("click", () => loadAgents().catch(fail));
  // A record may be a new session's first write (an MCP client's apply_patch): the list follows.
  let agentsTimer = null;
  const refreshAgents = () => { clearTimeout(agentsTimer); agentsTimer = setTimeout(() => loadAgents().catch(fail), 200); };

  let runsTimer = null;
  // A run changing may be an agent session's: the agents' run counts follow.
  const refreshRuns = () => { clearTimeout(runsTimer); runsTimer = setTimeout(() => Promise.all([loadRuns(), loadAgents()]).catch(fail), 50); };
  // A rollback applied (its record) closes its held conflicts; one held writes no record: Refresh lists it.
  $("rollbacks-refresh").addEventListener("click", () => loadRollbacks().catch(fail));
  let rollbacksTimer = null;
  const refreshRollbacks = () => { clearTimeout(rollbacksTimer); rollbacksTimer = setTimeout(() => loadRollbacks().catch(fail), 50); };

  $("fileform").addEventListener("submit", (ev) => {
    ev.preventDefault();
    api("/v1/files?path=" + encodeURIComponent($("path").value)).then((page) => {
      const list = $("file"); list.textContent = "";
      for (const i of page.items) list.append(el("li", { class: "rec", "data-testid": "file-item", onclick: () => showDiff(i.recordId) },
        el("span", { class: "mono" }, "#" + i.commitOrdinal + " "), i.change.kind + " " + i.change.path, el("span", { class: "tag" }, i.threadId), el("span", { class: "tag" }, i.exactness)));
      if (page.items.length === 0) list.append(el("li", {}, "No history for this path."));
    }).catch(fail);
  });

  const live = async () => {
    for (;;) {
      try {
        const r = await fetch("/v1/events", { headers: { authorization: "Bearer " + token } });
        if (r.status === 401) { showLogin("token refused"); return; }
        $("live").textContent = "live"; $("live").classList.add("on");
        const reader = r.body.getReader(); const dec = new TextDecoder(); let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let i;
          while ((i = buf.indexOf("\\n\\n")) >= 0) {
            const block = buf.slice(0, i); buf = buf.slice(i + 2);
            const event = (/^event: (.*)$/m.exec(block) || [])[1];
            const data = (/^data: (.*)$/m.exec(block) || [])[1];
            if (!event || !data) continue;
            const value = JSON.parse(data);
            if (event === "record") {
              addRecord(value); refreshAgents();
              if (value.links && value.links.mergeRunId) refreshRuns();
              if (value.links && value.links.rollbackOf) refreshRollbacks();
            }
            if (event === "run") refreshRuns();
          }
        }
      } catch (e) { /* reconnect below */ }
      $("live").textContent = "reconnecting"; $("live").classList.remove("on");
      await new Promise((r) => setTimeout(r, 1000));
    }
  };

  const startApp = async () => {
    try {
      const me = await api("/v1/whoami");
      $("who").textContent = "thread " + me.thread;
      $("login").classList.add("hidden"); $("app").classList.remove("hidden"); $("error").textContent = "";
      await Promise.all([loadRuns(), loadTimeline(), loadAgents(), loadRollbacks()]);
      live();
    } catch (e) { fail(e); }
  };
  $("use").addEventListener("click", () => { token = $("token").value.trim(); sessionStorage.setItem("forkjoin.token", token); startApp(); });

  const code = (/^#code=([A-Za-z0-9_-]+)$/.exec(location.hash) || [])[1];
  if (code) {
    history.replaceState(null, "", location.pathname);
    fetch("/auth/exchange", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ code }) })
      .then((r) => r.json().then((b) => ({ ok: r.ok, b })))
      .then(({ ok, b }) => { if (!ok) return showLogin(b.message); token = b.token; sessionStorage.setItem("forkjoin.token", token); startApp(); })
      .catch((e) => showLogin(e.message));
  } else if (token) startApp(); else showLogin();
})();
</script>
</body></html>
`
