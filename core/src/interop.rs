//! Conversions to and from other math crates' vector types (optional
//! features `glam` and `mint`).
//!
//! Vectors convert both ways with `From`, field by field (no check: a
//! [`Vec2`]/[`Vec3`] holds any value). A box converts into its `(min, max)`
//! corners with `From`; the reverse is `TryFrom`, through the validated
//! constructor ([`Aabb2::new`], [`Aabb3::new`]), so it fails with
//! [`Error::NonFinite`] or [`Error::InvertedBox`].
//!
//! [`Vec2`]: crate::Vec2
//! [`Vec3`]: crate::Vec3
//! [`Aabb2::new`]: crate::Aabb2::new
//! [`Aabb3::new`]: crate::Aabb3::new
//! [`Error::NonFinite`]: crate::Error::NonFinite
//! [`Error::InvertedBox`]: crate::Error::InvertedBox

/// The conversions of one foreign vector type `$v` (2D or 3D): vector both
/// ways, box into a corner pair, corner pair into a box (checked).
macro_rules! convert {
    (2, $v:ty, $new:expr) => {
        impl From<crate::Vec2> for $v {
            #[inline]
            fn from(v: crate::Vec2) -> Self {
                $new(v.x, v.y)
            }
        }
        impl From<$v> for crate::Vec2 {
            #[inline]
            fn from(v: $v) -> Self {
                Self::new(v.x, v.y)
            }
        }
        convert!(@box crate::Aabb2, crate::Vec2, $v);
    };
    (3, $v:ty, $new:expr) => {
        impl From<crate::Vec3> for $v {
            #[inline]
            fn from(v: crate::Vec3) -> Self {
                $new(v.x, v.y, v.z)
            }
        }
        impl From<$v> for crate::Vec3 {
            #[inline]
            fn from(v: $v) -> Self {
                Self::new(v.x, v.y, v.z)
            }
        }
        convert!(@box crate::Aabb3, crate::Vec3, $v);
    };
    (@box $b:ty, $p:ty, $v:ty) => {
        impl From<$b> for ($v, $v) {
            /// The box's `(min, max)` corners.
            #[inline]
            fn from(b: $b) -> Self {
                (b.min.into(), b.max.into())
            }
        }
        impl TryFrom<($v, $v)> for $b {
            type Error = crate::Error;
            /// The box with corners `(min, max)`, checked as by the box's `new`.
            fn try_from((min, max): ($v, $v)) -> Result<Self, crate::Error> {
                <$b>::new(<$p>::from(min), <$p>::from(max))
            }
        }
    };
}

/// With [glam](https://docs.rs/glam): [`Vec2`](crate::Vec2) ⇄
/// `glam::Vec2`, [`Vec3`](crate::Vec3) ⇄ `glam::Vec3` and `glam::Vec3A`,
/// boxes ⇄ corner pairs of those.
///
/// # Example
///
/// ```
/// use spatium::{Aabb3, Error, Vec3};
///
/// let v: glam::Vec3 = Vec3::new(1.0, 2.0, 3.0).into();
/// assert_eq!(v, glam::Vec3::new(1.0, 2.0, 3.0));
/// assert_eq!(Vec3::from(glam::Vec3A::new(1.0, 2.0, 3.0)), Vec3::new(1.0, 2.0, 3.0));
///
/// let b = Aabb3::try_from((glam::Vec3::ZERO, glam::Vec3::ONE))?;
/// let (lo, hi): (glam::Vec3, glam::Vec3) = b.into();
/// assert_eq!((lo, hi), (glam::Vec3::ZERO, glam::Vec3::ONE));
/// assert_eq!(Aabb3::try_from((glam::Vec3::ONE, glam::Vec3::ZERO)), Err(Error::InvertedBox));
/// # Ok::<(), Error>(())
/// ```
#[cfg(feature = "glam")]
pub mod glam {
    convert!(2, ::glam::Vec2, ::glam::Vec2::new);
    convert!(3, ::glam::Vec3, ::glam::Vec3::new);
    convert!(3, ::glam::Vec3A, ::glam::Vec3A::new);
}

/// With [mint](https://docs.rs/mint): [`Vec2`](crate::Vec2) ⇄
/// `mint::Vector2<f32>`, [`Vec3`](crate::Vec3) ⇄ `mint::Vector3<f32>`, boxes
/// ⇄ corner pairs of those.
///
/// # Example
///
/// ```
/// use spatium::{Aabb2, Error, Vec2};
///
/// let v: mint::Vector2<f32> = Vec2::new(1.0, 2.0).into();
/// assert_eq!(v, mint::Vector2 { x: 1.0, y: 2.0 });
/// assert_eq!(Vec2::from(v), Vec2::new(1.0, 2.0));
///
/// let lo = mint::Vector2 { x: 0.0, y: 0.0 };
/// let hi = mint::Vector2 { x: 1.0, y: f32::NAN };
/// assert_eq!(Aabb2::try_from((lo, hi)), Err(Error::NonFinite));
/// # Ok::<(), Error>(())
/// ```
#[cfg(feature = "mint")]
pub mod mint {
    /// `mint::Vector2 { x, y }`.
    const fn v2(x: f32, y: f32) -> ::mint::Vector2<f32> {
        ::mint::Vector2 { x, y }
    }
    /// `mint::Vector3 { x, y, z }`.
    const fn v3(x: f32, y: f32, z: f32) -> ::mint::Vector3<f32> {
        ::mint::Vector3 { x, y, z }
    }
    convert!(2, ::mint::Vector2<f32>, v2);
    convert!(3, ::mint::Vector3<f32>, v3);
}
