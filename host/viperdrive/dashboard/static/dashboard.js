// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The viperdrive contributors
// The viperdrive dashboard page: no library, nothing from the network but this page's own server.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token") || "";
const GAINS = [["kp", 0, 0.2], ["ki", 0, 1.0], ["windup_tau", 0.001, 0.2]];
const SERIES = ["t", "spL", "msL", "duL", "inL", "spR", "msR", "duR", "inR", "st"];
const CAP = 60000;          // records kept (30 s at 2 kHz): every record is kept, drawing decimates per pixel

const S = {
  session: null, control: false, info: null, paused: false, windowS: 5, status: null, armed: false, armPending: false,
  armEpoch: 0,     // the dashboard's count of arms and disarms: news about arming older than what the page knows is stale
  params: {}, ranges: {}, paramEpoch: 0, lastStep: null, prevStep: null, designed: null,
  pad: { v: 0, w: 0, held: false },
  data: Object.fromEntries(SERIES.map((k) => [k, new Float64Array(CAP)])), n: 0, head: 0,
  tPrevUs: null, tOffset: 0,
};
// what the browser tests read: records received, plot redraws with new data, the last slider -> board latency
// (lastParamMs: from the request to the board's acknowledgement; lastSliderMs: from the slider's move to it)
// (behind: records the dashboard received, by its status, that this page did not get: the stream drops none)
window.vdStats = { records: 0, draws: 0, drawTimes: [], recordTimes: [], lastParamMs: null, lastSliderMs: null,
                   events: 0, offset: null, behind: 0, maxBehind: 0, statuses: 0, axes: {} };

function $(id) { return document.getElementById(id); }
function fmt(x, d = 3) { return x === null || x === undefined ? "-" : (typeof x === "number" ? x.toFixed(d) : String(x)); }

function banner(text, bad) {
  const b = $("banner");
  b.hidden = !text;
  b.textContent = text || "";
  b.className = bad ? "bad" : "";
}

async function api(name, body, opts = {}) {
  const r = await fetch("/api/" + name, {
    method: "POST", keepalive: !!opts.keepalive,
    headers: { "Content-Type": "application/json", "X-Viperdrive-Token": TOKEN,
               "X-Viperdrive-Session": S.session || "" },
    body: JSON.stringify(body || {}),
  });
  const out = await r.json().catch(() => ({ error: "no reply" }));
  if (!r.ok) throw new Error(out.error || ("HTTP " + r.status));
  return out;
}

// ---- views ----
for (const b of document.querySelectorAll("nav button")) {
  b.onclick = () => {
    for (const x of document.querySelectorAll("nav button")) x.classList.toggle("on", x === b);
    for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== b.dataset.view;
    if (b.dataset.view === "params" || b.dataset.view === "tuning") loadParams();
  };
}

// ---- the stream ----
function addRecords(rows) {
  const d = S.data;
  for (const r of rows) {
    // board_time_us wraps at 2**30 us: unwrap into seconds
    let t = r[0];
    if (S.tPrevUs !== null && t < S.tPrevUs - 2 ** 29) S.tOffset += 2 ** 30;
    S.tPrevUs = t;
    const i = S.head;
    d.t[i] = (t + S.tOffset) / 1e6;
    for (let k = 1; k < SERIES.length; k++) d[SERIES[k]][i] = r[k];
    S.head = (S.head + 1) % CAP;
    if (S.n < CAP) S.n++;
  }
  vdStats.records += rows.length;
  vdStats.recordTimes.push([performance.now(), rows.length]);
  dirty = true;
}

