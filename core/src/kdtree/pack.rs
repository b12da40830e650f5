//! Compact boxes in sweep order.
//!
//! After a build, the scratch buffer (free once the records are sorted)
//! holds one compact box per record, at the record's index: the box's range
//! on a grid `2^k` times finer than the tree's cells (`k` = [`fine_bits`] −
//! bits per axis), packed into the record's key and item fields. The sweep
//! of the unique and exact modes then reads the records and their compact
//! boxes in order, and never the caller's boxes by id, except to settle the
//! rare exact test the fine grid leaves open.
//!
//! The fine coordinate of `x` is `⌊(x − origin) · scale · 2^k⌋`, clamped,
//! computed as the tree's own quantisation is with the scale times `2^k`
//! (exact in floating point while finite), so shifting it right by `k` gives
//! the tree's quantised coordinate; the packing pass checks the scales, and
//! validation checks every coordinate.
//! The fine coordinate is monotone in `x`, so along one axis a strict
//! inequality between fine coordinates implies the same strict inequality
//! between the real ones, and only equal fine coordinates leave the real
//! comparison open.

use crate::geom::{BoundingBox, Point};
use crate::kdtree::code::LocCode;
use crate::kdtree::plan::{Frame, QBox};
use crate::kdtree::{BoxSource, KdRecord};

/// Bits of one of a compact box's two words (lower corner, upper corner):
/// half the record's key and item, at most 64.
#[inline(always)]
pub(crate) fn word_bits<K: LocCode>() -> u32 {
    ((K::BITS + 32) / 2).min(64)
}

/// Bits of one axis' lane in a word: `dim` lanes per word.
#[inline(always)]
pub(crate) fn lane_bits<K: LocCode>(dim: usize) -> u32 {
    word_bits::<K>() / dim as u32
}

/// Bits per coordinate of a compact box with code type `K` in `dim`
/// dimensions: its lane less a guard bit (`u32`: 9 in 3D, 15 in 2D; `u64`:
/// 15 and 23; `u128`: 20 and 31).
#[inline(always)]
pub(crate) fn fine_bits<K: LocCode>(dim: usize) -> u32 {
    lane_bits::<K>(dim) - 1
}

/// The guard bits of a word: the top bit of each lane.
#[inline(always)]
pub(crate) fn guards<K: LocCode>(dim: usize) -> u64 {
    let (lane, fb) = (lane_bits::<K>(dim), fine_bits::<K>(dim));
    (0..dim as u32).fold(0, |g, a| g | 1 << (a * lane + fb))
}

/// How much finer the compact grid is than the tree's cells (`k`), or
/// `None` if the tree's cells need more bits than a compact box has.
#[inline(always)]
pub(crate) fn fine_shift<K: LocCode>(frame: &Frame) -> Option<u32> {
    fine_bits::<K>(frame.dim as usize).checked_sub(frame.bits)
}

/// The fine grid's scales (`scale · 2^k`, in `f64` and `f32`).
#[derive(Clone, Copy)]
struct Fine {
    scale: [f64; 3],
    scale32: [f32; 3],
    top: u64,
}

impl Fine {
    fn new(frame: &Frame, k: u32) -> Self {
        let m = (1u64 << k) as f64;
        Self {
            scale: frame.scale.map(|s| s * m),
            scale32: frame.scale32.map(|s| s * m as f32),
            top: (1u64 << (frame.bits + k)) - 1,
        }
    }

    /// `true` if the fine scales are finite: each is then exactly the
    /// tree's times `2^k`, so that, for every finite `x`, the fine product
    /// is the tree's times `2^k` (or both clamp to the top), and the fine
    /// coordinate shifted right by `k` is the tree's quantised coordinate.
    fn exact(&self) -> bool {
        self.scale.iter().all(|s| s.is_finite()) && self.scale32.iter().all(|s| s.is_finite())
    }

    /// [`Frame::quantize`] on the fine grid.
    #[inline(always)]
    fn quantize<K: LocCode>(&self, frame: &Frame, x: f32, axis: usize) -> u64 {
        let top = self.top;
        if K::WIDE_FLOAT {
            let t = (x as f64 - frame.origin[axis]) * self.scale[axis];
            if t.is_nan() || t <= 0.0 {
                0
            } else if t >= top as f64 {
                top
            } else {
                t as i64 as u64
            }
        } else {
            let t = (x - frame.origin32[axis]) * self.scale32[axis];
            if t.is_nan() || t <= 0.0 {
                0
            } else if t >= top as f32 {
                top
            } else {
                t as i32 as u64
            }
        }
    }
}

