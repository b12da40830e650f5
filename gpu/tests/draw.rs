//! The 3D renderer (`draw::Renderer`) offscreen: a dam-break block, a box
//! and a sphere obstacle and the channel box drawn into an `Rgba8Unorm`
//! texture, read back and checked where the camera projects them. The
//! picture is written to `gpu/target/draw-test.png`.

mod common;

use spatium::sph::ParticleState;
use spatium::sph::boundary::{Obstacle, Shape};
use spatium::{Aabb3, Point, Vec3};
use spatium_gpu::camera::{OrbitCamera, transform};
use spatium_gpu::draw::Renderer;
use spatium_gpu::palette::{BACKGROUND, OBSTACLE};
use spatium_gpu::{FluidConfig, Gpu, GpuFluid, scene};

const W: u32 = 320;
const H: u32 = 240;

/// An RGBA8 picture read back from the device.
struct Picture {
    rgba: Vec<u8>,
}

impl Picture {
    fn at(&self, x: u32, y: u32) -> [u8; 3] {
        let i = 4 * (y * W + x) as usize;
        [self.rgba[i], self.rgba[i + 1], self.rgba[i + 2]]
    }

    /// Mean colour of the 5×5 pixels around `(x, y)`.
    fn mean(&self, (x, y): (u32, u32)) -> [f32; 3] {
        let mut sum = [0.0f32; 3];
        for j in y - 2..=y + 2 {
            for i in x - 2..=x + 2 {
                let p = self.at(i, j);
                for c in 0..3 {
                    sum[c] += f32::from(p[c]) / 25.0;
                }
            }
        }
        sum
    }

    fn count_not_background(&self) -> usize {
        self.rgba
            .chunks_exact(4)
            .filter(|p| (0..3).any(|c| (i32::from(p[c]) - i32::from(BACKGROUND[c])).abs() > 2))
            .count()
    }

    fn write_png(&self, path: &std::path::Path) {
        let file = std::io::BufWriter::new(std::fs::File::create(path).expect("create PNG"));
        let mut encoder = png::Encoder::new(file, W, H);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().expect("PNG header");
        writer.write_image_data(&self.rgba).expect("PNG data");
        writer.finish().expect("PNG end");
    }
}

/// Draws one frame offscreen and reads it back (blocking: a test).
fn render(
    gpu: &Gpu,
    renderer: &mut Renderer,
    fluid: &GpuFluid,
    obstacles: &[Obstacle<Vec3>],
    camera: &OrbitCamera,
) -> Picture {
    let device = gpu.device();
    let queue = gpu.queue();
    let texture = device.create_texture(&wgpu::TextureDescriptor {
        label: Some("draw test target"),
        size: wgpu::Extent3d {
            width: W,
            height: H,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: renderer.color_format(),
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
    let row = 4 * W; // 1280, a multiple of 256
    assert_eq!(row % wgpu::COPY_BYTES_PER_ROW_ALIGNMENT, 0);
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("draw test read back"),
        size: u64::from(row * H),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("draw test"),
    });
    renderer.draw(
        device,
        queue,
        &mut encoder,
        &view,
        (W, H),
        fluid,
        obstacles,
        camera,
    );
    encoder.copy_texture_to_buffer(
        texture.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &staging,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(row),
                rows_per_image: Some(H),
            },
        },
        wgpu::Extent3d {
            width: W,
            height: H,
            depth_or_array_layers: 1,
        },
    );
    queue.submit([encoder.finish()]);
    let (tx, rx) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("wait for the frame");
    rx.recv().expect("map callback").expect("map");
    let rgba = staging.get_mapped_range(..).expect("mapped").to_vec();
    staging.unmap();
    Picture { rgba }
}

/// The pixel `camera` projects `p` to.
fn pixel(camera: &OrbitCamera, p: Vec3) -> (u32, u32) {
    let c = transform(&camera.view_proj(W as f32 / H as f32), [p.x, p.y, p.z]);
    let (x, y) = (c[0] / c[3], c[1] / c[3]);
    assert!(
        x.abs() < 0.95 && y.abs() < 0.95,
        "{p:?} projects off screen"
    );
    let px = ((x + 1.0) * 0.5 * W as f32) as u32;
    let py = ((1.0 - y) * 0.5 * H as f32) as u32;
    (px, py)
}

fn blueish(c: [f32; 3]) -> bool {
    c[2] > c[0] + 25.0 && c[2] >= c[1] && c[2] > 60.0
}

/// The obstacle colour, shaded: warm grey (red at least blue), not dark.
fn obstacle_like(c: [f32; 3]) -> bool {
    c[0] >= c[2] && c[0] > 50.0 && (c[0] - c[2]) < 80.0
}

fn with_density(states: &[ParticleState<Vec3>], density: f32) -> Vec<ParticleState<Vec3>> {
    states
        .iter()
        .map(|s| ParticleState { density, ..*s })
        .collect()
}

