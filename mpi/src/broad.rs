//! A broad phase over boxes spread over the ranks ([`DistBoxes`]): each
//! rank owns the boxes whose centres lie in its subdomain, receives the
//! boxes of other ranks that may overlap one of its own, runs any local
//! [`BroadPhase`] over both, and reports each overlapping pair of the whole
//! job **exactly once**, on one rank.
//!
//! # Ownership
//!
//! Every box has a global id (`u32`, the order in which it was added on any
//! rank) and is owned by the rank whose subdomain owns the box's centre
//! (the decomposition's half-open rule, [`spatium::decomp`]: every point of
//! the domain has exactly one owner). The centre is computed as
//! `0.5·min + 0.5·max` per axis, the same on every rank. After the caller
//! moves its boxes ([`DistBoxes::update`]) each box migrates to the owner
//! of its new centre, and the subdomains are rebuilt from the centres when
//! the ranks' counts drift apart ([`Balance`]).
//!
//! # Ghosts
//!
//! Let `e` be the largest half-extent of any box on any rank along any axis
//! (one reduction per detection). Two closed boxes `a` and `b` that overlap
//! have centres within `e_a + e_b <= 2e` of each other along every axis,
//! so within Euclidean distance `2e·√D`. If rank `r` owns `a`, `a`'s centre
//! lies in `r`'s subdomain, so `b`'s centre is within `2e·√D` of that
//! subdomain. Each rank therefore sends each of its boxes to every other
//! rank whose subdomain is within that radius of the box's centre
//! ([`Decomposition::for_each_ghost`](spatium::decomp::Decomposition::for_each_ghost)),
//! with a margin for the rounding of the centres (a few units in the last
//! place of the domain's largest coordinate) and of the distance test
//! (`1e-4` relative). When every box is a point (`e == 0`), the radius is a
//! tiny positive value: two points overlap only when equal, and the other
//! point then lies in the owner's closed subdomain, at distance `0`.
//! A radius too large for the `f32` distance test (above `1e18`) sends
//! every box to every rank.
//!
//! # Each pair once
//!
//! A rank puts its owned boxes and the ghosts it received into the
//! caller's local broad phase and enumerates its overlaps. For an
//! overlapping pair with global ids `a < b`, the rank that owns `a` holds
//! `b` (owned or as a ghost, by the rule above) and so finds the pair; it
//! reports it, and every other rank that finds it (one holding both as
//! ghosts, or owning `b` with `a` as a ghost) does not, because it does not
//! own `a`. Each box has exactly one owner, so each pair is reported on
//! exactly one rank, pairs whose boxes live on different ranks included.
//! Extra ghosts (the radius is conservative) cost work, never duplicates.
//!
//! # Memory
//!
//! Per owned box: its id and box, `4 + 4·2D` bytes (`28` in 3D, `20` in
//! 2D), in a `Vec`. A detection also holds the centres of the owned boxes
//! (`4D` bytes each), the ghost records received (`28` or `20` bytes
//! each), the global id of every local box (`4` bytes), the pairs found
//! before they are handed to the caller (`8` bytes each) and whatever the
//! caller's local broad phase stores for owned and ghost boxes. The
//! subdomains take `40R − 8` bytes (3D) on every rank; a rebuild gathers
//! every centre on every rank (`4DN` bytes).
//!
//! # Cost
//!
//! With `n` boxes owned, `g` ghosts received and `R` ranks, a detection
//! costs `O(n (R + log R) D)` to select the ghosts (one
//! [`for_each_ghost`](spatium::decomp::Decomposition::for_each_ghost) per
//! other rank), one reduction, one all-to-all exchange of the ghost
//! records, and the local broad phase's insertion and detection over
//! `n + g` boxes. An [`update`](DistBoxes::update) costs `O(n log R)` for
//! the owners, one error agreement, one all-to-all exchange of the boxes
//! that change owner, and an all-gather of the counts (plus, when due, the
//! rebuild's all-gather of every centre and a second migration).

use spatium::decomp::Periodic;
use spatium::{BoundingBox, BroadPhase, Error, Point};

use crate::comm::{Ranks, Traffic, sent_bytes};
use crate::domain::{
    Balance, Subdomains, Words, from_words, gather_all, rebuild_and_migrate, settle, words_of,
};
use crate::error::DistError;

