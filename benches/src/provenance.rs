//! Where a report's figures come from, as one markdown block that every
//! report prints at its top ([`Provenance::markdown`]): the command, date,
//! machine (CPU model, logical CPUs, kernel), commit (flagged when the
//! measured code has uncommitted changes), load average at the start and
//! the end of the run, and how the benches were compiled ([`Build`]: the
//! `rustc -vV` release and LLVM version of the compiler cargo used, the
//! rustc flags, the profile's optimisation level and debug assertions, and
//! the target features enabled, which show a `-C target-cpu`).

use core::time::Duration;
use std::process::Command;
use std::time::Instant;

/// The benches crate's directory (git commands run from here).
pub const DIR: &str = env!("CARGO_MANIFEST_DIR");

/// The paths whose changes make a report's commit dirty: the measured code.
pub const MEASURED: [&str; 4] = ["../core", "../host", "../host-tests", "."];

/// Standard output of `cmd args`, trimmed; `None` if it cannot run or fails.
pub fn command_line(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The CPU model from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown CPU", str::trim)
        .to_owned()
}

/// Logical CPUs listed in `/proc/cpuinfo`.
pub fn logical_cpus() -> usize {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    info.lines().filter(|l| l.starts_with("processor")).count()
}

/// The 1, 5 and 15 minute load averages from `/proc/loadavg`, or `?`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "?".into())
}

/// Available memory from `/proc/meminfo`, GiB.
pub fn mem_available_gib() -> Option<f64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: f64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / (1024.0 * 1024.0))
}

/// The short commit hash, followed by `(… uncommitted changes under
/// <what>)` if any of `paths` (relative to [`DIR`]) differs from it;
/// `unknown (no git)` without git.
pub fn commit(paths: &[&str], what: &str) -> String {
    command_line("git", &["-C", DIR, "rev-parse", "--short", "HEAD"]).map_or_else(
        || "unknown (no git)".to_owned(),
        |c| {
            let mut args = vec!["-C", DIR, "status", "--porcelain", "--"];
            args.extend_from_slice(paths);
            let dirty = command_line("git", &args).is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{c} (with uncommitted changes under {what})")
            } else {
                c
            }
        },
    )
}

/// `name version` of a crate in the workspace's `Cargo.lock`: the newest
/// version locked, followed by any older ones linked by a dependency.
pub fn locked_version(name: &str) -> String {
    let lock = std::fs::read_to_string(format!("{DIR}/../Cargo.lock")).unwrap_or_default();
    let mut lines = lock.lines();
    let mut versions = Vec::new();
    let key = format!("name = \"{name}\"");
    while let Some(l) = lines.next() {
        if l == key
            && let Some(v) = lines.next().and_then(|v| v.strip_prefix("version = "))
        {
            versions.push(v.trim_matches('"').to_owned());
        }
    }
    versions.sort_by_key(|v| {
        v.split('.')
            .map(|x| x.parse::<u64>().unwrap_or(0))
            .collect::<Vec<_>>()
    });
    match versions.split_last() {
        Some((newest, [])) => newest.clone(),
        Some((newest, older)) => format!(
            "{newest} (also {} linked by a dependency)",
            older.join(", ")
        ),
        None => "?".to_owned(),
    }
}

/// How this binary was compiled, captured at compile time (see `build.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Build {
    /// First line of `rustc -vV` of the compiler cargo used.
    pub rustc: &'static str,
    /// LLVM version of that compiler.
    pub llvm: &'static str,
    /// The flags cargo passed to rustc (`RUSTFLAGS`, `build.rustflags`…),
    /// space-separated; empty for none.
    pub rustflags: &'static str,
    /// Cargo profile as build scripts see it (`release` or `debug`).
    pub profile: &'static str,
    /// `opt-level` of the profile.
    pub opt_level: &'static str,
    /// Whether debug assertions were on.
    pub debug_assertions: bool,
    /// Target triple.
    pub target: &'static str,
    /// Notable x86 target features enabled at compile time (`-C
    /// target-cpu=native` or `x86-64-v3` turns on `avx2`, `fma`, …).
    pub target_features: Vec<&'static str>,
}

impl Build {
    /// This binary's build.
    pub fn current() -> Self {
        let mut f = Vec::new();
        if cfg!(target_feature = "sse4.2") {
            f.push("sse4.2");
        }
        if cfg!(target_feature = "avx") {
            f.push("avx");
        }
        if cfg!(target_feature = "avx2") {
            f.push("avx2");
        }
        if cfg!(target_feature = "fma") {
            f.push("fma");
        }
        if cfg!(target_feature = "bmi2") {
            f.push("bmi2");
        }
        if cfg!(target_feature = "avx512f") {
            f.push("avx512f");
        }
        if cfg!(target_feature = "neon") {
            f.push("neon");
        }
        Self {
            rustc: option_env!("SPATIUM_BENCH_RUSTC").unwrap_or("unknown"),
            llvm: option_env!("SPATIUM_BENCH_LLVM").unwrap_or("unknown"),
            rustflags: option_env!("SPATIUM_BENCH_RUSTFLAGS").unwrap_or(""),
            profile: option_env!("SPATIUM_BENCH_PROFILE").unwrap_or("?"),
            opt_level: option_env!("SPATIUM_BENCH_OPT_LEVEL").unwrap_or("?"),
            debug_assertions: cfg!(debug_assertions),
            target: option_env!("SPATIUM_BENCH_TARGET").unwrap_or("?"),
            target_features: f,
        }
    }

