//! What the grid holds and costs: the [`Inspect`] implementation, with
//! [`GridStats`] per grid and [`HhgStats`] for the whole structure.

use super::{BASE_LEVEL, HhgRecord, HhgSlot, HierarchicalHashGrid, LEVELS, LOCAL_BITS, NONE};
use crate::geom::BoundingBox;
use crate::inspect::Inspect;
use crate::storage::Storage;

/// Per-grid figures in [`HhgStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GridStats {
    /// Level relative to the first box's grid (`cell = c₀·factor^level`).
    pub level: i32,
    /// Cell edge.
    pub cell_size: f32,
    /// Cells per axis (1 on unused axes).
    pub cells_per_axis: [u32; 3],
    /// Cells in the grid.
    pub cells: u32,
    /// Boxes in the grid.
    pub objects: u32,
    /// Cells holding at least one box.
    pub occupied_cells: u32,
    /// Most boxes in one cell.
    pub max_objects_per_cell: u32,
    /// Boxes per cell.
    pub density: f32,
    /// The grid wanted to grow but the arena had no room.
    pub saturated: bool,
}

/// What [`Inspect::stats`] reports for a [`HierarchicalHashGrid`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HhgStats {
    /// Number of grids.
    pub grids: usize,
    /// The grids in ascending cell size; entries past `grids` are zero.
    pub grid: [GridStats; LEVELS],
    /// `true` while on the small-N path (flat array, all pairs tested).
    pub small_n: bool,
    /// Boxes in the flat array.
    pub flat_objects: usize,
    /// Objects in the unbounded container (inserted as unbounded, or too
    /// large for every grid).
    pub unbounded_objects: usize,
    /// Arena words holding live grids.
    pub arena_words_used: usize,
    /// Arena length in words.
    pub arena_words: usize,
    /// Bytes of live data: stored slots, live arena words and the struct.
    pub bytes_used: usize,
    /// Bytes of all storage: every slot, the whole arena and the struct.
    pub bytes_total: usize,
}

impl<B: BoundingBox, S: Storage<HhgSlot<B>>, R: Storage<HhgRecord<B>>, A: Storage<u32>> Inspect
    for HierarchicalHashGrid<B, S, R, A>
{
    type Stats = HhgStats;

    /// The slot, record and arena buffers: `76C + 4A` bytes in 3D,
    /// `60C + 4A` in 2D when the record buffer is as long as the slot
    /// buffer (`C` ids, `A` arena words). `O(1)`.
    fn memory_bytes(&self) -> usize {
        core::mem::size_of_val(self.slots.as_ref())
            + core::mem::size_of_val(self.recs.as_ref())
            + core::mem::size_of_val(self.arena.as_ref())
    }

    /// Figures about the grids and the memory in use. `O(n)` (it walks the
    /// occupied cells for the largest cell population).
    fn stats(&self) -> HhgStats {
        let mut st = HhgStats {
            grids: 0,
            grid: [GridStats::default(); LEVELS],
            small_n: !self.grid_mode,
            flat_objects: if self.grid_mode {
                0
            } else {
                self.nrec as usize
            },
            unbounded_objects: self.unbounded_len as usize,
            arena_words_used: self.used - self.garbage,
            arena_words: self.arena.as_ref().len(),
            bytes_used: 0,
            bytes_total: 0,
        };
        let mut max_per = [0u32; LEVELS];
        if self.grid_mode {
            let slots = self.slots.as_ref();
            for r in &self.recs.as_ref()[..self.nrec as usize] {
                let i = (r.key >> LOCAL_BITS) as usize;
                let mut a = r.head;
                let mut n = 0;
                while a != NONE {
                    n += 1;
                    a = slots[a as usize].next;
                }
                max_per[i] = max_per[i].max(n);
            }
        }
        for (i, lv) in self.levels.iter().enumerate() {
            if !lv.active {
                continue;
            }
            let mut per_axis = [1u32; 3];
            for (k, p) in per_axis.iter_mut().enumerate().take(Self::D) {
                *p = 1 << lv.log2[k];
            }
            st.grid[st.grids] = GridStats {
                level: i as i32 - BASE_LEVEL as i32,
                cell_size: lv.cell,
                cells_per_axis: per_axis,
                cells: lv.cells as u32,
                objects: lv.objects,
                occupied_cells: lv.occupied,
                max_objects_per_cell: max_per[i],
                density: lv.objects as f32 / lv.cells as f32,
                saturated: lv.saturated,
            };
            st.grids += 1;
        }
        let slot = core::mem::size_of::<HhgSlot<B>>();
        let me = core::mem::size_of::<Self>();
        let rec = core::mem::size_of::<HhgRecord<B>>();
        st.bytes_used = self.len as usize * (slot + rec) + st.arena_words_used * 4 + me;
        st.bytes_total = core::mem::size_of_val(self.slots.as_ref())
            + core::mem::size_of_val(self.recs.as_ref())
            + core::mem::size_of_val(self.arena.as_ref())
            + me;
        st
    }
}
