//! Points, vectors and axis-aligned boxes in `f32`, for 2D and 3D.
//!
//! All types are `#[repr(C)]` and [`bytemuck::Pod`], so slices of them can be
//! cast to bytes and uploaded to a GPU without conversion. Constructors that can
//! fail validate their input (finite coordinates, `min <= max`); the public
//! fields exist for zero-cost interop, and every structure re-validates what it
//! is given.

use core::fmt::Debug;
use core::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};

use bytemuck::{Pod, Zeroable};

use crate::error::Error;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Vec2 {}
    impl Sealed for super::Vec3 {}
    impl Sealed for super::Aabb2 {}
    impl Sealed for super::Aabb3 {}
}

/// A 2D point or vector.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Vec2 {
    /// x coordinate.
    pub x: f32,
    /// y coordinate.
    pub y: f32,
}

/// A 3D point or vector.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Vec3 {
    /// x coordinate.
    pub x: f32,
    /// y coordinate.
    pub y: f32,
    /// z coordinate.
    pub z: f32,
}

impl Vec2 {
    /// The origin.
    pub const ZERO: Self = Self { x: 0.0, y: 0.0 };
    /// A vector from its coordinates (any value, including non-finite ones).
    pub const fn new(x: f32, y: f32) -> Self {
        Self { x, y }
    }
    /// A vector from its coordinates, or [`Error::NonFinite`] if one is NaN or infinite.
    pub fn try_new(x: f32, y: f32) -> Result<Self, Error> {
        let v = Self { x, y };
        if v.is_finite() {
            Ok(v)
        } else {
            Err(Error::NonFinite)
        }
    }
    /// The coordinates as an array.
    pub const fn to_array(self) -> [f32; 2] {
        [self.x, self.y]
    }
}

impl Vec3 {
    /// The origin.
    pub const ZERO: Self = Self {
        x: 0.0,
        y: 0.0,
        z: 0.0,
    };
    /// A vector from its coordinates (any value, including non-finite ones).
    pub const fn new(x: f32, y: f32, z: f32) -> Self {
        Self { x, y, z }
    }
    /// A vector from its coordinates, or [`Error::NonFinite`] if one is NaN or infinite.
    pub fn try_new(x: f32, y: f32, z: f32) -> Result<Self, Error> {
        let v = Self { x, y, z };
        if v.is_finite() {
            Ok(v)
        } else {
            Err(Error::NonFinite)
        }
    }
    /// The coordinates as an array.
    pub const fn to_array(self) -> [f32; 3] {
        [self.x, self.y, self.z]
    }
}

impl From<[f32; 2]> for Vec2 {
    fn from(a: [f32; 2]) -> Self {
        Self::new(a[0], a[1])
    }
}
impl From<[f32; 3]> for Vec3 {
    fn from(a: [f32; 3]) -> Self {
        Self::new(a[0], a[1], a[2])
    }
}

/// Component-wise arithmetic for the vector types (used by the SPH solver).
macro_rules! vector_ops {
    ($t:ident, $($f:ident),+) => {
        impl Add for $t {
            type Output = Self;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                Self { $($f: self.$f + o.$f),+ }
            }
        }
        impl Sub for $t {
            type Output = Self;
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                Self { $($f: self.$f - o.$f),+ }
            }
        }
        impl Mul<f32> for $t {
            type Output = Self;
            #[inline(always)]
            fn mul(self, s: f32) -> Self {
                Self { $($f: self.$f * s),+ }
            }
        }
        impl Neg for $t {
            type Output = Self;
            #[inline(always)]
            fn neg(self) -> Self {
                Self { $($f: -self.$f),+ }
            }
        }
        impl AddAssign for $t {
            #[inline(always)]
            fn add_assign(&mut self, o: Self) {
                $(self.$f += o.$f;)+
            }
        }
        impl SubAssign for $t {
            #[inline(always)]
            fn sub_assign(&mut self, o: Self) {
                $(self.$f -= o.$f;)+
            }
        }
    };
}
vector_ops!(Vec2, x, y);
vector_ops!(Vec3, x, y, z);