    /// `-C target-cpu` as far as the enabled features tell: `x86-64-v3 or
    /// above` with AVX2 + FMA + BMI2, otherwise the baseline.
    pub fn target_cpu(&self) -> &'static str {
        let has = |x| self.target_features.contains(&x);
        if has("avx512f") {
            "x86-64-v4 or above (avx512f)"
        } else if has("avx2") && has("fma") && has("bmi2") {
            "x86-64-v3 or above (avx2, fma, bmi2)"
        } else {
            "baseline (no avx2)"
        }
    }
}

/// The provenance of one report run.
#[derive(Clone, Debug)]
pub struct Provenance {
    /// The command that produced the report.
    pub command: String,
    /// Start of the run, UTC.
    pub date: String,
    /// CPU model and logical CPUs.
    pub machine: String,
    /// `uname -srm`, if available.
    pub kernel: String,
    /// Commit, with the dirty flag.
    pub commit: String,
    /// Load averages (1, 5, 15 min) at the start.
    pub load_start: String,
    /// Load averages at the end ([`Provenance::finish`]).
    pub load_end: Option<String>,
    /// Wall-clock length of the run ([`Provenance::finish`]).
    pub elapsed: Option<Duration>,
    /// How the benches were compiled.
    pub build: Build,
    started: Instant,
}

impl Provenance {
    /// Taken when the run starts: the commit is dirty if the measured code
    /// ([`MEASURED`]: core/, host/, host-tests/, benches/) has uncommitted
    /// changes. The command is rebuilt from this process's arguments.
    pub fn start() -> Self {
        let mut args = std::env::args();
        let bin = args
            .next()
            .and_then(|a| {
                std::path::Path::new(&a)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "report".into());
        let rest: Vec<String> = args.collect();
        let release = if Build::current().profile == "debug" {
            ""
        } else {
            " --release"
        };
        let mut command = format!("cargo run{release} -p spatium-benches --bin {bin}");
        if !rest.is_empty() {
            command.push_str(" -- ");
            command.push_str(&rest.join(" "));
        }
        Self {
            command,
            date: command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
                .unwrap_or_else(|| "?".into()),
            machine: format!("{}, {} logical CPUs", cpu_model(), logical_cpus()),
            kernel: command_line("uname", &["-srm"]).unwrap_or_else(|| "?".into()),
            commit: commit(&MEASURED, "core/, host/, host-tests/ or benches/"),
            load_start: load_average(),
            load_end: None,
            elapsed: None,
            build: Build::current(),
            started: Instant::now(),
        }
    }

    /// Records the end of the run: the load average and the run time.
    pub fn finish(&mut self) {
        self.load_end = Some(load_average());
        self.elapsed = Some(self.started.elapsed());
    }

    /// Wall-clock time since [`Provenance::start`].
    pub fn running_for(&self) -> Duration {
        self.started.elapsed()
    }

    /// The markdown block every report prints at its top: a two-column
    /// table.
    pub fn markdown(&self) -> String {
        let b = &self.build;
        let flags = if b.rustflags.is_empty() {
            "none".to_owned()
        } else {
            format!("`{}`", b.rustflags)
        };
        let rows = [
            ("command", format!("`{}`", self.command)),
            ("date", self.date.clone()),
            ("machine", self.machine.clone()),
            ("kernel", self.kernel.clone()),
            ("commit", self.commit.clone()),
            (
                "load average (1, 5, 15 min)",
                format!(
                    "{} at start, {} at end",
                    self.load_start,
                    self.load_end.as_deref().unwrap_or("?")
                ),
            ),
            ("rustc", format!("{} (LLVM {})", b.rustc, b.llvm)),
            ("rustc flags", flags),
            (
                "profile",
                format!(
                    "{}, opt-level {}, debug assertions {}, target {}",
                    b.profile,
                    b.opt_level,
                    if b.debug_assertions { "on" } else { "off" },
                    b.target
                ),
            ),
            (
                "target cpu",
                format!(
                    "{}; features: {}",
                    b.target_cpu(),
                    if b.target_features.is_empty() {
                        "none of sse4.2/avx/avx2/fma/bmi2/avx512f".to_owned()
                    } else {
                        b.target_features.join(", ")
                    }
                ),
            ),
            (
                "run time",
                self.elapsed
                    .map_or("?".to_owned(), |d| format!("{:.0} s", d.as_secs_f64())),
            ),
        ];
        let mut s = String::from("| provenance | |\n|---|---|\n");
        for (k, v) in rows {
            s.push_str(&format!("| {k} | {} |\n", v.replace('|', "\\|")));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_names_every_field() {
        let mut p = Provenance::start();
        p.finish();
        let md = p.markdown();
        for k in [
            "command",
            "date",
            "machine",
            "kernel",
            "commit",
            "load",
            "rustc",
            "flags",
            "profile",
            "target cpu",
            "run time",
        ] {
            assert!(md.contains(k), "{k} missing from\n{md}");
        }
        assert!(p.load_end.is_some());
        assert!(!Build::current().rustc.is_empty());
    }
}
