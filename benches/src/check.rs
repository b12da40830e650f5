//! The sanity check run before any timing: every implementation must find
//! spatium's number of pairs, up to the pairs that lie on the radius.

use spatium::table::table_len;
use spatium::{NeighborSearch, Vec3};
use spatium_host::make;

use crate::TABLE_FACTOR;
use crate::runner::{Imp, Metric, Runner};
use crate::scene::Scene;

/// Relative width of the band around `r²` whose pairs the radius
/// conventions (`<` or `≤`) and the order of floating-point operations may
/// classify differently.
pub const BAND: f32 = 1e-6;

/// Relative tolerance on pair counts (0.01 %).
pub const REL_TOL: f64 = 1e-4;

/// spatium's answer on a scene, for both position sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reference {
    /// Pairs with `d² < r²` (spatium's convention).
    pub pairs: u64,
    /// Pairs with `d² == r²` exactly (an inclusive test adds these).
    pub at_r: u64,
    /// Pairs with `|d² − r²| ≤ BAND · r²`.
    pub band: u64,
    /// Pairs with `d² < r²` in the moved position set.
    pub moved_pairs: u64,
    /// Pairs within the band in the moved position set.
    pub moved_band: u64,
}

impl Reference {
    /// Counts with spatium's `CellSortedHash` (checked against brute force
    /// by the host tests).
    pub fn compute(scene: &Scene) -> Self {
        let (pairs, at_r, band) = counts(&scene.points, scene.radius);
        let (moved_pairs, _, moved_band) = counts(&scene.moved, scene.radius);
        Self {
            pairs,
            at_r,
            band,
            moved_pairs,
            moved_band,
        }
    }

    /// Mean number of neighbours per particle.
    pub fn neighbours_per_particle(&self, n: usize) -> f64 {
        2.0 * self.pairs as f64 / n as f64
    }
}

/// `(pairs with d² < r², pairs with d² == r², pairs in the band)`.
fn counts(points: &[Vec3], radius: f32) -> (u64, u64, u64) {
    let n = points.len();
    let r2 = radius * radius;
    let lo = r2 * (1.0 - BAND);
    let hi = r2 * (1.0 + BAND);
    let mut h = make::cell_sorted::<Vec3>(n, table_len(n, TABLE_FACTOR));
    // A slightly larger radius so that pairs just outside `r` are seen too.
    h.build(points, radius * (1.0 + 2.0 * BAND))
        .expect("reference build");
    let (mut pairs, mut at_r, mut band) = (0, 0, 0);
    h.for_each_pair(|_, _, d2| {
        pairs += u64::from(d2 < r2);
        at_r += u64::from(d2 == r2);
        band += u64::from(lo <= d2 && d2 <= hi);
    });
    (pairs, at_r, band)
}

/// Largest accepted difference from a reference pair count.
pub fn tolerance(pairs: u64, band: u64) -> u64 {
    band.max((pairs as f64 * REL_TOL).ceil() as u64)
}

/// Why an implementation was not timed on a scene.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// The implementation refused the scene (a documented limit, such as a
    /// full bucket); the message names the error.
    Refused(String),
    /// The implementation answered, but not spatium's count.
    Mismatch(String),
}

impl core::fmt::Display for CheckError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CheckError::Refused(m) => write!(f, "refused: {m}"),
            CheckError::Mismatch(m) => write!(f, "wrong answer: {m}"),
        }
    }
}

/// Creates `imp`'s runner for `scene`, runs it once (this also serves as
/// its warm-up) and compares its answer with `reference`.
///
/// # Errors
/// [`CheckError`], naming the implementation and the scene.
pub fn checked_runner(
    imp: Imp,
    scene: &Scene,
    reference: &Reference,
    metric: Metric,
) -> Result<Runner, CheckError> {
    let what = || format!("{imp} {metric} on {} N={}", scene.order, scene.n());
    let mut runner =
        Runner::new(imp, scene).map_err(|e| CheckError::Refused(format!("{}: {e}", what())))?;
    check_runner(&mut runner, scene, reference, metric)?;
    Ok(runner)
}

/// Runs `runner` once on `scene` (this also serves as its warm-up) and
/// compares its answer with `reference`. Returns the answer.
///
/// # Errors
/// [`CheckError`], naming the implementation, the expected and the found
/// count.
pub fn check_runner(
    runner: &mut Runner,
    scene: &Scene,
    reference: &Reference,
    metric: Metric,
) -> Result<u64, CheckError> {
    let moved = core::ptr::eq(runner.next_positions(scene).as_ptr(), scene.moved.as_ptr());
    let got = runner.run(scene, metric).map_err(|e| {
        CheckError::Refused(format!(
            "{} {metric} on {} N={}: {e}",
            runner.imp(),
            scene.order,
            scene.n()
        ))
    })?;
    let (pairs, band) = if moved {
        (reference.moved_pairs, reference.moved_band)
    } else {
        (reference.pairs, reference.band)
    };
    let per_pair = match metric {
        Metric::Pairs => 1,
        Metric::Csr | Metric::CsrSpatial => 2,
    };
    let expected = pairs * per_pair;
    let tol = tolerance(pairs, band) * per_pair;
    let exact = runner.imp() == Imp::Brute || runner.imp().is_spatium_hash();
    let ok = if exact {
        got == expected
    } else {
        got.abs_diff(expected) <= tol
    };
    if ok {
        Ok(got)
    } else {
        Err(CheckError::Mismatch(format!(
            "{} {} on {} N={}: found {got}, expected {expected} (tolerance {})",
            runner.imp(),
            metric,
            scene.order,
            scene.n(),
            if exact { 0 } else { tol },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::Order;

    /// Every implementation agrees with spatium on a small block, in both
    /// orders and for both metrics (keeps the peer glue honest in CI).
    #[test]
    fn all_implementations_agree_on_a_small_block() {
        for order in Order::ALL {
            let scene = Scene::new(9, order);
            let reference = Reference::compute(&scene);
            assert!(reference.pairs > 0);
            for metric in Metric::ALL {
                for imp in Imp::ALL {
                    if imp.measured(metric, scene.n()) {
                        let mut r = checked_runner(imp, &scene, &reference, metric)
                            .unwrap_or_else(|e| panic!("{e}"));
                        // A second run (linked-update moves back) agrees too.
                        check_runner(&mut r, &scene, &reference, metric)
                            .unwrap_or_else(|e| panic!("{e}"));
                    }
                }
            }
        }
    }
}
