// The approvals page: pending operations as cards, the live activity feed, the tool palette
// (tools' questions and running calls are in questions.js).
// Everything shown comes from the JSON API with an approver's session; every value is written
// as text (never as HTML), since arguments are whatever a model sent, and every character that
// would hide or reorder text is shown as a marked escape, so what the person reads is what runs.
"use strict";

const KEY = "tool-server-token";
const PAGE = 20;        // cards per page
const CUT = 2000;       // characters of a value shown before "Show all"
const LINE_CUT = 300;   // characters of a one-line value (a feed line, a name)
const MAX_FEED = 200;   // feed lines kept
// The feed's stream announces every new or decided operation; the timer only catches what a
// broken stream missed, since each listing makes the store read every waiting operation.
const POLL_MS = 10000;
const $ = (sel, root = document) => root.querySelector(sel);
const show = (el, yes) => { el.hidden = !yes; };
const pretty = (v) => JSON.stringify(v, null, 2);

// Controls, format characters (zero-width, direction marks, embeddings, overrides, isolates,
// the byte-order mark, tags) and line or paragraph separators: the terminal escapes the same
// (tool-runtime's display::visible), in the same notation. A line break or a tab is layout,
// not concealment: it is shown as an escape on one-line values but does not flag a card.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
const HIDDEN_KEEP_LINES = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
const HIDES = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

function escapeChar(c) {
  if (c === "\n") return "\\n";
  if (c === "\r") return "\\r";
  if (c === "\t") return "\\t";
  return "\\u{" + c.codePointAt(0).toString(16) + "}";
}

// Whether a string, or any key or string inside a JSON value, hides or reorders text.
function hides(v) {
  if (typeof v === "string") return HIDES.test(v);
  if (Array.isArray(v)) return v.some(hides);
  if (v && typeof v === "object") return Object.entries(v).some(([k, x]) => hides(k) || hides(x));
  return false;
}

function chars(text) { let n = 0; for (const _ of text) n++; return n; }
const number = (n) => n.toLocaleString("en");

// Appends `text` to `el` as text nodes, each hidden character as a marked escape.
function appendMarked(el, text, keepLines) {
  const pattern = keepLines ? HIDDEN_KEEP_LINES : HIDDEN;
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) el.append(text.slice(last, m.index));
    const mark = document.createElement("span");
    mark.className = "hidden-char";
    mark.textContent = escapeChar(m[0]);
    mark.title = "U+" + m[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0")
      + ": a character that is invisible or changes the direction of text";
    el.append(mark);
    last = m.index + m[0].length;
  }
  if (last < text.length) el.append(text.slice(last));
}

// Writes `text` into `el`: marked, cut after `limit` characters with its full length shown and
// a button that shows the rest. `total` is the whole length when `text` is already a prefix.
function writeText(el, text, { limit = CUT, total, lines = false } = {}) {
  text = String(text ?? "");
  el.replaceChildren();
  el.classList.remove("expanded");
  let end = text.length;
  if (end > limit) {
    end = limit;
    const code = text.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  }
  appendMarked(el, text.slice(0, end), lines);
  const held = chars(text);
  const whole = total ?? held;
  if (end === text.length && whole <= held) return;
  const note = document.createElement("span");
  note.className = "cut";
  note.textContent = " … (" + number(chars(text.slice(0, end))) + " of " + number(whole)
    + " characters shown)";
  el.append(note);
  if (end < text.length) {
    const all = document.createElement("button");
    all.type = "button";
    all.className = "show-all";
    all.textContent = "Show all";
    all.addEventListener("click", () => {
      writeText(el, text, { limit: Infinity, lines });
      el.classList.add("expanded");
    });
    el.append(" ", all);
  }
}

// A JSON text for a textarea, which cannot mark characters: those that hide or reorder text
// are written as JSON escapes (they only occur inside strings), so the edit holds the same
// value and shows it.
function editableJson(v) {
  return pretty(v).replace(HIDDEN_KEEP_LINES, (c) => {
    let out = "";
    for (let i = 0; i < c.length; i++) out += "\\u" + c.charCodeAt(i).toString(16).padStart(4, "0");
    return out;
  });
}

