//! The subdomains of the ranks ([`Subdomains`]): the core's recursive
//! coordinate bisection ([`spatium::decomp::Decomposition`]) rebuilt
//! collectively, a rebalancing policy ([`Balance`]), and the migration of
//! owned records to their new owners.

use bytemuck::Pod;
use spatium::decomp::{Cut, Decomposition};
use spatium::{BoundingBox, Point};

use crate::comm::Ranks;
use crate::error::DistError;

/// The core's decomposition over `Vec`s.
pub type VecDecomposition<P> = Decomposition<P, Vec<<P as Point>::Aabb>, Vec<Cut>, Vec<f64>>;

/// When the subdomains are rebuilt: when the heaviest rank holds more than
/// `1 + tolerance` times the mean number of elements, at most once every
/// `min_interval` checks (a rebuild gathers every element's position on
/// every rank: `4·d·N` bytes to each).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Balance {
    /// Allowed excess of the heaviest rank over the mean (`0.1`: 10 %).
    pub tolerance: f32,
    /// Fewest checks between two rebuilds.
    pub min_interval: u64,
}

impl Default for Balance {
    /// 10 % excess, at most one rebuild every 20 checks.
    fn default() -> Self {
        Self {
            tolerance: 0.1,
            min_interval: 20,
        }
    }
}

/// The ranks' subdomains: the same on every rank (each rank builds the
/// decomposition from the same gathered input, so the cuts agree bit for
/// bit).
pub struct Subdomains<P: Point> {
    decomp: VecDecomposition<P>,
    domain: P::Aabb,
    balance: Balance,
    since: u64,
    rebuilds: u64,
}

impl<P: Point + Pod> Subdomains<P> {
    /// Collective: `domain` cut into one subdomain per rank from no
    /// elements (every cut at the middle of its cell's longest axis is not
    /// guaranteed: with no elements the bisection places the cuts where
    /// the core's build does for an empty set), to be rebuilt from the
    /// first elements by [`rebuild`](Self::rebuild).
    ///
    /// # Errors
    /// The domain box's error, on every rank.
    pub fn new(ranks: &mut Ranks, domain: P::Aabb, balance: Balance) -> Result<Self, DistError> {
        let r = ranks.size() as usize;
        let mut decomp = Decomposition::new(
            vec![<P::Aabb as BoundingBox>::ZERO; r],
            vec![Cut::EMPTY; r.saturating_sub(1)],
            vec![0.0; r],
        );
        let built = decomp.build(domain, r, &[], None, &mut []);
        ranks.agree(built)?;
        Ok(Self {
            decomp,
            domain,
            balance,
            since: 0,
            rebuilds: 0,
        })
    }

    /// The decomposition (the same on every rank).
    pub fn decomposition(&self) -> &VecDecomposition<P> {
        &self.decomp
    }

    /// The whole domain.
    pub fn domain(&self) -> P::Aabb {
        self.domain
    }

    /// This rank's subdomain.
    pub fn own(&self, ranks: &Ranks) -> P::Aabb {
        self.decomp.subdomains()[ranks.rank() as usize]
    }

    /// Rebuilds so far.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// The rebalancing policy.
    pub fn balance(&self) -> Balance {
        self.balance
    }

    /// Collective: rebuilds the decomposition from every rank's `owned`
    /// positions (gathered on every rank, in rank order, so every rank
    /// computes the same cuts), balanced by count.
    ///
    /// # Errors
    /// A position outside the domain or not finite (on the rank that
    /// holds it), reported on every rank; nothing changes then.
    pub fn rebuild(&mut self, ranks: &mut Ranks, owned: &[P]) -> Result<(), DistError> {
        let all = ranks.all_gather(owned)?;
        let mut scratch = vec![0u32; all.len()];
        let r = ranks.size() as usize;
        let mut next = Decomposition::new(
            vec![<P::Aabb as BoundingBox>::ZERO; r],
            vec![Cut::EMPTY; r.saturating_sub(1)],
            vec![0.0; r],
        );
        let built = next.build(self.domain, r, &all, None, &mut scratch);
        ranks.agree(built)?;
        self.decomp = next;
        self.since = 0;
        self.rebuilds += 1;
        Ok(())
    }

    /// Collective: every rank's count of `owned` elements, and whether the
    /// policy asks for a rebuild now (the same answer on every rank).
    pub fn check(&mut self, ranks: &mut Ranks, owned: usize) -> (Vec<u64>, bool) {
        let counts = ranks.gather_u64(owned as u64);
        self.since += 1;
        let total: u64 = counts.iter().sum();
        let mean = total as f64 / counts.len().max(1) as f64;
        let heaviest = counts.iter().copied().max().unwrap_or(0) as f64;
        let due = self.since >= self.balance.min_interval
            && total > 0
            && heaviest > (1.0 + f64::from(self.balance.tolerance)) * mean;
        (counts, due)
    }

