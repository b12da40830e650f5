//! Fuzzing of the domain decomposition (`spatium::decomp`), 2D or 3D.
//!
//! The input decodes (via `arbitrary`) into a domain (raw `f32` corners, or
//! the elements' bounding box with a margin), a rank count (`0..=48`, 0 and
//! more than the buffers' 40 refused), up to 64 elements (quarter-lattice
//! coordinates that coincide and sit on cuts and faces, or raw `f32` bits:
//! NaN, infinities, huge values), optional raw weights (negative, NaN,
//! huge, a length that may not match), a ghost query (rank, raw radius,
//! periodic mask) and per-element moves.
//!
//! Nothing may panic. A refused build must leave the previous
//! decomposition as it was. An accepted build is judged by
//! `spatium_host_tests::decomp_oracle` (the property test's judge): the
//! boxes tile the domain, every element is owned by exactly the oracle's
//! rank (the highest whose closed box holds it) and lies in its box, the
//! loads balance within `2.3 δ`. An accepted ghost query equals the
//! oracle's set; the migration lists after the moves equal the brute-force
//! comparison.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use spatium::decomp::Periodic;
use spatium::{BoundingBox, Point, Validate, Vec2, Vec3};
use spatium_host_tests::decomp_oracle::{
    bounds, brute_ghosts, check_build, check_migration, decomposition, moved,
};

/// Ranks the buffers hold.
const CAP: usize = 40;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Coord {
    /// `i / 4`, `i` in `-8..8`.
    Lattice(i8),
    /// Any `f32`.
    Raw(u32),
}

impl Coord {
    fn value(self) -> f32 {
        match self {
            Self::Lattice(i) => f32::from(i % 8) * 0.25,
            Self::Raw(b) => f32::from_bits(b),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Domain {
    Bounds { margin: u8 },
    Raw([u32; 3], [u32; 3]),
}

#[derive(Arbitrary, Debug)]
struct Input {
    three_d: bool,
    domain: Domain,
    ranks: u8,
    points: Vec<[Coord; 3]>,
    weights: Option<Vec<u32>>,
    ghost_rank: u8,
    radius: u32,
    periodic: u8,
    moves: Vec<u8>,
    /// Builds twice (the second over the moved elements) to check that a
    /// refused build keeps the first.
    second_ranks: u8,
}

fn run<P: Point>(input: &Input) {
    let pts: Vec<P> = input
        .points
        .iter()
        .take(64)
        .map(|c| P::from_fn(|k| c[k].value()))
        .collect();
    let finite = pts.iter().all(|p| p.is_finite());
    let domain = match input.domain {
        Domain::Bounds { margin } if finite => {
            let b = bounds(&pts);
            let m = f32::from(margin) * 0.125;
            P::Aabb::try_new(
                P::from_fn(|k| b.min().coord(k) - m),
                P::from_fn(|k| b.max().coord(k) + m),
            )
            .unwrap_or(P::Aabb::NAN)
        }
        Domain::Bounds { .. } => P::Aabb::ZERO,
        Domain::Raw(lo, hi) => P::Aabb::try_new(
            P::from_fn(|k| f32::from_bits(lo[k])),
            P::from_fn(|k| f32::from_bits(hi[k])),
        )
        .unwrap_or(P::Aabb::NAN),
    };
    let weights: Option<Vec<f32>> = input
        .weights
        .as_ref()
        .map(|w| w.iter().take(64).map(|&b| f32::from_bits(b)).collect());
    let w = weights.as_deref();
    let ranks = usize::from(input.ranks % 49);
    let mut d = decomposition::<P>(CAP);
    let mut scratch = vec![0u32; pts.len()];
    if d.build(domain, ranks, &pts, w, &mut scratch).is_err() {
        assert_eq!(d.ranks(), 0, "a refused first build changed the ranks");
        assert!(d.owner(P::ZERO).is_err());
        return;
    }
    let (owners, _) = check_build(&d, &domain, ranks, &pts, w).unwrap();

    // Ghosts of one rank, if the query is accepted.
    let rank = u32::from(input.ghost_rank) % (ranks as u32 + 1);
    let radius = f32::from_bits(input.radius);
    let periodic = Periodic::new(input.periodic);
    let mut got = Vec::new();
    let bits = |s: P| {
        (0..P::DIM)
            .map(|k| s.coord(k).to_bits())
            .collect::<Vec<_>>()
    };
    if d.for_each_ghost(rank, &pts, radius, periodic, |id, s| {
        got.push((id, bits(s)))
    })
    .is_ok()
    {
        got.sort();
        let want = brute_ghosts(&d.domain(), d.subdomains(), rank, &pts, radius, periodic);
        assert_eq!(got, want, "ghosts of rank {rank}");
    } else {
        assert!(got.is_empty(), "a refused ghost query called the visitor");
    }

    // Migration after moving every element by up to 1 per axis.
    let mut m = input.moves.iter().cycle();
    let next = moved(&domain, &pts, 1.0, || {
        m.next().map_or(0.5, |&b| f32::from(b) / 256.0)
    });
    if next.iter().all(|p| p.is_finite()) {
        check_migration(&d, &owners, &next).unwrap();
    }

    // A second build; a refused one keeps the first.
    let before: Vec<_> = d.subdomains().to_vec();
    let second = usize::from(input.second_ranks % 49);
    match d.build(domain, second, &next, None, &mut scratch) {
        Ok(()) => {
            check_build(&d, &domain, second, &next, None).unwrap();
        }
        Err(_) => {
            assert_eq!(d.subdomains(), &before[..]);
            d.validate().unwrap();
        }
    }
}

fuzz_target!(|input: Input| {
    if input.three_d {
        run::<Vec3>(&input);
    } else {
        run::<Vec2>(&input);
    }
});
