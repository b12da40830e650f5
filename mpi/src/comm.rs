//! The few collective operations the distributed structures need, over an
//! MPI communicator: error agreement, an all-to-all exchange of plain-data
//! records, all-gathers and reductions, each counted in [`Traffic`].
//!
//! Every operation here is **collective**: every rank of the communicator
//! must call it, in the same order. The distributed types keep that rule by
//! construction: each public method runs the same sequence of collectives
//! on every rank, and a rank whose local work failed still takes part and
//! reports its failure through [`Ranks::agree`], so no rank waits for a
//! message that will never come.

use std::time::Instant;

use bytemuck::Pod;
use mpi::Count;
use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};

use crate::error::DistError;

/// Bytes and time spent in communication since the last
/// [`Ranks::take_traffic`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Traffic {
    /// Payload bytes this rank sent to other ranks in exchanges and
    /// gathers (what it sends to itself is not counted; the small count
    /// and reduction messages are not counted either).
    pub bytes: u64,
    /// Collective operations called.
    pub collectives: u64,
    /// Wall seconds inside collective operations (including waiting for
    /// slower ranks).
    pub seconds: f64,
}

impl Traffic {
    /// What was counted between `before` and `self` (two readings of
    /// [`Ranks::traffic`]).
    pub fn since(self, before: Traffic) -> Traffic {
        Traffic {
            bytes: self.bytes.saturating_sub(before.bytes),
            collectives: self.collectives.saturating_sub(before.collectives),
            seconds: self.seconds - before.seconds,
        }
    }

    /// Adds `other` to `self`.
    pub fn add(&mut self, other: Traffic) {
        self.bytes += other.bytes;
        self.collectives += other.collectives;
        self.seconds += other.seconds;
    }
}

/// This process's place in a communicator, and the collectives over it.
pub struct Ranks {
    comm: SimpleCommunicator,
    rank: u32,
    size: u32,
    traffic: Traffic,
}

