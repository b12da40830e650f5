//! The report generator: `report -- <neighbors|bp|kd|hhash|sph|all>
//! [options]`; see `spatium_benches::experiments`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    spatium_benches::experiments::generator(&args)
}
