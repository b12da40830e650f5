//! Colours shared by the CPU frames ([`render`](crate::render)) and the GPU
//! renderer ([`draw`](crate::draw)): 8-bit sRGB values, and the density
//! ramp (the seed's colouring: pale blue at low density, strong blue at
//! high).

/// The background.
pub const BACKGROUND: [u8; 3] = [24, 26, 30];
/// The outline of the domain (the channel box).
pub const FRAME: [u8; 3] = [110, 110, 120];
/// Particles at [`DENSITY_LOW`] times the rest density or less.
pub const PALE: [u8; 3] = [205, 228, 255];
/// Particles at [`DENSITY_HIGH`] times the rest density or more.
pub const STRONG: [u8; 3] = [8, 48, 190];
/// Kinematic obstacles: a neutral warm grey, apart from the blues.
pub const OBSTACLE: [u8; 3] = [178, 168, 150];
/// Density, as a multiple of the rest density, drawn [`PALE`].
pub const DENSITY_LOW: f32 = 0.5;
/// Density, as a multiple of the rest density, drawn [`STRONG`].
pub const DENSITY_HIGH: f32 = 1.5;

/// Where `density` falls on the ramp: 0 at [`DENSITY_LOW`]·`rest_density`
/// and below, 1 at [`DENSITY_HIGH`]·`rest_density` and above, linear
/// between (0 for a non-finite ratio).
pub fn density_ramp(density: f32, rest_density: f32) -> f32 {
    let t = (density / rest_density - DENSITY_LOW) / (DENSITY_HIGH - DENSITY_LOW);
    if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) }
}

/// The 8-bit sRGB colour of a particle of `density` before shading:
/// [`PALE`] to [`STRONG`], mixed channel by channel at
/// [`density_ramp`].
pub fn density_colour(density: f32, rest_density: f32) -> [f32; 3] {
    let t = density_ramp(density, rest_density);
    [0, 1, 2].map(|c| {
        let (a, b) = (f32::from(PALE[c]), f32::from(STRONG[c]));
        a + (b - a) * t
    })
}

/// An 8-bit sRGB channel as linear intensity in `[0, 1]`.
pub fn srgb_to_linear(c: u8) -> f32 {
    let c = f32::from(c) / 255.0;
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_ends_and_middle() {
        assert_eq!(density_colour(0.0, 1000.0), PALE.map(f32::from));
        assert_eq!(density_colour(500.0, 1000.0), PALE.map(f32::from));
        assert_eq!(density_colour(1500.0, 1000.0), STRONG.map(f32::from));
        assert_eq!(density_colour(9000.0, 1000.0), STRONG.map(f32::from));
        assert_eq!(density_ramp(1000.0, 1000.0), 0.5);
        assert_eq!(density_ramp(f32::NAN, 1000.0), 0.0);
    }

    #[test]
    fn srgb_decoding() {
        assert_eq!(srgb_to_linear(0), 0.0);
        assert!((srgb_to_linear(255) - 1.0).abs() < 1e-6);
        assert!((srgb_to_linear(188) - 0.5).abs() < 0.01);
    }
}