function connect() {
  const es = new EventSource(`/events?token=${encodeURIComponent(TOKEN)}&session=${encodeURIComponent(S.session)}`);
  es.addEventListener("hello", (e) => {
    S.info = JSON.parse(e.data);
    $("board").textContent = `${S.info.board} on ${S.info.port}, loop ${S.info.control_hz} Hz, telemetry ${S.info.telemetry_hz} Hz`;
    $("drive-timeout").textContent = S.info.drive_timeout_s;
  });
  es.addEventListener("telemetry", (e) => { vdStats.events++; addRecords(JSON.parse(e.data)); });
  es.addEventListener("status", (e) => showStatus(JSON.parse(e.data)));
  es.addEventListener("disarmed", (e) => {
    const d = JSON.parse(e.data);
    if (d.arm_epoch < S.armEpoch) return;       // about an arming this page has since replaced
    S.armEpoch = d.arm_epoch; S.armed = false; $("arm").checked = false; $("drive-msg").textContent = "disarmed: " + d.why;
  });
  es.addEventListener("ended", (e) => { banner("the dashboard has stopped: " + JSON.parse(e.data).why, true); es.close(); });
  es.onerror = () => banner("the connection to the dashboard is lost (is `viperdrive dashboard` still running?)", true);
}

function showStatus(s) {
  S.status = s;
  // the stream is in order: a status comes after the telemetry the dashboard had when it wrote it
  if (vdStats.offset === null) vdStats.offset = s.telemetry_received - vdStats.records;
  vdStats.behind = s.telemetry_received - vdStats.offset - vdStats.records;
  vdStats.maxBehind = Math.max(vdStats.maxBehind, vdStats.behind);
  vdStats.statuses++;
  // the board thread's word, unless the switch's own request is still on its way or the status was written before
  // the last arm or disarm this page heard of (a status on its way while the page armed would disarm the page)
  if (!S.armPending && s.arm_epoch >= S.armEpoch) {
    S.armEpoch = s.arm_epoch;
    S.armed = s.armed;
    $("arm").checked = s.armed;
  }
  const rows = [
    ["status", s.status.length ? s.status.join(" ") : "disabled"],
    ["fault", s.fault_code ? `<span class="fault">${s.fault}</span> <button id="clear-fault" class="ctl">Clear fault</button>` : "none"],
    ["armed", s.armed ? "yes" : "no"],
    ["deadman", (s.status.includes("DEADMAN") ? "tripped" : "quiet") + `, ${s.deadman_trips} trips`],
    ["battery", s.battery_v === null ? "no input" : `${fmt(s.battery_v, 2)} V${s.battery_low ? " LOW" : ""}`],
    ["e-stop", s.estop_open === null ? "no input" : (s.estop_open ? "OPEN" : "closed")],
    ["IMU", `${s.imu_state}${s.gyro_z_rad_s === null ? "" : `, gyro z ${fmt(s.gyro_z_rad_s)} rad/s`}`],
    ["loop", `period ${s.period_min_us}..${s.period_max_us} us (jitter ${fmt(s.jitter_us, 0)} us), step max ${s.exec_max_us} us, overruns ${s.overruns}`],
    ["link", `board frames ${s.frames_ok}, CRC errors ${s.crc_errors}; host rtt ${fmt(s.rtt_p50_ms, 1)} ms`],
    ["telemetry", `${fmt(s.telemetry_hz, 0)} records/s, ${s.telemetry_lost} lost`],
    ["pose", `x ${fmt(s.x)} m, y ${fmt(s.y)} m, heading ${fmt(s.theta * 180 / Math.PI, 1)} deg`],
    ["pages", `${s.pages} open, ${s.controller ? "one controls" : "none controls"}`],
    ["unsaved", s.unsaved.length ? s.unsaved.join(", ") : "none (this session)"],
  ];
  $("status").innerHTML = rows.map(([k, v]) => `<tr><td>${k}</td><td>${v}</td></tr>`).join("");
  const cf = $("clear-fault");
  if (cf) {
    cf.disabled = !S.control;
    cf.onclick = async () => {
      if (!confirm("Clear the latched fault? Fix its cause first.")) return;
      try { await api("clear_fault"); } catch (e) { banner(e.message, true); }
    };
  }
}