#[test]
fn draws_fluid_obstacles_and_box() {
    let Some(gpu) = common::gpu("draws_fluid_obstacles_and_box") else {
        return;
    };
    // 8³ particles, spacing 0.025: a block [0, 0.2]³ in a 0.4 × 0.3 × 0.2 box.
    let scene = scene::dam_break(512, 0.025, 0.004).expect("scene");
    let params = scene.params;
    let mut fluid = scene
        .fluid(&gpu, FluidConfig::default())
        .expect("fluid on the device");
    let block_centre = Vec3::new(0.1, 0.1, 0.1);
    let cube = Aabb3::new(Vec3::new(0.27, 0.0, 0.06), Vec3::new(0.35, 0.08, 0.14)).unwrap();
    let cube_centre = Vec3::new(0.31, 0.04, 0.10);
    let ball_centre = Vec3::new(0.31, 0.2, 0.1);
    let obstacles = [
        Obstacle::fixed(Shape::Box(cube)),
        Obstacle::fixed(Shape::Sphere {
            center: ball_centre,
            radius: 0.035,
        }),
    ];
    let camera = OrbitCamera::framing(&params.domain);
    let mut renderer = Renderer::new(gpu.device(), wgpu::TextureFormat::Rgba8Unorm);

    // A few steps, so that the densities are the solver's own.
    fluid.step(10).expect("steps");
    let snap = fluid.read_back().expect("read back");
    let ratio: Vec<f32> = snap
        .states
        .iter()
        .map(|s| s.density / params.rest_density)
        .collect();
    eprintln!(
        "density / rest density after 10 steps: min {:.2}, mean {:.2}, max {:.2}",
        ratio.iter().copied().fold(f32::INFINITY, f32::min),
        ratio.iter().sum::<f32>() / ratio.len() as f32,
        ratio.iter().copied().fold(0.0, f32::max),
    );
    let picture = render(&gpu, &mut renderer, &fluid, &obstacles, &camera);
    let png = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/draw-test.png");
    if let Some(dir) = png.parent() {
        std::fs::create_dir_all(dir).expect("target directory");
    }
    picture.write_png(&png);
    eprintln!("wrote {}", png.display());

    // The background in the corners.
    for (x, y) in [(0, 0), (W - 1, 0), (0, H - 1), (W - 1, H - 1)] {
        let p = picture.at(x, y);
        for c in 0..3 {
            assert!(
                (i32::from(p[c]) - i32::from(BACKGROUND[c])).abs() <= 1,
                "corner ({x}, {y}) is {p:?}, not the background {BACKGROUND:?}"
            );
        }
    }
    // Blue particles where the block projects.
    let at_block = picture.mean(pixel(&camera, block_centre));
    assert!(blueish(at_block), "block centre is {at_block:?}");
    // The obstacles' colour at their centres.
    let at_cube = picture.mean(pixel(&camera, cube_centre));
    assert!(obstacle_like(at_cube), "box centre is {at_cube:?}");
    let at_ball = picture.mean(pixel(&camera, ball_centre));
    assert!(obstacle_like(at_ball), "sphere centre is {at_ball:?}");
    // The lit side of the cube is brighter than its colour in shadow would be.
    assert!(at_cube[0] > 0.3 * f32::from(OBSTACLE[0]));

    // Low against high density: pale against strong blue.
    let (positions, states) = (&scene.positions, &scene.states);
    fluid
        .upload(positions, &with_density(states, 0.5 * params.rest_density))
        .expect("upload");
    let low = render(&gpu, &mut renderer, &fluid, &obstacles, &camera);
    fluid
        .upload(positions, &with_density(states, 1.5 * params.rest_density))
        .expect("upload");
    let high = render(&gpu, &mut renderer, &fluid, &obstacles, &camera);
    let (lo, hi) = (
        low.mean(pixel(&camera, block_centre)),
        high.mean(pixel(&camera, block_centre)),
    );
    eprintln!("block centre: low density {lo:?}, high density {hi:?}");
    assert!(blueish(lo) && blueish(hi), "{lo:?} {hi:?}");
    assert!(
        lo[0] > hi[0] + 80.0 && lo[1] > hi[1] + 80.0,
        "{lo:?} {hi:?}"
    );
    // The same ramp position gives the same picture: the colour comes from
    // the density alone.
    assert_eq!(low.count_not_background(), high.count_not_background());

    // More particles cover more pixels.
    let mut covered = Vec::new();
    for n in [0, 64, 512] {
        fluid.upload(&positions[..n], &states[..n]).expect("upload");
        covered
            .push(render(&gpu, &mut renderer, &fluid, &obstacles, &camera).count_not_background());
    }
    eprintln!("pixels covered by 0, 64, 512 particles: {covered:?}");
    assert!(
        covered[0] < covered[1] && covered[1] < covered[2],
        "{covered:?}"
    );
    // Without particles only the box lines and the obstacles remain.
    let empty_block = {
        fluid.upload(&[], &[]).expect("upload");
        render(&gpu, &mut renderer, &fluid, &obstacles, &camera)
    };
    let at = pixel(&camera, block_centre);
    assert!(!blueish(empty_block.mean(at)));
}

