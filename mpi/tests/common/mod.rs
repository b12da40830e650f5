//! The launcher shared by the MPI test binaries (`harness = false`): run by
//! `cargo test` (no MPI environment), a binary starts itself under
//! `mpirun -np N` for each N; started by `mpirun`, it runs its checks as one
//! rank.

use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Ranks each binary is run on.
pub const RANKS: [u32; 3] = [1, 2, 4];

/// Longest a run may take before it counts as hung.
const TIMEOUT: Duration = Duration::from_secs(400);

/// `true` when this process was started by `mpirun` (Open MPI sets
/// `OMPI_COMM_WORLD_SIZE`; MPICH and others `PMI_SIZE`).
pub fn under_mpirun() -> bool {
    std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() || std::env::var_os("PMI_SIZE").is_some()
}

/// Runs this binary under `mpirun -np N` for every N of [`RANKS`], prints
/// what each run printed, and fails if any run failed, hung or could not
/// start (a missing `mpirun` is a failure, never a skip).
pub fn launch(name: &str) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{name}: cannot find the test binary: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut failed = Vec::new();
    for np in RANKS {
        let started = Instant::now();
        match run(&exe, name, np) {
            Ok((true, output)) => {
                print!("{output}");
                println!(
                    "{name}: {np} rank(s) passed in {:.1} s",
                    started.elapsed().as_secs_f64()
                );
            }
            Ok((false, output)) => {
                print!("{output}");
                println!("{name}: {np} rank(s) FAILED");
                failed.push(np);
            }
            Err(e) => {
                println!("{name}: {np} rank(s) FAILED: {e}");
                failed.push(np);
            }
        }
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("{name}: failed on {failed:?} ranks");
        ExitCode::FAILURE
    }
}

/// Runs `exe` on `np` ranks with its output in a file (a pipe could fill
/// while nobody reads it); returns whether it succeeded and what it printed.
fn run(exe: &std::path::Path, name: &str, np: u32) -> Result<(bool, String), String> {
    let path = std::env::temp_dir().join(format!(
        "spatium-mpi-{name}-{}-np{np}.log",
        std::process::id()
    ));
    let log = std::fs::File::create(&path).map_err(|e| e.to_string())?;
    let log2 = log.try_clone().map_err(|e| e.to_string())?;
    let mut child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", &np.to_string()])
        .arg(exe)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .spawn()
        .map_err(|e| {
            format!(
                "cannot start mpirun ({e}): install Open MPI (apt-get install openmpi-bin libopenmpi-dev); this test never skips"
            )
        })?;
    let started = Instant::now();
    let success = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.success(),
            Ok(None) if started.elapsed() > TIMEOUT => {
                // SIGTERM first, so mpirun can stop its ranks.
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
                std::thread::sleep(Duration::from_secs(5));
                let _ = child.kill();
                let _ = child.wait();
                let output = std::fs::read_to_string(&path).unwrap_or_default();
                let _ = std::fs::remove_file(&path);
                return Err(format!(
                    "HUNG: killed after {} s\n{output}",
                    TIMEOUT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let output = std::fs::read_to_string(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    Ok((success, output))
}