// ---- plots ----
// Every plot's axes say what they show and in which unit: the canvas declares them (data-x-label, data-y-label in
// index.html), and each drawing writes them on the plot; vdStats.axes keeps what was last drawn, per canvas.
function axisLabels(canvas, g) {
  const W = canvas.width, H = canvas.height, x = canvas.dataset.xLabel, y = canvas.dataset.yLabel;
  g.save(); g.fillStyle = "#445"; g.font = "11px sans-serif";
  g.textAlign = "center"; g.fillText(x, W / 2, H - 3);
  g.textAlign = "right"; g.fillText(y, W - 4, 11);
  g.restore();
  vdStats.axes[canvas.id] = [x, y];
}

function drawSeries(canvas, series, fixed) {
  const g = canvas.getContext("2d");
  const W = canvas.width, H = canvas.height;
  g.clearRect(0, 0, W, H);
  if (!S.n) return;
  const d = S.data;
  const last = (S.head - 1 + CAP) % CAP;
  const tEnd = d.t[last], tStart = tEnd - S.windowS;
  // the records in the window, newest backwards
  let count = 0;
  while (count < S.n && d.t[(last - count + CAP) % CAP] >= tStart) count++;
  let lo = fixed ? fixed[0] : Infinity, hi = fixed ? fixed[1] : -Infinity;
  if (!fixed) {
    for (let j = 0; j < count; j++) {
      const i = (last - j + CAP) % CAP;
      for (const [key] of series) { const v = d[key][i]; if (v < lo) lo = v; if (v > hi) hi = v; }
    }
    if (!(hi > lo)) { lo -= 1; hi += 1; }
    const pad = 0.08 * (hi - lo); lo -= pad; hi += pad;
  }
  const y = (v) => H - 16 - (v - lo) / (hi - lo) * (H - 22);
  g.strokeStyle = "#eee"; g.fillStyle = "#889"; g.font = "10px sans-serif"; g.lineWidth = 1;
  for (let k = 0; k <= 4; k++) {
    const v = lo + (hi - lo) * k / 4, yy = y(v);
    g.beginPath(); g.moveTo(0, yy); g.lineTo(W, yy); g.stroke(); g.fillText(v.toFixed(2), 2, yy - 2);
  }
  g.fillText(`${S.windowS} s`, W - 30, H - 3);
  axisLabels(canvas, g);
  // per pixel column: min and max of the records in it (every record counts, the drawing is decimated)
  for (const [key, color] of series) {
    g.strokeStyle = color; g.lineWidth = 1.5; g.beginPath();
    let col = -1, mn = 0, mx = 0, started = false;
    const flush = () => {
      if (col < 0) return;
      if (!started) { g.moveTo(col, y(mn)); started = true; }
      g.lineTo(col, y(mn)); g.lineTo(col, y(mx));
    };
    for (let j = count - 1; j >= 0; j--) {
      const i = (last - j + CAP) % CAP;
      const c = Math.floor((d.t[i] - tStart) / S.windowS * (W - 1));
      const v = d[key][i];
      if (c !== col) { flush(); col = c; mn = mx = v; } else { if (v < mn) mn = v; if (v > mx) mx = v; }
    }
    flush();
    g.stroke();
  }
}

