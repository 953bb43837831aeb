// tfm serve's translate page: the text is translated as it is typed (a request the server's
// frontendTimeout, GET /frontend/settings, after the last key), through the same JSON API every client uses (POST /v1/translate, or /v1/generate
// for a decoder-only model), with the API key when the server wants one. The alternatives are
// the request's n-best; the heat map is the chosen one's attention (return_attention).
"use strict";

const $ = (id) => document.getElementById(id);
// wait: ms after a key before translating, the server's (null until its settings arrive).
const state = { seq: 0, decoderOnly: false, results: [], lines: [], sentence: 0, chosen: 0,
  wait: null };
let timer = null;

function setState(name, message, error = false) {
  document.body.dataset.state = name;
  $("status").textContent = message;
  $("status").classList.toggle("error", error);
}

function number(id, lo, hi) {
  const v = parseInt($(id).value, 10);
  return Math.min(hi, Math.max(lo, Number.isFinite(v) ? v : lo));
}

function requestHeaders() {
  const h = { "Content-Type": "application/json" };
  const key = $("key").value;
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

async function api(path, body) {
  const init = body === undefined ? { headers: requestHeaders() }
    : { method: "POST", headers: requestHeaders(), body: JSON.stringify(body) };
  const r = await fetch(path, init);
  let data = null;
  try { data = await r.json(); } catch (e) { /* not JSON: the status says it */ }
  if (r.status === 401) {
    $("key-box").hidden = false;
    throw new Error("this server needs its API key: enter it above");
  }
  if (!r.ok) throw new Error((data && data.error) || "HTTP " + r.status);
  return data;
}

async function loadModel() {
  try {
    const m = await api("/v1/model");
    state.decoderOnly = !!m.decoder_only;
    document.body.classList.toggle("decoder-only", state.decoderOnly);
    let text = (state.decoderOnly ? "decoder-only" : "encoder-decoder") + " model, " +
      m.parameters.toLocaleString("en") + " parameters, " + m.compute_type;
    const settings = await (await fetch("/frontend/settings")).json();
    if (Number.isFinite(settings.frontendTimeout)) state.wait = settings.frontendTimeout;
    const languages = await (await fetch("/languages")).json();
    if (languages.length)
      text += " · " + languages.map((l) => l.code + " → " + l.targets.join(", ")).join("; ");
    $("model").textContent = text;
    setState("idle", "");
    if (!state.decoderOnly && $("source").value.trim()) schedule(0);
  } catch (e) {
    $("model").textContent = "";
    setState("error", e.message, true);
  }
}

function schedule(delay = state.wait ?? 0) {
  clearTimeout(timer);
  document.body.dataset.state = "pending";
  timer = setTimeout(run, delay);
}

// The line the caret is on (the sentence whose alternatives are shown).
function sentenceAtCaret() {
  const s = $("source");
  return s.value.slice(0, s.selectionStart).split("\n").length - 1;
}

// The answer as one list of hypotheses {text, score, attention} per text.
function hypotheses(out, nbest) {
  const texts = out[state.decoderOnly ? "generations" : "translations"];
  return texts.map((t, i) => {
    const all = nbest > 1 ? t : [t];
    const scores = nbest > 1 ? out.scores[i] : [out.scores[i]];
    const attention = out.attention ? (nbest > 1 ? out.attention[i] : [out.attention[i]]) : [];
    if (!state.decoderOnly && !state.lines[i].trim()) return [];  // an empty line: none
    return all.map((text, k) => ({ text, score: scores[k], attention: attention[k] || null }));
  });
}

async function run() {
  const text = $("source").value;
  const seq = ++state.seq;
  state.lines = state.decoderOnly ? [text] : text.split("\n");
  if (!state.decoderOnly && !text.trim()) {
    $("translation").textContent = "";
    state.results = [];
    renderDetails();
    setState("idle", "");
    return;
  }
  const beam = number("beam", 1, 64);
  const nbest = number("nbest", 1, beam);
  const body = { text: state.lines, beam_size: beam, n_best: nbest, return_scores: true };
  if (state.decoderOnly) body.max_length = number("max-length", 1, 1 << 20);
  else body.return_attention = true;
  setState("busy", state.decoderOnly ? "generating…" : "translating…");
  const t0 = performance.now();
  try {
    const out = await api(state.decoderOnly ? "/v1/generate" : "/v1/translate", body);
    if (seq !== state.seq) return;  // a newer request is on its way
    state.results = hypotheses(out, nbest);
    state.chosen = 0;
    state.sentence = state.decoderOnly ? 0 : Math.min(sentenceAtCaret(), state.lines.length - 1);
    $("translation").textContent = state.results.map((h) => (h.length ? h[0].text : "")).join("\n");
    renderDetails();
    const warning = out.warnings ? " · " + out.warnings.join("; ") : "";
    setState("idle", Math.round(performance.now() - t0) + " ms" + warning);
    document.body.dataset.seq = String(seq);
  } catch (e) {
    if (seq === state.seq) setState("error", e.message, true);
  }
}

function renderDetails() {
  const hyps = state.results[state.sentence] || [];
  $("details").hidden = hyps.length === 0;
  if (!hyps.length) return;
  $("sentence-label").textContent = state.lines.length > 1 ? "(line " + (state.sentence + 1) + ")" : "";
  const list = $("alternatives");
  list.replaceChildren(...hyps.map((h, k) => {
    const li = document.createElement("li");
    li.className = k === state.chosen ? "chosen" : "";
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = h.score.toFixed(3);
    li.append(document.createTextNode(h.text), score);
    li.addEventListener("click", () => { state.chosen = k; renderDetails(); });
    return li;
  }));
  renderHeatmap(hyps[Math.min(state.chosen, hyps.length - 1)].attention);
}

function renderHeatmap(a) {
  const table = $("heatmap");
  table.replaceChildren();
  if (!a) return;
  const head = table.createTHead().insertRow();
  head.append(document.createElement("th"));
  for (const s of a.source_tokens) {
    const th = document.createElement("th");
    th.textContent = s;
    head.append(th);
  }
  const body = table.createTBody();
  a.weights.forEach((row, i) => {
    const tr = body.insertRow();
    const th = document.createElement("th");
    th.textContent = a.target_tokens[i] ?? String(i + 1);
    tr.append(th);
    row.forEach((w, j) => {
      const td = tr.insertCell();
      // sqrt: small weights stay visible next to a dominant one
      td.style.background = "rgba(40, 89, 197, " + Math.sqrt(Math.max(0, w)).toFixed(3) + ")";
      td.title = th.textContent + " ← " + (a.source_tokens[j] ?? j + 1) + ": " + w.toFixed(3);
    });
  });
}

$("source").addEventListener("input", () => { if (!state.decoderOnly) schedule(); });
$("source").addEventListener("keydown", (e) => {
  if (state.decoderOnly && e.key === "Enter" && (e.ctrlKey || e.metaKey)) run();
});
for (const ev of ["click", "keyup"]) {
  $("source").addEventListener(ev, () => {
    const s = Math.min(sentenceAtCaret(), state.results.length - 1);
    if (!state.decoderOnly && s >= 0 && s !== state.sentence) {
      state.sentence = s;
      state.chosen = 0;
      renderDetails();
    }
  });
}
for (const id of ["beam", "nbest"]) $(id).addEventListener("change", () => { if (!state.decoderOnly) schedule(0); });
$("run").addEventListener("click", run);
$("key").addEventListener("change", () => {
  sessionStorage.setItem("tfm-api-key", $("key").value);
  loadModel();
});
$("key").value = sessionStorage.getItem("tfm-api-key") || "";
if ($("key").value) $("key-box").hidden = false;
loadModel();
