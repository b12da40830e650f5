//! The reports, one module per experiment, run by the one report
//! generator:
//!
//! ```text
//! cargo run --release -p spatium-benches --bin report -- <experiment> [options]
//! cargo run --release -p spatium-benches --bin report -- all [--quick] [--out DIR]
//! ```
//!
//! | experiment | writes | options |
//! |---|---|---|
//! | [`neighbors`] | `REPORT.md`, `report.svg` | `--quick`, `--max-n N`, `--out DIR` |
//! | [`bp`] | `BP_REPORT.md`, `bp_report.svg` | `--quick`, `--max-n N`, `--out DIR` |
//! | [`kd`] | `KD_REPORT.md`, `kd_report.svg` | `--quick`, `--max-n N`, `--out DIR` |
//! | [`hhash`] | `HHASH_REPORT.md`, `hhash_*.svg` | `--quick`, `--only bp,nns,3d,len`, `--out DIR` |
//! | [`sph`] | `SPH_REPORT.md` | `--quick`, `--n N`, `--out DIR` |
//!
//! Without an experiment name (no argument, or options only) the generator
//! runs `neighbors`, as `--bin report` always did. Every experiment measures
//! with [`crate::measure`], prints [`crate::provenance`]'s block at the top
//! of its report, plots with [`crate::plot`] and takes its prose from
//! `benches/templates/` through [`crate::template`] where it has been moved
//! there (`neighbors`, `bp`, `sph`; `kd` and `hhash` still write theirs from
//! string literals). The old binaries (`bp_report`, `kd_report`,
//! `hhash_report`, `sph_report`) remain as aliases of `report -- <name>`.

use std::process::ExitCode;

pub mod bp;
pub mod hhash;
pub mod kd;
pub mod neighbors;
pub mod sph;

/// Every experiment, in the order `all` runs them.
pub const ALL: [&str; 5] = ["neighbors", "bp", "kd", "hhash", "sph"];

/// Runs experiment `name` with `args` (its options).
pub fn run(name: &str, args: &[String]) -> ExitCode {
    match name {
        "neighbors" => neighbors::main(args),
        "bp" => bp::main(args),
        "kd" => kd::main(args),
        "hhash" => hhash::main(args),
        "sph" => sph::main(args),
        other => {
            eprintln!("unknown experiment {other}; one of {}, all", ALL.join(", "));
            ExitCode::FAILURE
        }
    }
}

/// Checks `args` against the options an experiment takes: `flags` stand
/// alone, `valued` take the next argument. An unknown option is an error
/// (a typo must not start a full-size run).
pub(crate) fn check_args(args: &[String], flags: &[&str], valued: &[&str]) -> Result<(), String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if flags.contains(&a.as_str()) {
            continue;
        }
        if valued.contains(&a.as_str()) {
            if it.next().is_none() {
                return Err(format!("{a} needs a value"));
            }
            continue;
        }
        let mut all: Vec<&str> = flags.to_vec();
        all.extend(valued.iter().copied());
        return Err(format!(
            "unknown argument {a} (options: {})",
            all.join(", ")
        ));
    }
    Ok(())
}

/// The generator's command line: `[experiment | all] [options]`.
pub fn generator(args: &[String]) -> ExitCode {
    match args.first().map(String::as_str) {
        None => neighbors::main(&[]),
        Some(a) if a.starts_with('-') => neighbors::main(args),
        Some("all") => {
            // Only the options every experiment takes.
            let mut common = Vec::new();
            let mut it = args[1..].iter();
            while let Some(a) = it.next() {
                match a.as_str() {
                    "--quick" => common.push(a.clone()),
                    "--out" => {
                        common.push(a.clone());
                        common.extend(it.next().cloned());
                    }
                    other => {
                        eprintln!("`all` takes only --quick and --out DIR, not {other}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            for name in ALL {
                eprintln!("=== {name}");
                if run(name, &common) != ExitCode::SUCCESS {
                    eprintln!("=== {name} failed");
                    return ExitCode::FAILURE;
                }
            }
            ExitCode::SUCCESS
        }
        Some(name) => run(name, &args[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_are_checked() {
        let ok = strings(&["--quick", "--max-n", "100", "--out", "x"]);
        assert!(check_args(&ok, &["--quick"], &["--max-n", "--out"]).is_ok());
        let typo = strings(&["--quik"]);
        assert!(check_args(&typo, &["--quick"], &["--out"]).is_err());
        let missing = strings(&["--out"]);
        assert!(check_args(&missing, &["--quick"], &["--out"]).is_err());
    }
}