/// Radii at or above this send every box to every rank: the `f32`
/// squared-distance test of the ghost selection loses its meaning when
/// the radius squared approaches `f32::MAX`.
const RADIUS_ALL: f32 = 1e18;

/// The smallest ghost radius: its square (`1e-36`) is a normal `f32`, so a
/// point at distance zero from a subdomain is always within it.
const RADIUS_TINY: f32 = 1e-18;

/// A maker of a local broad phase for the given boxes.
type Make<'a, B, L> = &'a mut dyn FnMut(&[B]) -> Result<L, Error>;

/// One box with its global id.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OwnedBox<B> {
    /// Global id: the order in which the box was added, on any rank.
    pub id: u32,
    /// The box.
    pub aabb: B,
}

impl<B: BoundingBox> Words for OwnedBox<B> {
    fn words() -> usize {
        1 + size_of::<B>() / 4
    }
    fn write(&self, out: &mut Vec<u32>) {
        out.push(self.id);
        out.extend_from_slice(words_of(&self.aabb));
    }
    fn read(w: &[u32]) -> Self {
        Self {
            id: w.first().copied().unwrap_or(u32::MAX),
            aabb: from_words(w.get(1..).unwrap_or(&[])),
        }
    }
}

/// What one distributed detection did on this rank.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PairReport {
    /// Boxes this rank owned.
    pub owned: usize,
    /// Ghost boxes it received from other ranks.
    pub ghosts: usize,
    /// Pairs reported on this rank (each pair of the job is reported on
    /// exactly one rank).
    pub pairs: usize,
    /// The ghost radius used (distance from a subdomain to a ghost's
    /// centre; `f32::INFINITY` when every box went to every rank).
    pub radius: f32,
    /// Bytes of ghost records this rank sent.
    pub ghost_bytes: u64,
    /// Communication of the whole detection.
    pub traffic: Traffic,
}

/// What one [`DistBoxes::update`] did on this rank.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateReport {
    /// Boxes that left this rank (both migrations, when rebalanced).
    pub migrated: usize,
    /// Every rank's owned count after the update, by rank.
    pub counts: Vec<u64>,
    /// Whether the subdomains were rebuilt.
    pub rebalanced: bool,
    /// Communication of the whole update.
    pub traffic: Traffic,
}

/// Boxes spread over the ranks of a communicator, each owned by the rank
/// whose subdomain owns its centre; see [the module](self) for the ghost
/// rule and why each overlapping pair is reported once. Every method taking
/// a [`Ranks`] is collective (see [`crate::comm`]): every rank calls it, in
/// the same order, and a failure on any rank is returned as the same
/// [`DistError`] on every rank.
///
/// Memory per rank: `4 + 8D` bytes per owned box, plus the subdomains
/// (see [the module](self)).
pub struct DistBoxes<B: BoundingBox> {
    sub: Subdomains<B::Point>,
    owned: Vec<OwnedBox<B>>,
    total: u32,
}

/// `0.5·min + 0.5·max` per axis: finite for every finite box.
fn centre<B: BoundingBox>(b: &B) -> B::Point {
    let (lo, hi) = (b.min(), b.max());
    B::Point::from_fn(|k| 0.5 * lo.coord(k) + 0.5 * hi.coord(k))
}

/// The largest half-extent of `b` over its axes (finite for finite boxes).
fn half_extent<B: BoundingBox>(b: &B) -> f32 {
    let (lo, hi) = (b.min(), b.max());
    (0..B::Point::DIM)
        .map(|k| 0.5 * hi.coord(k) - 0.5 * lo.coord(k))
        .fold(0.0f32, f32::max)
}

/// `b` valid, with its centre inside `domain` (closed).
fn check_box<B: BoundingBox>(b: &B, domain: &B) -> Result<(), Error> {
    b.check()?;
    let c = centre(b);
    let (lo, hi) = (domain.min(), domain.max());
    for k in 0..B::Point::DIM {
        if c.coord(k) < lo.coord(k) || c.coord(k) > hi.coord(k) {
            return Err(Error::OutOfRange);
        }
    }
    Ok(())
}