let dirty = false;
function frame() {
  if (dirty && !S.paused) {
    dirty = false;
    drawSeries($("plot-speed-left"), [["spL", "#888"], ["msL", "#1f77b4"]]);
    drawSeries($("plot-speed-right"), [["spR", "#888"], ["msR", "#1f77b4"]]);
    drawSeries($("plot-duty-left"), [["duL", "#d62728"], ["inL", "#2ca02c"]], [-1, 1]);
    drawSeries($("plot-duty-right"), [["duR", "#d62728"], ["inR", "#2ca02c"]], [-1, 1]);
    drawSeries($("plot-drive"), [["spL", "#888"], ["msL", "#1f77b4"], ["spR", "#bbb"], ["msR", "#ff7f0e"]]);
    const i = (S.head - 1 + CAP) % CAP;
    $("drive-now").textContent = `wheels now: left ${fmt(S.data.msL[i], 2)} rad/s (setpoint ${fmt(S.data.spL[i], 2)}), ` +
      `right ${fmt(S.data.msR[i], 2)} rad/s (setpoint ${fmt(S.data.spR[i], 2)}); ` +
      `status ${S.status && S.status.status.length ? S.status.status.join(" ") : "disabled"}`;
    vdStats.draws++;
    vdStats.drawTimes.push(performance.now());
  }
  const now = performance.now();
  while (vdStats.drawTimes.length && now - vdStats.drawTimes[0] > 1000) vdStats.drawTimes.shift();
  while (vdStats.recordTimes.length && now - vdStats.recordTimes[0][0] > 1000) vdStats.recordTimes.shift();
  const recs = vdStats.recordTimes.reduce((a, r) => a + r[1], 0);
  $("rates").textContent = `${recs} records/s, plot ${vdStats.drawTimes.length} redraws/s${S.paused ? " (paused)" : ""}`;
  requestAnimationFrame(frame);
}
$("pause").onclick = () => { S.paused = !S.paused; $("pause").textContent = S.paused ? "Resume" : "Pause"; dirty = true; };
$("window").onchange = (e) => { S.windowS = Number(e.target.value); dirty = true; };

// ---- parameters ----
async function loadParams() {
  // a value set while the table was being read would be overwritten by the older read: read again then
  for (let tries = 0; tries < 5; tries++) {
    const epoch = S.paramEpoch;
    try {
      const out = await api("params");
      if (epoch !== S.paramEpoch) continue;
      showParams(out);
      return;
    } catch (e) { $("params-msg").textContent = e.message; return; }
  }
}

function showParams(out) {
  const rows = out.params;
  // a value the user is typing (the focused field) is theirs: a table that arrives meanwhile does not undo it
  const editing = document.activeElement && document.activeElement.classList.contains("pval")
    ? [document.activeElement.dataset.name, document.activeElement.value] : null;
  for (const p of rows) { S.params[p.name] = p.value; S.ranges[p.name] = p; }
  $("params-msg").textContent = out.board_unsaved
    ? "The board's live parameters differ from its saved ones (* changed on this page, not saved)."
    : "The live parameters are the saved ones.";
  $("param-table").innerHTML = "<tr><th>name</th><th>value</th><th>unit</th><th>range</th><th>default</th><th>what</th></tr>" +
    rows.map((p) => `<tr class="${p.unsaved ? "unsaved" : ""}"><td>${p.name}</td>` +
      `<td><input class="ctl pval" data-name="${p.name}" type="number" step="any" value="${Number(p.value.toPrecision(6))}" min="${p.min}" max="${p.max}"></td>` +
      `<td>${p.unit}</td><td>${p.min} .. ${p.max}</td><td>${p.default}</td><td>${p.help}</td></tr>`).join("");
  for (const inp of document.querySelectorAll(".pval")) {
    inp.disabled = !S.control;
    inp.onchange = () => setParam(inp.dataset.name, inp.value, inp);
    if (editing && inp.dataset.name === editing[0]) { inp.value = editing[1]; inp.focus(); }
  }
  showGains();
}

async function setParam(name, text, inp) {
  const r = S.ranges[name];
  const v = Number(text);
  if (text === "" || !Number.isFinite(v) || (r && (v < r.min || v > r.max))) {
    if (inp) inp.classList.add("bad");
    banner(`${name} = ${text} refused: ${Number.isFinite(v) && text !== "" ? "outside" : "not a number in"} its range ${r.min} .. ${r.max} ${r.unit}`, true);
    return null;
  }
  if (inp) inp.classList.remove("bad");
  S.paramEpoch++;
  const t0 = performance.now();
  try {
    const out = await api("param", { name, value: v });
    S.paramEpoch++;             // a table read that overlapped this set is stale on either side of it
    vdStats.lastParamMs = performance.now() - t0;
    S.params[name] = out.value;
    banner("");
    return out.value;
  } catch (e) { if (inp) inp.classList.add("bad"); banner(`${name}: ${e.message}`, true); return null; }
}

