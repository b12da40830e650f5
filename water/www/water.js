// The water channel page: starts the wasm module, checks for WebGPU
// (falling back to a plain message and a link to the CPU 2D page), runs the
// frame loop and wires the panels to the Rust side (src/web.rs).
// window.water is what the page test (tests/page.rs) reads and drives.
import init, { StartPanel, Water, fixedRun, fixedSteps, newChannel } from './pkg/spatium_water.js';

const page = { ready: false, error: null, supported: null, water: null, fps: 0, state: null };
window.water = page;

const $ = (id) => document.getElementById(id);
const canvas = $('view');

function fail(e) {
  page.error = String(e && e.message ? e.message : e);
  $('error').textContent = page.error;
  console.error(e);
}

function showOutputs() {
  for (const input of document.querySelectorAll('aside input[type=range], aside input[type=checkbox]')) {
    const out = input.parentElement.querySelector('output');
    if (out) out.textContent = input.type === 'checkbox' ? (input.checked ? 'on' : 'off') : input.value;
  }
}

function resizeCanvas() {
  const r = canvas.getBoundingClientRect();
  const w = Math.max(1, Math.round(r.width * (window.devicePixelRatio || 1)));
  const h = Math.max(1, Math.round(r.height * (window.devicePixelRatio || 1)));
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
    if (page.water) page.water.resize(w, h);
  }
}

// Sends every live control's value to a freshly created channel.
function applyLive() {
  for (const input of document.querySelectorAll('[id^=live-]')) {
    const name = input.id.slice(5);
    const value = input.type === 'checkbox' ? (input.checked ? 1 : 0) : Number(input.value);
    page.water.set_param(name, value);
  }
  page.water.set_gate(Number($('gate').value));
  page.water.set_paddle($('paddle').checked, Number($('paddle-amplitude').value));
}

// The start panel's values, checked by the Rust side.
function startPanel() {
  return new StartPanel(
    Number($('particles').value),
    Number($('spacing').value),
    Number($('dt').value),
    $('integrator').value,
    $('sort').value,
    $('start-mode').value,
    Number($('steps-per-frame').value),
  );
}

// The first start opens WebGPU on the canvas; a restart makes a new channel
// on the same device (the old one runs until the new one is ready).
async function start() {
  page.error = null;
  $('error').textContent = '';
  resizeCanvas();
  try {
    if (page.water) {
      const channel = await newChannel(page.water.device_handle(), startPanel());
      page.water.replace_channel(channel);
    } else {
      page.water = await Water.create(canvas, startPanel());
      $('adapter').textContent = page.water.adapter();
      $('software').hidden = !page.water.is_software();
    }
    applyLive();
  } catch (e) {
    fail(e);
  }
}

function showState() {
  const s = JSON.parse(page.water.state_json());
  page.state = s;
  $('count').textContent = s.particles;
  const rows = s.timing.available
    ? s.timing.stages.map(([name, ms]) => `<tr><td>${name}</td><td>${ms.toFixed(3)}</td></tr>`).join('') +
      `<tr><td><b>total</b></td><td><b>${s.timing.total.toFixed(3)}</b></td></tr>`
    : '<tr><td>no timestamp queries on this adapter</td><td></td></tr>';
  $('timings').tBodies[0].innerHTML = rows;
}

let frames = 0;
let fpsStart = performance.now();
let fpsFrames = 0;
function loop(now) {
  if (page.water && !page.error) {
    try {
      page.water.frame();
      frames += 1;
      fpsFrames += 1;
      document.body.dataset.frames = String(frames);
      if (frames % 10 === 0) showState();
    } catch (e) {
      fail(e);
    }
  }
  if (now - fpsStart >= 1000) {
    page.fps = (1000 * fpsFrames) / (now - fpsStart);
    $('fps').textContent = page.fps.toFixed(1);
    fpsStart = now;
    fpsFrames = 0;
  }
  requestAnimationFrame(loop);
}

function wire() {
  $('start-panel').addEventListener('submit', (e) => {
    e.preventDefault();
    start();
  });
  for (const input of document.querySelectorAll('[id^=live-]')) {
    input.addEventListener('input', () => {
      showOutputs();
      if (!page.water) return;
      const value = input.type === 'checkbox' ? (input.checked ? 1 : 0) : Number(input.value);
      try {
        page.water.set_param(input.id.slice(5), value);
      } catch (e) {
        fail(e);
      }
    });
  }
  $('gate').addEventListener('input', () => {
    showOutputs();
    if (page.water) page.water.set_gate(Number($('gate').value));
  });
  for (const id of ['paddle', 'paddle-amplitude']) {
    $(id).addEventListener('input', () => {
      showOutputs();
      if (page.water) page.water.set_paddle($('paddle').checked, Number($('paddle-amplitude').value));
    });
  }
  let drag = null;
  canvas.addEventListener('pointerdown', (e) => {
    drag = [e.clientX, e.clientY];
    try {
      canvas.setPointerCapture(e.pointerId);
    } catch (_) {
      // A synthetic pointer (the page test's) cannot be captured.
    }
  });
  canvas.addEventListener('pointermove', (e) => {
    if (!drag || !page.water) return;
    page.water.orbit((e.clientX - drag[0]) * 0.008, (e.clientY - drag[1]) * 0.008);
    drag = [e.clientX, e.clientY];
  });
  canvas.addEventListener('pointerup', () => { drag = null; });
  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    if (page.water) page.water.zoom(Math.exp(e.deltaY * 0.001));
  }, { passive: false });
  window.addEventListener('resize', resizeCanvas);
  showOutputs();
}

// The start panel's defaults from the address: ?particles=4096&spacing=0.02
// &dt=0.005&integrator=euler&sort=bitonic&start=block&steps=2
function prefill() {
  const q = new URLSearchParams(location.search);
  const ids = { particles: 'particles', spacing: 'spacing', dt: 'dt', integrator: 'integrator',
    sort: 'sort', start: 'start-mode', steps: 'steps-per-frame' };
  for (const [key, id] of Object.entries(ids)) {
    if (q.has(key)) $(id).value = q.get(key);
  }
}

async function main() {
  prefill();
  try {
    await init();
  } catch (e) {
    fail(e);
    return;
  }
  let adapter = null;
  if (navigator.gpu) {
    try {
      adapter = await navigator.gpu.requestAdapter();
    } catch (_) {
      adapter = null;
    }
  }
  page.supported = !!adapter;
  if (!adapter) {
    $('app').style.display = 'none';
    $('panels').style.display = 'none';
    $('nowebgpu').style.display = 'block';
    if (navigator.gpu) {
      $('nowebgpu-why').textContent +=
        ' (navigator.gpu exists, but it gave no adapter: WebGPU may be disabled or blocklisted for this GPU.)';
    }
    page.ready = true;
    return;
  }
  page.fixedRun = async (steps) => Array.from(await fixedRun(steps));
  page.fixedSteps = fixedSteps();
  wire();
  await start();
  requestAnimationFrame(loop);
  page.ready = true;
}

main();