    /// The owner of each of `positions` (each rank calls it on its own
    /// elements; not collective).
    ///
    /// # Errors
    /// A position outside the domain or not finite.
    pub fn owners(&self, positions: &[P]) -> Result<Vec<u32>, spatium::Error> {
        let mut out = vec![0u32; positions.len()];
        self.decomp.assign(positions, &mut out)?;
        Ok(out)
    }
}

/// Records in a plain-data encoding: a fixed number of `u32` words each,
/// the first being the element's global id.
pub(crate) trait Words: Sized {
    /// Words per record.
    fn words() -> usize;
    /// Appends the record's words to `out`.
    fn write(&self, out: &mut Vec<u32>);
    /// The record encoded in `w` (exactly [`words`](Self::words) long).
    fn read(w: &[u32]) -> Self;
}

/// The words of one plain-data value.
pub(crate) fn words_of<T: Pod>(x: &T) -> &[u32] {
    bytemuck::cast_slice(core::slice::from_ref(x))
}

/// A plain-data value read from its words.
pub(crate) fn from_words<T: Pod>(w: &[u32]) -> T {
    bytemuck::pod_read_unaligned(bytemuck::cast_slice(w))
}

/// Collective: sends every record of `items` whose owner (`owners[i]`) is
/// another rank to that rank and appends what arrives; returns the records
/// kept plus those received (in ascending global id), and how many left.
pub(crate) fn migrate<T: Words>(
    ranks: &mut Ranks,
    items: Vec<T>,
    owners: &[u32],
    id: impl Fn(&T) -> u32,
) -> Result<(Vec<T>, usize), DistError> {
    let me = ranks.rank();
    let mut sends: Vec<Vec<u32>> = vec![Vec::new(); ranks.size() as usize];
    let mut kept = Vec::with_capacity(items.len());
    let mut left = 0usize;
    for (item, &o) in items.into_iter().zip(owners) {
        if o == me {
            kept.push(item);
        } else {
            item.write(&mut sends[o as usize]);
            left += 1;
        }
    }
    let words = ranks.exchange(&sends)?;
    kept.extend(words.chunks_exact(T::words()).map(T::read));
    kept.sort_unstable_by_key(&id);
    Ok((kept, left))
}

/// Collective: every rank's `items`, on every rank, by ascending id.
pub(crate) fn gather_all<T: Words>(
    ranks: &mut Ranks,
    items: &[T],
    id: impl Fn(&T) -> u32,
) -> Result<Vec<T>, DistError> {
    let mut words = Vec::with_capacity(items.len() * T::words());
    for q in items {
        q.write(&mut words);
    }
    let all = ranks.all_gather(&words)?;
    let mut out: Vec<T> = all.chunks_exact(T::words()).map(T::read).collect();
    out.sort_unstable_by_key(id);
    Ok(out)
}

/// Collective: rebuilds `sub` from every rank's `items` (at `position`)
/// and moves each to its new owner; returns the items kept and received
/// (ascending id) and how many left.
pub(crate) fn rebuild_and_migrate<P: Point + Pod, T: Words>(
    ranks: &mut Ranks,
    sub: &mut Subdomains<P>,
    items: Vec<T>,
    position: impl Fn(&T) -> P,
    id: impl Fn(&T) -> u32,
) -> Result<(Vec<T>, usize), DistError> {
    let xs: Vec<P> = items.iter().map(position).collect();
    sub.rebuild(ranks, &xs)?;
    let owners = ranks.agree(sub.owners(&xs))?;
    migrate(ranks, items, &owners, id)
}

/// What [`settle`] did.
pub(crate) struct Settled<T> {
    /// The items this rank owns now, by ascending id.
    pub items: Vec<T>,
    /// How many left this rank (migration and any rebuild).
    pub migrated: usize,
    /// Every rank's count afterwards, by rank.
    pub counts: Vec<u64>,
    /// Whether the subdomains were rebuilt.
    pub rebalanced: bool,
}

/// Collective: after the items moved, sends each to the owner of its new
/// position, then runs the load check and, when due, rebuilds the
/// subdomains and migrates again.
pub(crate) fn settle<P: Point + Pod, T: Words>(
    ranks: &mut Ranks,
    sub: &mut Subdomains<P>,
    items: Vec<T>,
    position: impl Fn(&T) -> P + Copy,
    id: impl Fn(&T) -> u32 + Copy,
) -> Result<Settled<T>, DistError> {
    let xs: Vec<P> = items.iter().map(position).collect();
    let owners = ranks.agree(sub.owners(&xs))?;
    let (mut items, mut migrated) = migrate(ranks, items, &owners, id)?;
    let (mut counts, rebalanced) = sub.check(ranks, items.len());
    if rebalanced {
        let (again, left) = rebuild_and_migrate(ranks, sub, items, position, id)?;
        items = again;
        migrated += left;
        counts = ranks.gather_u64(items.len() as u64);
    }
    Ok(Settled {
        items,
        migrated,
        counts,
        rebalanced,
    })
}