impl<B: BoundingBox> DistBoxes<B> {
    /// Collective: no boxes, over `domain` (which must contain every box
    /// centre ever added), cut into one subdomain per rank and rebalanced
    /// by `balance`.
    ///
    /// # Errors
    /// The domain box's error (not finite, inverted), on every rank.
    pub fn new(ranks: &mut Ranks, domain: B, balance: Balance) -> Result<Self, DistError> {
        ranks.agree(domain.check())?;
        let sub = Subdomains::new(ranks, domain, balance)?;
        Ok(Self {
            sub,
            owned: Vec::new(),
            total: 0,
        })
    }

    /// The boxes this rank owns, by ascending global id.
    pub fn owned(&self) -> &[OwnedBox<B>] {
        &self.owned
    }

    /// Boxes on all ranks.
    pub fn total(&self) -> u32 {
        self.total
    }

    /// The subdomains (the same on every rank).
    pub fn subdomains(&self) -> &Subdomains<B::Point> {
        &self.sub
    }

    /// Collective: adds `boxes`; every rank must pass the same list, and
    /// each keeps the boxes whose centres its subdomain owns. Ids are given
    /// in the list's order from [`total`](Self::total) on. The first boxes
    /// added also build the subdomains from their centres (balanced by
    /// count). Returns how many were added in all.
    ///
    /// # Errors
    /// A box not finite or inverted, a centre outside the domain, or more
    /// than `u32::MAX` boxes in all, on any rank: nothing is added on any
    /// rank.
    pub fn insert_all(&mut self, ranks: &mut Ranks, boxes: &[B]) -> Result<usize, DistError> {
        let me = ranks.rank();
        let domain = self.sub.domain();
        let checked = boxes
            .iter()
            .try_for_each(|b| check_box(b, &domain))
            .and_then(|()| {
                u32::try_from(self.total as usize + boxes.len())
                    .map(|_| ())
                    .map_err(|_| Error::CapacityExceeded {
                        capacity: u32::MAX as usize,
                    })
            })
            .and_then(|()| {
                self.sub
                    .owners(&boxes.iter().map(centre).collect::<Vec<_>>())
            });
        let owners = ranks.agree(checked)?;
        let first = self.total;
        for (k, (b, o)) in boxes.iter().zip(&owners).enumerate() {
            if *o == me {
                // Checked above: `first + boxes.len()` fits a `u32`.
                self.owned.push(OwnedBox {
                    id: first + k as u32,
                    aabb: *b,
                });
            }
        }
        self.total += boxes.len() as u32;
        if self.sub.rebuilds() == 0 && self.total > 0 {
            self.rebalance(ranks)?;
        }
        Ok(boxes.len())
    }

    /// Collective: `f(id, &mut aabb)` on each box this rank owns (in
    /// ascending id; e.g. to move it), then every box moves to the owner of
    /// its new centre, and the load check ([`Subdomains::check`]) rebuilds
    /// the subdomains from the centres when due.
    ///
    /// # Errors
    /// A changed box not finite or inverted, or its centre outside the
    /// domain, on any rank: no box changes on any rank. A message too large
    /// for MPI (the boxes are then as before the update).
    pub fn update(
        &mut self,
        ranks: &mut Ranks,
        mut f: impl FnMut(u32, &mut B),
    ) -> Result<UpdateReport, DistError> {
        let traffic0 = ranks.traffic();
        let domain = self.sub.domain();
        let mut moved = self.owned.clone();
        let checked = moved.iter_mut().try_for_each(|q| {
            f(q.id, &mut q.aabb);
            check_box(&q.aabb, &domain).map_err(|e| format!("box {}: {e}", q.id))
        });
        ranks.agree(checked)?;
        let s = settle(ranks, &mut self.sub, moved, |q| centre(&q.aabb), |q| q.id)?;
        self.owned = s.items;
        Ok(UpdateReport {
            migrated: s.migrated,
            counts: s.counts,
            rebalanced: s.rebalanced,
            traffic: ranks.traffic().since(traffic0),
        })
    }

