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
//! | [`validation`] | `VALIDATION_REPORT.md`, `validation_*.svg` | `--quick`, `--out DIR` (not in `all`: slow) |
//! | [`threads`] | `THREADS_REPORT.md` | `--threads 1,2,4`, `--n N`, `--only SECTIONS`, `--quick`, `--print`, `--out DIR` |
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
pub mod threads;
pub mod threads_ceiling;
pub mod threads_hhg;
pub mod threads_kd;
pub mod threads_neighbors;
pub mod threads_sph;
pub mod validation;

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
        "threads" => threads::main(args),
        "validation" => validation::main(args),
        other => {
            eprintln!("unknown experiment {other}; one of {}, all", ALL.join(", "));
            ExitCode::FAILURE
        }
    }
}

/// An experiment's options, parsed once by [`check_args`].
#[derive(Debug, Default)]
pub(crate) struct Options {
    flags: Vec<String>,
    values: Vec<(String, String)>,
}

impl Options {
    /// Whether flag `name` was given.
    pub(crate) fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }

    /// The value of option `name` (the last one given).
    pub(crate) fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The number given to option `name`, if any.
    pub(crate) fn number(&self, name: &str) -> Result<Option<usize>, String> {
        self.value(name)
            .map(|v| v.parse::<usize>().map_err(|e| format!("{name} {v}: {e}")))
            .transpose()
    }

    /// The output directory: `--out DIR`, else the benches crate's.
    pub(crate) fn out_dir(&self) -> std::path::PathBuf {
        self.value("--out")
            .map_or_else(|| crate::provenance::DIR.into(), Into::into)
    }
}

/// Parses `args` against the options an experiment takes: `flags` stand
/// alone, `valued` take the next argument. An unknown option is an error
/// (a typo must not start a full-size run); `-h`/`--help` answers the usage.
pub(crate) fn check_args(
    args: &[String],
    flags: &[&str],
    valued: &[&str],
) -> Result<Options, String> {
    let mut all: Vec<&str> = flags.to_vec();
    all.extend(valued.iter().copied());
    let mut out = Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if flags.contains(&a.as_str()) {
            out.flags.push(a.clone());
        } else if valued.contains(&a.as_str()) {
            let v = it.next().ok_or_else(|| format!("{a} needs a value"))?;
            out.values.push((a.clone(), v.clone()));
        } else if a == "-h" || a == "--help" {
            return Err(format!("options: {}", all.join(", ")));
        } else {
            return Err(format!(
                "unknown argument {a} (options: {})",
                all.join(", ")
            ));
        }
    }
    Ok(out)
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