function showGains() {
  const box = $("gains");
  if (!box.dataset.built) {
    box.dataset.built = "1";
    box.innerHTML = GAINS.map(([n, lo, hi]) =>
      `<div class="gain"><b>${n}</b><input class="ctl gslider" id="slider-${n}" type="range" min="${lo}" max="${hi}" step="${(hi - lo) / 1000}">` +
      `<input class="ctl gfield" id="field-${n}" type="number" step="any"><span id="ack-${n}"></span></div>`).join("");
    for (const [n] of GAINS) {
      // one request in flight per gain: a slider dragged faster than the board answers sends its newest value
      // as soon as the last one is acknowledged (no value is lost, none queues up)
      let busy = false, next = null;
      const send = async (text, inp, moved) => {
        if (busy) { next = [text, inp, moved]; return; }
        busy = true;
        const got = await setParam(n, text, inp);
        if (got !== null) {
          if (moved !== undefined) vdStats.lastSliderMs = performance.now() - moved;
          $("field-" + n).value = Number(got.toPrecision(6));
          $("ack-" + n).textContent = `board: ${Number(got.toPrecision(6))} (${fmt(vdStats.lastParamMs, 0)} ms)`;
        }
        busy = false;
        if (next) { const a = next; next = null; send(...a); }
      };
      $("slider-" + n).oninput = (e) => { $("field-" + n).value = e.target.value; send(e.target.value, null, performance.now()); };
      $("field-" + n).onchange = (e) => send(e.target.value, e.target);
    }
  }
  for (const [n] of GAINS) {
    if (S.params[n] === undefined) continue;
    // the gain the user is moving or typing keeps what they put there
    if (document.activeElement !== $("slider-" + n)) $("slider-" + n).value = S.params[n];
    if (document.activeElement !== $("field-" + n)) $("field-" + n).value = Number(S.params[n].toPrecision(6));
  }
  applyRole();
}

// ---- step test (A/B: the one before stays, dashed) ----
$("step-run").onclick = async () => {
  $("step-msg").textContent = "running...";
  try {
    const out = await api("step", { size: Number($("step-size").value), wheel: $("step-wheel").value, lift_ramp: $("step-lift").checked });
    S.prevStep = S.lastStep; S.lastStep = out;
    $("step-msg").textContent = "done";
    drawStep();
  } catch (e) { $("step-msg").textContent = e.message; }
};

