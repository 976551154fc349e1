// The approvals page: pending operations as cards, the live activity feed, the tool palette.
// Everything shown comes from the JSON API with the approver's token; every value is written as
// text (never as HTML), since arguments are whatever a model sent.
"use strict";

const KEY = "tool-server-token";
const $ = (sel, root = document) => root.querySelector(sel);
const show = (el, yes) => { el.hidden = !yes; };
const pretty = (v) => JSON.stringify(v, null, 2);

function token() { return sessionStorage.getItem(KEY); }

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + token() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({}));
  if (res.status === 401) { signOut("The token was refused."); }
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

// ---- pending operations ----------------------------------------------------------------

const cards = new Map();

async function refreshPending() {
  const { status: code, data } = await api("GET", "/api/v1/pending");
  if (code === 403) { signOut("That token cannot approve: enter the approver's token."); return; }
  if (code !== 200) return;
  const ids = new Set(data.pending.map((op) => op.id));
  for (const [id, card] of cards) {
    if (!ids.has(id) && !card.classList.contains("decided")) { card.remove(); cards.delete(id); }
  }
  for (const op of data.pending) {
    if (!cards.has(op.id)) {
      const card = renderCard(op);
      cards.set(op.id, card);
      $("#pending").prepend(card);
    }
  }
  $("#pending-count").textContent = String(data.pending.length);
  show($("#pending-empty"), data.pending.length === 0);
  const doubt = $("#in-doubt");
  doubt.replaceChildren();
  for (const op of data.in_doubt) {
    const p = document.createElement("p");
    p.className = "meta";
    p.textContent = "In doubt (approved, outcome never recorded; never run again): "
      + op.tool + " " + op.id;
    doubt.append(p);
  }
}

function renderCard(op) {
  const card = $("#card-template").content.firstElementChild.cloneNode(true);
  const pv = op.preview;
  card.dataset.op = op.id;
  $(".tool", card).textContent = op.tool;
  $(".category", card).textContent = pv.category;
  const undo = $(".undo", card);
  undo.textContent = pv.reversible ? "can be undone" : "cannot be undone";
  undo.classList.add(pv.reversible ? "reversible" : "irreversible");
  $(".intent", card).textContent = pv.intent;
  if (pv.first_use) {
    const f = $(".first-use", card);
    f.textContent = pv.first_use.message + " Leaves this system: "
      + (pv.first_use.data_leaving.join(", ") || "nothing") + ".";
    const more = document.createElement("details");
    more.className = "learn-more";
    const label = document.createElement("summary");
    label.textContent = "Learn more about the service";
    const about = document.createElement("p");
    about.textContent = pv.first_use.service;
    more.append(label, about);
    f.append(more);
    show(f, true);
  }
  if (pv.change !== undefined) {
    $(".change", card).textContent = typeof pv.change === "string" ? pv.change : pretty(pv.change);
    show($(".change-box", card), true);
  }
  $(".arguments", card).textContent = pretty(op.arguments);
  $(".meta", card).textContent = "started by " + op.initiator + " · "
    + new Date(op.created_ms).toLocaleString() + " · " + op.id;
  const edit = $(".edit", card);
  edit.value = pretty(op.arguments);
  $(".edit-toggle", card).addEventListener("click", () => {
    show($(".edit-box", card), $(".edit-box", card).hidden);
  });
  $(".approve", card).addEventListener("click", () => approve(card, op));
  $(".deny", card).addEventListener("click", () => deny(card, op));
  return card;
}

function finish(card, text, failed) {
  const r = $(".result", card);
  r.textContent = text;
  r.classList.toggle("error", !!failed);
}

function decided(card) {
  card.classList.add("decided");
  for (const b of card.querySelectorAll("button, input, textarea")) b.disabled = true;
}

