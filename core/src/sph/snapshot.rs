//! A snapshot of a [`Fluid`] (feature `serde`): [`Fluid`] implements
//! `serde::Serialize`, and [`Fluid::restore`] reads a snapshot back into a
//! fluid's own buffers, so that stepping the restored fluid continues the
//! saved one bit for bit.
//!
//! A snapshot is a struct `Fluid` of four fields: `params`
//! ([`SphParams`]), `steps`, `positions` and `state` (sequences of the
//! first [`Fluid::len`] positions and [`ParticleState`]s). That is all
//! the solver's state: the neighbour search and the solids' broad phase are
//! rebuilt from the positions by every [`Fluid::step`], so a restored fluid
//! stepped with a fresh search gives the same result as the original.
//!
//! The core does not allocate, so the particles are not deserialized into a
//! buffer of their own: [`Restore`] (a `serde::de::DeserializeSeed`) writes
//! them straight into the fluid's buffers as they arrive.

use core::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use super::{Fluid, ParticleState, SphParams};
use crate::geom::Point;
use crate::storage::Storage;

/// The snapshot's field names, in order.
const FIELDS: &[&str] = &["params", "steps", "positions", "state"];

impl<P, X, S> Serialize for Fluid<P, X, S>
where
    P: Point + Serialize,
    P::Aabb: Serialize,
    X: Storage<P>,
    S: Storage<ParticleState<P>>,
{
    /// The fluid's parameters, step count, and the first
    /// [`len`](Fluid::len) positions and states (the buffers' unused tail
    /// is not written).
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        let mut s = serializer.serialize_struct("Fluid", FIELDS.len())?;
        s.serialize_field("params", &self.params)?;
        s.serialize_field("steps", &self.steps)?;
        s.serialize_field("positions", self.positions())?;
        s.serialize_field("state", self.state())?;
        s.end()
    }
}

impl<P: Point, X: Storage<P>, S: Storage<ParticleState<P>>> Fluid<P, X, S> {
    /// Replaces this fluid by the snapshot `deserializer` reads (one written
    /// by [`Fluid`]'s `Serialize`), in place: the particles are written into
    /// this fluid's buffers, nothing is allocated. Stepping the restored
    /// fluid continues the saved one bit for bit (with any neighbour search:
    /// the search is rebuilt from the positions at each step).
    ///
    /// A shorthand for [`Restore`]`(self).deserialize(deserializer)`; use
    /// [`Restore`] to read a fluid nested in a larger snapshot.
    ///
    /// # Errors
    /// The deserializer's errors, among them: a snapshot of more particles
    /// than [`capacity`](Self::capacity) (`invalid_length`), position and
    /// state sequences of different lengths, a missing, unknown or repeated
    /// field, and parameters that [`SphParams::kernels`] refuses.
    ///
    /// **State on error:** the particles arrive one by one and overwrite
    /// the buffers, so the old particles cannot be kept: on error the fluid
    /// is **empty** ([`len`](Self::len) is 0; the buffers hold part of the
    /// snapshot), and its parameters and step count are unchanged (they are
    /// replaced only once the whole snapshot has been read and checked).
    ///
    /// # Example
    ///
    /// ```
    /// use spatium::{Aabb2, Fluid, ParticleState, SphParams, Vec2};
    ///
    /// let domain = Aabb2::new(Vec2::ZERO, Vec2::new(1.0, 1.0))?;
    /// let params = SphParams::seed(domain, 0.05)?;
    /// let mut a = Fluid::new([Vec2::ZERO; 16], [ParticleState::EMPTY; 16], params);
    /// a.push(Vec2::new(0.5, 0.5), Vec2::new(1.0, 0.0))?;
    /// let json = serde_json::to_string(&a).unwrap();
    ///
    /// let mut b = Fluid::new([Vec2::ZERO; 4], [ParticleState::EMPTY; 4], params);
    /// b.restore(&mut serde_json::Deserializer::from_str(&json)).unwrap();
    /// assert_eq!(b.positions(), a.positions());
    /// assert_eq!(b.state(), a.state());
    ///
    /// // A snapshot larger than the buffers is refused; `b` is left empty.
    /// let mut big = Fluid::new([Vec2::ZERO; 16], [ParticleState::EMPTY; 16], params);
    /// big.fill_block(Aabb2::new(Vec2::ZERO, Vec2::new(0.6, 0.6))?, 0.2, Vec2::ZERO)?; // 9
    /// assert_eq!(big.len(), 9);
    /// let json = serde_json::to_string(&big).unwrap();
    /// assert!(b.restore(&mut serde_json::Deserializer::from_str(&json)).is_err());
    /// assert!(b.is_empty());
    /// # Ok::<(), spatium::Error>(())
    /// ```
    pub fn restore<'de, D>(&mut self, deserializer: D) -> Result<(), D::Error>
    where
        D: Deserializer<'de>,
        P: Deserialize<'de>,
        P::Aabb: Deserialize<'de>,
    {
        Restore(self).deserialize(deserializer)
    }
}