/// What the structures need of a point type: implemented for [`Vec2`] and
/// [`Vec3`] only (sealed).
///
/// The cell helpers here are the single definition of the uniform grid used by
/// every hashing structure in the crate: integer cell coordinates, the spatial
/// hash with the primes 73856093, 19349663 and 83492791, and the neighbour
/// stencils.
pub trait Point:
    Copy
    + Debug
    + Default
    + PartialEq
    + Pod
    + Send
    + Sync
    + 'static
    + sealed::Sealed
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<f32, Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
{
    /// Number of axes (2 or 3).
    const DIM: usize;
    /// The origin.
    const ZERO: Self;
    /// The cell at the origin.
    const CELL_ZERO: Self::Cell;
    /// Integer cell coordinates (`[i32; DIM]`).
    type Cell: Copy + Debug + Default + Eq + Send + Sync + 'static;
    /// The box type of this dimension.
    type Aabb: BoundingBox<Point = Self>;
    /// Room for one particle in structure-of-arrays storage: a word per axis
    /// and one for an id (`[u32; DIM + 1]`).
    type Words: Pod + Debug + PartialEq + Send + Sync + 'static;
    /// The all-zero [`Words`](Self::Words).
    const NO_WORDS: Self::Words;
    /// Offsets of the full neighbour stencil: the cell itself first, then its
    /// 26 (3D) or 8 (2D) neighbours.
    const STENCIL: &'static [Self::Cell];
    /// Offsets of the forward half stencil: 13 (3D) or 4 (2D) neighbours such
    /// that for every neighbour offset `d`, exactly one of `d` and `-d` is listed
    /// (the zero offset is not).
    const HALF_STENCIL: &'static [Self::Cell];
    /// The rows of the full stencil, as offsets with `x = 0`: 9 (3D) or 3
    /// (2D). Cells `x-1..=x+1` of a row are consecutive in
    /// [`cell_row_key`](Self::cell_row_key) order, so a structure sorted by
    /// that key holds each row as one contiguous range.
    const ROWS: &'static [Self::Cell];
    /// The rows of the forward half stencil, as offsets with `x = 0`: 4 (3D)
    /// or 1 (2D). With the cell `x + 1` of the own row they cover
    /// [`HALF_STENCIL`](Self::HALF_STENCIL) exactly (three cells per row).
    const HALF_ROWS: &'static [Self::Cell];

    /// Coordinate along `axis` (`axis < DIM`; larger values read the last axis).
    fn coord(self, axis: usize) -> f32;
    /// A point built from a coordinate function.
    fn from_fn(f: impl FnMut(usize) -> f32) -> Self;
    /// `true` if no coordinate is NaN or infinite.
    fn is_finite(self) -> bool;
    /// Dot product, summed axis by axis in a fixed order.
    fn dot(self, other: Self) -> f32;
    /// Squared Euclidean distance, computed axis by axis in a fixed order
    /// (`dx*dx + dy*dy [+ dz*dz]`); every structure and the brute-force oracle
    /// use this one function, so their answers agree bit for bit.
    fn distance_squared(self, other: Self) -> f32;
    /// Component-wise minimum.
    fn min(self, other: Self) -> Self;
    /// Component-wise maximum.
    fn max(self, other: Self) -> Self;
    /// Cell coordinate along `axis`.
    fn cell_coord(c: Self::Cell, axis: usize) -> i32;
    /// Cell built from a coordinate function.
    fn cell_from_fn(f: impl FnMut(usize) -> i32) -> Self::Cell;
    /// `c + d`, wrapping (cells are bounded far below overflow by the grid).
    fn cell_add(c: Self::Cell, d: Self::Cell) -> Self::Cell;
    /// Morton (Z-order) code of a cell whose coordinates are non-negative and
    /// below 2²¹ (3D) or 2³² (2D): bits of the axes interleaved, x lowest.
    fn cell_morton(c: Self::Cell) -> u64;
    /// Row-major key of a cell (x fastest, then y, then z), 17 bits per
    /// axis: `x + 8` in bits 0–16, `y + 8` from bit 17, `z + 8` from bit 34.
    /// Exact and linear for coordinates in `-8..2¹⁷ - 8`, which holds every
    /// cell of [`crate::uniform`] and its neighbours, so `key(c + (1, 0, 0))
    /// = key(c) + 1` and a row `x-1..=x+1` is a key interval.
    fn cell_row_key(c: Self::Cell) -> u64;
    /// The spatial hash of a cell before reduction to the table length:
    /// `x·73856093 ⊕ y·19349663 [⊕ z·83492791]` in wrapping 32-bit arithmetic.
    fn cell_hash(c: Self::Cell) -> u32;
}

