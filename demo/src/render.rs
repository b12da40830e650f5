//! PNG frames: an orthographic side view of the box (x to the right, y up,
//! looking along −z), the spheres as shaded grey discs and the particles as
//! discs coloured by density, all drawn far to near.

use std::path::Path;

use spatium::Vec3;
use spatium::sph::boundary::{Obstacle, Shape};

/// Image width and height, pixels.
pub const SIZE: u32 = 640;
/// Empty border around the box, pixels.
const MARGIN: f32 = 16.0;
/// Background.
const PAPER: [f32; 3] = [1.0, 1.0, 1.0];
/// Box outline and pipe.
const INK: [f32; 3] = [0.25, 0.25, 0.28];
/// Opacity of a sphere: the fluid behind it shows through, dimmed.
const SPHERE_ALPHA: f32 = 0.5;
/// Colour of the lowest density: pale blue.
const PALE: [f32; 3] = [0.80, 0.89, 1.0];
/// Colour of the highest density: strong blue.
const STRONG: [f32; 3] = [0.02, 0.17, 0.60];

/// Maps densities to colours: pale blue at `lo` and below, strong blue at
/// `hi` and above, linear between.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DensityScale {
    /// Density drawn pale.
    pub lo: f32,
    /// Density drawn strong blue.
    pub hi: f32,
}

impl DensityScale {
    /// The colour of density `rho`.
    pub fn colour(&self, rho: f32) -> [f32; 3] {
        let t = ((rho - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0);
        let t = if t.is_nan() { 0.0 } else { t };
        mix(PALE, STRONG, t)
    }
}

/// `a` to `b` by `t` (exactly `a` at 0 and `b` at 1).
fn mix(a: [f32; 3], b: [f32; 3], t: f32) -> [f32; 3] {
    core::array::from_fn(|k| a[k] * (1.0 - t) + b[k] * t)
}

/// An RGB image, rows top to bottom.
#[derive(Clone, Debug)]
pub struct Image {
    width: u32,
    height: u32,
    pixels: Vec<[f32; 3]>,
}

impl Image {
    /// A blank image.
    fn new(width: u32, height: u32) -> Self {
        Self {
            width,
            height,
            pixels: vec![PAPER; (width * height) as usize],
        }
    }

    /// Blends `colour` with opacity `alpha` into pixel `(x, y)` (ignored
    /// outside the image).
    fn blend(&mut self, x: i64, y: i64, colour: [f32; 3], alpha: f32) {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return;
        }
        let p = &mut self.pixels[(y as usize) * self.width as usize + x as usize];
        *p = mix(*p, colour, alpha);
    }

    /// Fills the rectangle `[x0, x1) × [y0, y1)`.
    fn rect(&mut self, (x0, y0): (f32, f32), (x1, y1): (f32, f32), colour: [f32; 3]) {
        for y in y0.round() as i64..y1.round() as i64 {
            for x in x0.round() as i64..x1.round() as i64 {
                self.blend(x, y, colour, 1.0);
            }
        }
    }

    /// Draws a disc of radius `r` at `(cx, cy)` with anti-aliased edges;
    /// `shade(nx, ny)` gives the colour at the point whose offset from the
    /// centre over `r` is `(nx, ny)` (y down).
    fn disc(
        &mut self,
        (cx, cy): (f32, f32),
        r: f32,
        alpha: f32,
        shade: impl Fn(f32, f32) -> [f32; 3],
    ) {
        let (x0, x1) = ((cx - r - 1.0).floor() as i64, (cx + r + 1.0).ceil() as i64);
        let (y0, y1) = ((cy - r - 1.0).floor() as i64, (cy + r + 1.0).ceil() as i64);
        for y in y0..=y1 {
            for x in x0..=x1 {
                let dx = x as f32 + 0.5 - cx;
                let dy = y as f32 + 0.5 - cy;
                let d = (dx * dx + dy * dy).sqrt();
                let cover = (r + 0.5 - d).clamp(0.0, 1.0);
                if cover > 0.0 {
                    self.blend(x, y, shade(dx / r, dy / r), alpha * cover);
                }
            }
        }
    }