/// Reads a snapshot into a [`Fluid`]'s buffers: a
/// [`DeserializeSeed`] (see
/// [`Fluid::restore`], which documents the errors and the state left on
/// error).
pub struct Restore<'a, P: Point, X, S>(pub &'a mut Fluid<P, X, S>);

impl<P: Point, X, S> fmt::Debug for Restore<'_, P, X, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Restore")
    }
}

impl<'de, P, X, S> DeserializeSeed<'de> for Restore<'_, P, X, S>
where
    P: Point + Deserialize<'de>,
    P::Aabb: Deserialize<'de>,
    X: Storage<P>,
    S: Storage<ParticleState<P>>,
{
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        let fluid = self.0;
        // Whatever happens next overwrites the particles.
        fluid.len = 0;
        let cap = fluid.capacity();
        let (params, steps, len) = deserializer.deserialize_struct(
            "Fluid",
            FIELDS,
            FluidVisitor {
                positions: &mut fluid.positions.as_mut()[..cap],
                state: &mut fluid.state.as_mut()[..cap],
            },
        )?;
        fluid.params = params;
        fluid.steps = steps;
        fluid.report = None;
        fluid.len = len;
        Ok(())
    }
}

/// The snapshot's fields.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    Params,
    Steps,
    Positions,
    State,
}

/// Reads the snapshot's struct: the particles into the two slices; returns
/// the parameters, the step count and the number of particles.
struct FluidVisitor<'a, P> {
    positions: &'a mut [P],
    state: &'a mut [ParticleState<P>],
}

impl<P: Point> FluidVisitor<'_, P> {
    /// The result, once the fields are read: every field present, as many
    /// positions as states, parameters that pass [`SphParams::kernels`].
    fn finish<E: de::Error>(
        params: Option<SphParams<P>>,
        steps: Option<u64>,
        positions: Option<usize>,
        state: Option<usize>,
    ) -> Result<(SphParams<P>, u64, usize), E> {
        let params = params.ok_or_else(|| E::missing_field("params"))?;
        let steps = steps.ok_or_else(|| E::missing_field("steps"))?;
        let n = positions.ok_or_else(|| E::missing_field("positions"))?;
        let m = state.ok_or_else(|| E::missing_field("state"))?;
        if n != m {
            return Err(E::invalid_length(m, &"as many states as positions"));
        }
        params.kernels().map_err(E::custom)?;
        Ok((params, steps, n))
    }
}

impl<'de, P> Visitor<'de> for FluidVisitor<'_, P>
where
    P: Point + Deserialize<'de>,
    P::Aabb: Deserialize<'de>,
{
    type Value = (SphParams<P>, u64, usize);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Fluid snapshot")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let missing = |i| de::Error::invalid_length(i, &"a Fluid snapshot of 4 fields");
        let params = seq.next_element()?.ok_or_else(|| missing(0))?;
        let steps = seq.next_element()?.ok_or_else(|| missing(1))?;
        let n = seq
            .next_element_seed(Fill(self.positions))?
            .ok_or_else(|| missing(2))?;
        let m = seq
            .next_element_seed(Fill(self.state))?
            .ok_or_else(|| missing(3))?;
        Self::finish(Some(params), Some(steps), Some(n), Some(m))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut params, mut steps, mut n, mut m) = (None, None, None, None);
        while let Some(key) = map.next_key()? {
            let name = match key {
                Field::Params if params.is_none() => {
                    params = Some(map.next_value()?);
                    continue;
                }
                Field::Steps if steps.is_none() => {
                    steps = Some(map.next_value()?);
                    continue;
                }
                Field::Positions if n.is_none() => {
                    n = Some(map.next_value_seed(Fill(&mut *self.positions))?);
                    continue;
                }
                Field::State if m.is_none() => {
                    m = Some(map.next_value_seed(Fill(&mut *self.state))?);
                    continue;
                }
                Field::Params => "params",
                Field::Steps => "steps",
                Field::Positions => "positions",
                Field::State => "state",
            };
            return Err(de::Error::duplicate_field(name));
        }
        Self::finish(params, steps, n, m)
    }
}

/// Reads a sequence into the front of a slice; returns its length, or an
/// `invalid_length` error for a sequence longer than the slice.
struct Fill<'a, T>(&'a mut [T]);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Fill<'_, T> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Fill<'_, T> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a sequence of at most {} particles", self.0.len())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut n = 0usize;
        while let Some(v) = seq.next_element::<T>()? {
            let Some(slot) = self.0.get_mut(n) else {
                return Err(de::Error::invalid_length(n + 1, &self));
            };
            *slot = v;
            n += 1;
        }
        Ok(n)
    }
}
