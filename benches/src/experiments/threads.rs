//! The thread-scaling experiment: `report -- threads [--threads 1,2,4]
//! [--quick] [--only ceiling,neighbors,bp,grid,kd,hhash,sph] [--out DIR]`.
//! `grid` (the sorted grid broad phase alone, a quick run of its scaling)
//! is also part of `bp`; a run without `--only` leaves it out.
//!
//! Every workload runs the same input at each thread count with the host's
//! executors ([`spatium_host::par::HostExec`]: serial for one thread, a
//! rayon pool otherwise) and, where a peer has a parallel mode, the peer on
//! a rayon pool of the same size, in the same run. Parallel work cannot be
//! timed in thread CPU time, so every figure here is a wall-clock median of
//! [`crate::measure::Repeat`] runs (steady state: the first run after a
//! build is discarded by the protocol's warm-up); the table gives the load
//! average with the provenance so that a figure taken on a busy machine is
//! read as such. The neighbour section times its thread counts in
//! interleaved rounds ([`Setup::interleaved`]); the others time one thread
//! count after another. Writes `THREADS_REPORT.md` (or prints with `--print`).

use core::fmt::Write as _;
use std::process::ExitCode;

/// One measured line: a workload at one thread count.
#[derive(Clone, Debug)]
pub struct ThreadRow {
    /// The structure or pass measured, e.g. `"pairs, cell-ordered"`.
    pub workload: String,
    /// Who: `"spatium"` or the peer's name (with its mode).
    pub who: String,
    /// Elements (particles, boxes).
    pub n: usize,
    /// Threads used.
    pub threads: usize,
    /// Wall-clock median, milliseconds.
    pub median_ms: f64,
    /// Runs in the median.
    pub runs: usize,
}

/// What a section needs: the thread counts, the size, and whether to run
/// the short version (CI smoke).
#[derive(Clone, Debug)]
pub struct Setup {
    /// Thread counts to measure, in order.
    pub threads: Vec<usize>,
    /// Problem size (each section scales it to its own element count).
    pub n: Option<usize>,
    /// Short runs (a smoke test, not a report).
    pub quick: bool,
}

impl Setup {
    /// Wall-clock median of `f` over the protocol's runs: one untimed
    /// warm-up, then at least 5 runs and 1 s (3 runs with `--quick`).
    pub fn wall_median(&self, mut f: impl FnMut()) -> (f64, usize) {
        f();
        let (min_runs, min_time) = if self.quick { (3, 0.0) } else { (5, 1.0) };
        let mut v = Vec::new();
        let start = std::time::Instant::now();
        while v.len() < min_runs || (start.elapsed().as_secs_f64() < min_time && v.len() < 50) {
            let (_, t) = crate::measure::time(&mut f);
            v.push(t.wall_ms());
        }
        (crate::measure::median(&v), v.len())
    }
}

impl Setup {
    /// Wall-clock medians of `f(k)` for each of `counts` thread counts
    /// (`k` indexes them), measured in interleaved rounds: one untimed
    /// warm-up of each, then rounds that time each once, in order, until
    /// there are at least 5 rounds (3 with `--quick`) and 1 s per thread
    /// count has passed (at most 50 rounds). A slow spell of a shared
    /// machine then falls on every thread count of the round alike.
    pub fn interleaved(&self, counts: usize, mut f: impl FnMut(usize)) -> Vec<(f64, usize)> {
        for k in 0..counts {
            f(k);
        }
        let (min_runs, min_time) = if self.quick { (3, 0.0) } else { (5, 1.0) };
        let mut v = vec![Vec::new(); counts];
        let start = std::time::Instant::now();
        let mut rounds = 0;
        while rounds < min_runs
            || (start.elapsed().as_secs_f64() < min_time * counts as f64 && rounds < 50)
        {
            for (k, times) in v.iter_mut().enumerate() {
                let (_, t) = crate::measure::time(|| f(k));
                times.push(t.wall_ms());
            }
            rounds += 1;
        }
        v.iter()
            .map(|x| (crate::measure::median(x), x.len()))
            .collect()
    }
}

