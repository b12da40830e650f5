// spatium wasm demo: drives the wasm-bindgen module built by
// scripts/wasm.sh into ./pkg (wasm-bindgen --target web).
//
// Exposed for tests (tests/page.rs drives this page through WebDriver):
//   document.body.dataset.frames, document.title  — frames drawn so far
//   window.spatium.ready                           — true once the wasm is up
//   window.spatium.fixedRun(search, broad, particles, seed, cache, steps)
//   window.spatium.fixedExpected()                 — the fixed-seed fingerprint
//   window.spatium.error                           — last error message, or null
import init, {
  Demo, fixed_run, fixed_expected, row_names, domain_size, pipe_geometry, time_step, max_particles,
} from "./pkg/spatium_wasm.js";

const $ = (id) => document.getElementById(id);
const canvas = $("view");
const ctx = canvas.getContext("2d");
const status = $("status");

const api = { ready: false, error: null, demo: null };
window.spatium = api;
window.addEventListener("error", (e) => fail("uncaught", e.error || e.message));
window.addEventListener("unhandledrejection", (e) => fail("unhandled rejection", e.reason));

// Settings from the URL (?search=linked&broad=kdtree&particles=3000&seed=3&substeps=2&cache=0)
// override the controls' defaults.
const query = new URLSearchParams(location.search);
for (const id of ["search", "broad", "particles", "seed", "substeps"]) {
  if (query.has(id)) $(id).value = query.get(id);
}
if (query.has("cache")) $("cache").checked = query.get("cache") !== "0";

let demo = null;
let paused = false;
let frames = 0;
let obstacles = new Float32Array(0);
let radius = 0.00625;
let rows = [];
let sums = [];
let windowFrames = 0;
let windowStart = performance.now();
let drawMs = 0;

function setStatus(text, isError = false) {
  status.textContent = text;
  status.className = isError ? "error" : "";
}

function fail(what, e) {
  const msg = `${what}: ${e && e.message ? e.message : e}`;
  api.error = msg;
  setStatus(msg, true);
  paused = true;
  $("pause").textContent = "resume";
  console.error(msg);
}

function settings() {
  const particles = Math.max(100, Math.min(Number($("particles").max), Math.round(Number($("particles").value) || 1500)));
  $("particles").value = particles;
  const seed = Math.max(0, Math.min(4294967295, Math.round(Number($("seed").value) || 0)));
  $("seed").value = seed;
  return {
    search: $("search").value,
    broad: $("broad").value,
    particles,
    seed,
    cache: $("cache").checked,
    substeps: Number($("substeps").value),
  };
}

function restart() {
  const s = settings();
  try {
    if (demo) demo.free();
    demo = new Demo(s.search, s.broad, s.particles, s.seed, s.cache);
    api.demo = demo;
    api.error = null;
  } catch (e) {
    demo = null;
    fail("restart", e);
    return;
  }
  obstacles = demo.obstacles();
  radius = demo.particle_radius();
  sums = rows.map(() => 0);
  windowFrames = 0;
  windowStart = performance.now();
  setStatus(`${s.search} search · ${s.broad} broad phase · ${s.particles} particles · seed ${s.seed}` +
            (s.cache ? " · pair cache" : ""));
  if (paused) {
    paused = false;
    $("pause").textContent = "pause";
  }
}

// World (metres, y up) to canvas pixels.
let scale = 1, height = 1, timeStep = 0.0015, pipe = [0, 0, 0, -1, 0];

