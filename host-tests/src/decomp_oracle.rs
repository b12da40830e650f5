//! The brute-force judge of `spatium::decomp`, shared by the differential
//! test, the property test and the fuzz target. Every check returns a
//! description of the first broken invariant instead of panicking, so each
//! caller reports it its own way.
//!
//! The oracle knows only the subdomain boxes (not the cut tree) and the
//! documented rules: the owner of a position is the highest rank whose
//! closed box contains it; a ghost is an element (or periodic image,
//! shifted by `±(hi - lo)` of the domain along periodic axes) whose
//! distance to the rank's box is strictly below the radius, computed as
//! `Σ max(lo - q, q - hi, 0)²` in `f32`, minus the rank's own elements at
//! shift zero; weights balance within `2.3 δ` (`δ` the heaviest set of
//! elements sharing a coordinate on one axis).

use spatium::decomp::{Cut, Decomposition, Periodic};
use spatium::{BoundingBox, Error, Point, Validate};

/// A decomposition over `Vec`s.
pub type VecDecomposition<P> = Decomposition<P, Vec<<P as Point>::Aabb>, Vec<Cut>, Vec<f64>>;

/// The documented balance bound, in units of `δ` ([`tie_weight`]).
pub const BALANCE_BOUND: f64 = 2.3;

/// A decomposition with room for `ranks` ranks.
pub fn decomposition<P: Point>(ranks: usize) -> VecDecomposition<P> {
    Decomposition::new(
        vec![<P::Aabb as BoundingBox>::ZERO; ranks],
        vec![Cut::EMPTY; ranks.saturating_sub(1)],
        vec![0.0; ranks],
    )
}

/// The smallest box holding every point (the origin for none).
pub fn bounds<P: Point>(points: &[P]) -> P::Aabb {
    let mut lo = points.first().copied().unwrap_or(P::ZERO);
    let mut hi = lo;
    for &p in points {
        lo = lo.min(p);
        hi = hi.max(p);
    }
    P::Aabb::try_new(lo, hi).expect("finite points")
}

/// Closed containment.
pub fn contains<B: BoundingBox>(b: &B, x: B::Point) -> bool {
    (0..B::Point::DIM).all(|k| b.min().coord(k) <= x.coord(k) && x.coord(k) <= b.max().coord(k))
}

/// The highest rank whose closed box contains `x`.
pub fn brute_owner<B: BoundingBox>(boxes: &[B], x: B::Point) -> Option<u32> {
    boxes.iter().rposition(|b| contains(b, x)).map(|r| r as u32)
}

/// The heaviest weight of elements sharing one coordinate value on one axis.
pub fn tie_weight<P: Point>(points: &[P], weights: Option<&[f32]>) -> f64 {
    let w = |i: usize| weights.map_or(1.0, |w| f64::from(w[i]));
    let mut best = 0.0f64;
    for k in 0..P::DIM {
        let mut order: Vec<usize> = (0..points.len()).collect();
        order.sort_by(|&a, &b| points[a].coord(k).total_cmp(&points[b].coord(k)));
        let mut run = 0.0;
        for (j, &i) in order.iter().enumerate() {
            if j > 0 && points[order[j - 1]].coord(k) != points[i].coord(k) {
                run = 0.0;
            }
            run += w(i);
            best = best.max(run);
        }
    }
    best
}

fn volume<B: BoundingBox>(b: &B) -> f64 {
    (0..B::Point::DIM)
        .map(|k| f64::from(b.max().coord(k)) - f64::from(b.min().coord(k)))
        .product()
}

fn overlap_volume<B: BoundingBox>(a: &B, b: &B) -> f64 {
    (0..B::Point::DIM)
        .map(|k| {
            let lo = f64::from(a.min().coord(k)).max(f64::from(b.min().coord(k)));
            let hi = f64::from(a.max().coord(k)).min(f64::from(b.max().coord(k)));
            (hi - lo).max(0.0)
        })
        .product()
}