async function approve(card, op) {
  let body = {};
  if (!$(".edit-box", card).hidden) {
    try { body = { arguments: JSON.parse($(".edit", card).value) }; }
    catch (e) { showErrors(card, [{ pointer: "", message: "not JSON: " + e.message }]); return; }
  }
  const { status: code, data } = await api("POST", "/api/v1/pending/" + op.id + "/approve", body);
  if (code === 422) { showErrors(card, data.error.violations || [data.error]); return; }
  if (code >= 400) { finish(card, data.error.message, true); if (code === 409) decided(card); return; }
  showErrors(card, []);
  decided(card);
  finish(card, "Approved: " + outcomeText(data), data.status === "error");
  refreshPending();
}

async function deny(card, op) {
  const reason = $(".reason", card).value.trim();
  const { status: code, data } = await api("POST", "/api/v1/pending/" + op.id + "/deny",
    reason ? { reason } : {});
  if (code >= 400) { finish(card, data.error.message, true); if (code === 409) decided(card); return; }
  decided(card);
  finish(card, "Denied: " + data.reason, false);
  refreshPending();
}

function showErrors(card, violations) {
  const list = $(".errors", card);
  list.replaceChildren();
  for (const v of violations) {
    const li = document.createElement("li");
    li.textContent = (v.pointer ? v.pointer + ": " : "") + v.message;
    list.append(li);
  }
  if (violations.length) show($(".edit-box", card), true);
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
  rest.textContent = " " + r.tool + " · started by " + r.initiator + " · decided by "
    + r.decided_by + " (" + r.decision + ") · " + new Date(r.timestamp_ms).toLocaleTimeString()
    + (r.result_summary ? " · " + r.result_summary : "");
  li.append(s, rest);
  $("#feed").prepend(li);
}

async function loadFeed() {
  const { status: code, data } = await api("GET", "/api/v1/activity?limit=50");
  if (code !== 200) return;
  $("#feed").replaceChildren();
  for (const r of data.records.slice().reverse()) addActivity(r);
}

// Server-sent events over fetch: EventSource cannot send the Authorization header.
async function followFeed() {
  for (;;) {
    if (!token()) return;
    try {
      const res = await fetch("/api/v1/activity/stream",
        { headers: { Authorization: "Bearer " + token() } });
      if (!res.ok) { await sleep(3000); continue; }
      status("Live");
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).trimStart()).join("\n");
          if (block.includes("event: activity") && data) {
            addActivity(JSON.parse(data));
            refreshPending();
          }
        }
      }
    } catch (e) { /* reconnect below */ }
    status("Reconnecting…");
    await sleep(2000);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

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
    s.textContent = t.name + " — " + t.safety;
    const p = document.createElement("p");
    p.textContent = t.description;
    const schema = document.createElement("pre");
    schema.textContent = pretty(t.parameters);
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
    try { parsed = JSON.parse(args.value); } catch (err) { out.textContent = err.message; return; }
    const { data } = await api("POST", "/api/v1/tools/" + encodeURIComponent(t.name) + "/call",
      { arguments: parsed });
    out.textContent = pretty(data);
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
  await Promise.all([refreshPending(), loadFeed(), loadTools()]);
  if (!token()) return;
  if (timer === null) {
    followFeed();
    timer = setInterval(refreshPending, 3000);
  }
}

// a link printed by the server carries the token in the fragment, which is never sent
function tokenFromLink() {
  const m = location.hash.match(/token=([^&]+)/);
  if (!m) return false;
  sessionStorage.setItem(KEY, decodeURIComponent(m[1]));
  history.replaceState(null, "", location.pathname);
  return true;
}

document.addEventListener("DOMContentLoaded", () => {
  tokenFromLink();
  $("#token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, $("#token").value.trim());
    $("#token").value = "";
    open();
  });
  $("#sign-out").addEventListener("click", () => signOut("Token forgotten."));
  window.addEventListener("hashchange", () => { if (tokenFromLink()) open(); });
  if (token()) open(); else signOut();
});
