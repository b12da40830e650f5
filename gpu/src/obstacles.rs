//! Kinematic obstacles of a [`GpuFluid`](crate::GpuFluid): the core's
//! [`Obstacle`]s (spheres, boxes, triangles) in one small device buffer,
//! with a host-side mirror moved by the same `f32` operations as the
//! device's copy.
//!
//! The device buffer is a 16-byte header (the obstacle count) followed by
//! [`MAX_OBSTACLES`] records of 64 bytes (WGSL `ObstacleSet` /
//! `ObstacleRecord` in `shaders/obstacle_types.wgsl`). Each record holds the
//! shape's points, the velocity the contacts are resolved against, and the
//! step's displacement `velocity · dt`, computed here on the host (an
//! `f32` product, exactly as [`Obstacles::advance`](spatium::Obstacles::advance)
//! computes it) so the device only adds it: a product and a sum on the
//! device could be contracted into a fused multiply-add and round
//! differently from the mirror.

use bytemuck::{Pod, Zeroable};
use spatium::sph::boundary::{Obstacle, Shape};
use spatium::{Aabb3, BoundingBox, Point, Vec3};

use crate::error::GpuError;

/// Most obstacles a [`GpuFluid`](crate::GpuFluid) holds: every particle
/// tests every obstacle's bounds in each contact pass, as the core's
/// `collide_linear` does (the CPU switches to a broad phase above
/// [`SHARED_OBSTACLES`](spatium::sph::boundary::SHARED_OBSTACLES) = 32;
/// the GPU has no broad phase, so the linear test is kept short).
pub const MAX_OBSTACLES: usize = 64;

/// Bytes of the header before the records (the count and padding).
const HEADER_BYTES: u64 = 16;
/// Bytes of one record.
const RECORD_BYTES: u64 = 64;
/// Bytes of the device buffer: header plus [`MAX_OBSTACLES`] records.
pub(crate) const OBSTACLE_BUFFER_BYTES: u64 = HEADER_BYTES + RECORD_BYTES * MAX_OBSTACLES as u64;

/// WGSL `ObstacleRecord`: the shape's kind, its points (sphere: centre and
/// radius in `b[0]`; box: min and max; triangle: three vertices), its
/// velocity and its displacement per step.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub(crate) struct ObstacleRecord {
    kind: u32,
    a: [f32; 3],
    b: [f32; 3],
    c: [f32; 3],
    velocity: [f32; 3],
    delta: [f32; 3],
}

const SPHERE: u32 = 0;
const BOX: u32 = 1;
const TRIANGLE: u32 = 2;

const _: () = assert!(size_of::<ObstacleRecord>() as u64 == RECORD_BYTES);

fn arr(v: Vec3) -> [f32; 3] {
    [v.x, v.y, v.z]
}

fn vec(a: [f32; 3]) -> Vec3 {
    Vec3::new(a[0], a[1], a[2])
}

impl ObstacleRecord {
    fn new(o: &Obstacle<Vec3>, dt: f32) -> Self {
        let (kind, a, b, c) = match o.shape {
            Shape::Sphere { center, radius } => {
                (SPHERE, center, Vec3::new(radius, 0.0, 0.0), Vec3::ZERO)
            }
            Shape::Box(b) => (BOX, b.min(), b.max(), Vec3::ZERO),
            Shape::Triangle([a, b, c]) => (TRIANGLE, a, b, c),
        };
        Self {
            kind,
            a: arr(a),
            b: arr(b),
            c: arr(c),
            velocity: arr(o.velocity),
            delta: arr(o.velocity * dt),
        }
    }

    /// The obstacle a record holds (`None` for an unknown kind or an
    /// inverted box).
    fn obstacle(&self) -> Option<Obstacle<Vec3>> {
        let (a, b, c) = (vec(self.a), vec(self.b), vec(self.c));
        let shape = match self.kind {
            SPHERE => Shape::Sphere {
                center: a,
                radius: self.b[0],
            },
            BOX => Shape::Box(Aabb3::new(a, b).ok()?),
            TRIANGLE => Shape::Triangle([a, b, c]),
            _ => return None,
        };
        Some(Obstacle {
            shape,
            velocity: vec(self.velocity),
        })
    }
}

/// The obstacles of a fluid, host side: what was last uploaded, moved as
/// the device moves its copy.
#[derive(Clone, Debug, Default)]
pub(crate) struct ObstacleSet {
    list: Vec<Obstacle<Vec3>>,
}

/// Checks obstacles as [`Obstacles::add`](spatium::Obstacles::add) does:
/// the shape's [`Shape::check`] and a finite velocity; at most
/// [`MAX_OBSTACLES`].
pub(crate) fn check(obstacles: &[Obstacle<Vec3>]) -> Result<(), GpuError> {
    if obstacles.len() > MAX_OBSTACLES {
        return Err(GpuError::TooManyObstacles {
            max: MAX_OBSTACLES,
            requested: obstacles.len(),
        });
    }
    for o in obstacles {
        o.shape.check()?;
        if !o.velocity.is_finite() {
            return Err(spatium::Error::NonFinite.into());
        }
    }
    Ok(())
}

/// One step of [`Obstacles::advance`](spatium::Obstacles::advance): every
/// obstacle with a non-zero velocity translated by `velocity · dt`, each
/// moved shape checked first; nothing changes on error.
fn advance_once(list: &mut [Obstacle<Vec3>], dt: f32) -> Result<(), GpuError> {
    for o in list.iter() {
        if o.velocity != Vec3::ZERO {
            o.shape.translated(o.velocity * dt).check()?;
        }
    }
    for o in list.iter_mut() {
        if o.velocity != Vec3::ZERO {
            o.shape = o.shape.translated(o.velocity * dt);
        }
    }
    Ok(())
}