/// Checks a built decomposition of `domain` over `points` and `weights`:
/// `validate`, the boxes tile the domain (inside it, volumes sum to its
/// volume, interiors pairwise disjoint), every element is owned by exactly
/// the rank the oracle finds (`owner` and `assign` agree) and lies in its
/// box, the loads are the owned weights, and each load is within
/// [`BALANCE_BOUND`]` · δ` of its share. Returns the owners and the worst
/// `|load - share| / δ` (0 where `δ` is 0).
pub fn check_build<P: Point>(
    d: &VecDecomposition<P>,
    domain: &P::Aabb,
    ranks: usize,
    points: &[P],
    weights: Option<&[f32]>,
) -> Result<(Vec<u32>, f64), String> {
    d.validate().map_err(|e| e.to_string())?;
    if d.ranks() != ranks || d.domain() != *domain {
        return Err(format!("ranks {} / domain {:?}", d.ranks(), d.domain()));
    }
    let boxes = d.subdomains();
    let dom_vol = volume(domain);
    let mut sum = 0.0;
    for (r, b) in boxes.iter().enumerate() {
        if !contains(domain, b.min()) || !contains(domain, b.max()) {
            return Err(format!("box {r} {b:?} outside the domain"));
        }
        sum += volume(b);
        for (s, c) in boxes.iter().enumerate().skip(r + 1) {
            let o = overlap_volume(b, c);
            if o > 0.0 {
                return Err(format!("boxes {r} and {s} overlap by {o}"));
            }
        }
    }
    if (sum - dom_vol).abs() > 1e-9 * dom_vol.max(1e-30) {
        return Err(format!("volumes sum to {sum}, domain {dom_vol}"));
    }
    let mut owners = vec![0u32; points.len()];
    d.assign(points, &mut owners).map_err(|e| e.to_string())?;
    let mut loads = vec![0.0f64; ranks];
    for (i, &p) in points.iter().enumerate() {
        let want = brute_owner(boxes, p).ok_or(format!("element {i} {p:?} in no box"))?;
        let got = d.owner(p).map_err(|e| e.to_string())?;
        if got != want || owners[i] != want {
            return Err(format!(
                "element {i} {p:?}: owner {got}, assign {}, oracle {want}",
                owners[i]
            ));
        }
        loads[want as usize] += weights.map_or(1.0, |w| f64::from(w[i]));
    }
    let total: f64 = loads.iter().sum();
    let delta = tie_weight(points, weights);
    let mut worst = 0.0f64;
    for (r, (&got, &want)) in d.loads().iter().zip(&loads).enumerate() {
        if (got - want).abs() > 1e-9 * total.max(1.0) {
            return Err(format!("rank {r}: load {got}, owned weight {want}"));
        }
        let err = (got - total / ranks as f64).abs();
        if err > BALANCE_BOUND * delta + 1e-9 * total.max(1.0) {
            return Err(format!(
                "rank {r}: load {got}, share {}, δ {delta}",
                total / ranks as f64
            ));
        }
        if delta > 0.0 {
            worst = worst.max(err / delta);
        }
    }
    Ok((owners, worst))
}

/// The ghosts of `rank` by brute force: every element × every image ×
/// distance to the box, sorted by id and then shift bits.
pub fn brute_ghosts<P: Point>(
    domain: &P::Aabb,
    boxes: &[P::Aabb],
    rank: u32,
    points: &[P],
    radius: f32,
    periodic: Periodic,
) -> Vec<(u32, Vec<u32>)> {
    let own = boxes[rank as usize];
    let ext: Vec<f32> = (0..P::DIM)
        .map(|k| domain.max().coord(k) - domain.min().coord(k))
        .collect();
    let mut out = Vec::new();
    for (i, &p) in points.iter().enumerate() {
        let owner = brute_owner(boxes, p);
        // Every combination of -1, 0, +1 on each axis.
        for code in 0..3usize.pow(P::DIM as u32) {
            let digit = |k: usize| (code / 3usize.pow(k as u32)) % 3;
            if (0..P::DIM).any(|k| digit(k) != 1 && !periodic.is_periodic(k)) {
                continue;
            }
            let zero = (0..P::DIM).all(|k| digit(k) == 1);
            if zero && owner == Some(rank) {
                continue;
            }
            let shift = P::from_fn(|k| match digit(k) {
                0 => -ext[k],
                2 => ext[k],
                _ => 0.0,
            });
            let q = p + shift;
            let mut d2 = 0.0f32;
            for k in 0..P::DIM {
                let gap = (own.min().coord(k) - q.coord(k))
                    .max(q.coord(k) - own.max().coord(k))
                    .max(0.0);
                d2 += gap * gap;
            }
            if d2 < radius * radius {
                out.push((i as u32, shift_bits(shift)));
            }
        }
    }
    out.sort();
    out
}

fn shift_bits<P: Point>(s: P) -> Vec<u32> {
    (0..P::DIM).map(|k| s.coord(k).to_bits()).collect()
}

