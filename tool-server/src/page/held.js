// The imported tools held because their server changed their definition since a person
// approved it: each change as the lines `tools pins` shows, written as text, and an Approve that
// names exactly the definition shown (its hash), so a server that changed again is not approved
// unseen. Uses app.js's api, writeText, decided and finish.
"use strict";

async function loadHeld() {
  const { status: code, data } = await api("GET", "/api/v1/held-tools");
  if (code !== 200) return;
  const box = $("#held");
  const open = new Map();
  for (const card of box.querySelectorAll(".card.held")) {
    if (card.classList.contains("decided")) open.set(card.dataset.key, card);
  }
  box.replaceChildren();
  for (const h of data.held) box.append(heldCard(h));
  // an approved card stays, with its result, until the next look finds nothing to show
  for (const [key, card] of open) {
    if (!data.held.some((h) => h.tool + h.served === key)) box.append(card);
  }
  $("#held-count").textContent = String(data.held.length);
  show($("#held-section"), data.held.length > 0 || open.size > 0);
}

function heldCard(h) {
  const card = document.createElement("article");
  card.className = "card held";
  card.dataset.tool = h.tool;
  card.dataset.key = h.tool + h.served;
  const head = document.createElement("header");
  const name = document.createElement("strong");
  name.className = "tool";
  writeText(name, h.tool, { limit: LINE_CUT });
  const server = document.createElement("span");
  server.className = "badge server";
  writeText(server, "from " + h.server, { limit: LINE_CUT });
  head.append(name, server);
  const why = document.createElement("p");
  why.className = "intent";
  why.textContent = "Its server now describes it otherwise than when it was approved; its " +
    "calls are refused until you approve the change.";
  const list = document.createElement("ul");
  list.className = "definition-change";
  for (const line of h.changes) {
    const li = document.createElement("li");
    li.className = line.startsWith("+") ? "add" : line.startsWith("-") ? "remove" : "replace";
    writeText(li, line);
    list.append(li);
  }
  const hashes = document.createElement("p");
  hashes.className = "meta";
  writeText(hashes, "approved " + h.pinned + " · served now " + h.served, { limit: LINE_CUT });
  const actions = document.createElement("div");
  actions.className = "actions";
  const go = document.createElement("button");
  go.type = "button";
  go.className = "approve-change";
  go.textContent = "Approve the change";
  go.addEventListener("click", () => approveChange(card, h));
  actions.append(go);
  const result = document.createElement("p");
  result.className = "result";
  result.setAttribute("role", "status");
  card.append(head, why, list, hashes, actions, result);
  return card;
}

async function approveChange(card, h) {
  const { status: code, data } = await api("POST",
    "/api/v1/held-tools/" + encodeURIComponent(h.tool) + "/approve", { hash: h.served });
  if (code !== 200) {
    finish(card, (data.error && data.error.message) || "Failed (" + code + ").", true);
    if (code === 409 || code === 404) { decided(card); }
    return;
  }
  decided(card);
  finish(card, "Approved: now pinned " + data.approved, false);
  loadHeld();
}