    /// The image as 8-bit RGB bytes.
    fn bytes(&self) -> Vec<u8> {
        self.pixels
            .iter()
            .flat_map(|p| p.map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8))
            .collect()
    }

    /// Writes the image as a PNG.
    ///
    /// # Errors
    /// A message naming the file.
    pub fn write_png(&self, path: &Path) -> Result<(), String> {
        let err = |e: &dyn core::fmt::Display| format!("writing {}: {e}", path.display());
        let file = std::fs::File::create(path).map_err(|e| err(&e))?;
        let mut enc = png::Encoder::new(std::io::BufWriter::new(file), self.width, self.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut w = enc.write_header().map_err(|e| err(&e))?;
        w.write_image_data(&self.bytes()).map_err(|e| err(&e))?;
        w.finish().map_err(|e| err(&e))
    }
}

/// What a frame shows.
pub struct Scene<'a> {
    /// The static spheres.
    pub obstacles: &'a [Obstacle<Vec3>],
    /// Particle positions.
    pub positions: &'a [Vec3],
    /// Particle densities, by particle.
    pub densities: &'a [f32],
    /// Particle radius, drawn.
    pub particle_radius: f32,
    /// The pipe's mouth centre and radius.
    pub pipe: (Vec3, f32),
    /// Density colours.
    pub scale: DensityScale,
}

/// A thing to draw, at its depth.
enum Item {
    /// Sphere centre and radius.
    Sphere(Vec3, f32),
    /// Particle position and density.
    Particle(Vec3, f32),
}

impl Item {
    /// Depth: larger is nearer the viewer.
    fn z(&self) -> f32 {
        match self {
            Self::Sphere(c, _) | Self::Particle(c, _) => c.z,
        }
    }
}

/// The steps after which a frame is written: `images` of them, evenly
/// spaced, the last after the final step.
pub fn frame_steps(steps: usize, images: usize) -> Vec<usize> {
    let k = images.min(steps);
    (1..=k).map(|i| i * steps / k).collect()
}

