//! Records how the benches crate was compiled, for the reports' provenance
//! block (`spatium_benches::provenance`): the flags cargo passed to rustc
//! (`CARGO_ENCODED_RUSTFLAGS`, which cargo sets for build scripts only),
//! the optimisation level and profile, and the compiler's `rustc -vV`.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTFLAGS");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS")
        .unwrap_or_default()
        .split('\u{1f}')
        .filter(|f| !f.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    println!("cargo:rustc-env=SPATIUM_BENCH_RUSTFLAGS={flags}");
    for (var, key) in [
        ("OPT_LEVEL", "SPATIUM_BENCH_OPT_LEVEL"),
        ("PROFILE", "SPATIUM_BENCH_PROFILE"),
        ("DEBUG", "SPATIUM_BENCH_DEBUG"),
        ("TARGET", "SPATIUM_BENCH_TARGET"),
    ] {
        let v = std::env::var(var).unwrap_or_else(|_| "?".to_owned());
        println!("cargo:rustc-env={key}={v}");
    }
    // The compiler cargo used (`RUSTC`), not whichever `rustc` is first on
    // the PATH when the report runs.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let vv = Command::new(rustc)
        .arg("-vV")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let release = vv
        .lines()
        .next()
        .filter(|l| !l.is_empty())
        .unwrap_or("unknown");
    let llvm = vv
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .unwrap_or("unknown");
    println!("cargo:rustc-env=SPATIUM_BENCH_RUSTC={release}");
    println!("cargo:rustc-env=SPATIUM_BENCH_LLVM={llvm}");
}