    /// Collective: rebuilds the subdomains from every rank's box centres
    /// (balanced by count) and moves the boxes to their new owners; returns
    /// how many left this rank.
    ///
    /// # Errors
    /// As [`Subdomains::rebuild`]; a message too large for MPI.
    pub fn rebalance(&mut self, ranks: &mut Ranks) -> Result<usize, DistError> {
        let items = self.owned.clone();
        let (owned, left) =
            rebuild_and_migrate(ranks, &mut self.sub, items, |q| centre(&q.aabb), |q| q.id)?;
        self.owned = owned;
        Ok(left)
    }

    /// Collective: every rank's boxes on every rank, by ascending id (for
    /// checks and output; `O(N)` bytes to every rank).
    ///
    /// # Errors
    /// A message too large for MPI.
    pub fn gather(&self, ranks: &mut Ranks) -> Result<Vec<OwnedBox<B>>, DistError> {
        gather_all(ranks, &self.owned, |q| q.id)
    }

    /// Collective: calls `f(a, b)` (global ids, `a < b`) for every
    /// overlapping pair of boxes (closed boxes: touching boxes overlap)
    /// whose smaller id this rank owns; over all ranks, every overlapping
    /// pair of the job is reported exactly once (see [the module](self)).
    /// `local` is cleared and filled with this rank's owned and ghost boxes
    /// under local ids `0..owned + ghosts`, so its
    /// [`capacity`](BroadPhase::capacity) must be at least that (the
    /// job's total is always enough); see
    /// [`for_each_pair_with`](Self::for_each_pair_with) to grow it instead.
    /// `f` is called only when every rank's detection succeeded.
    ///
    /// # Errors
    /// `local` too small or failing (its insertion or detection errors),
    /// a message too large for MPI, on any rank.
    pub fn for_each_pair<L: BroadPhase<B>>(
        &mut self,
        ranks: &mut Ranks,
        local: &mut L,
        f: impl FnMut(u32, u32),
    ) -> Result<PairReport, DistError> {
        self.detect(ranks, local, None, f)
    }

    /// Collective: as [`for_each_pair`](Self::for_each_pair), but when
    /// `local` holds fewer ids than this rank's owned and ghost boxes, it
    /// is replaced by `make(boxes)`, with `boxes` the boxes it will hold
    /// (local id `i` is `boxes[i]`).
    ///
    /// # Errors
    /// As [`for_each_pair`](Self::for_each_pair); `make`'s error.
    pub fn for_each_pair_with<L: BroadPhase<B>>(
        &mut self,
        ranks: &mut Ranks,
        local: &mut L,
        mut make: impl FnMut(&[B]) -> Result<L, Error>,
        f: impl FnMut(u32, u32),
    ) -> Result<PairReport, DistError> {
        self.detect(ranks, local, Some(&mut make), f)
    }

    /// The ghost radius for the largest half-extent `e` (see [the
    /// module](self)), or `None` to send every box to every rank.
    fn radius(&self, e: f32) -> Option<f32> {
        let domain = self.sub.domain();
        let (lo, hi) = (domain.min(), domain.max());
        let big = (0..B::Point::DIM)
            .map(|k| lo.coord(k).abs().max(hi.coord(k).abs()))
            .fold(0.0f32, f32::max);
        // Each computed centre is within one unit in the last place of the
        // largest coordinate of its exact value; allow four per axis.
        let slack = 4.0 * f32::EPSILON * big;
        let dim = (B::Point::DIM as f32).sqrt();
        let r = (2.0 * e + slack) * dim * (1.0 + 1e-4) + RADIUS_TINY;
        (r.is_finite() && r < RADIUS_ALL).then_some(r)
    }