/// The three large primes of the spatial hash (Teschner et al. 2003, used by
/// the SPH water-channel seed and by Pouchol et al.).
pub const HASH_PRIMES: [u32; 3] = [73_856_093, 19_349_663, 83_492_791];

const fn stencil3() -> [[i32; 3]; 27] {
    let mut out = [[0; 3]; 27];
    // self first, then the rest in z-major order.
    let mut n = 1;
    let mut z = -1;
    while z <= 1 {
        let mut y = -1;
        while y <= 1 {
            let mut x = -1;
            while x <= 1 {
                if !(x == 0 && y == 0 && z == 0) {
                    out[n] = [x, y, z];
                    n += 1;
                }
                x += 1;
            }
            y += 1;
        }
        z += 1;
    }
    out
}

const fn half3() -> [[i32; 3]; 13] {
    // forward offsets: lexicographically positive (z, then y, then x).
    let mut out = [[0; 3]; 13];
    let mut n = 0;
    let mut z = -1;
    while z <= 1 {
        let mut y = -1;
        while y <= 1 {
            let mut x = -1;
            while x <= 1 {
                if z > 0 || (z == 0 && (y > 0 || (y == 0 && x > 0))) {
                    out[n] = [x, y, z];
                    n += 1;
                }
                x += 1;
            }
            y += 1;
        }
        z += 1;
    }
    out
}

const fn stencil2() -> [[i32; 2]; 9] {
    let mut out = [[0; 2]; 9];
    let mut n = 1;
    let mut y = -1;
    while y <= 1 {
        let mut x = -1;
        while x <= 1 {
            if !(x == 0 && y == 0) {
                out[n] = [x, y];
                n += 1;
            }
            x += 1;
        }
        y += 1;
    }
    out
}

const fn half2() -> [[i32; 2]; 4] {
    let mut out = [[0; 2]; 4];
    let mut n = 0;
    let mut y = -1;
    while y <= 1 {
        let mut x = -1;
        while x <= 1 {
            if y > 0 || (y == 0 && x > 0) {
                out[n] = [x, y];
                n += 1;
            }
            x += 1;
        }
        y += 1;
    }
    out
}

/// Spreads the low 21 bits of `v` to every third bit.
#[inline(always)]
pub(crate) const fn spread3(v: u32) -> u64 {
    let mut x = (v & 0x1f_ffff) as u64;
    x = (x | (x << 32)) & 0x001f_0000_0000_ffff;
    x = (x | (x << 16)) & 0x001f_0000_ff00_00ff;
    x = (x | (x << 8)) & 0x100f_00f0_0f00_f00f;
    x = (x | (x << 4)) & 0x10c3_0c30_c30c_30c3;
    x = (x | (x << 2)) & 0x1249_2492_4924_9249;
    x
}

/// Spreads the 32 bits of `v` to every second bit.
#[inline(always)]
pub(crate) const fn spread2(v: u32) -> u64 {
    let mut x = v as u64;
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    x = (x | (x << 1)) & 0x5555_5555_5555_5555;
    x
}

static STENCIL3: [[i32; 3]; 27] = stencil3();
static HALF3: [[i32; 3]; 13] = half3();
static STENCIL2: [[i32; 2]; 9] = stencil2();
static HALF2: [[i32; 2]; 4] = half2();