function draw() {
  const t0 = performance.now();
  const w = canvas.width, h = canvas.height;
  ctx.fillStyle = "#0b0e13";
  ctx.fillRect(0, 0, w, h);

  // Obstacles.
  ctx.fillStyle = "#5c6678";
  ctx.strokeStyle = "#8a95a8";
  ctx.lineWidth = 1;
  for (let k = 0; k < obstacles.length; k += 5) {
    ctx.beginPath();
    if (obstacles[k] === 0) {
      const x0 = obstacles[k + 1] * scale, y0 = (height - obstacles[k + 4]) * scale;
      const x1 = obstacles[k + 3] * scale, y1 = (height - obstacles[k + 2]) * scale;
      ctx.rect(x0, y0, x1 - x0, y1 - y0);
    } else {
      ctx.arc(obstacles[k + 1] * scale, (height - obstacles[k + 2]) * scale, obstacles[k + 3] * scale, 0, 2 * Math.PI);
    }
    ctx.fill();
    ctx.stroke();
  }

  // The pipe, from above the top wall down to its mouth.
  const [ox, oy, dx, dy, pr] = pipe;
  const len = Math.hypot(dx, dy);
  const back = dy < 0 ? (height + 0.05 - oy) / (-dy / len) : 0.1;
  ctx.strokeStyle = "#3b4556";
  ctx.lineWidth = 2 * (pr + radius) * scale;
  ctx.beginPath();
  ctx.moveTo((ox - back * dx / len) * scale, (height - (oy - back * dy / len)) * scale);
  ctx.lineTo((ox - 0.01 * dx / len) * scale, (height - (oy - 0.01 * dy / len)) * scale);
  ctx.stroke();

  // Particles, coloured by speed in 8 bands (one path per band).
  const pos = demo.positions();
  const speed = demo.speeds();
  const bands = 8, vmax = 3.0;
  const paths = Array.from({ length: bands }, () => new Path2D());
  const r = Math.max(1.5, radius * scale * 1.1);
  for (let i = 0; i < speed.length; i++) {
    const b = Math.min(bands - 1, Math.floor((speed[i] / vmax) * bands));
    const x = pos[2 * i] * scale, y = (height - pos[2 * i + 1]) * scale;
    paths[b].moveTo(x + r, y);
    paths[b].arc(x, y, r, 0, 2 * Math.PI);
  }
  for (let b = 0; b < bands; b++) {
    const t = b / (bands - 1);
    const red = Math.round(40 + 215 * t * t), green = Math.round(120 + 135 * t), blue = 255;
    ctx.fillStyle = `rgb(${red},${green},${blue})`;
    ctx.fill(paths[b]);
  }
  drawMs += performance.now() - t0;
}

function updatePanels(now) {
  $("s-frames").textContent = frames;
  const steps = demo.steps();
  $("s-steps").textContent = steps;
  $("s-time").textContent = `${(steps * timeStep).toFixed(3)} s`;
  $("s-particles").textContent = demo.particles();
  const pairs = demo.pairs();
  $("s-pairs").textContent = pairs >= 0 ? pairs : "– (no cache)";
  const dt = now - windowStart;
  if (dt < 500 || windowFrames === 0) return;
  $("s-fps").textContent = (1000 * windowFrames / dt).toFixed(1);
  const body = $("timings").tBodies[0];
  const per = sums.map((s) => s / windowFrames);
  const all = [...rows.map((name, k) => [name, per[k]]), ["draw (canvas)", drawMs / windowFrames]];
  const total = all.reduce((a, [, v]) => a + v, 0);
  const max = Math.max(1e-9, ...all.map(([, v]) => v));
  body.innerHTML = "";
  for (const [name, v] of all) {
    const tr = body.insertRow();
    tr.insertCell().textContent = name;
    tr.insertCell().textContent = v.toFixed(3);
    const bar = document.createElement("div");
    bar.className = "bar";
    bar.style.width = `${(100 * v / max).toFixed(1)}%`;
    tr.insertCell().appendChild(bar);
  }
  const tr = body.insertRow();
  tr.className = "total";
  tr.insertCell().textContent = "total";
  tr.insertCell().textContent = total.toFixed(3);
  tr.insertCell();
  sums = rows.map(() => 0);
  drawMs = 0;
  windowFrames = 0;
  windowStart = now;
}

function frame(now) {
  // Schedule the next frame first, so one failure cannot stop the loop.
  requestAnimationFrame(frame);
  if (demo && !paused) {
    try {
      demo.step(settings().substeps);
    } catch (e) {
      fail("step", e);
    }
    const t = demo.take_timings();
    for (let k = 0; k < sums.length; k++) sums[k] += t[k];
    draw();
    frames += 1;
    windowFrames += 1;
    document.body.dataset.frames = frames;
    document.title = `spatium wasm · frame ${frames}`;
    updatePanels(now);
  }
}

async function main() {
  try {
    await init();
  } catch (e) {
    fail("loading the wasm module (run scripts/wasm.sh to build www/pkg)", e);
    return;
  }
  rows = row_names().split("|");
  const [w, h] = domain_size();
  height = h;
  scale = canvas.width / w;
  timeStep = time_step();
  pipe = Array.from(pipe_geometry());
  $("particles").max = max_particles();
  canvas.height = Math.round(h * scale);
  api.fixedRun = (search, broad, particles, seed, cache, steps) =>
    fixed_run(search, broad, particles, seed, cache, steps);
  api.fixedExpected = () => fixed_expected();
  for (const id of ["search", "broad", "particles", "seed", "cache"]) {
    $(id).addEventListener("change", restart);
  }
  $("restart").addEventListener("click", restart);
  $("pause").addEventListener("click", () => {
    paused = !paused;
    $("pause").textContent = paused ? "resume" : "pause";
  });
  restart();
  api.ready = true;
  requestAnimationFrame(frame);
}

main();
