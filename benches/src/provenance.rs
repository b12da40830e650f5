//! Where a report's figures come from: the commit (flagged when the measured
//! code has uncommitted changes), the CPU model and shell-command output.
//! Shared by the report binaries.

use std::process::Command;

/// The benches crate's directory (git commands run from here).
pub const DIR: &str = env!("CARGO_MANIFEST_DIR");

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
