//! Puts `memory.x` on the linker's search path (for cortex-m-rt's `link.x`)
//! and adds the test-only linker scripts: embedded-test's test table and
//! defmt's string table.

use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    fs::write(out.join("memory.x"), include_bytes!("../memory.x")).expect("write memory.x");
    println!("cargo::rustc-link-search={}", out.display());
    println!("cargo::rerun-if-changed=../memory.x");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(rust_analyzer)");
    println!("cargo::rustc-link-arg-tests=-Tembedded-test.x");
    println!("cargo::rustc-link-arg-tests=-Tdefmt.x");
}