function drawStep() {
  const c = $("plot-step"), g = c.getContext("2d"), W = c.width, H = c.height;
  g.clearRect(0, 0, W, H);
  const runs = [S.prevStep, S.lastStep].filter(Boolean);
  if (!runs.length) return;
  let tmax = 0, lo = 0, hi = 0;
  for (const r of runs) for (const w of Object.keys(r.metrics)) {
    const t0 = r.t_step;
    for (let i = 0; i < r.t.length; i++) { const t = r.t[i] - t0; if (t > tmax) tmax = t; const v = r["measured_" + w][i]; if (v > hi) hi = v; if (v < lo) lo = v; }
    hi = Math.max(hi, r.size); lo = Math.min(lo, r.size);
  }
  const t0s = -0.1, x = (t) => (t - t0s) / (tmax - t0s) * (W - 10) + 5, y = (v) => H - 15 - (v - lo) / ((hi - lo) || 1) * (H - 25);
  const colors = { left: "#1f77b4", right: "#ff7f0e" };
  runs.forEach((r, k) => {
    const current = r === S.lastStep;
    g.setLineDash(current ? [] : [5, 4]);
    for (const w of Object.keys(r.metrics)) {
      g.strokeStyle = colors[w]; g.globalAlpha = current ? 1 : 0.5; g.beginPath();
      r.t.forEach((t, i) => { const xx = x(t - r.t_step), yy = y(r["measured_" + w][i]); i ? g.lineTo(xx, yy) : g.moveTo(xx, yy); });
      g.stroke();
      g.strokeStyle = "#888"; g.beginPath();
      r.t.forEach((t, i) => { const xx = x(t - r.t_step), yy = y(r["setpoint_" + w][i]); i ? g.lineTo(xx, yy) : g.moveTo(xx, yy); });
      g.stroke();
    }
  });
  g.setLineDash([]); g.globalAlpha = 1;
  g.fillStyle = "#889"; g.font = "10px sans-serif";
  g.fillText(hi.toFixed(1), 2, y(hi) + 10); g.fillText(lo.toFixed(1), 2, y(lo) - 2);
  g.fillText("0", x(0) - 3, H - 3); g.fillText(tmax.toFixed(2), W - 30, H - 15);
  axisLabels(c, g);
  const row = (r, label) => Object.entries(r.metrics).map(([w, m]) =>
    `<tr><td>${label}</td><td>${w}</td><td>${fmt(m.rise_s === null ? null : m.rise_s * 1e3, 1)}</td><td>${fmt(m.overshoot_pct, 2)}</td>` +
    `<td>${fmt(m.settling_s === null ? null : m.settling_s * 1e3, 1)}</td><td>${fmt(m.steady_state_error, 3)}</td>` +
    `<td>kp ${fmt(r.gains.kp, 4)} ki ${fmt(r.gains.ki, 4)} windup_tau ${fmt(r.gains.windup_tau, 4)}</td></tr>`).join("");
  $("step-metrics").innerHTML = "<tr><th>run</th><th>wheel</th><th>rise ms</th><th>overshoot %</th><th>settling (5 %) ms</th><th>error rad/s</th><th>gains</th></tr>" +
    row(S.lastStep, "now") + (S.prevStep ? row(S.prevStep, "before") : "");
}

// ---- design, save, restore ----
$("design-run").onclick = async () => {
  try {
    const out = await api("design", { settle_s: Number($("design-settle").value) / 1000, overshoot_pct: Number($("design-overshoot").value) });
    S.designed = out.feasible ? out.gains : null;
    $("design-apply").disabled = !S.designed || !S.control;
    $("design-out").textContent = out.feasible
      ? `kp ${fmt(out.gains.kp, 5)} ki ${fmt(out.gains.ki, 5)} windup_tau ${fmt(out.gains.windup_tau, 4)}; predicted overshoot ${fmt(out.predicted.overshoot_pct, 1)} %, settling ${fmt(out.predicted.settling_s * 1e3, 0)} ms` + (out.notes.length ? "; " + out.notes.join("; ") : "")
      : "not feasible: " + out.problems.join("; ");
  } catch (e) { $("design-out").textContent = e.message; }
};
$("design-apply").onclick = async () => {
  for (const [n, v] of Object.entries(S.designed || {})) if (n !== "kd") await setParam(n, String(v), null);
  await loadParams();
};
$("save").onclick = async () => {
  try { showParams(await api("save")); $("save-msg").textContent = "saved to flash: a reset keeps these values"; }
  catch (e) { $("save-msg").textContent = e.message; }
};
$("restore").onclick = async () => {
  try { showParams(await api("restore")); $("save-msg").textContent = "restored the saved values"; }
  catch (e) { $("save-msg").textContent = e.message; }
};

