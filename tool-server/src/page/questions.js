// What running calls ask the person, and how far they are: the `live` stream of the API sends
// the open questions and the running calls whole on every change. Each question becomes a form
// built from its flat schema; a form already on the page is kept as it is (the person may be
// typing in it), so only new questions are drawn and answered or expired ones removed. A
// tool's name and message are whatever the tool (and through it a model) wrote: written as
// text, like everything else on the page. Uses app.js's helpers (api, writeText, token, readEvents).
"use strict";

const questionCards = new Map();

function followLive() {
  streamEvents("/api/v1/live", "live", (view) => {
    renderQuestions(view.questions);
    renderRunning(view.running);
  });
}

// Server-sent events over fetch (EventSource cannot send the Authorization header); each
// event's data is the whole view, so a reconnect needs no event id.
async function streamEvents(path, name, handle) {
  for (;;) {
    if (!token()) return;
    try {
      const res = await fetch(path, { headers: { Authorization: "Bearer " + token() } });
      if (!res.ok) { await sleep(3000); continue; }
      await readEvents(res, (block, data) => {
        if (block.includes("event: " + name) && data) handle(JSON.parse(data));
      });
    } catch (e) { /* reconnect below */ }
    if (!token()) return;
    await sleep(2000);
  }
}

// ---- questions -------------------------------------------------------------------------

function renderQuestions(questions) {
  const box = $("#questions");
  const open = new Set(questions.map((q) => q.id));
  for (const [id, card] of questionCards) {
    if (!open.has(id)) { card.remove(); questionCards.delete(id); }
  }
  for (const q of questions) {
    if (!questionCards.has(q.id)) {
      const card = questionCard(q);
      questionCards.set(q.id, card);
      box.append(card);
    }
  }
  $("#questions-count").textContent = String(questions.length);
  show($("#questions-empty"), questions.length === 0);
}

function questionCard(q) {
  const card = document.createElement("article");
  card.className = "card question";
  card.dataset.question = q.id;
  card.dataset.call = q.call_id;
  const head = document.createElement("header");
  const tool = document.createElement("strong");
  tool.className = "tool";
  writeText(tool, q.tool, { limit: LINE_CUT });
  const until = document.createElement("span");
  until.className = "size";
  until.textContent = "waits until " + new Date(q.expires_at).toLocaleTimeString();
  head.append(tool, until);
  const message = document.createElement("p");
  message.className = "intent message";
  writeText(message, q.message, { lines: true });
  const form = document.createElement("form");
  form.className = "answer";
  form.noValidate = true;
  const schema = q.schema || {};
  const required = new Set(schema.required || []);
  const fields = [];
  for (const [name, field] of Object.entries(schema.properties || {})) {
    fields.push(formField(form, name, field, required.has(name)));
  }
  const errors = document.createElement("ul");
  errors.className = "errors";
  const actions = document.createElement("div");
  actions.className = "actions";
  const submit = document.createElement("button");
  submit.type = "submit";
  submit.className = "approve submit";
  submit.textContent = "Submit";
  const decline = document.createElement("button");
  decline.type = "button";
  decline.className = "deny decline";
  decline.textContent = "Decline";
  actions.append(submit, decline);
  const result = document.createElement("p");
  result.className = "result";
  result.setAttribute("role", "status");
  form.append(errors, actions);
  card.append(head, message, form, result);

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const content = {};
    const problems = [];
    for (const f of fields) {
      const got = f.read();
      if (got.error) problems.push({ pointer: "/" + f.name, message: got.error });
      else if (got.value !== undefined) content[f.name] = got.value;
    }
    if (problems.length) { listErrors(errors, problems); return; }
    await answer(card, q, { action: "accept", content }, errors);
  });
  decline.addEventListener("click", () => answer(card, q, { action: "decline" }, errors));
  return card;
}

async function answer(card, q, body, errors) {
  const { status: code, data } = await api("POST",
    "/api/v1/questions/" + encodeURIComponent(q.id) + "/answer", body);
  if (code === 422) { listErrors(errors, data.error.violations || [data.error]); return; }
  listErrors(errors, []);
  const result = $(".result", card);
  if (code !== 200) {
    result.classList.add("error");
    writeText(result, (data.error && data.error.message) || "Failed (" + code + ").");
    if (code !== 404) return;
  } else {
    writeText(result, body.action === "accept" ? "Answered." : "Declined.");
  }
  card.classList.add("decided");
  for (const el of card.querySelectorAll("button, input, select")) el.disabled = true;
}

function listErrors(list, violations) {
  list.replaceChildren();
  for (const v of violations) {
    const li = document.createElement("li");
    writeText(li, (v.pointer ? v.pointer + ": " : "") + v.message);
    list.append(li);
  }
}