/// Rows of the 3D stencil, `(dy, dz)` z-major, as cells with `x = 0`.
static ROWS3: [[i32; 3]; 9] = [
    [0, -1, -1],
    [0, 0, -1],
    [0, 1, -1],
    [0, -1, 0],
    [0, 0, 0],
    [0, 1, 0],
    [0, -1, 1],
    [0, 0, 1],
    [0, 1, 1],
];
/// The forward rows: `(dy, dz)` lexicographically positive in `(z, y)`.
static HALF_ROWS3: [[i32; 3]; 4] = [[0, 1, 0], [0, -1, 1], [0, 0, 1], [0, 1, 1]];
static ROWS2: [[i32; 2]; 3] = [[0, -1], [0, 0], [0, 1]];
static HALF_ROWS2: [[i32; 2]; 1] = [[0, 1]];

/// One axis's field of [`Point::cell_row_key`].
#[inline(always)]
const fn row_field(c: i32) -> u64 {
    (c.wrapping_add(8) as u32 as u64) & 0x1_ffff
}

impl Point for Vec3 {
    const DIM: usize = 3;
    const ZERO: Self = Self::ZERO;
    const CELL_ZERO: [i32; 3] = [0; 3];
    type Cell = [i32; 3];
    type Aabb = Aabb3;
    type Words = [u32; 4];
    const NO_WORDS: [u32; 4] = [0; 4];
    const STENCIL: &'static [[i32; 3]] = &STENCIL3;
    const HALF_STENCIL: &'static [[i32; 3]] = &HALF3;
    const ROWS: &'static [[i32; 3]] = &ROWS3;
    const HALF_ROWS: &'static [[i32; 3]] = &HALF_ROWS3;

    #[inline(always)]
    fn coord(self, axis: usize) -> f32 {
        match axis {
            0 => self.x,
            1 => self.y,
            _ => self.z,
        }
    }
    #[inline(always)]
    fn from_fn(mut f: impl FnMut(usize) -> f32) -> Self {
        Self::new(f(0), f(1), f(2))
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite() && self.z.is_finite()
    }
    #[inline(always)]
    fn dot(self, o: Self) -> f32 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    #[inline(always)]
    fn distance_squared(self, o: Self) -> f32 {
        let dx = self.x - o.x;
        let dy = self.y - o.y;
        let dz = self.z - o.z;
        dx * dx + dy * dy + dz * dz
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        Self::new(self.x.min(o.x), self.y.min(o.y), self.z.min(o.z))
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        Self::new(self.x.max(o.x), self.y.max(o.y), self.z.max(o.z))
    }
    #[inline(always)]
    fn cell_coord(c: [i32; 3], axis: usize) -> i32 {
        c[if axis < 3 { axis } else { 2 }]
    }
    #[inline(always)]
    fn cell_from_fn(mut f: impl FnMut(usize) -> i32) -> [i32; 3] {
        [f(0), f(1), f(2)]
    }
    #[inline(always)]
    fn cell_add(c: [i32; 3], d: [i32; 3]) -> [i32; 3] {
        [
            c[0].wrapping_add(d[0]),
            c[1].wrapping_add(d[1]),
            c[2].wrapping_add(d[2]),
        ]
    }
    #[inline(always)]
    fn cell_morton(c: [i32; 3]) -> u64 {
        spread3(c[0] as u32) | (spread3(c[1] as u32) << 1) | (spread3(c[2] as u32) << 2)
    }
    #[inline(always)]
    fn cell_row_key(c: [i32; 3]) -> u64 {
        row_field(c[0]) | (row_field(c[1]) << 17) | (row_field(c[2]) << 34)
    }
    #[inline(always)]
    fn cell_hash(c: [i32; 3]) -> u32 {
        (c[0] as u32).wrapping_mul(HASH_PRIMES[0])
            ^ (c[1] as u32).wrapping_mul(HASH_PRIMES[1])
            ^ (c[2] as u32).wrapping_mul(HASH_PRIMES[2])
    }
}