/// Writes the compact box of `recs[i]`'s box to `out[i]`. Returns `false`
/// (the compact boxes are then not to be used) if a record's box is missing
/// or the fine grid is not exactly `2^k` times the tree's ([`Fine::exact`]).
pub(crate) fn pack<B: BoundingBox, K: LocCode, S: BoxSource<B> + ?Sized>(
    recs: &[KdRecord<K>],
    out: &mut [KdRecord<K>],
    frame: &Frame,
    k: u32,
    src: &S,
) -> bool {
    let dim = B::Point::DIM;
    let fb = fine_bits::<K>(dim);
    let fine = Fine::new(frame, k);
    if !fine.exact() {
        return false;
    }
    // The boxes of a batch of records are loaded first, in a loop that does
    // nothing else, so that their cache misses overlap.
    let mut batch = [B::NAN; GATHER];
    for (rs, os) in recs.chunks(GATHER).zip(out.chunks_mut(GATHER)) {
        for (r, slot) in rs.iter().zip(batch.iter_mut()) {
            let Some(b) = src.get(r.id() as usize) else {
                return false;
            };
            *slot = b;
        }
        for (b, o) in batch.iter().zip(os.iter_mut()) {
            pack_one::<B, K, false>(b, o, frame, &fine, k, fb);
        }
    }
    true
}

/// `true` if `b`'s compact box is `c` and its fine coordinates shifted
/// right by `k` are the tree's quantised coordinates (for validation).
pub(crate) fn check<B: BoundingBox, K: LocCode>(
    b: &B,
    c: &KdRecord<K>,
    frame: &Frame,
    k: u32,
) -> bool {
    let fine = Fine::new(frame, k);
    let mut want = KdRecord::EMPTY;
    let ok = pack_one::<B, K, true>(b, &mut want, frame, &fine, k, fine_bits::<K>(B::Point::DIM));
    ok && fine.exact() && want == *c
}

/// Records whose boxes [`pack`] loads before it packs them: 256 on hosted
/// targets (6 KiB of `Aabb3` on the stack; against 64, the settling scene's
/// sort and copy pass at 10⁶ went from 67–68 to 66 ms, and 1024 gained
/// nothing more), 64 on bare metal (1.5 KiB), where the stack is small and
/// the boxes are in SRAM.
#[cfg(not(target_os = "none"))]
const GATHER: usize = 256;
/// Records whose boxes [`pack`] loads before it packs them (see the hosted
/// value).
#[cfg(target_os = "none")]
const GATHER: usize = 64;

/// Packs one box into `o`; `false` if a fine coordinate shifted right by
/// `k` is not the tree's quantised coordinate.
#[inline(always)]
fn pack_one<B: BoundingBox, K: LocCode, const CHECK: bool>(
    b: &B,
    o: &mut KdRecord<K>,
    frame: &Frame,
    fine: &Fine,
    k: u32,
    fb: u32,
) -> bool {
    let dim = B::Point::DIM;
    let mut ok = true;
    let lane = fb + 1;
    {
        let q = if CHECK {
            frame.qbox::<K, B>(b)
        } else {
            QBox::default()
        };
        let (lo, hi) = (b.min(), b.max());
        let (mut wl, mut wh) = (0u64, 0u64);
        for a in 0..dim {
            let l = fine.quantize::<K>(frame, lo.coord(a), a);
            let h = fine.quantize::<K>(frame, hi.coord(a), a);
            if CHECK {
                ok &= (l >> k == q.lo[a]) & (h >> k == q.hi[a]);
            }
            wl |= l << (a as u32 * lane);
            wh |= h << (a as u32 * lane);
        }
        let v = wl as u128 | (wh as u128) << word_bits::<K>();
        *o = KdRecord {
            key: K::from_u128(v),
            item: if K::BITS < 128 {
                (v >> K::BITS) as u32
            } else {
                0
            },
        };
    }
    ok
}

/// A compact box: its lower and upper corners' fine coordinates, one lane
/// per axis ([`lane_bits`]), each lane's top bit clear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Compact {
    pub lo: u64,
    pub hi: u64,
}

impl Compact {
    /// The fine lower coordinate along `axis`.
    #[inline(always)]
    pub fn lo_at<K: LocCode>(&self, axis: usize, dim: usize) -> u64 {
        let (lane, fb) = (lane_bits::<K>(dim), fine_bits::<K>(dim));
        (self.lo >> (axis as u32 * lane)) & ((1 << fb) - 1)
    }