impl ObstacleSet {
    /// The obstacles, by id.
    pub fn as_slice(&self) -> &[Obstacle<Vec3>] {
        &self.list
    }

    /// Replaces the obstacles and writes them to `buffer`.
    ///
    /// # Errors
    /// As [`check`]; nothing changes on error.
    pub fn set(
        &mut self,
        obstacles: &[Obstacle<Vec3>],
        queue: &wgpu::Queue,
        buffer: &wgpu::Buffer,
        dt: f32,
    ) -> Result<(), GpuError> {
        check(obstacles)?;
        self.list = obstacles.to_vec();
        self.write(queue, buffer, dt);
        Ok(())
    }

    /// Writes the header and every record (the displacements for time step
    /// `dt`) to `buffer`.
    pub fn write(&self, queue: &wgpu::Queue, buffer: &wgpu::Buffer, dt: f32) {
        let mut bytes = Vec::with_capacity(OBSTACLE_BUFFER_BYTES as usize);
        bytes.extend_from_slice(bytemuck::bytes_of(&[self.list.len() as u32, 0, 0, 0]));
        for o in &self.list {
            bytes.extend_from_slice(bytemuck::bytes_of(&ObstacleRecord::new(o, dt)));
        }
        queue.write_buffer(buffer, 0, &bytes);
    }

    /// `true` if some obstacle moves (the device then runs the advance
    /// kernel once per step).
    pub fn moving(&self) -> bool {
        self.list.iter().any(|o| o.velocity != Vec3::ZERO)
    }

    /// `k` steps of [`Obstacles::advance`](spatium::Obstacles::advance)
    /// with time step `dt` on the mirror, as the device will make them.
    ///
    /// # Errors
    /// [`GpuError::Core`] if a moved shape fails [`Shape::check`] (its
    /// coordinates overflow); nothing changes on error.
    pub fn advance(&mut self, k: u32, dt: f32) -> Result<(), GpuError> {
        if !self.moving() || k == 0 {
            return Ok(());
        }
        let mut moved = self.list.clone();
        for _ in 0..k {
            advance_once(&mut moved, dt)?;
        }
        self.list = moved;
        Ok(())
    }
}

/// Decodes a read-back of the device buffer.
///
/// # Errors
/// [`GpuError::Operation`] for a short buffer, a count above
/// [`MAX_OBSTACLES`] or a record that holds no valid obstacle.
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<Obstacle<Vec3>>, GpuError> {
    let bad = |why: &str| GpuError::Operation(format!("obstacle buffer: {why}"));
    if bytes.len() < HEADER_BYTES as usize {
        return Err(bad("short"));
    }
    let count = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    if count > MAX_OBSTACLES || bytes.len() < (HEADER_BYTES + RECORD_BYTES * count as u64) as usize
    {
        return Err(bad("count"));
    }
    let records: Vec<ObstacleRecord> = bytemuck::pod_collect_to_vec(
        &bytes[HEADER_BYTES as usize..(HEADER_BYTES + RECORD_BYTES * count as u64) as usize],
    );
    records
        .iter()
        .map(|r| r.obstacle().ok_or_else(|| bad("record")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_every_shape() {
        let list = [
            Obstacle {
                shape: Shape::Sphere {
                    center: Vec3::new(1.0, 2.0, 3.0),
                    radius: 0.5,
                },
                velocity: Vec3::new(0.0, -1.0, 0.0),
            },
            Obstacle::fixed(Shape::Box(
                Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 0.5, 0.25)).unwrap(),
            )),
            Obstacle::fixed(Shape::Triangle([
                Vec3::ZERO,
                Vec3::new(1.0, 0.0, 0.0),
                Vec3::new(0.0, 0.0, 1.0),
            ])),
        ];
        let mut bytes = bytemuck::bytes_of(&[3u32, 0, 0, 0]).to_vec();
        for o in &list {
            bytes.extend_from_slice(bytemuck::bytes_of(&ObstacleRecord::new(o, 0.01)));
        }
        assert_eq!(decode(&bytes).unwrap(), list);
    }

    #[test]
    fn advance_matches_the_core() {
        use spatium::{BruteForceBroadPhase, BruteSlot, Obstacles};
        let list = [
            Obstacle {
                shape: Shape::Sphere {
                    center: Vec3::new(0.1, 0.2, 0.3),
                    radius: 0.05,
                },
                velocity: Vec3::new(0.3, -0.7, 0.1),
            },
            Obstacle {
                shape: Shape::Box(
                    Aabb3::new(Vec3::new(0.1, 0.0, 0.0), Vec3::new(0.13, 0.4, 0.3)).unwrap(),
                ),
                velocity: Vec3::new(0.0, 0.5, 0.0),
            },
        ];
        let mut core = Obstacles::new(
            vec![Obstacle::EMPTY; 4],
            BruteForceBroadPhase::new(vec![BruteSlot::<Aabb3>::EMPTY; 4]),
        );
        for o in list {
            core.add(o).unwrap();
        }
        let mut set = ObstacleSet {
            list: list.to_vec(),
        };
        for _ in 0..37 {
            core.advance(0.0037).unwrap();
        }
        set.advance(37, 0.0037).unwrap();
        assert_eq!(set.as_slice(), core.as_slice());
    }
}
