//! The main job's scene (the unit box, the sphere field, the pipe, the
//! solver parameters), its PNG frames, its stage timer with the timing
//! table and CSV, and the timing plot: shared by the single-process main
//! job (`spatium-demo`) and the distributed one (`spatium-mpi`'s
//! `main_job` example), so both draw and report the same way.

/// `println!` that ignores a closed stdout (`spatium-demo | head`) instead
/// of panicking.
#[macro_export]
macro_rules! say {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `eprintln!` that ignores a closed stderr instead of panicking.
#[macro_export]
macro_rules! warn {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod plot;
pub mod render;
pub mod scene;
pub mod timing;