impl Point for Vec2 {
    const DIM: usize = 2;
    const ZERO: Self = Self::ZERO;
    const CELL_ZERO: [i32; 2] = [0; 2];
    type Cell = [i32; 2];
    type Aabb = Aabb2;
    type Words = [u32; 3];
    const NO_WORDS: [u32; 3] = [0; 3];
    const STENCIL: &'static [[i32; 2]] = &STENCIL2;
    const HALF_STENCIL: &'static [[i32; 2]] = &HALF2;
    const ROWS: &'static [[i32; 2]] = &ROWS2;
    const HALF_ROWS: &'static [[i32; 2]] = &HALF_ROWS2;

    #[inline(always)]
    fn coord(self, axis: usize) -> f32 {
        if axis == 0 { self.x } else { self.y }
    }
    #[inline(always)]
    fn from_fn(mut f: impl FnMut(usize) -> f32) -> Self {
        Self::new(f(0), f(1))
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite()
    }
    #[inline(always)]
    fn dot(self, o: Self) -> f32 {
        self.x * o.x + self.y * o.y
    }
    #[inline(always)]
    fn distance_squared(self, o: Self) -> f32 {
        let dx = self.x - o.x;
        let dy = self.y - o.y;
        dx * dx + dy * dy
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        Self::new(self.x.min(o.x), self.y.min(o.y))
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        Self::new(self.x.max(o.x), self.y.max(o.y))
    }
    #[inline(always)]
    fn cell_coord(c: [i32; 2], axis: usize) -> i32 {
        c[if axis == 0 { 0 } else { 1 }]
    }
    #[inline(always)]
    fn cell_from_fn(mut f: impl FnMut(usize) -> i32) -> [i32; 2] {
        [f(0), f(1)]
    }
    #[inline(always)]
    fn cell_add(c: [i32; 2], d: [i32; 2]) -> [i32; 2] {
        [c[0].wrapping_add(d[0]), c[1].wrapping_add(d[1])]
    }
    #[inline(always)]
    fn cell_morton(c: [i32; 2]) -> u64 {
        spread2(c[0] as u32) | (spread2(c[1] as u32) << 1)
    }
    #[inline(always)]
    fn cell_row_key(c: [i32; 2]) -> u64 {
        row_field(c[0]) | (row_field(c[1]) << 17)
    }
    #[inline(always)]
    fn cell_hash(c: [i32; 2]) -> u32 {
        (c[0] as u32).wrapping_mul(HASH_PRIMES[0]) ^ (c[1] as u32).wrapping_mul(HASH_PRIMES[1])
    }
}

/// What the broad phases need of a box type: implemented for [`Aabb2`] and
/// [`Aabb3`] only (sealed).
pub trait BoundingBox:
    Copy + Debug + Default + PartialEq + Pod + Send + Sync + 'static + sealed::Sealed
{
    /// The corner type.
    type Point: Point<Aabb = Self>;
    /// The all-zero box (a point at the origin).
    const ZERO: Self;
    /// A box of NaNs: never valid, used to mark empty slots.
    const NAN: Self;
    /// A validated box: [`Error::NonFinite`] if a coordinate is NaN or
    /// infinite, [`Error::InvertedBox`] if `min > max` on some axis.
    fn try_new(min: Self::Point, max: Self::Point) -> Result<Self, Error>;
    /// Lower corner.
    fn min(&self) -> Self::Point;
    /// Upper corner.
    fn max(&self) -> Self::Point;
    /// The box's validity: [`Error::NonFinite`] or [`Error::InvertedBox`].
    fn check(&self) -> Result<(), Error> {
        let (lo, hi) = (self.min(), self.max());
        if !lo.is_finite() || !hi.is_finite() {
            return Err(Error::NonFinite);
        }
        for k in 0..Self::Point::DIM {
            if lo.coord(k) > hi.coord(k) {
                return Err(Error::InvertedBox);
            }
        }
        Ok(())
    }
    /// Closed-interval overlap: boxes that touch overlap.
    fn overlaps(&self, other: &Self) -> bool;
    /// Smallest box containing both.
    fn union(&self, other: &Self) -> Self;
    /// Longest edge length.
    fn longest_edge(&self) -> f32 {
        let mut m = 0.0f32;
        for k in 0..Self::Point::DIM {
            m = m.max(self.max().coord(k) - self.min().coord(k));
        }
        m
    }
}