/// Renders the unit box `[0, 1]³` seen from `+z`.
pub fn render(scene: &Scene<'_>) -> Image {
    let mut img = Image::new(SIZE, SIZE);
    let scale = SIZE as f32 - 2.0 * MARGIN;
    let px = |x: f32, y: f32| (MARGIN + x * scale, MARGIN + (1.0 - y) * scale);

    // Box outline, and the pipe above its mouth.
    let (lo, hi) = (px(0.0, 0.0), px(1.0, 1.0));
    img.rect((lo.0 - 2.0, hi.1 - 2.0), (hi.0 + 2.0, hi.1), INK);
    img.rect((lo.0 - 2.0, lo.1), (hi.0 + 2.0, lo.1 + 3.0), INK);
    img.rect((lo.0 - 2.0, hi.1), (lo.0, lo.1), INK);
    img.rect((hi.0, hi.1), (hi.0 + 2.0, lo.1), INK);
    let (mouth, r) = scene.pipe;
    img.rect(px(mouth.x - r, 1.0), px(mouth.x + r, mouth.y), INK);

    let mut items: Vec<Item> = scene
        .obstacles
        .iter()
        .filter_map(|o| match o.shape {
            Shape::Sphere { center, radius } => Some(Item::Sphere(center, radius)),
            Shape::Box(_) | Shape::Triangle(_) => None,
        })
        .chain(
            scene
                .positions
                .iter()
                .zip(scene.densities)
                .map(|(p, rho)| Item::Particle(*p, *rho)),
        )
        .collect();
    items.sort_by(|a, b| a.z().total_cmp(&b.z()));

    // Light from the upper left, towards the viewer.
    let light = {
        let l = [-0.45f32, 0.6, 0.66];
        let n = (l[0] * l[0] + l[1] * l[1] + l[2] * l[2]).sqrt();
        l.map(|c| c / n)
    };
    let pr = (scene.particle_radius * scale).max(1.0);
    for item in &items {
        match *item {
            Item::Sphere(c, radius) => {
                img.disc(px(c.x, c.y), radius * scale, SPHERE_ALPHA, |nx, ny| {
                    let nz = (1.0 - nx * nx - ny * ny).max(0.0).sqrt();
                    let lambert = (nx * light[0] - ny * light[1] + nz * light[2]).max(0.0);
                    let g = 0.35 + 0.5 * lambert;
                    [g, g, g * 1.02]
                });
            }
            Item::Particle(p, rho) => {
                let colour = scene.scale.colour(rho);
                img.disc(px(p.x, p.y), pr, 1.0, |nx, ny| {
                    // A faint rim keeps neighbouring particles apart.
                    let rim = 1.0 - 0.12 * (nx * nx + ny * ny);
                    colour.map(|c| c * rim)
                });
            }
        }
    }

    // Colour bar: the density scale, low to high, in the upper left.
    let (bx, by, bw, bh) = (MARGIN + 10.0, MARGIN + 10.0, 160.0, 10.0);
    img.rect((bx - 1.0, by - 1.0), (bx + bw + 1.0, by + bh + 1.0), INK);
    for i in 0..bw as i64 {
        let t = i as f32 / (bw - 1.0);
        let colour = mix(PALE, STRONG, t);
        for y in by as i64..(by + bh) as i64 {
            img.blend(bx as i64 + i, y, colour, 1.0);
        }
    }
    img
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_spread_to_the_last_step() {
        assert_eq!(frame_steps(480, 6), [80, 160, 240, 320, 400, 480]);
        assert_eq!(frame_steps(10, 3), [3, 6, 10]);
        assert_eq!(frame_steps(2, 5), [1, 2]);
        assert!(frame_steps(100, 0).is_empty());
        for steps in 1..40 {
            for images in 1..50 {
                let f = frame_steps(steps, images);
                assert!(f.windows(2).all(|w| w[0] < w[1]), "{steps} {images}: {f:?}");
                assert_eq!(f.last(), Some(&steps));
                assert_eq!(f.len(), images.min(steps));
            }
        }
    }

    #[test]
    fn density_scale_is_clamped_and_monotone() {
        let s = DensityScale { lo: 0.5, hi: 1.5 };
        assert_eq!(s.colour(0.0), PALE);
        assert_eq!(s.colour(0.5), PALE);
        assert_eq!(s.colour(9.0), STRONG);
        assert_eq!(s.colour(f32::NAN), PALE);
        let (a, b) = (s.colour(0.8), s.colour(1.2));
        assert!(b[2] < a[2] && b[0] < a[0]);
    }

    #[test]
    fn particle_in_front_of_sphere_is_drawn_last() {
        let sphere = [Obstacle::fixed(Shape::Sphere {
            center: Vec3::new(0.5, 0.5, 0.4),
            radius: 0.1,
        })];
        let scale = DensityScale { lo: 0.0, hi: 1.0 };
        let frame = |z: f32| {
            let img = render(&Scene {
                obstacles: &sphere,
                positions: &[Vec3::new(0.5, 0.5, z)],
                densities: &[1.0],
                particle_radius: 0.01,
                pipe: (Vec3::new(0.5, 0.9, 0.5), 0.05),
                scale,
            });
            let mid = (SIZE / 2) as usize;
            img.pixels[mid * SIZE as usize + mid]
        };
        let front = frame(0.6);
        let behind = frame(0.2);
        assert!((front[0] - STRONG[0]).abs() < 0.05, "{front:?}");
        assert!(behind[0] > front[0] + 0.1, "{behind:?}");
    }
}