    /// The fine upper coordinate along `axis`.
    #[inline(always)]
    pub fn hi_at<K: LocCode>(&self, axis: usize, dim: usize) -> u64 {
        let (lane, fb) = (lane_bits::<K>(dim), fine_bits::<K>(dim));
        (self.hi >> (axis as u32 * lane)) & ((1 << fb) - 1)
    }
}

/// Unpacks a compact box written by [`pack`].
#[inline(always)]
pub(crate) fn unpack<K: LocCode>(r: &KdRecord<K>) -> Compact {
    let w = word_bits::<K>();
    let mut v = r.key.to_u128();
    if K::BITS < 128 {
        v |= (r.item as u128) << K::BITS;
    }
    let mask = u64::MAX >> (64 - w);
    Compact {
        lo: v as u64 & mask,
        hi: (v >> w) as u64 & mask,
    }
}

/// `false` if the compact boxes are apart along some axis (then so are the
/// real boxes): every lane of `b.hi` at least `a.lo`'s and every lane of
/// `a.hi` at least `b.lo`'s, all lanes at once. `g` is [`guards`]: a lane
/// of `(h | g) − l` keeps its guard bit exactly when `h ≥ l`, and never
/// borrows from the next lane.
#[inline(always)]
pub(crate) fn meets(a: &Compact, b: &Compact, g: u64) -> bool {
    let x = ((b.hi | g) - a.lo) & ((a.hi | g) - b.lo);
    x & g == g
}

/// What the compact boxes say about the real boxes' overlap
/// ([`BoundingBox::overlaps`], closed ranges), once [`meets`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The boxes are apart along some axis.
    Apart,
    /// The boxes overlap.
    Overlap,
    /// Equal fine coordinates leave it open: test the real boxes.
    Open,
}