/// A 2D axis-aligned box (closed).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "serde_box::Aabb2Fields"))]
pub struct Aabb2 {
    /// Lower corner.
    pub min: Vec2,
    /// Upper corner.
    pub max: Vec2,
}

/// A 3D axis-aligned box (closed).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "serde_box::Aabb3Fields"))]
pub struct Aabb3 {
    /// Lower corner.
    pub min: Vec3,
    /// Upper corner.
    pub max: Vec3,
}

/// The unchecked form boxes deserialize through: a box deserializes only
/// if it passes [`BoundingBox::check`].
#[cfg(feature = "serde")]
mod serde_box {
    use super::{Aabb2, Aabb3, Error, Vec2, Vec3};

    #[derive(serde::Deserialize)]
    #[serde(rename = "Aabb2")]
    pub struct Aabb2Fields {
        min: Vec2,
        max: Vec2,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename = "Aabb3")]
    pub struct Aabb3Fields {
        min: Vec3,
        max: Vec3,
    }
    impl TryFrom<Aabb2Fields> for Aabb2 {
        type Error = Error;
        fn try_from(b: Aabb2Fields) -> Result<Self, Error> {
            Self::new(b.min, b.max)
        }
    }
    impl TryFrom<Aabb3Fields> for Aabb3 {
        type Error = Error;
        fn try_from(b: Aabb3Fields) -> Result<Self, Error> {
            Self::new(b.min, b.max)
        }
    }
}

impl Aabb2 {
    /// Validated constructor (see [`BoundingBox::try_new`]).
    pub fn new(min: Vec2, max: Vec2) -> Result<Self, Error> {
        <Self as BoundingBox>::try_new(min, max)
    }
}
impl Aabb3 {
    /// Validated constructor (see [`BoundingBox::try_new`]).
    pub fn new(min: Vec3, max: Vec3) -> Result<Self, Error> {
        <Self as BoundingBox>::try_new(min, max)
    }
}