impl Ranks {
    /// Wraps a communicator (usually `universe.world()`).
    pub fn new(comm: SimpleCommunicator) -> Self {
        let rank = u32::try_from(comm.rank()).unwrap_or(0);
        let size = u32::try_from(comm.size()).unwrap_or(1).max(1);
        Self {
            comm,
            rank,
            size,
            traffic: Traffic::default(),
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The communicator.
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// The traffic since the last [`take_traffic`](Self::take_traffic).
    pub fn traffic(&self) -> Traffic {
        self.traffic
    }

    /// The traffic since the last call; resets it.
    pub fn take_traffic(&mut self) -> Traffic {
        core::mem::take(&mut self.traffic)
    }

    /// Times one collective.
    fn timed<T>(&mut self, bytes: u64, f: impl FnOnce(&SimpleCommunicator) -> T) -> T {
        let t = Instant::now();
        let out = f(&self.comm);
        self.traffic.seconds += t.elapsed().as_secs_f64();
        self.traffic.collectives += 1;
        self.traffic.bytes += bytes;
        out
    }

    /// Collective: turns each rank's local result into one verdict shared
    /// by all. If every rank has `Ok`, each gets its own value back; if
    /// any rank failed, **every** rank gets the error of the lowest failing
    /// rank (its rank and message). Costs one reduction, plus a broadcast
    /// of the message when something failed.
    pub fn agree<T, E: core::fmt::Display>(&mut self, local: Result<T, E>) -> Result<T, DistError> {
        let mine = if local.is_err() { self.rank } else { u32::MAX };
        let mut first = u32::MAX;
        self.timed(0, |c| {
            c.all_reduce_into(&mine, &mut first, SystemOperation::min())
        });
        if first == u32::MAX {
            return local.map_err(|e| DistError::new(self.rank, e.to_string()));
        }
        let mut text = match &local {
            Err(e) if first == self.rank => e.to_string().into_bytes(),
            _ => Vec::new(),
        };
        let mut len = text.len() as u64;
        let root = i32::try_from(first).unwrap_or(0);
        self.timed(0, |c| c.process_at_rank(root).broadcast_into(&mut len));
        let len = usize::try_from(len).unwrap_or(0);
        // A spare byte, as in `exchange`.
        text.resize(len + 1, 0);
        self.timed(0, |c| {
            c.process_at_rank(root).broadcast_into(&mut text[..len]);
        });
        text.truncate(len);
        Err(DistError::new(
            first,
            String::from_utf8_lossy(&text).into_owned(),
        ))
    }

    /// Collective: [`agree`](Self::agree) with this rank failing with `e`;
    /// returns the agreed error (this rank's, or a lower failing rank's).
    pub fn fail<E: core::fmt::Display>(&mut self, e: E) -> DistError {
        let rank = self.rank;
        let text = e.to_string();
        match self.agree(Err::<(), _>(text.clone())) {
            Err(agreed) => agreed,
            // `agree` never returns `Ok` to a rank that failed.
            Ok(()) => DistError::new(rank, text),
        }
    }

    /// Collective: the largest of every rank's `x`.
    pub fn max_f32(&mut self, x: f32) -> f32 {
        let mut out = 0.0f32;
        self.timed(0, |c| {
            c.all_reduce_into(&x, &mut out, SystemOperation::max())
        });
        out
    }

    /// Collective: the sum of every rank's `x`.
    pub fn sum_u64(&mut self, x: u64) -> u64 {
        let mut out = 0u64;
        self.timed(0, |c| {
            c.all_reduce_into(&x, &mut out, SystemOperation::sum())
        });
        out
    }

    /// Collective: every rank's `x`, by rank.
    pub fn gather_u64(&mut self, x: u64) -> Vec<u64> {
        let mut out = vec![0u64; self.size as usize];
        self.timed(8 * (self.size as u64 - 1), |c| {
            c.all_gather_into(&x, &mut out[..])
        });
        out
    }

    /// Collective: `sends[r]` goes to rank `r` (one entry per rank; this
    /// rank's own entry is delivered too). Returns what every rank sent to
    /// this one, concatenated by source rank.
    ///
    /// # Errors
    /// Every rank gets an error (and nothing is exchanged) if some rank
    /// passed the wrong number of lists or a list of more than `i32::MAX`
    /// bytes (MPI's count type).
    pub fn exchange<T: Pod>(&mut self, sends: &[Vec<T>]) -> Result<Vec<T>, DistError> {
        let size = self.size as usize;
        let record = core::mem::size_of::<T>().max(1);
        let counts: Result<Vec<Count>, String> = if sends.len() != size {
            Err(format!(
                "exchange: {} send lists for {size} ranks",
                sends.len()
            ))
        } else {
            sends
                .iter()
                .map(|s| {
                    Count::try_from(s.len() * record)
                        .map_err(|_| format!("exchange: {} records overflow MPI's count", s.len()))
                })
                .collect()
        };
        let send_counts = self.agree(counts)?;
        let mut recv_counts = vec![0 as Count; size];
        self.timed(0, |c| {
            c.all_to_all_into(&send_counts[..], &mut recv_counts[..])
        });
        let total_in: usize = recv_counts.iter().map(|&n| n as usize).sum();
        let recv_bytes = i32::try_from(total_in)
            .map(|_| ())
            .map_err(|_| "exchange: more than i32::MAX bytes to receive".to_string());
        self.agree(recv_bytes)?;
        let send_displs = displacements(&send_counts);
        let recv_displs = displacements(&recv_counts);
        let mut send_bytes: Vec<u8> =
            Vec::with_capacity(send_counts.iter().map(|&n| n as usize).sum::<usize>() + 1);
        for s in sends {
            send_bytes.extend_from_slice(bytemuck::cast_slice(s));
        }
        let me = self.rank as usize;
        let out_bytes = send_bytes.len() - send_counts[me] as usize;
        // One spare byte in each buffer: an empty `Vec<u8>`'s pointer is
        // 0x1, which Open MPI reads as `MPI_IN_PLACE`.
        send_bytes.push(0);
        let mut recv_bytes = vec![0u8; total_in + 1];
        self.timed(out_bytes as u64, |c| {
            let send = Partition::new(&send_bytes[..], &send_counts[..], &send_displs[..]);
            let mut recv =
                PartitionMut::new(&mut recv_bytes[..], &recv_counts[..], &recv_displs[..]);
            c.all_to_all_varcount_into(&send, &mut recv);
        });
        Ok(bytemuck::allocation::pod_collect_to_vec(
            &recv_bytes[..total_in],
        ))
    }

    /// Collective: every rank's `mine`, concatenated by rank, on every
    /// rank.
    ///
    /// # Errors
    /// As [`exchange`](Self::exchange), for more than `i32::MAX` bytes.
    pub fn all_gather<T: Pod>(&mut self, mine: &[T]) -> Result<Vec<T>, DistError> {
        let record = core::mem::size_of::<T>().max(1);
        let count = Count::try_from(mine.len() * record)
            .map_err(|_| format!("all_gather: {} records overflow MPI's count", mine.len()));
        let count = self.agree(count)?;
        let mut counts = vec![0 as Count; self.size as usize];
        self.timed(0, |c| c.all_gather_into(&count, &mut counts[..]));
        let total: usize = counts.iter().map(|&n| n as usize).sum();
        self.agree(
            i32::try_from(total)
                .map(|_| ())
                .map_err(|_| "all_gather: more than i32::MAX bytes".to_string()),
        )?;
        let displs = displacements(&counts);
        // Spare bytes, as in `exchange`: never an empty buffer's 0x1.
        let mut send = bytemuck::cast_slice::<T, u8>(mine).to_vec();
        send.push(0);
        let mut recv = vec![0u8; total + 1];
        let sent = count as u64 * (self.size as u64 - 1);
        self.timed(sent, |c| {
            let mut part = PartitionMut::new(&mut recv[..], &counts[..], &displs[..]);
            c.all_gather_varcount_into(&send[..count as usize], &mut part);
        });
        Ok(bytemuck::allocation::pod_collect_to_vec(&recv[..total]))
    }

    /// Collective: waits for every rank.
    pub fn barrier(&mut self) {
        self.timed(0, |c| c.barrier());
    }
}

/// Payload bytes of per-rank `sends` (as given to [`Ranks::exchange`])
/// that leave rank `me`.
pub(crate) fn sent_bytes<T>(sends: &[Vec<T>], me: u32) -> u64 {
    sends
        .iter()
        .zip(0u32..)
        .filter(|&(_, r)| r != me)
        .map(|(s, _)| (s.len() * size_of::<T>()) as u64)
        .sum()
}

/// Exclusive prefix sums of `counts` (checked above to fit `i32` in all).
fn displacements(counts: &[Count]) -> Vec<Count> {
    counts
        .iter()
        .scan(0 as Count, |acc, &n| {
            let d = *acc;
            *acc += n;
            Some(d)
        })
        .collect()
}