/// The exact overlap test on compact boxes (see the module documentation).
#[inline(always)]
pub(crate) fn verdict<K: LocCode>(a: &Compact, b: &Compact, dim: usize) -> Verdict {
    let mut apart = false;
    let mut tie = false;
    for x in 0..dim {
        let (al, ah) = (a.lo_at::<K>(x, dim), a.hi_at::<K>(x, dim));
        let (bl, bh) = (b.lo_at::<K>(x, dim), b.hi_at::<K>(x, dim));
        apart |= (al > bh) | (bl > ah);
        tie |= (al == bh) | (bl == ah);
    }
    if apart {
        Verdict::Apart
    } else if tie {
        Verdict::Open
    } else {
        Verdict::Overlap
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::{Aabb3, Vec3};
    use crate::kdtree::{Candidates, KdConfig, LinearKdTree};

    fn rng(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    fn shifted_is_coarse<K: LocCode>() {
        let mut st = 0x9E37_79B9_7F4A_7C15u64;
        for bits in 1..=fine_bits::<K>(3) {
            let k = fine_bits::<K>(3) - bits;
            let frame = Frame::new::<Aabb3>([-3.25, 0.5, 1e3], [7.0, 0.1, 3e4], bits, false);
            let fine = Fine::new(&frame, k);
            assert!(fine.exact());
            for a in 0..3 {
                let (o, e) = (frame.origin[a], frame.extent[a]);
                for i in 0..2000 {
                    let t = (rng(&mut st) % 1_000_003) as f64 / 1_000_000.0;
                    let x = match i % 4 {
                        0 => (o + e * (t * 1.2 - 0.1)) as f32,
                        // Exactly on a cell boundary.
                        1 => {
                            (o + e * ((i / 4) % (1 << bits)) as f64 / (1u64 << bits) as f64) as f32
                        }
                        2 => f32::from_bits((o as f32).to_bits().wrapping_add((i / 4) as u32 % 64)),
                        _ => (o + e) as f32 - (i / 4 % 8) as f32 * f32::EPSILON,
                    };
                    assert_eq!(
                        fine.quantize::<K>(&frame, x, a) >> k,
                        frame.quantize::<K>(x, a),
                        "bits {bits} axis {a} x {x}"
                    );
                }
            }
        }
    }

    #[test]
    fn fine_coordinates_shifted_are_the_trees() {
        shifted_is_coarse::<u32>();
        shifted_is_coarse::<u64>();
        shifted_is_coarse::<u128>();
    }

    fn lanewise<K: LocCode>(dim: usize) {
        let mut st = 12345u64;
        let fb = fine_bits::<K>(dim);
        let lane = lane_bits::<K>(dim);
        let g = guards::<K>(dim);
        for _ in 0..20_000 {
            let mut c = [Compact { lo: 0, hi: 0 }; 2];
            let mut v = [[0u64; 6]; 2];
            for (ci, vi) in c.iter_mut().zip(v.iter_mut()) {
                for a in 0..dim {
                    // Small values so that ties and touching ranges are common.
                    let l = rng(&mut st) % 4 + if a == 0 { (1 << fb) - 6 } else { 0 };
                    let h = l + rng(&mut st) % 3;
                    vi[2 * a] = l;
                    vi[2 * a + 1] = h;
                    ci.lo |= l << (a as u32 * lane);
                    ci.hi |= h << (a as u32 * lane);
                }
            }
            let want =
                (0..dim).all(|a| v[0][2 * a] <= v[1][2 * a + 1] && v[1][2 * a] <= v[0][2 * a + 1]);
            assert_eq!(meets(&c[0], &c[1], g), want, "{v:?}");
            let tie =
                (0..dim).any(|a| v[0][2 * a] == v[1][2 * a + 1] || v[1][2 * a] == v[0][2 * a + 1]);
            let expect = if !want {
                Verdict::Apart
            } else if tie {
                Verdict::Open
            } else {
                Verdict::Overlap
            };
            assert_eq!(verdict::<K>(&c[0], &c[1], dim), expect);
            // Round trip through a record.
            let mut r = KdRecord::<K>::EMPTY;
            let w = c[0].lo as u128 | (c[0].hi as u128) << word_bits::<K>();
            r.key = K::from_u128(w);
            if K::BITS < 128 {
                r.item = (w >> K::BITS) as u32;
            }
            assert_eq!(unpack(&r), c[0]);
        }
    }

    #[test]
    fn two_word_test_is_the_lanewise_test() {
        for dim in [2, 3] {
            lanewise::<u32>(dim);
            lanewise::<u64>(dim);
            lanewise::<u128>(dim);
        }
    }

    /// Unit boxes on an integer lattice (every neighbour touches: equal
    /// fine coordinates everywhere), some shifted by a quarter or by less
    /// than a fine cell: the exact
    /// sweep runs on compact boxes and finds brute force's pairs.
    #[test]
    fn touching_boxes_through_the_compact_sweep() {
        let mut boxes = [Aabb3::NAN; 64];
        for (i, b) in boxes.iter_mut().enumerate() {
            let (x, y, z) = ((i % 4) as f32, (i / 4 % 4) as f32, (i / 16) as f32);
            // A gap of 1e-5 is below the fine grid's cell: the compact
            // boxes tie and only the real boxes tell them apart.
            let s = [0.25, 1e-5, 0.0][i % 3];
            *b = Aabb3::new(
                Vec3::new(x + s, y, z),
                Vec3::new(x + 1.0 + s, y + 1.0, z + 1.0),
            )
            .unwrap();
        }
        let mut tree = LinearKdTree::<Aabb3, u64, _>::new(
            [KdRecord::EMPTY; 512],
            [KdRecord::EMPTY; 512],
            KdConfig::DEFAULT,
        );
        tree.build(&boxes).unwrap();
        assert!(tree.packed().is_some());
        tree.validate_against(&boxes).unwrap();
        let mut got = [[false; 64]; 64];
        let mut count = 0;
        tree.for_each_candidate_pair(&boxes, Candidates::Exact, |a, b| {
            let (a, b) = (a.min(b) as usize, a.max(b) as usize);
            assert!(!got[a][b], "pair ({a}, {b}) twice");
            got[a][b] = true;
            count += 1;
        })
        .unwrap();
        let mut want = 0;
        for a in 0..64 {
            for b in a + 1..64 {
                assert_eq!(got[a][b], boxes[a].overlaps(&boxes[b]), "({a}, {b})");
                want += boxes[a].overlaps(&boxes[b]) as usize;
            }
        }
        assert_eq!(count, want);
        // Without the copies: the same pairs in the same order, from the
        // caller's boxes.
        let mut plain = LinearKdTree::<Aabb3, u64, _>::new(
            [KdRecord::EMPTY; 512],
            [KdRecord::EMPTY; 512],
            KdConfig::DEFAULT.with_box_copies(false),
        );
        plain.build(&boxes).unwrap();
        assert!(plain.packed().is_none());
        for mode in [Candidates::Exact, Candidates::Unique] {
            let (mut a, mut b) = ([(0u32, 0u32); 512], [(0u32, 0u32); 512]);
            let (mut na, mut nb) = (0, 0);
            tree.for_each_candidate_pair(&boxes, mode, |x, y| {
                a[na] = (x, y);
                na += 1;
            })
            .unwrap();
            plain
                .for_each_candidate_pair(&boxes, mode, |x, y| {
                    b[nb] = (x, y);
                    nb += 1;
                })
                .unwrap();
            assert_eq!(a[..na], b[..nb], "{mode:?}");
        }
    }
}