impl BoundingBox for Aabb2 {
    type Point = Vec2;
    const ZERO: Self = Self {
        min: Vec2::ZERO,
        max: Vec2::ZERO,
    };
    const NAN: Self = Self {
        min: Vec2::new(f32::NAN, f32::NAN),
        max: Vec2::new(f32::NAN, f32::NAN),
    };
    fn try_new(min: Vec2, max: Vec2) -> Result<Self, Error> {
        let b = Self { min, max };
        b.check().map(|()| b)
    }
    #[inline(always)]
    fn min(&self) -> Vec2 {
        self.min
    }
    #[inline(always)]
    fn max(&self) -> Vec2 {
        self.max
    }
    #[inline]
    fn overlaps(&self, o: &Self) -> bool {
        (self.min.x <= o.max.x)
            & (o.min.x <= self.max.x)
            & (self.min.y <= o.max.y)
            & (o.min.y <= self.max.y)
    }
    fn union(&self, o: &Self) -> Self {
        Self {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

impl BoundingBox for Aabb3 {
    type Point = Vec3;
    const ZERO: Self = Self {
        min: Vec3::ZERO,
        max: Vec3::ZERO,
    };
    const NAN: Self = Self {
        min: Vec3::new(f32::NAN, f32::NAN, f32::NAN),
        max: Vec3::new(f32::NAN, f32::NAN, f32::NAN),
    };
    fn try_new(min: Vec3, max: Vec3) -> Result<Self, Error> {
        let b = Self { min, max };
        b.check().map(|()| b)
    }
    #[inline(always)]
    fn min(&self) -> Vec3 {
        self.min
    }
    #[inline(always)]
    fn max(&self) -> Vec3 {
        self.max
    }
    #[inline]
    fn overlaps(&self, o: &Self) -> bool {
        (self.min.x <= o.max.x)
            & (o.min.x <= self.max.x)
            & (self.min.y <= o.max.y)
            & (o.min.y <= self.max.y)
            & (self.min.z <= o.max.z)
            & (o.min.z <= self.max.z)
    }
    fn union(&self, o: &Self) -> Self {
        Self {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stencils_are_complete_and_half_is_antisymmetric() {
        assert_eq!(Vec3::STENCIL.len(), 27);
        assert_eq!(Vec3::STENCIL[0], [0, 0, 0]);
        assert_eq!(Vec3::HALF_STENCIL.len(), 13);
        for d in &Vec3::STENCIL[1..] {
            let neg = [-d[0], -d[1], -d[2]];
            let a = Vec3::HALF_STENCIL.contains(d);
            let b = Vec3::HALF_STENCIL.contains(&neg);
            assert!(a ^ b, "{d:?}");
        }
        assert_eq!(Vec2::STENCIL.len(), 9);
        assert_eq!(Vec2::HALF_STENCIL.len(), 4);
        for d in &Vec2::STENCIL[1..] {
            let a = Vec2::HALF_STENCIL.contains(d);
            let b = Vec2::HALF_STENCIL.contains(&[-d[0], -d[1]]);
            assert!(a ^ b);
        }
    }

    /// The rows cover the stencils: every full-stencil offset is `row + (dx,
    /// 0, 0)` for exactly one row, and the half rows with `(1, 0, 0)` are
    /// the half stencil.
    #[test]
    fn rows_cover_the_stencils() {
        /// The cells `row + (dx, 0, 0)`, `dx` in `-1..=1`, as 3D arrays,
        /// sorted, in `out`; returns how many.
        fn expand<P: Point>(
            rows: &[P::Cell],
            extra: Option<[i32; 3]>,
            out: &mut [[i32; 3]; 27],
        ) -> usize {
            let mut m = 0;
            for &r in rows {
                for dx in -1..=1 {
                    let c = P::cell_add(r, P::cell_from_fn(|k| if k == 0 { dx } else { 0 }));
                    out[m] =
                        core::array::from_fn(|k| if k < P::DIM { P::cell_coord(c, k) } else { 0 });
                    m += 1;
                }
            }
            if let Some(e) = extra {
                out[m] = e;
                m += 1;
            }
            out[..m].sort_unstable();
            m
        }
        fn flat<P: Point>(cells: &[P::Cell], out: &mut [[i32; 3]; 27]) -> usize {
            for (o, &c) in out.iter_mut().zip(cells) {
                *o = core::array::from_fn(|k| if k < P::DIM { P::cell_coord(c, k) } else { 0 });
            }
            out[..cells.len()].sort_unstable();
            cells.len()
        }
        let (mut a, mut b) = ([[0; 3]; 27], [[0; 3]; 27]);
        let m = expand::<Vec3>(Vec3::ROWS, None, &mut a);
        let f = flat::<Vec3>(Vec3::STENCIL, &mut b);
        assert_eq!(a[..m], b[..f]);
        let m = expand::<Vec2>(Vec2::ROWS, None, &mut a);
        let f = flat::<Vec2>(Vec2::STENCIL, &mut b);
        assert_eq!(a[..m], b[..f]);
        let m = expand::<Vec3>(Vec3::HALF_ROWS, Some([1, 0, 0]), &mut a);
        let f = flat::<Vec3>(Vec3::HALF_STENCIL, &mut b);
        assert_eq!(a[..m], b[..f]);
        let m = expand::<Vec2>(Vec2::HALF_ROWS, Some([1, 0, 0]), &mut a);
        let f = flat::<Vec2>(Vec2::HALF_STENCIL, &mut b);
        assert_eq!(a[..m], b[..f]);
    }

    /// The row key is row-major (x fastest) and linear over the cells of the
    /// uniform grid and their neighbours.
    #[test]
    fn row_key_is_row_major_and_linear() {
        let top = 2 * crate::cell::UNIFORM_RANGE_CELLS + 2;
        for c in [
            [-3, 0, 5],
            [0, 0, 0],
            [7, top, 2],
            [top, top, top],
            [-3, -3, -3],
        ] {
            let k = Vec3::cell_row_key(c);
            assert_eq!(Vec3::cell_row_key([c[0] + 1, c[1], c[2]]), k + 1);
            assert_eq!(Vec3::cell_row_key([c[0], c[1] + 1, c[2]]), k + (1 << 17));
            assert_eq!(Vec3::cell_row_key([c[0], c[1], c[2] + 1]), k + (1 << 34));
            assert!(
                Vec3::cell_row_key([top, c[1], c[2]]) < Vec3::cell_row_key([-3, c[1] + 1, c[2]])
            );
            let k2 = Vec2::cell_row_key([c[0], c[1]]);
            assert_eq!(Vec2::cell_row_key([c[0] + 1, c[1]]), k2 + 1);
            assert_eq!(Vec2::cell_row_key([c[0], c[1] + 1]), k2 + (1 << 17));
        }
    }

    #[test]
    fn morton_interleaves() {
        assert_eq!(Vec3::cell_morton([1, 0, 0]), 1);
        assert_eq!(Vec3::cell_morton([0, 1, 0]), 2);
        assert_eq!(Vec3::cell_morton([0, 0, 1]), 4);
        assert_eq!(Vec3::cell_morton([3, 0, 0]), 0b1001);
        assert_eq!(Vec3::cell_morton([(1 << 21) - 1; 3]), (1u64 << 63) - 1);
        assert_eq!(Vec2::cell_morton([1, 1]), 3);
        assert_eq!(Vec2::cell_morton([0, 2]), 8);
        assert_eq!(Vec2::cell_morton([-1, -1]), u64::MAX);
        // Brute-force interleave agrees.
        for &(x, y, z) in &[(5u32, 9u32, 1234u32), (77, 0, 3), (16384, 16385, 32767)] {
            let mut m = 0u64;
            for b in 0..21 {
                m |= (((x >> b) & 1) as u64) << (3 * b);
                m |= (((y >> b) & 1) as u64) << (3 * b + 1);
                m |= (((z >> b) & 1) as u64) << (3 * b + 2);
            }
            assert_eq!(Vec3::cell_morton([x as i32, y as i32, z as i32]), m);
        }
    }

    #[test]
    fn boxes_validate() {
        assert!(Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 1.0)).is_ok());
        assert_eq!(
            Aabb3::new(Vec3::new(2.0, 0.0, 0.0), Vec3::new(1.0, 1.0, 1.0)),
            Err(Error::InvertedBox)
        );
        assert_eq!(
            Aabb2::new(Vec2::new(f32::NAN, 0.0), Vec2::new(1.0, 1.0)),
            Err(Error::NonFinite)
        );
        assert_eq!(
            Vec3::try_new(0.0, f32::INFINITY, 0.0),
            Err(Error::NonFinite)
        );
    }

    #[test]
    fn overlap_is_closed() {
        let a = Aabb2::new(Vec2::ZERO, Vec2::new(1.0, 1.0)).unwrap();
        let b = Aabb2::new(Vec2::new(1.0, 0.5), Vec2::new(2.0, 2.0)).unwrap();
        let c = Aabb2::new(Vec2::new(1.01, 0.5), Vec2::new(2.0, 2.0)).unwrap();
        assert!(a.overlaps(&b) && b.overlaps(&a));
        assert!(!a.overlaps(&c));
    }

    #[test]
    fn pod_casts() {
        let v = [Vec3::new(1.0, 2.0, 3.0)];
        let bytes: &[u8] = bytemuck::cast_slice(&v);
        assert_eq!(bytes.len(), 12);
        let b = [Aabb3::default(); 2];
        assert_eq!(bytemuck::cast_slice::<Aabb3, f32>(&b).len(), 12);
        assert_eq!(core::mem::size_of::<Aabb2>(), 16);
    }
}