/// A section: a name for `--only` and the function measuring it.
type Section = (&'static str, fn(&Setup) -> Vec<ThreadRow>);

/// Sections that a run without `--only` leaves out (they repeat a part of
/// another).
const ON_REQUEST: &[&str] = &["grid"];

/// The sections, in report order.
const SECTIONS: &[Section] = &[
    ("ceiling", super::threads_ceiling::rows),
    ("neighbors", super::threads_neighbors::rows),
    ("bp", super::threads_hhg::rows),
    ("grid", super::threads_hhg::grid_only),
    ("kd", super::threads_kd::kd_rows),
    ("hhash", super::threads_kd::hhash_rows),
    ("sph", super::threads_sph::rows),
];

/// Renders the rows as a table with each workload's speed-up over its own
/// one-thread figure.
pub fn table(rows: &[ThreadRow]) -> String {
    let mut s = String::from(
        "| workload | who | N | threads | median ms | speed-up vs 1 thread | runs |\n|---|---|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        // A variant of spatium ("spatium (…)") is compared with spatium's
        // own one-thread figure.
        let same = |b: &ThreadRow, who: &str| {
            b.workload == r.workload && b.who == who && b.n == r.n && b.threads == 1
        };
        let base = rows
            .iter()
            .find(|b| same(b, &r.who))
            .or_else(|| {
                r.who
                    .starts_with("spatium (")
                    .then(|| rows.iter().find(|b| same(b, "spatium")))
                    .flatten()
            })
            .map(|b| b.median_ms);
        let speedup = base.map_or("–".to_owned(), |b| format!("{:.2}×", b / r.median_ms));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.2} | {} | {} |",
            r.workload, r.who, r.n, r.threads, r.median_ms, speedup, r.runs
        );
    }
    s
}

/// `report -- threads [options]`.
pub fn main(args: &[String]) -> ExitCode {
    let opts = match super::check_args(
        args,
        &["--quick", "--print"],
        &["--threads", "--n", "--only", "--out"],
    ) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("threads: {e}");
            return ExitCode::FAILURE;
        }
    };
    let threads: Result<Vec<usize>, _> = opts
        .value("--threads")
        .unwrap_or("1,2")
        .split(',')
        .map(str::parse::<usize>)
        .collect();
    let threads = match threads {
        Ok(t) if !t.is_empty() && t.iter().all(|&x| x > 0) => t,
        _ => {
            eprintln!("threads: --threads takes a list of positive counts, e.g. 1,2,4");
            return ExitCode::FAILURE;
        }
    };
    let n = match opts.number("--n") {
        Ok(n) => n,
        Err(e) => {
            eprintln!("threads: {e}");
            return ExitCode::FAILURE;
        }
    };
    let only: Option<Vec<&str>> = opts.value("--only").map(|v| v.split(',').collect());
    if let Some(o) = &only
        && let Some(bad) = o.iter().find(|x| !SECTIONS.iter().any(|(s, _)| s == *x))
    {
        eprintln!("threads: unknown section {bad}");
        return ExitCode::FAILURE;
    }
    let setup = Setup {
        threads,
        n,
        quick: opts.flag("--quick"),
    };
    let mut prov = crate::provenance::Provenance::start();
    let mut body = String::new();
    for (name, section) in SECTIONS {
        // `grid` is a part of `bp`, run alone only when asked for.
        let wanted = match &only {
            Some(o) => o.contains(name),
            None => !ON_REQUEST.contains(name),
        };
        if !wanted {
            continue;
        }
        eprintln!("threads: {name}");
        let rows = section(&setup);
        let _ = writeln!(body, "## {name}\n\n{}", table(&rows));
        print!("{}", table(&rows));
    }
    prov.finish();
    let report = format!(
        "# Thread scaling\n\n{}\n\nWall-clock medians (one warm-up run, then at least 5 runs and 1 s; the neighbour and broad-phase sections time their thread counts in interleaved rounds, the others one count after another); speed-up is each line's one-thread median over its own.\n\n{body}",
        prov.markdown()
    );
    if opts.flag("--print") {
        println!("{report}");
        return ExitCode::SUCCESS;
    }
    let path = opts.out_dir().join("THREADS_REPORT.md");
    if let Err(e) = std::fs::write(&path, report) {
        eprintln!("threads: writing {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", path.display());
    ExitCode::SUCCESS
}