function token() { return sessionStorage.getItem(KEY); }

async function api(method, path, body, bearer = token()) {
  const headers = {};
  if (bearer) headers.Authorization = "Bearer " + bearer;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    return { status: 0, data: { error: { message: "The server cannot be reached." } } };
  }
  const data = await res.json().catch(() => ({}));
  if (res.status === 401 && bearer) { signOut("The session ended or was refused: sign in again."); }
  return { status: res.status, data };
}

function status(text) { $("#status").textContent = text; }

function signOut(message) {
  sessionStorage.removeItem(KEY);
  if (timer !== null) { clearInterval(timer); timer = null; }
  show($("#app"), false);
  show($("#sign-out"), false);
  show($("#token-form"), true);
  status(message || "");
}

// ---- signing in ------------------------------------------------------------------------

// A link carries a one-time code in its fragment (never sent to a server); it is removed from
// the address at once, then traded for a session. `#token=` is read the same way.
function fromLink() {
  const m = location.hash.match(/^#(?:.*&)?(code|token)=([^&]*)/);
  if (!m) return null;
  history.replaceState(null, "", location.pathname + location.search);
  const what = m[1] === "code" ? "sign-in code" : "token";
  let value;
  try { value = decodeURIComponent(m[2]); } catch (e) { value = null; }
  if (!value || !/^[\x21-\x7e]+$/.test(value)) {
    return { error: "The link's " + what + " is damaged and cannot be read: enter the "
      + "approver's token, or ask for a new link." };
  }
  return { [m[1]]: value };
}

async function signIn(proof) {
  status("Signing in…");
  const { status: code, data } = await api("POST", "/api/v1/session", proof, null);
  if (code === 200 && data.token) {
    sessionStorage.setItem(KEY, data.token);
    open();
    return;
  }
  if (code === 403) { signOut("That token cannot approve: enter the approver's token."); return; }
  if (code === 401 && proof.code) {
    signOut("This sign-in link was already used or has expired: enter the approver's token, "
      + "or ask for a new link.");
    return;
  }
  signOut((data.error && data.error.message) || "Signing in failed.");
}

function followLink() {
  const link = fromLink();
  if (!link) return false;
  if (link.error) signOut(link.error); else signIn(link);
  return true;
}

// ---- pending operations ----------------------------------------------------------------

const cards = new Map();
let offset = 0;
let refreshing = null;
let again = false;

// One listing at a time; a change announced meanwhile is listed once the current one is done.
async function refreshPending() {
  if (refreshing) { again = true; return refreshing; }
  refreshing = (async () => {
    do {
      again = false;
      try { await loadPage(); } catch (e) { /* listed again on the next change or tick */ }
    } while (again);
    refreshing = null;
  })();
  return refreshing;
}

async function loadPage() {
  const { status: code, data } = await api("GET",
    "/api/v1/pending?limit=" + PAGE + "&offset=" + offset);
  if (code === 403) { signOut("That token cannot approve: enter the approver's token."); return; }
  if (code !== 200) return;
  if (offset > 0 && offset >= data.total) {
    offset = Math.max(0, Math.floor((data.total - 1) / PAGE) * PAGE);
    return loadPage();
  }
  const ids = new Set(data.pending.map((op) => op.id));
  for (const [id, card] of cards) {
    if (!ids.has(id) && !card.classList.contains("decided")) { card.remove(); cards.delete(id); }
  }
  const box = $("#pending");
  for (const op of data.pending) {
    if (!cards.has(op.id)) cards.set(op.id, renderCard(op));
    box.append(cards.get(op.id));
  }
  $("#pending-count").textContent = number(data.total);
  show($("#pending-empty"), data.total === 0);
  const last = Math.min(offset + data.pending.length, data.total);
  $("#page-info").textContent = (offset + 1) + "–" + last + " of " + number(data.total);
  $("#page-prev").disabled = offset === 0;
  $("#page-next").disabled = last >= data.total;
  show($("#pager"), data.total > PAGE || offset > 0);
  renderInDoubt(data.in_doubt, data.in_doubt_total);
}

function turnPage(by) {
  offset = Math.max(0, offset + by * PAGE);
  for (const [id, card] of cards) {
    if (card.classList.contains("decided")) { card.remove(); cards.delete(id); }
  }
  refreshPending();
}

function renderInDoubt(ops, total) {
  const doubt = $("#in-doubt");
  doubt.replaceChildren();
  for (const op of ops) {
    const p = document.createElement("p");
    p.className = "meta";
    writeText(p, "In doubt (approved, outcome never recorded; never run again): "
      + op.tool + " " + op.id, { limit: LINE_CUT });
    doubt.append(p);
  }
  if (total > ops.length) {
    const p = document.createElement("p");
    p.className = "meta";
    p.textContent = "and " + number(total - ops.length) + " more in doubt";
    doubt.append(p);
  }
}

function flag(card, yes) {
  if (yes) show($(".flag", card), true);
}

function renderCard(op) {
  const card = $("#card-template").content.firstElementChild.cloneNode(true);
  card.dataset.op = op.id;
  writeText($(".tool", card), op.tool, { limit: LINE_CUT });
  $(".category", card).textContent = op.category;
  const undo = $(".undo", card);
  undo.textContent = op.reversible ? "can be undone" : "cannot be undone";
  undo.classList.add(op.reversible ? "reversible" : "irreversible");
  show($(".first-use-badge", card), op.first_use);
  $(".size", card).textContent = "arguments: " + number(op.arguments_bytes) + " bytes";
  writeText($(".intent", card), op.intent, { total: op.intent_chars });
  writeText($(".meta", card), "started by " + op.initiator
    + (op.session ? " · session " + op.session : "") + " · "
    + new Date(op.created_ms).toLocaleString() + " · " + op.id, { limit: LINE_CUT });
  flag(card, op.hidden || hides(op.intent) || hides(op.tool) || hides(op.session || ""));
  const body = $(".body", card);
  body.addEventListener("toggle", () => {
    if (body.open && !card.dataset.loaded) loadDetails(card, op);
  });
  $(".edit-toggle", card).addEventListener("click", () => {
    show($(".edit-box", card), $(".edit-box", card).hidden);
  });
  $(".approve", card).addEventListener("click", () => approve(card, op));
  $(".deny", card).addEventListener("click", () => deny(card, op));
  return card;
}

// The operation whole, fetched when its card is opened: approving runs what was shown.
async function loadDetails(card, op) {
  show($(".loading", card), true);
  const { status: code, data } = await api("GET", "/api/v1/pending/" + encodeURIComponent(op.id));
  show($(".loading", card), false);
  if (code !== 200) { finish(card, (data.error && data.error.message) || "Not loaded.", true); return; }
  card.dataset.loaded = "1";
  const pv = data.preview;
  writeText($(".intent", card), pv.intent);
  if (pv.first_use) renderFirstUse($(".first-use", card), pv.first_use);
  if (pv.change !== undefined) {
    renderChange($(".change", card), pv.change);
    show($(".change-box", card), true);
  }
  // as the preview lists them: an optional argument the model left unset is not shown as null
  writeText($(".arguments", card), pretty(pv.arguments), { lines: true });
  $(".edit", card).value = editableJson(data.arguments);
  flag(card, hides(pv.intent) || hides(data.arguments) || hides(pv.change));
  const approveButton = $(".approve", card);
  approveButton.disabled = card.classList.contains("decided");
  approveButton.title = "";
}

// The change as a diff: one row per entry, what is added in <ins>, what is removed in <del>,
// a replaced text with only its changed words marked. Every value is written as text, marked
// where it hides or reorders text, and cut with its length shown.
const SIGNS = { add: "+", remove: "\u2212", replace: "~", touch: "!", note: "", json: "" };
const SAME_CUT = 240;  // unchanged text longer than this shows its two ends around a count

function renderChange(el, change) {
  el.replaceChildren();
  // a preview stored as plain JSON, before changes were typed
  const entries = change && Array.isArray(change.entries) ? change.entries
    : [{ op: "json", value: change }];
  for (const e of entries) {
    const row = document.createElement("li");
    row.className = "entry " + e.op;
    const sign = document.createElement("span");
    sign.className = "sign";
    sign.textContent = SIGNS[e.op] ?? "";
    sign.setAttribute("aria-hidden", "true");
    row.append(sign);
    if (e.label !== undefined) {
      const label = document.createElement("span");
      label.className = "label";
      writeText(label, e.label, { limit: LINE_CUT });
      row.append(label, ": ");
    }
    if (e.op === "add") row.append(valueIn("ins", e.value, e.chars));
    else if (e.op === "remove") row.append(valueIn("del", e.value, e.chars));
    else if (e.op === "replace") appendReplaced(row, e.old, e.new);
    else if (e.op === "touch") {
      const text = document.createElement("span");
      writeText(text, number(e.count) + " " + e.what, { limit: LINE_CUT });
      row.append(text);
    } else if (e.op === "note") {
      const text = document.createElement("span");
      writeText(text, e.text, { limit: LINE_CUT });
      row.append(text);
    } else {
      const pre = document.createElement("pre");
      const v = e.op === "json" ? e.value : e;
      writeText(pre, typeof v === "string" ? v : pretty(v), { lines: true });
      row.append(pre);
    }
    el.append(row);
  }
}

// A value in an <ins> or <del>: a string as its text, a missing value as "(none)", anything
// else as JSON; `chars` is the whole text's length when the value is its start.
function valueIn(tag, value, chars) {
  const el = document.createElement(tag);
  if (value === null || value === undefined) {
    el.className = "none";
    el.textContent = "(none)";
  } else {
    writeText(el, typeof value === "string" ? value : JSON.stringify(value),
      { lines: true, total: chars });
  }
  return el;
}

function appendReplaced(row, a, b) {
  if (typeof a !== "string" || typeof b !== "string") {
    row.append(valueIn("del", a), " \u2192 ", valueIn("ins", b));
    return;
  }
  const diff = document.createElement("span");
  diff.className = "diff";
  for (const [kind, text] of wordDiff(a, b)) {
    if (kind === "same") appendSame(diff, text);
    else diff.append(valueIn(kind, text));
  }
  row.append(diff);
}

// Unchanged text in full when short, else its two ends and how much lies between them.
function appendSame(el, text) {
  const cps = Array.from(text);
  if (cps.length <= SAME_CUT) { appendMarked(el, text, true); return; }
  const end = SAME_CUT / 2;
  appendMarked(el, cps.slice(0, end).join(""), true);
  const gap = document.createElement("span");
  gap.className = "cut";
  gap.textContent = " … " + number(cps.length - 2 * end) + " unchanged characters … ";
  el.append(gap);
  appendMarked(el, cps.slice(cps.length - end).join(""), true);
}

// The words of `a` and `b` as runs of same, del and ins: the common start and end are cut off
// first, and what is left is compared word by word (longest common subsequence) when it is
// small enough, else shown as removed and added whole.
function wordDiff(a, b) {
  const x = a.match(/\s+|[^\s]+/gu) || [], y = b.match(/\s+|[^\s]+/gu) || [];
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start++;
  let ex = x.length, ey = y.length;
  while (ex > start && ey > start && x[ex - 1] === y[ey - 1]) { ex--; ey--; }
  const runs = [];
  const push = (kind, text) => {
    if (!text) return;
    const last = runs[runs.length - 1];
    if (last && last[0] === kind) last[1] += text; else runs.push([kind, text]);
  };
  push("same", x.slice(0, start).join(""));
  const mx = x.slice(start, ex), my = y.slice(start, ey);
  if (mx.length * my.length > 250000) {
    push("del", mx.join(""));
    push("ins", my.join(""));
  } else {
    // lengths of the longest common subsequences of the suffixes
    const n = mx.length, m = my.length;
    const len = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        len[i][j] = mx[i] === my[j] ? len[i + 1][j + 1] + 1 : Math.max(len[i + 1][j], len[i][j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      // on a tie the removal comes first, so a replaced word reads old, then new
      if (i < n && j < m && mx[i] === my[j]) { push("same", mx[i]); i++; j++; }
      else if (i < n && (j === m || len[i + 1][j] >= len[i][j + 1])) { push("del", mx[i]); i++; }
      else { push("ins", my[j]); j++; }
    }
  }
  push("same", x.slice(ex).join(""));
  return runs;
}

function renderFirstUse(f, first) {
  writeText(f, first.message + " Leaves this system: "
    + (first.data_leaving.join(", ") || "nothing") + ".");
  const more = document.createElement("details");
  more.className = "learn-more";
  const label = document.createElement("summary");
  label.textContent = "Learn more about the service";
  const about = document.createElement("p");
  writeText(about, first.service);
  more.append(label, about);
  f.append(more);
  show(f, true);
}

function finish(card, text, failed) {
  const r = $(".result", card);
  writeText(r, text);
  r.classList.toggle("error", !!failed);
}

function decided(card) {
  card.classList.add("decided");
  for (const b of card.querySelectorAll("button, input, textarea")) {
    if (!b.classList.contains("show-all")) b.disabled = true;
  }
}

async function approve(card, op) {
  let body = {};
  if (!$(".edit-box", card).hidden) {
    try { body = { arguments: JSON.parse($(".edit", card).value) }; }
    catch (e) { showErrors(card, [{ pointer: "", message: "not JSON: " + e.message }]); return; }
  }
  const { status: code, data } = await api("POST",
    "/api/v1/pending/" + encodeURIComponent(op.id) + "/approve", body);
  if (code === 422) { showErrors(card, data.error.violations || [data.error]); return; }
  if (code >= 400 || code === 0) { failed(card, code, data); return; }
  showErrors(card, []);
  decided(card);
  finish(card, "Approved: " + outcomeText(data), data.status === "error");
  refreshPending();
}

async function deny(card, op) {
  const reason = $(".reason", card).value.trim();
  const { status: code, data } = await api("POST",
    "/api/v1/pending/" + encodeURIComponent(op.id) + "/deny", reason ? { reason } : {});
  if (code >= 400 || code === 0) { failed(card, code, data); return; }
  decided(card);
  finish(card, "Denied: " + data.reason, false);
  refreshPending();
}

function failed(card, code, data) {
  finish(card, (data.error && data.error.message) || "Failed (" + code + ").", true);
  if (code === 409) decided(card);
}

function showErrors(card, violations) {
  const list = $(".errors", card);
  list.replaceChildren();
  for (const v of violations) {
    const li = document.createElement("li");
    writeText(li, (v.pointer ? v.pointer + ": " : "") + v.message);
    list.append(li);
  }
  if (violations.length) {
    show($(".edit-box", card), true);
    $(".body", card).open = true;
  }
}

function outcomeText(exec) {
  if (exec.status === "success") {
    return typeof exec.value === "string" ? exec.value : JSON.stringify(exec.value);
  }
  if (exec.status === "error") return exec.error.message;
  if (exec.status === "denied") return exec.reason;
  return exec.status;
}

// ---- activity feed ---------------------------------------------------------------------

function addActivity(r) {
  const li = document.createElement("li");
  li.dataset.call = r.call_id;
  li.dataset.status = r.status;
  const s = document.createElement("strong");
  s.className = "status-" + r.status;
  s.textContent = r.status;
  const rest = document.createElement("span");
  // a decision relayed by an MCP host names the host and the route, never a plain "user"
  const decider = r.decided_via ? r.decided_by + ": " + r.decided_via : r.decided_by;
  writeText(rest, " " + r.tool + " · started by " + r.initiator + " · decided by "
    + decider + " (" + r.decision + ") · " + new Date(r.timestamp_ms).toLocaleTimeString()
    + (r.result_summary ? " · " + r.result_summary : ""), { limit: LINE_CUT });
  li.append(s, rest);
  const feed = $("#feed");
  feed.prepend(li);
  while (feed.children.length > MAX_FEED) feed.lastElementChild.remove();
}

async function loadFeed() {
  const { status: code, data } = await api("GET", "/api/v1/activity?limit=50");
  if (code !== 200) return;
  $("#feed").replaceChildren();
  for (const r of data.records.slice().reverse()) addActivity(r);
}

// Server-sent events over fetch: EventSource cannot send the Authorization header. A
// reconnect sends the last event id it saw, so a broken stream misses no record.
async function followFeed() {
  let lastId = null;
  for (;;) {
    if (!token()) return;
    try {
      const headers = { Authorization: "Bearer " + token() };
      if (lastId !== null) headers["Last-Event-ID"] = lastId;
      const res = await fetch("/api/v1/activity/stream", { headers });
      if (!res.ok) { await sleep(3000); continue; }
      status("Live");
      await readEvents(res, (block, data) => {
        const id = block.split("\n").find((l) => l.startsWith("id:"));
        if (id) lastId = id.slice(3).trim();
        if (block.includes("event: activity") && data) {
          addActivity(JSON.parse(data));
          refreshPending();
        }
      });
    } catch (e) { /* reconnect below */ }
    if (!token()) return;
    status("Reconnecting…");
    await sleep(2000);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Reads a server-sent event stream until it ends, handing each event's block and its data
// lines joined to `handle`.
async function readEvents(res, handle) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).trimStart()).join("\n");
      handle(block, data);
    }
  }
}