/// Depth: a sphere between the eye and the block hides the particles
/// behind it, one behind the block is hidden by them (the particles are
/// drawn after the obstacles, so only their depth decides). And an sRGB
/// target shows the same colours as a plain one (the shader encodes for
/// the plain one, as for a browser canvas).
#[test]
fn depth_order_and_srgb_targets() {
    let Some(gpu) = common::gpu("depth_order_and_srgb_targets") else {
        return;
    };
    let scene = scene::dam_break(512, 0.025, 0.004).expect("scene");
    let fluid = scene
        .fluid(&gpu, FluidConfig::default())
        .expect("fluid on the device");
    let camera = OrbitCamera::framing(&scene.params.domain);
    let mut renderer = Renderer::new(gpu.device(), wgpu::TextureFormat::Rgba8Unorm);
    let block_centre = Vec3::new(0.1, 0.1, 0.1);
    let eye = camera.eye();
    let towards_eye = {
        let d = Vec3::new(eye[0], eye[1], eye[2]) - block_centre;
        d * (1.0 / d.dot(d).sqrt())
    };
    let at = pixel(&camera, block_centre);
    // 0.2 along the view ray from the block centre is outside the block
    // (its faces are 0.1 away on every axis): in front, or behind.
    for (t, in_front) in [(0.2, true), (-0.2, false)] {
        let ball = Obstacle::fixed(Shape::Sphere {
            center: block_centre + towards_eye * t,
            radius: 0.03,
        });
        let picture = render(&gpu, &mut renderer, &fluid, &[ball], &camera);
        let c = picture.mean(at);
        if in_front {
            assert!(obstacle_like(c), "sphere in front: {c:?}");
        } else {
            assert!(blueish(c), "sphere behind: {c:?}");
        }
    }

    let plain = render(&gpu, &mut renderer, &fluid, &[], &camera);
    let mut srgb_renderer = Renderer::new(gpu.device(), wgpu::TextureFormat::Rgba8UnormSrgb);
    let srgb = render(&gpu, &mut srgb_renderer, &fluid, &[], &camera);
    let (a, b) = (plain.mean(at), srgb.mean(at));
    assert!(
        (0..3).all(|c| (a[c] - b[c]).abs() < 3.0),
        "plain {a:?}, sRGB {b:?}"
    );
    assert_eq!(srgb.at(0, 0), plain.at(0, 0));
    let differing = plain
        .rgba
        .iter()
        .zip(&srgb.rgba)
        .filter(|(x, y)| x.abs_diff(**y) > 2)
        .count();
    assert!(
        differing < plain.rgba.len() / 100,
        "{differing} bytes differ"
    );
}

/// The impostor covers exactly the sphere's silhouette, also close up where
/// it is much wider than the sphere's radius seen at its centre: a sphere
/// of radius `r` at distance `d` on the view axis projects to a disc of
/// angular radius `asin(r/d)`.
#[test]
fn sphere_impostor_covers_its_silhouette() {
    let Some(gpu) = common::gpu("sphere_impostor_covers_its_silhouette") else {
        return;
    };
    let scene = scene::dam_break(8, 0.025, 0.004).expect("scene");
    let mut fluid = scene
        .fluid(&gpu, FluidConfig::default())
        .expect("fluid on the device");
    fluid.upload(&[], &[]).expect("no particles");
    let mut renderer = Renderer::new(gpu.device(), wgpu::TextureFormat::Rgba8Unorm);
    let (r, d) = (0.04f32, 0.08f32);
    let centre = Vec3::new(1.0, 1.0, 1.0);
    let camera = OrbitCamera {
        target: [centre.x, centre.y, centre.z],
        yaw: 0.3,
        pitch: 0.2,
        distance: d,
        fov_y: 120f32.to_radians(),
        near: 0.001,
        far: 10.0,
        min_distance: 0.001,
        max_distance: 10.0,
    };
    let ball = Obstacle::fixed(Shape::Sphere {
        center: centre,
        radius: r,
    });
    let picture = render(&gpu, &mut renderer, &fluid, &[ball], &camera);
    let covered = picture
        .rgba
        .chunks_exact(4)
        .filter(|p| obstacle_like([p[0], p[1], p[2]].map(f32::from)))
        .count() as f32;
    let ndc_radius = (r / d).asin().tan() / (0.5 * camera.fov_y).tan();
    let pixels = ndc_radius * 0.5 * H as f32;
    let expected = std::f32::consts::PI * pixels * pixels;
    eprintln!("silhouette: {covered} pixels, expected {expected:.0}");
    assert!(
        (covered - expected).abs() < 0.03 * expected,
        "{covered} pixels, expected {expected:.0}"
    );
}