// The choices of an enum field: plain `enum`, titled `oneOf` consts, or `enumNames`.
function choicesOf(field) {
  if (Array.isArray(field.enum)) {
    return field.enum.map((v, i) => ({ value: v, title: (field.enumNames || [])[i] ?? v }));
  }
  const options = field.oneOf || field.anyOf;
  if (Array.isArray(options) && options.every((o) => o && "const" in o)) {
    return options.map((o) => ({ value: o.const, title: o.title ?? o.const }));
  }
  return null;
}

// One field of the form: its label (title or name, required marked), its description, its
// input with the default filled in, and how to read its value back.
function formField(form, name, field, required) {
  const row = document.createElement("div");
  row.className = "field";
  row.dataset.field = name;
  const label = document.createElement("label");
  const title = document.createElement("span");
  title.className = "label";
  writeText(title, field.title || name, { limit: LINE_CUT });
  label.append(title);
  if (required) {
    const mark = document.createElement("span");
    mark.className = "required";
    mark.textContent = " *";
    mark.title = "required";
    label.append(mark);
  }
  row.append(label);
  if (field.description) {
    const about = document.createElement("span");
    about.className = "hint";
    writeText(about, field.description, { limit: LINE_CUT });
    row.append(about);
  }
  const has = "default" in field;
  let input;
  let read;
  const choices = choicesOf(field);
  const many = field.type === "array" && field.items ? choicesOf(field.items) : null;
  if (choices) {
    input = document.createElement("select");
    if (!required || !has) {
      const none = document.createElement("option");
      none.value = "";
      none.textContent = required ? "— choose —" : "—";
      input.append(none);
    }
    choices.forEach((c, i) => {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = String(c.title);
      if (has && field.default === c.value) o.selected = true;
      input.append(o);
    });
    read = () => {
      if (input.value === "") return required ? { error: "choose one" } : {};
      return { value: choices[Number(input.value)].value };
    };
  } else if (many) {
    input = document.createElement("select");
    input.multiple = true;
    const chosen = new Set(has && Array.isArray(field.default) ? field.default : []);
    many.forEach((c, i) => {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = String(c.title);
      o.selected = chosen.has(c.value);
      input.append(o);
    });
    read = () => ({
      value: Array.from(input.selectedOptions, (o) => many[Number(o.value)].value),
    });
  } else if (field.type === "boolean") {
    input = document.createElement("input");
    input.type = "checkbox";
    input.checked = has ? field.default === true : false;
    read = () => ({ value: input.checked });
  } else if (field.type === "number" || field.type === "integer") {
    input = document.createElement("input");
    input.type = "number";
    input.step = field.type === "integer" ? "1" : "any";
    if (typeof field.minimum === "number") input.min = String(field.minimum);
    if (typeof field.maximum === "number") input.max = String(field.maximum);
    if (has) input.value = String(field.default);
    read = () => {
      const text = input.value.trim();
      if (text === "") return required ? { error: "a number is required" } : {};
      const n = Number(text);
      if (!Number.isFinite(n)) return { error: "not a number" };
      if (field.type === "integer" && !Number.isInteger(n)) return { error: "a whole number" };
      return { value: n };
    };
  } else {
    input = document.createElement("input");
    input.type = { email: "email", uri: "url", date: "date" }[field.format] || "text";
    if (has) input.value = String(field.default);
    read = () => {
      if (input.value === "" && !required) return {};
      return { value: input.value };
    };
  }
  input.name = name;
  input.required = required;
  label.append(input);
  form.append(row);
  return { name, read };
}

// ---- running calls ---------------------------------------------------------------------

function renderRunning(running) {
  const list = $("#running");
  list.replaceChildren();
  for (const r of running) {
    const li = document.createElement("li");
    li.dataset.call = r.call_id;
    const name = document.createElement("strong");
    writeText(name, r.tool, { limit: LINE_CUT });
    const bar = document.createElement("progress");
    if (r.progress !== null && r.total) {
      bar.max = r.total;
      bar.value = Math.min(r.progress, r.total);
    }
    const what = document.createElement("span");
    what.className = "progress-text";
    let text = "";
    if (r.progress !== null) text = r.total ? r.progress + " of " + r.total : String(r.progress);
    if (r.message) text += (text ? " · " : "") + r.message;
    writeText(what, text || "started " + new Date(r.started_at).toLocaleTimeString(),
      { limit: LINE_CUT });
    li.append(name, bar, what);
    list.append(li);
  }
  show($("#running-empty"), running.length === 0);
}
