//! Drives the real page (`www/index.html` with the wasm-bindgen output in
//! `www/pkg`) in headless Chromium through chromedriver's WebDriver HTTP API
//! (plain HTTP/1.1 over `TcpStream`, JSON by `serde_json`), serving `www/`
//! with `python3 -m http.server`:
//!
//! * the page loads and its frame counter (`<body data-frames>`, also in
//!   the title) advances;
//! * its timing table fills with per-stage times;
//! * every neighbour search and broad phase can be picked with the page's
//!   controls and keeps the frames coming without an error;
//! * the page's fixed-seed runs (`window.spatium.fixedRun`, the wasm build)
//!   give the same fingerprints — pair count, pair checksum and state hash —
//!   as this native build computes here, for the fixed config and a few
//!   others.
//!
//! Ignored by default: it needs Chromium, chromedriver and a built `www/pkg`.
//! `scripts/wasm.sh` builds the page and runs it with `--ignored`.
//! Environment: `CHROMEDRIVER` (default `chromedriver`), `CHROME_BIN`
//! (default: `chromium`, `chromium-browser` or `google-chrome` on the
//! `PATH`), `SPATIUM_SCREENSHOT` (write a PNG of the page there).

#![cfg(not(target_arch = "wasm32"))]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use spatium_wasm::scene::{Config, FIXED_CONFIG, FIXED_EXPECTED, FIXED_STEPS, run};
use spatium_wasm::structures::{BroadKind, Named, SearchKind, kinds};

/// Chromium's flags for a headless run as root in a container.
const CHROME_ARGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--window-size=1400,860",
];

/// A child process killed when dropped.
struct Guard(Child, &'static str);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn wait_for_port(port: u16, what: &str, guard: &mut Guard) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = guard.0.try_wait() {
            panic!("{what} ({}) exited early: {status}", guard.1);
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{what} did not listen on {port}"
        );
        sleep(Duration::from_millis(50));
    }
}

/// One HTTP/1.1 request; returns status and body. The body is read by its
/// `Content-Length` (chromedriver may keep the connection open), by its
/// chunks, or to the end of the stream.
fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).ok();
    let body = body.unwrap_or("");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    let mut read = |raw: &mut Vec<u8>| -> bool {
        let n = s.read(&mut buf).expect("receive");
        raw.extend_from_slice(&buf[..n]);
        n > 0
    };
    let split = loop {
        if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        assert!(read(&mut raw), "connection closed inside the headers");
    };
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
    };
    let start = split + 4;
    let payload = if let Some(len) = header("content-length:") {
        let len: usize = len.parse().expect("content length");
        while raw.len() < start + len {
            assert!(read(&mut raw), "connection closed inside the body");
        }
        raw[start..start + len].to_vec()
    } else if header("transfer-encoding:").is_some_and(|v| v.contains("chunked")) {
        while !raw[start..].ends_with(b"0\r\n\r\n") {
            assert!(read(&mut raw), "connection closed inside the chunks");
        }
        dechunk(&raw[start..])
    } else {
        while read(&mut raw) {}
        raw[start..].to_vec()
    };
    (status, String::from_utf8(payload).expect("UTF-8 body"))
}

/// Decodes a chunked transfer encoding.
fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line = b.windows(2).position(|w| w == b"\r\n").expect("chunk size");
        let size_text = String::from_utf8_lossy(&b[..line]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .expect("hex chunk size");
        b = &b[line + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

/// A WebDriver session on a running chromedriver.
struct Session {
    port: u16,
    id: String,
}

impl Session {
    fn command(port: u16, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string());
        let (status, text) = http(port, method, path, body.as_deref());
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e}): {text}"));
        assert_eq!(status, 200, "{method} {path}: HTTP {status}: {v}");
        v["value"].clone()
    }

    fn new(port: u16, chrome: &Path) -> Self {
        let caps = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": chrome.to_string_lossy(),
                    "args": CHROME_ARGS,
                },
            }}
        });
        let v = Self::command(port, "POST", "/session", Some(caps));
        let id = v["sessionId"].as_str().expect("session id").to_string();
        Self { port, id }
    }

    fn call(&self, method: &str, what: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}/{what}", self.id);
        Self::command(self.port, method, &path, body)
    }

    /// Runs `script` (a function body) in the page; returns its value.
    fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
    }

    fn frames(&self) -> u64 {
        let v = self.js("return Number(document.body.dataset.frames);");
        v.as_f64().expect("frame count") as u64
    }

    fn error(&self) -> Value {
        self.js("return window.spatium ? window.spatium.error : 'no window.spatium';")
    }

    /// Asserts that frames advance over `wait` without an error; returns
    /// frames per second.
    fn assert_frames_advance(&self, wait: Duration, what: &str) -> f64 {
        let f1 = self.frames();
        let t = Instant::now();
        sleep(wait);
        let f2 = self.frames();
        let fps = (f2 - f1.min(f2)) as f64 / t.elapsed().as_secs_f64();
        assert_eq!(
            self.error(),
            Value::Null,
            "{what}: the page reported an error"
        );
        assert!(f2 > f1, "{what}: frames did not advance ({f1} then {f2})");
        fps
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = http(self.port, "DELETE", &format!("/session/{}", self.id), None);
    }
}

fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|n| {
        std::env::split_paths(&path)
            .map(|d| d.join(n))
            .find(|p| p.is_file())
    })
}

fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    for chunk in clean.chunks(4) {
        let data: Vec<u8> = chunk.iter().copied().filter(|&c| c != b'=').collect();
        let mut acc = 0u32;
        for (k, &c) in data.iter().enumerate() {
            acc |= value(c) << (18 - 6 * k);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..data.len()]);
    }
    out
}

/// The page's `fixedRun` call and the native fingerprint of the same run.
fn compare_fixed_run(session: &Session, c: Config, steps: u64) {
    let native = run(c, steps).expect("native run").to_string();
    let script = format!(
        "return window.spatium.fixedRun({:?}, {:?}, {}, {}, {}, {});",
        c.search.name(),
        c.broad.name(),
        c.particles,
        c.seed,
        c.pair_cache,
        steps
    );
    let page = session.js(&script);
    println!("page   {script}\n  -> {page}\nnative -> {native}");
    assert_eq!(page.as_str(), Some(native.as_str()), "{script}");
}

#[test]
#[ignore = "needs headless Chromium, chromedriver and the built page (www/pkg): scripts/wasm.sh runs it"]
fn page_runs_and_matches_the_native_build() {
    let www = Path::new(env!("CARGO_MANIFEST_DIR")).join("www");
    for f in [
        "index.html",
        "main.js",
        "pkg/spatium_wasm.js",
        "pkg/spatium_wasm_bg.wasm",
    ] {
        assert!(
            www.join(f).is_file(),
            "www/{f} is missing: build the page first (scripts/wasm.sh)"
        );
    }
    let chrome = std::env::var_os("CHROME_BIN")
        .map(PathBuf::from)
        .or_else(|| which(&["chromium", "chromium-browser", "google-chrome"]))
        .expect("no Chromium: set CHROME_BIN or install chromium");
    let driver = std::env::var_os("CHROMEDRIVER")
        .map(PathBuf::from)
        .or_else(|| which(&["chromedriver"]))
        .expect("no chromedriver: set CHROMEDRIVER or install chromium-driver");

    let web_port = free_port();
    let mut server = Guard(
        Command::new("python3")
            .args([
                "-m",
                "http.server",
                &web_port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .current_dir(&www)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m http.server"),
        "python3 -m http.server",
    );
    let wd_port = free_port();
    let mut chromedriver = Guard(
        Command::new(&driver)
            .arg(format!("--port={wd_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", driver.display())),
        "chromedriver",
    );
    wait_for_port(web_port, "the static server", &mut server);
    wait_for_port(wd_port, "chromedriver", &mut chromedriver);

    let session = Session::new(wd_port, &chrome);
    let url = format!("http://127.0.0.1:{web_port}/index.html");
    session.call("POST", "url", Some(json!({ "url": url })));
    let start = Instant::now();
    while session.js("return !!(window.spatium && window.spatium.ready);") != Value::Bool(true) {
        assert_eq!(session.error(), Value::Null, "the page failed to start");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the page never became ready"
        );
        sleep(Duration::from_millis(100));
    }

    // Frames advance, and the title follows.
    let fps = session.assert_frames_advance(Duration::from_millis(2000), "default scene");
    println!("default scene: {fps:.1} frames/s in headless Chromium");
    let title = session.js("return document.title;");
    assert!(
        title
            .as_str()
            .is_some_and(|t| t.starts_with("spatium wasm · frame ")),
        "{title}"
    );

    // The timing table: every stage row, a draw row and a total, with times.
    let rows = session.js(
        "return Array.from(document.querySelectorAll('#timings tbody tr'))\
         .map(r => [r.cells[0].textContent, Number(r.cells[1].textContent)]);",
    );
    let rows = rows.as_array().expect("timing rows").clone();
    println!("timings, ms per frame (4 steps):");
    for r in &rows {
        println!("  {:<26} {}", r[0].as_str().unwrap_or("?"), r[1]);
    }
    assert_eq!(rows.len(), spatium_wasm::timing::ROWS + 2, "{rows:?}");
    let total = rows.last().and_then(|r| r[1].as_f64()).expect("total");
    assert!(total > 0.0, "no time measured: {rows:?}");

    // Every structure through the page's controls.
    let pick = |id: &str, value: &str| {
        session.js(&format!(
            "const e = document.getElementById({id:?}); e.value = {value:?}; \
             e.dispatchEvent(new Event('change')); return e.value;"
        ))
    };
    assert_eq!(pick("particles", "800"), json!("800"));
    for kind in kinds::<SearchKind>() {
        assert_eq!(pick("search", kind.name()), json!(kind.name()));
        session.assert_frames_advance(Duration::from_millis(400), kind.name());
    }
    pick("search", "sorted");
    for kind in kinds::<BroadKind>() {
        assert_eq!(pick("broad", kind.name()), json!(kind.name()));
        session.assert_frames_advance(Duration::from_millis(400), kind.name());
    }
    let status = session.js("return document.getElementById('status').textContent;");
    assert!(
        status
            .as_str()
            .is_some_and(|s| s.contains("brute broad phase · 800 particles")),
        "{status}"
    );

    // The live scene itself, paused: its fingerprint after however many
    // steps it has taken equals a native run of as many steps.
    let paused = session.js("document.getElementById('pause').click(); \
         return [window.spatium.demo.steps(), window.spatium.demo.fingerprint()];");
    let steps = paused[0].as_f64().expect("steps") as u64;
    let live = Config {
        search: SearchKind::Sorted,
        broad: BroadKind::Brute,
        particles: 800,
        ..Config::DEFAULT
    };
    let native = run(live, steps).expect("native run").to_string();
    println!(
        "live page scene (paused) -> {}\nnative                    -> {native}",
        paused[1]
    );
    assert!(steps > 0);
    assert_eq!(paused[1].as_str(), Some(native.as_str()));
    session.js("document.getElementById('pause').click(); return null;");
    session.assert_frames_advance(Duration::from_millis(300), "resumed");

    // The fixed-seed run: page (wasm) against native, and the constant.
    assert_eq!(FIXED_EXPECTED.steps, FIXED_STEPS);
    compare_fixed_run(&session, FIXED_CONFIG, FIXED_STEPS);
    let expected = session.js("return window.spatium.fixedExpected();");
    assert_eq!(expected.as_str(), Some(FIXED_EXPECTED.to_string().as_str()));
    let others = [
        (SearchKind::Linked, BroadKind::KdTree, 1200, 3, false, 400),
        (
            SearchKind::Hierarchical,
            BroadKind::Multilevel,
            2500,
            11,
            true,
            300,
        ),
        (
            SearchKind::Bucketed,
            BroadKind::Hierarchical,
            4000,
            5,
            true,
            200,
        ),
        (SearchKind::Multilevel, BroadKind::Brute, 900, 0, true, 300),
    ];
    for (search, broad, particles, seed, pair_cache, steps) in others {
        let c = Config {
            search,
            broad,
            particles,
            seed,
            pair_cache,
            ..Config::DEFAULT
        };
        compare_fixed_run(&session, c, steps);
    }

    // A screenshot of the default scene after a few seconds of pouring.
    if let Some(path) = std::env::var_os("SPATIUM_SCREENSHOT") {
        // Back to the default scene, caught while the dam breaks and the
        // pipe pours (about 300 steps in).
        pick("broad", "hhg");
        pick("particles", "1500");
        sleep(Duration::from_millis(1300));
        session.assert_frames_advance(Duration::from_millis(300), "before the screenshot");
        let png = session.call("GET", "screenshot", None);
        let png = base64_decode(png.as_str().expect("base64 PNG"));
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
        std::fs::write(&path, &png).expect("write the screenshot");
        println!(
            "screenshot: {} ({} bytes)",
            Path::new(&path).display(),
            png.len()
        );
    }
    assert_eq!(session.error(), Value::Null);
}
