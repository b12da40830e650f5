//! The one storage pattern of the crate.
//!
//! Every structure is generic over its buffers, each `S: Storage<T>`, which is
//! any `AsRef<[T]> + AsMut<[T]>`:
//!
//! * `[T; N]`: a fixed-size instance whose memory is part of the value, so it
//!   can live in a `static` on a microcontroller (each structure's `new` is a
//!   `const fn`);
//! * `&mut [T]`: a runtime-sized instance over memory the caller owns, for
//!   example a `Vec` on a host simulating a million particles.
//!
//! The same code serves both. Capacities are the buffers' lengths; nothing is
//! ever allocated or grown. Each structure documents its memory as a formula
//! over these lengths.

/// A buffer of `T` a structure can use as storage: `[T; N]`, `&mut [T]`, or
/// anything else that derefs to a mutable slice.
pub trait Storage<T>: AsRef<[T]> + AsMut<[T]> {}

impl<T, S: AsRef<[T]> + AsMut<[T]> + ?Sized> Storage<T> for S {}
