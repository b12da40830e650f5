//! Alias of `report -- hhash` (kept for the commands in the README); see
//! `spatium_benches::experiments::hhash`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    spatium_benches::experiments::hhash::main(&args)
}