// ---- tool palette ----------------------------------------------------------------------

async function loadTools() {
  const { status: code, data } = await api("GET", "/api/v1/tools");
  if (code !== 200) return;
  const box = $("#tools");
  box.replaceChildren();
  for (const t of data.tools) {
    const d = document.createElement("details");
    d.className = "tool-entry";
    d.dataset.tool = t.name;
    const s = document.createElement("summary");
    writeText(s, t.name + " — " + t.safety, { limit: LINE_CUT });
    const p = document.createElement("p");
    writeText(p, t.description);
    const schema = document.createElement("pre");
    writeText(schema, pretty(t.parameters), { lines: true });
    d.append(s, p, schema);
    if (t.safety === "read_only") d.append(runForm(t));
    box.append(d);
  }
}

function runForm(t) {
  const form = document.createElement("form");
  form.className = "run";
  const args = document.createElement("textarea");
  args.rows = 3;
  args.value = "{}";
  const go = document.createElement("button");
  go.type = "submit";
  go.textContent = "Run";
  const out = document.createElement("pre");
  out.className = "run-result";
  form.append(args, go, out);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    let parsed;
    try { parsed = JSON.parse(args.value); } catch (err) { writeText(out, err.message); return; }
    const { data } = await api("POST", "/api/v1/tools/" + encodeURIComponent(t.name) + "/call",
      { arguments: parsed });
    writeText(out, pretty(data), { lines: true });
  });
  return form;
}

// ---- start -----------------------------------------------------------------------------

let timer = null;

async function open() {
  show($("#token-form"), false);
  show($("#app"), true);
  show($("#sign-out"), true);
  status("Connecting…");
  await Promise.all([refreshPending(), loadFeed(), loadTools(), loadHeld()]);
  if (!token()) return;
  if (timer === null) {
    followFeed();
    followLive();
    timer = setInterval(() => { refreshPending(); loadHeld(); }, POLL_MS);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("#token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const typed = $("#token").value.trim();
    $("#token").value = "";
    if (!/^[\x21-\x7e]+$/.test(typed)) {
      signOut("A token is visible ASCII without spaces.");
      return;
    }
    signIn({ token: typed });
  });
  $("#sign-out").addEventListener("click", () => signOut("Signed out."));
  $("#page-prev").addEventListener("click", () => turnPage(-1));
  $("#page-next").addEventListener("click", () => turnPage(1));
  window.addEventListener("hashchange", followLink);
  if (followLink()) return;
  if (token()) open(); else signOut();
});