/// `for_each_ghost` of every rank equals [`brute_ghosts`] as a set (and has
/// no duplicates). Returns the number of ghosts over all ranks.
pub fn check_ghosts<P: Point>(
    d: &VecDecomposition<P>,
    points: &[P],
    radius: f32,
    periodic: Periodic,
) -> Result<usize, String> {
    let mut total = 0;
    for rank in 0..d.ranks() as u32 {
        let mut got = Vec::new();
        d.for_each_ghost(rank, points, radius, periodic, |id, s| {
            got.push((id, shift_bits(s)))
        })
        .map_err(|e| format!("rank {rank}: {e}"))?;
        let n = got.len();
        got.sort();
        got.dedup();
        if got.len() != n {
            return Err(format!("rank {rank}: duplicate ghosts"));
        }
        let want = brute_ghosts(&d.domain(), d.subdomains(), rank, points, radius, periodic);
        if got != want {
            let extra: Vec<_> = got.iter().filter(|g| !want.contains(g)).take(5).collect();
            let missing: Vec<_> = want.iter().filter(|g| !got.contains(g)).take(5).collect();
            return Err(format!(
                "rank {rank} radius {radius} {periodic:?}: {} ghosts, oracle {}; extra {extra:?}, missing {missing:?}",
                got.len(),
                want.len()
            ));
        }
        total += n;
    }
    Ok(total)
}

/// `for_each_migration` from `previous` to `moved` equals the brute-force
/// comparison of owners, in ascending id order, with the per-rank arrival
/// counts. Returns the number of migrations.
pub fn check_migration<P: Point>(
    d: &VecDecomposition<P>,
    previous: &[u32],
    moved: &[P],
) -> Result<usize, String> {
    let ranks = d.ranks();
    let mut want = Vec::new();
    let mut want_counts = vec![0u32; ranks + 1];
    for (i, (&from, &p)) in previous.iter().zip(moved).enumerate() {
        let to = brute_owner(d.subdomains(), p).ok_or(format!("element {i} in no box"))?;
        if to != from {
            want.push((i as u32, from, to));
            want_counts[to as usize] += 1;
        }
    }
    // One extra count entry, which must be left alone.
    want_counts[ranks] = 12345;
    let mut counts = vec![777u32; ranks + 1];
    counts[ranks] = 12345;
    let mut got = Vec::new();
    d.for_each_migration(previous, moved, &mut counts, |id, from, to| {
        got.push((id, from, to))
    })
    .map_err(|e| e.to_string())?;
    if got != want || counts != want_counts {
        return Err(format!(
            "migrations {} (counts {counts:?}), oracle {} (counts {want_counts:?})",
            got.len(),
            want.len()
        ));
    }
    Ok(got.len())
}

/// Positions moved by up to `step` per axis (from `rand`, in `[0, 1)`) and
/// clamped into the domain.
pub fn moved<P: Point>(
    domain: &P::Aabb,
    points: &[P],
    step: f32,
    mut rand: impl FnMut() -> f32,
) -> Vec<P> {
    points
        .iter()
        .map(|&p| {
            P::from_fn(|k| {
                let x = p.coord(k) + step * (2.0 * rand() - 1.0);
                x.clamp(domain.min().coord(k), domain.max().coord(k))
            })
        })
        .collect()
}

/// The refusals every caller can check: `Ok` if each bad input gives its
/// documented error.
pub fn check_refusals<P: Point>(d: &VecDecomposition<P>, points: &[P]) -> Result<(), Error> {
    let ranks = d.ranks() as u32;
    let bad = |r: Result<(), Error>, want: Error| {
        if r == Err(want) { Ok(()) } else { Err(want) }
    };
    bad(
        d.for_each_ghost(ranks, points, 1.0, Periodic::NONE, |_, _| {}),
        Error::InvalidConfig { field: "rank" },
    )?;
    bad(
        d.for_each_ghost(0, points, 0.0, Periodic::NONE, |_, _| {}),
        Error::InvalidRadius,
    )?;
    bad(
        d.for_each_ghost(0, points, f32::NAN, Periodic::NONE, |_, _| {}),
        Error::InvalidRadius,
    )?;
    let nan = vec![P::from_fn(|_| f32::NAN); 1];
    bad(
        d.for_each_ghost(0, &nan, 1.0, Periodic::NONE, |_, _| {}),
        Error::NonFinite,
    )?;
    bad(d.owner(nan[0]).map(|_| ()), Error::NonFinite)?;
    Ok(())
}
