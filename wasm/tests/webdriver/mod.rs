//! A WebDriver client for chromedriver, enough to drive a page in headless
//! Chromium from a test: plain HTTP/1.1 over `TcpStream`, JSON by
//! `serde_json`, child processes killed when dropped. Shared by the 2D page
//! test (`wasm/tests/page.rs`) and the 3D water-channel page test
//! (`water/tests/page.rs`, which includes this file by path).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A child process killed when dropped.
pub struct Guard(pub Child, pub &'static str);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

pub fn wait_for_port(port: u16, what: &str, guard: &mut Guard) {
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
pub fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
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
pub struct Session {
    port: u16,
    id: String,
    /// The page's global object (`window.<global>`), whose `error` field
    /// holds the page's last error or `null`.
    global: &'static str,
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

    /// A session of `chrome` started with `args`, for a page whose global
    /// object is `window.<global>`.
    pub fn new(port: u16, chrome: &Path, args: &[&str], global: &'static str) -> Self {
        let caps = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": chrome.to_string_lossy(),
                    "args": args,
                },
            }}
        });
        let v = Self::command(port, "POST", "/session", Some(caps));
        let id = v["sessionId"].as_str().expect("session id").to_string();
        Self { port, id, global }
    }

    /// A command on this session.
    pub fn call(&self, method: &str, what: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}/{what}", self.id);
        Self::command(self.port, method, &path, body)
    }

    /// Runs `script` (a function body) in the page; returns its value.
    pub fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
    }

    /// The page's frame counter, `<body data-frames>`.
    pub fn frames(&self) -> u64 {
        let v = self.js("return Number(document.body.dataset.frames);");
        v.as_f64().expect("frame count") as u64
    }

    /// The page's reported error (`window.<global>.error`), `null` if none.
    pub fn error(&self) -> Value {
        let g = self.global;
        self.js(&format!(
            "return window.{g} ? window.{g}.error : 'no window.{g}';"
        ))
    }

    /// Runs `script` (a function body whose last argument,
    /// `arguments[arguments.length - 1]`, is the callback to call with the
    /// result) and waits up to `timeout` for it.
    pub fn js_async(&self, script: &str, timeout: Duration) -> Value {
        self.call(
            "POST",
            "timeouts",
            Some(json!({ "script": timeout.as_millis() as u64 })),
        );
        self.call(
            "POST",
            "execute/async",
            Some(json!({ "script": script, "args": [] })),
        )
    }

    /// Writes a PNG screenshot of the page to `path`.
    pub fn save_screenshot(&self, path: &Path) {
        let png = self.call("GET", "screenshot", None);
        let png = base64_decode(png.as_str().expect("base64 PNG"));
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
        std::fs::write(path, &png).expect("write the screenshot");
        println!("screenshot: {} ({} bytes)", path.display(), png.len());
    }

    /// Asserts that frames advance over `wait` without an error; returns
    /// frames per second.
    pub fn assert_frames_advance(&self, wait: Duration, what: &str) -> f64 {
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

pub fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|n| {
        std::env::split_paths(&path)
            .map(|d| d.join(n))
            .find(|p| p.is_file())
    })
}

pub fn base64_decode(s: &str) -> Vec<u8> {
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

/// A static file server on `root` and a chromedriver, both on free ports,
/// killed when dropped.
pub struct Harness {
    /// The static server's port.
    pub web_port: u16,
    /// chromedriver's port.
    pub wd_port: u16,
    /// The browser binary.
    pub chrome: PathBuf,
    _server: Guard,
    _driver: Guard,
}

impl Harness {
    /// Serves `root` with `python3 -m http.server` and starts chromedriver
    /// (`CHROME_BIN` / `CHROMEDRIVER`, else found on the `PATH`).
    pub fn start(root: &Path) -> Self {
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
                .current_dir(root)
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
        Self {
            web_port,
            wd_port,
            chrome,
            _server: server,
            _driver: chromedriver,
        }
    }

    /// A browser session started with `args`, opened at `path` of the
    /// static server, for a page whose global is `window.<global>`.
    pub fn open(&self, args: &[&str], global: &'static str, path: &str) -> Session {
        let session = Session::new(self.wd_port, &self.chrome, args, global);
        let url = format!("http://127.0.0.1:{}/{path}", self.web_port);
        session.call("POST", "url", Some(json!({ "url": url })));
        session
    }

    /// Waits up to `limit` for `condition` (a script returning a boolean)
    /// while the page reports no error.
    pub fn wait_for(session: &Session, condition: &str, limit: Duration, what: &str) {
        let start = Instant::now();
        loop {
            let met = session.js(&format!("return !!({condition});")) == Value::Bool(true);
            assert_eq!(
                session.error(),
                Value::Null,
                "{what}: the page reported an error"
            );
            if met {
                return;
            }
            assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
            sleep(Duration::from_millis(100));
        }
    }
}