// ---- drive: arm switch, pad, the page's deadman ----
$("arm").onchange = async (e) => {
  S.armPending = true;
  try {
    const out = await api("arm", { on: e.target.checked });
    S.armed = out.armed; S.armEpoch = Math.max(S.armEpoch, out.arm_epoch); $("drive-msg").textContent = out.armed ? "armed" : "disarmed";
    if (S.armed) sendDrive();     // at once: the deadman counts from the arm, not from the next 100 ms tick
  }
  catch (err) { S.armed = false; $("drive-msg").textContent = err.message; }
  finally { S.armPending = false; e.target.checked = S.armed; }
};
const pad = $("pad");
function padAt(ev) {
  const r = pad.getBoundingClientRect();
  const fx = Math.max(-1, Math.min(1, ((ev.clientX - r.left) / r.width) * 2 - 1));
  const fy = Math.max(-1, Math.min(1, 1 - ((ev.clientY - r.top) / r.height) * 2));
  S.pad.v = fy * Number($("drive-max").value);
  S.pad.w = -fx * Number($("drive-maxw").value);       // REP-103: left of centre turns counter-clockwise (+z)
  drawPad();
}
pad.onpointerdown = (ev) => { S.pad.held = true; pad.setPointerCapture(ev.pointerId); padAt(ev); };
pad.onpointermove = (ev) => { if (S.pad.held) padAt(ev); };
pad.onpointerup = pad.onpointercancel = () => { S.pad.held = false; S.pad.v = 0; S.pad.w = 0; drawPad(); };
function drawPad() {
  const g = pad.getContext("2d"), W = pad.width, H = pad.height;
  g.clearRect(0, 0, W, H); g.strokeStyle = "#ccd"; g.beginPath(); g.moveTo(W / 2, 0); g.lineTo(W / 2, H); g.moveTo(0, H / 2); g.lineTo(W, H / 2); g.stroke();
  const mv = Number($("drive-max").value) || 1, mw = Number($("drive-maxw").value) || 1;
  g.fillStyle = S.armed ? "#d62728" : "#999"; g.beginPath();
  g.arc(W / 2 - S.pad.w / mw * W / 2, H / 2 - S.pad.v / mv * H / 2, 10, 0, 2 * Math.PI); g.fill();
  axisLabels(pad, g);
}
setInterval(sendDrive, 100);
async function sendDrive() {
  if (!S.armed || !S.control) return;
  try { await api("drive", { v: S.pad.v, w: S.pad.w }); }
  catch (e) {
    // refused (the deadman ran out, a fault): the board is disarmed and this page says why; a request that was
    // still on its way when the page disarmed itself does not overwrite the page's own reason
    if (S.armed) { S.armed = false; $("arm").checked = false; $("drive-msg").textContent = e.message; }
  }
}
function disarmNow(why) {
  if (!S.armed) return;
  // the disarm the dashboard is about to count: a status written before it no longer re-arms this page
  S.armed = false; S.armEpoch += 1; $("arm").checked = false;
  api("arm", { on: false, why }, { keepalive: true }).catch(() => {});
  $("drive-msg").textContent = "disarmed: " + why;
}
document.addEventListener("visibilitychange", () => { if (document.hidden) disarmNow("the page went to the background"); });
window.addEventListener("pagehide", () => disarmNow("the page closed"));

function applyRole() {
  for (const el of document.querySelectorAll(".ctl")) el.disabled = !S.control;
  if (S.designed === null) $("design-apply").disabled = true;
}

async function main() {
  applyRole();      // nothing to press before the dashboard says whether this page controls (an early Arm was refused)
  if (!TOKEN) { banner("no token in this page's address: open the URL `viperdrive dashboard` printed", true); return; }
  try {
    const hello = await api("hello");
    S.session = hello.session;
    S.control = hello.role === "control";
    $("role").textContent = S.control ? "this page controls the board" : "read-only";
    if (!S.control) banner("Read-only: " + hello.why);
  } catch (e) { banner(e.message, true); return; }
  applyRole();
  connect();
  loadParams();
  drawPad();
  requestAnimationFrame(frame);
}
main();
