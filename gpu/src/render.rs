//! Headless frames: particles splatted into an RGB image on the CPU and
//! written as PNG.

use std::io;
use std::path::Path;

use spatium::sph::{ParticleState, SphParams};
use spatium::{BoundingBox, Vec3};

use crate::palette::{BACKGROUND, FRAME, density_colour};

/// An RGB image, 8 bits per channel, rows top to bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `3·width·height` bytes.
    pub rgb: Vec<u8>,
}

/// Renders the particles seen from the front (looking along −z, x to the
/// right, y up), the domain's x–y face filling the image, each particle a
/// disc of its collision radius (at least one pixel) coloured from pale to
/// strong blue as its density goes from 0.5 to 1.5 times the rest density
/// ([`palette::density_colour`](crate::palette::density_colour)),
/// darker with depth; nearer particles cover farther ones.
pub fn render_density(
    positions: &[Vec3],
    states: &[ParticleState<Vec3>],
    params: &SphParams<Vec3>,
    width: u32,
    height: u32,
) -> Image {
    let (w, h) = (width.max(1), height.max(1));
    let mut rgb = Vec::with_capacity(3 * w as usize * h as usize);
    for _ in 0..w as usize * h as usize {
        rgb.extend(BACKGROUND);
    }
    let (lo, hi) = (params.domain.min(), params.domain.max());
    let span_x = (hi.x - lo.x).max(f32::MIN_POSITIVE);
    let span_y = (hi.y - lo.y).max(f32::MIN_POSITIVE);
    let span_z = (hi.z - lo.z).max(f32::MIN_POSITIVE);
    // One scale for both axes, so the box keeps its aspect.
    let scale = ((w - 1) as f32 / span_x).min((h - 1) as f32 / span_y);
    let radius = (params.particle_radius * scale).max(0.5);
    let mut order: Vec<usize> = (0..positions.len().min(states.len())).collect();
    order.sort_unstable_by(|&a, &b| positions[a].z.total_cmp(&positions[b].z));
    let mut image = Image {
        width: w,
        height: h,
        rgb,
    };
    for i in order {
        let p = positions[i];
        if !(p.x.is_finite() && p.y.is_finite() && p.z.is_finite()) {
            continue;
        }
        let base = density_colour(states[i].density, params.rest_density);
        let depth = ((p.z - lo.z) / span_z).clamp(0.0, 1.0);
        let shade = 0.55 + 0.45 * depth;
        let colour = base.map(|c| (c * shade) as u8);
        let cx = (p.x - lo.x) * scale;
        let cy = (hi.y - p.y) * scale;
        image.disc(cx, cy, radius, colour);
    }
    image.outline(scale * span_x, scale * span_y);
    image
}

impl Image {
    fn put(&mut self, x: i64, y: i64, colour: [u8; 3]) {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return;
        }
        let at = 3 * (y as usize * self.width as usize + x as usize);
        self.rgb[at..at + 3].copy_from_slice(&colour);
    }

    fn disc(&mut self, cx: f32, cy: f32, r: f32, colour: [u8; 3]) {
        let r2 = r * r;
        let (x0, x1) = ((cx - r).floor() as i64, (cx + r).ceil() as i64);
        let (y0, y1) = ((cy - r).floor() as i64, (cy + r).ceil() as i64);
        for y in y0..=y1 {
            for x in x0..=x1 {
                let (dx, dy) = (x as f32 + 0.5 - cx, y as f32 + 0.5 - cy);
                if dx * dx + dy * dy <= r2.max(0.5) {
                    self.put(x, y, colour);
                }
            }
        }
    }

    fn outline(&mut self, w: f32, h: f32) {
        let (w, h) = (w.round() as i64, h.round() as i64);
        for x in 0..=w {
            self.put(x, 0, FRAME);
            self.put(x, h, FRAME);
        }
        for y in 0..=h {
            self.put(0, y, FRAME);
            self.put(w, y, FRAME);
        }
    }

    /// Writes the image as an 8-bit RGB PNG.
    ///
    /// # Errors
    /// The file's I/O errors, and the encoder's as [`io::ErrorKind::Other`].
    pub fn write_png(&self, path: &Path) -> io::Result<()> {
        let file = io::BufWriter::new(std::fs::File::create(path)?);
        let mut encoder = png::Encoder::new(file, self.width, self.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(io::Error::other)?;
        writer
            .write_image_data(&self.rgb)
            .map_err(io::Error::other)?;
        writer.finish().map_err(io::Error::other)
    }
}
