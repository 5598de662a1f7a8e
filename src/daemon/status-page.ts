import { randomBytes } from "node:crypto";
import { WATCH_KINDS } from "../manifests/manifest.js";
import { RESOURCE_STATUSES } from "../resources.js";
import type { StatusDocument } from "./status-board.js";

/**
 * `GET /`: the daemon's status in a browser. One self-contained page (no external asset, no build
 * step): the status document rides along as JSON, and one small script draws it with textContent
 * only, so a manifest's name or a platform message is always text, never markup. The script refreshes
 * it from /status (with the token the user typed, when /status needs one). A Content-Security-Policy
 * allows only this page's own script and style (by nonce) and requests to this origin.
 */

/** How often the page fetches /status again. */
export const PAGE_REFRESH_MS = 10_000;

export type StatusPage = { html: string; headers: Record<string, string> };

/** The page, with `document` drawn at once, or without data (it asks for the token) when undefined. */
export function statusPage(document: StatusDocument | undefined): StatusPage {
  const nonce = randomBytes(16).toString("base64");
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return {
    html: html(nonce, document),
    headers: {
      "content-security-policy": csp,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  };
}

/**
 * JSON that cannot end the `<script>` element holding it: `<`, `>` and `&` (and the line separators
 * older parsers choke on) as `\u` escapes, which JSON.parse reads back as the same characters.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value ?? null).replace(
    /[<>&\u2028\u2029]/g,
    (char) => `\\u${(char.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`,
  );
}

function html(nonce: string, document: StatusDocument | undefined): string {
  const config = { refreshMs: PAGE_REFRESH_MS, statuses: RESOURCE_STATUSES, watchKinds: WATCH_KINDS };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>driftless status</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<header><h1>driftless</h1><p id="summary">Loading…</p></header>
<p id="simulator" class="banner alarm" hidden></p>
<p id="suspended" class="banner" hidden></p>
<p id="pass-error" class="banner" hidden></p>
<p id="deletes-held" class="banner alarm" hidden></p>
<p id="reads" class="note"></p>
<form id="token-form" hidden>
  <label>This daemon's /status needs its token (DRIFTLESS_STATUS_TOKEN):
    <input id="token" type="password" autocomplete="off"></label>
  <button type="submit">Show</button>
</form>
<section>
  <h2>Resources</h2>
  <div class="controls">
    <label>Status <select id="filter"><option value="all">all</option><option value="not-synced">not Synced</option></select></label>
    <label>Name <input id="search" type="search" placeholder="search by name"></label>
    <span id="count"></span>
  </div>
  <table id="resources"><thead><tr><th>Kind</th><th>Name</th><th>Status</th><th>Id</th><th>Reason</th><th>Request id</th><th>Last applied</th><th>Verified</th></tr></thead><tbody></tbody></table>
</section>
<section>
  <h2>Alerts and backups, as the last poll found them</h2>
  <table id="watches"><thead><tr><th>Kind</th><th>Name</th><th>Status</th><th>Observed</th><th>Polled</th></tr></thead><tbody></tbody></table>
</section>
<section>
  <h2>Rate budget</h2>
  <table id="budget"><thead><tr><th>API</th><th>Used</th><th>Limit</th><th>Window</th><th>Waiting</th></tr></thead><tbody></tbody></table>
</section>
<footer id="refreshed"></footer>
<script type="application/json" id="config">${scriptJson(config)}</script>
<script type="application/json" id="initial">${scriptJson(document)}</script>
<script nonce="${nonce}">${SCRIPT}</script>
</body>
</html>
`;
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d1d1f}
h1{margin:0;font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3em .6em;border-bottom:1px solid #ddd;vertical-align:top}
td.text{overflow-wrap:anywhere}td.nowrap{white-space:nowrap}.controls{display:flex;gap:1em;margin:.5em 0;align-items:center}
.banner{padding:.5em 1em;background:#fff3cd;border:1px solid #e0c36b}
.alarm{background:#fde2e1;border-color:#c0392b;font-weight:600}
.status-Synced{color:#1a7f37}.status-Failed,.status-Invalid,.status-Unknown{color:#c0392b;font-weight:600}
.status-Pending,.status-Warning,.status-Drifted{color:#9a6700}.note{color:#6e7781}.status-Suspended,.status-Unmanaged{color:#6e7781}
footer{margin-top:1.5em;color:#6e7781}
`;

/** The page's script: draws a status document with textContent only, filters, and refreshes. */
const SCRIPT = `
"use strict";
const config = JSON.parse(document.getElementById("config").textContent);
const initial = JSON.parse(document.getElementById("initial").textContent);
const $ = (id) => document.getElementById(id);
let current = initial;
let token = sessionStorage.getItem("driftless-status-token") || "";

for (const status of config.statuses) $("filter").append(new Option(status, status));

function ago(iso) {
  if (!iso) return "never";
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (seconds < 120) return seconds + "s ago";
  if (seconds < 7200) return Math.round(seconds / 60) + "m ago";
  if (seconds < 172800) return Math.round(seconds / 3600) + "h ago";
  return Math.round(seconds / 86400) + "d ago";
}

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (className) td.className = className;
  return td;
}

function statusClass(status) {
  return config.statuses.includes(status) ? "status-" + status : "";
}

function shown(resource) {
  const filter = $("filter").value;
  const search = $("search").value.trim().toLowerCase();
  if (filter === "not-synced" && resource.status === "Synced") return false;
  if (filter !== "all" && filter !== "not-synced" && resource.status !== filter) return false;
  return search === "" || resource.name.toLowerCase().includes(search);
}

function drawSummary(doc) {
  const pass = doc.lastPass;
  const simulator = doc.platform === "simulator";
  const parts = [
    "platform " + (simulator ? "the built-in simulator" : doc.platform),
    "revision " + (doc.revision || "(plain folder)") + (pass ? " (read " + ago(pass.startedAt) + ")" : ""),
    doc.leader ? "leader" : "follower (the leader reconciles)",
    pass
      ? "last pass " + ago(pass.finishedAt) + " (" + pass.trigger + "): " + (pass.ok ? "ok" : "not all in sync") +
        (pass.manifestErrors ? ", " + pass.manifestErrors + " manifest problems" : "")
      : "no pass yet",
  ];
  $("summary").textContent = parts.join(" · ");
  $("simulator").hidden = !simulator;
  $("simulator").textContent = simulator
    ? "The BUILT-IN SIMULATOR stands in for the platform: nothing shown here is on a real platform. Set DRIFTLESS_MANAGEMENT_URL and DRIFTLESS_OBSERVABILITY_URL (with their credentials) to reconcile the real one."
    : "";
  $("suspended").hidden = !doc.suspended;
  $("suspended").textContent = doc.suspended
    ? "Suspended since " + doc.suspended.since + " (" + ago(doc.suspended.since) + ")" +
      (doc.suspended.reason ? ": " + doc.suspended.reason : "") + ". Nothing is sent until driftless resume."
    : "";
  $("reads").textContent = doc.reads === "on"
    ? "Reads are on: each resource's live object is read on the poll schedule; Verified says when a read last found it equal to git."
    : "Reads are off (DRIFTLESS_READS): Synced means the platform accepted what git says; the live objects are not read, so a change made in the console is not seen.";
  const held = doc.deletesHeld || 0;
  $("deletes-held").hidden = held === 0;
  $("deletes-held").textContent = held
    ? held + (held === 1 ? " delete is" : " deletes are") + " held by the mass-deletion guard (more than DRIFTLESS_MAX_DELETES in one pass): nothing is deleted until an operator lets them go. Check the Pending resources below (driftless plan shows each delete); if they are meant, let one pass send them with: driftless reconcile --allow-deletes " + held + ". If not (an empty checkout, a bad merge), fix git: a pass that sees the manifests again deletes nothing."
    : "";
  $("pass-error").hidden = !doc.passError;
  $("pass-error").textContent = doc.passError ? "The last pass could not run: " + doc.passError : "";
}

function drawResources(doc) {
  const body = $("resources").tBodies[0];
  body.replaceChildren();
  // Managed resources; a managed Alert also shows its live state below, beside the watches.
  const managed = doc.resources.filter((r) => !config.watchKinds.includes(r.kind));
  let count = 0;
  for (const r of managed) {
    if (!shown(r)) continue;
    count++;
    const row = body.insertRow();
    cell(row, r.kind, "nowrap");
    cell(row, r.name, "text");
    cell(row, r.status, statusClass(r.status) + " nowrap");
    cell(row, r.id, "text");
    cell(row, r.lastError || r.note, "text");
    cell(row, r.requestId, "text");
    cell(row, r.lastAppliedAt ? ago(r.lastAppliedAt) : "never", "nowrap").title = r.lastAppliedAt || "";
    const verified = r.verifiedAt ? ago(r.verifiedAt) : doc.reads === "on" ? "not yet" : "not read";
    cell(row, verified, "nowrap").title = r.verifiedAt || "";
  }
  $("count").textContent = count + " of " + managed.length + " shown";
}

function drawWatches(doc) {
  const body = $("watches").tBodies[0];
  body.replaceChildren();
  for (const r of doc.resources.filter((w) => w.polledAt !== undefined)) {
    const row = body.insertRow();
    cell(row, r.kind, "nowrap");
    cell(row, r.name, "text");
    cell(row, r.status + (r.lastError ? ": " + r.lastError : ""), statusClass(r.status) + " text");
    cell(row, Object.entries(r.observed || {}).map(([k, v]) => k + "=" + v).join(", "), "text");
    cell(row, ago(r.polledAt), "nowrap");
  }
}

function drawBudget(doc) {
  const body = $("budget").tBodies[0];
  body.replaceChildren();
  for (const b of doc.budget || []) {
    const row = body.insertRow();
    cell(row, b.api);
    cell(row, b.used);
    cell(row, b.limit);
    cell(row, b.windowSeconds + "s");
    cell(row, b.waiting);
  }
}

function draw() {
  if (!current) return;
  drawSummary(current);
  drawResources(current);
  drawWatches(current);
  drawBudget(current);
}

async function refresh() {
  const headers = token ? { authorization: "Bearer " + token } : {};
  try {
    const answer = await fetch("status", { headers, cache: "no-store" });
    if (answer.status === 401) {
      $("token-form").hidden = false;
      if (!current) $("summary").textContent = "Enter the token to see the status.";
      return;
    }
    current = await answer.json();
    $("token-form").hidden = true;
    draw();
    $("refreshed").textContent = "Refreshed " + new Date().toLocaleTimeString() + "; again every " + config.refreshMs / 1000 + "s.";
  } catch (error) {
    $("refreshed").textContent = "Cannot reach the daemon (" + error + "); trying again.";
  }
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  token = $("token").value.trim();
  sessionStorage.setItem("driftless-status-token", token);
  refresh();
});
$("filter").addEventListener("change", draw);
$("search").addEventListener("input", draw);
if (current) draw();
else refresh();
setInterval(refresh, config.refreshMs);
`;