    fn detect<L: BroadPhase<B>>(
        &mut self,
        ranks: &mut Ranks,
        local: &mut L,
        make: Option<Make<'_, B, L>>,
        mut f: impl FnMut(u32, u32),
    ) -> Result<PairReport, DistError> {
        let traffic0 = ranks.traffic();
        let me = ranks.rank();
        let size = ranks.size();

        // The ghost radius, from the largest half-extent of all boxes.
        let e = self
            .owned
            .iter()
            .map(|q| half_extent(&q.aabb))
            .fold(0.0f32, f32::max);
        let e = ranks.max_f32(e);
        let radius = self.radius(e);

        // Ghosts out, ghosts in.
        let mut sends: Vec<Vec<u32>> = vec![Vec::new(); size as usize];
        let selected = match radius {
            Some(radius) => {
                let centres: Vec<B::Point> = self.owned.iter().map(|q| centre(&q.aabb)).collect();
                let decomp = self.sub.decomposition();
                let owned = &self.owned;
                sends
                    .iter_mut()
                    .zip(0u32..)
                    .filter(|&(_, r)| r != me)
                    .try_for_each(|(out, r)| {
                        decomp.for_each_ghost(r, &centres, radius, Periodic::NONE, |id, _| {
                            if let Some(q) = owned.get(id as usize) {
                                q.write(out);
                            }
                        })
                    })
            }
            None => {
                for (out, r) in sends.iter_mut().zip(0u32..) {
                    if r != me {
                        for q in &self.owned {
                            q.write(out);
                        }
                    }
                }
                Ok(())
            }
        };
        ranks.agree(selected)?;
        let ghost_bytes = sent_bytes(&sends, me);
        let words = ranks.exchange(&sends)?;
        drop(sends);
        let ghosts: Vec<OwnedBox<B>> = words
            .chunks_exact(OwnedBox::<B>::words())
            .map(OwnedBox::read)
            .collect();
        drop(words);

        // The local detection over owned and ghost boxes.
        let found = self.detect_local(local, make, &ghosts);
        let pairs = ranks.agree(found)?;
        for &(a, b) in &pairs {
            f(a, b);
        }
        Ok(PairReport {
            owned: self.owned.len(),
            ghosts: ghosts.len(),
            pairs: pairs.len(),
            radius: radius.unwrap_or(f32::INFINITY),
            ghost_bytes,
            traffic: ranks.traffic().since(traffic0),
        })
    }

    /// Fills `local` with the owned boxes (local ids `0..owned`) and
    /// `ghosts` (after them) and returns the pairs whose smaller global id
    /// is owned here, as `(smaller, larger)` global ids.
    fn detect_local<L: BroadPhase<B>>(
        &self,
        local: &mut L,
        make: Option<Make<'_, B, L>>,
        ghosts: &[OwnedBox<B>],
    ) -> Result<Vec<(u32, u32)>, String> {
        let n_owned = self.owned.len();
        let n = n_owned + ghosts.len();
        if u32::try_from(n).is_err() {
            return Err(format!("{n} local boxes overflow u32 ids"));
        }
        let all = || self.owned.iter().chain(ghosts);
        if local.capacity() < n {
            match make {
                Some(make) => {
                    let boxes: Vec<B> = all().map(|q| q.aabb).collect();
                    *local = make(&boxes).map_err(|e| format!("local broad phase: {e}"))?;
                    if local.capacity() < n {
                        return Err(format!(
                            "local broad phase made for {n} boxes holds only {} ids",
                            local.capacity()
                        ));
                    }
                }
                None => {
                    return Err(format!(
                        "local broad phase holds {} ids, {n} needed ({n_owned} owned, {} ghosts)",
                        local.capacity(),
                        ghosts.len()
                    ));
                }
            }
        }
        local.clear();
        let globals: Vec<u32> = all().map(|q| q.id).collect();
        for (q, i) in all().zip(0u32..) {
            local
                .insert(i, q.aabb)
                .map_err(|e| format!("local broad phase, box {}: {e}", q.id))?;
        }
        let mut pairs = Vec::new();
        let mut bad = None;
        local
            .for_each_overlap(|i, j| {
                match (globals.get(i as usize), globals.get(j as usize)) {
                    (Some(&a), Some(&b)) => {
                        // The smaller global id, and whether it is owned
                        // here (owned boxes have local ids below n_owned).
                        let (small, large, small_local) = if a < b { (a, b, i) } else { (b, a, j) };
                        if (small_local as usize) < n_owned {
                            pairs.push((small, large));
                        }
                    }
                    _ => bad = Some((i, j)),
                }
            })
            .map_err(|e| format!("local broad phase: {e}"))?;
        if let Some((i, j)) = bad {
            return Err(format!(
                "local broad phase reported the pair ({i}, {j}) of ids never inserted"
            ));
        }
        Ok(pairs)
    }
}
