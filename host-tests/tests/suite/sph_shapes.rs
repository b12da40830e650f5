//! `Shape::contact` case by case: spheres, boxes (with and without walls),
//! 2D solid triangles and 3D two-sided triangles, against distances computed
//! here from the geometry. After resolving a contact the particle is exactly
//! `r` outside the shape (to rounding).

use spatium::sph::boundary::{Contact, Shape};
use spatium::{Aabb2, Aabb3, Point, Vec2, Vec3};

const R: f32 = 0.1;

fn pushed<P: Point>(x: P, c: Contact<P>) -> P {
    x + c.normal * c.depth
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() < 1e-5
}

#[test]
fn sphere_contacts() {
    let s = Shape::Sphere {
        center: Vec3::new(1.0, 1.0, 1.0),
        radius: 0.5,
    };
    assert!(
        s.contact(Vec3::new(1.61, 1.0, 1.0), Vec3::ZERO, R, None)
            .is_none()
    );
    let c = s
        .contact(Vec3::new(1.55, 1.0, 1.0), Vec3::ZERO, R, None)
        .unwrap();
    assert_eq!(c.normal, Vec3::new(1.0, 0.0, 0.0));
    assert!(close(c.depth, 0.05));
    // Deep inside: out along the radius.
    let x = Vec3::new(1.0, 0.8, 1.0);
    let c = s.contact(x, Vec3::ZERO, R, None).unwrap();
    assert!(close(
        pushed(x, c)
            .distance_squared(Vec3::new(1.0, 1.0, 1.0))
            .sqrt(),
        0.6
    ));
    // At the centre: a defined direction (+y).
    let c = s
        .contact(Vec3::new(1.0, 1.0, 1.0), Vec3::ZERO, R, None)
        .unwrap();
    assert_eq!(c.normal, Vec3::new(0.0, 1.0, 0.0));
    assert!(close(c.depth, 0.6));
}

#[test]
fn box_contacts() {
    let b = Shape::Box(Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 0.5, 1.0)).unwrap());
    // Near a face, an edge and a corner, outside.
    let c = b
        .contact(Vec3::new(1.05, 0.2, 0.5), Vec3::ZERO, R, None)
        .unwrap();
    assert_eq!(c.normal, Vec3::new(1.0, 0.0, 0.0));
    assert!(close(c.depth, 0.05));
    let x = Vec3::new(1.03, 0.54, 0.5);
    let c = b.contact(x, Vec3::ZERO, R, None).unwrap();
    assert!(close(c.depth, R - 0.05));
    assert!(
        b.contact(Vec3::new(1.08, 0.58, 1.08), Vec3::ZERO, R, None)
            .is_none()
    );
    // Inside: out through the nearest face (the top, 0.1 away).
    let x = Vec3::new(0.5, 0.4, 0.5);
    let c = b.contact(x, Vec3::ZERO, R, None).unwrap();
    assert_eq!(c.normal, Vec3::new(0.0, 1.0, 0.0));
    assert!(close(pushed(x, c).y, 0.6));
    // Inside, nearest face against the floor wall: with walls, never into it.
    let x = Vec3::new(0.5, 0.02, 0.5);
    let c = b.contact(x, Vec3::ZERO, R, None).unwrap();
    assert_eq!(c.normal, Vec3::new(0.0, -1.0, 0.0));
    let walls = Aabb3::new(Vec3::ZERO, Vec3::new(2.0, 2.0, 2.0)).unwrap();
    let c = b.contact(x, Vec3::ZERO, R, Some(&walls)).unwrap();
    assert_eq!(c.normal, Vec3::new(0.0, 1.0, 0.0));
    let p = pushed(x, c);
    assert!(close(p.y, 0.6) && p.x == 0.5);
}

#[test]
fn solid_triangle_2d() {
    let t = Shape::Triangle([
        Vec2::new(0.0, 0.0),
        Vec2::new(2.0, 0.0),
        Vec2::new(0.0, 2.0),
    ]);
    // Outside, near the hypotenuse.
    let x = Vec2::new(1.05, 1.05);
    let c = t.contact(x, Vec2::ZERO, R, None).unwrap();
    let d = (1.05f32 + 1.05 - 2.0) / 2.0f32.sqrt();
    assert!(close(c.depth, R - d));
    // Inside near the bottom edge, on it, and in the middle of many points:
    // always out through the nearest edge line, to r beyond it.
    for x in [
        Vec2::new(1.0, 0.1),
        Vec2::new(0.7, 0.0),
        Vec2::new(0.3, 0.25),
        Vec2::new(0.5, 0.5),
    ] {
        let c = t.contact(x, Vec2::ZERO, R, None).unwrap();
        let p = pushed(x, c);
        let outside =
            p.y <= -R + 1e-5 || p.x <= -R + 1e-5 || (p.x + p.y - 2.0) / 2.0f32.sqrt() >= R - 1e-5;
        assert!(outside, "{x:?} pushed to {p:?}");
        assert!(
            t.contact(p, Vec2::ZERO, R * 0.999, None).is_none(),
            "{x:?} → {p:?} still touching"
        );
    }
    // A box in 2D too.
    let b = Shape::Box(Aabb2::new(Vec2::ZERO, Vec2::new(1.0, 1.0)).unwrap());
    assert!(
        b.contact(Vec2::new(1.2, 0.5), Vec2::ZERO, R, None)
            .is_none()
    );
}

#[test]
fn sheet_triangle_3d() {
    let t = Shape::Triangle([
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(2.0, 0.0, 0.0),
        Vec3::new(0.0, 0.0, 2.0),
    ]);
    // Above and below the face: out along ±y.
    let c = t
        .contact(Vec3::new(0.5, 0.05, 0.5), Vec3::ZERO, R, None)
        .unwrap();
    assert_eq!(c.normal, Vec3::new(0.0, 1.0, 0.0));
    assert!(close(c.depth, 0.05));
    let c = t
        .contact(Vec3::new(0.5, -0.03, 0.5), Vec3::ZERO, R, None)
        .unwrap();
    assert_eq!(c.normal, Vec3::new(0.0, -1.0, 0.0));
    // Exactly on the plane: against the motion.
    let c = t
        .contact(Vec3::new(0.5, 0.0, 0.5), Vec3::new(0.0, -1.0, 0.0), R, None)
        .unwrap();
    assert_eq!(c.normal.y.abs(), 1.0);
    assert!(c.normal.y > 0.0);
    let c = t
        .contact(Vec3::new(0.5, 0.0, 0.5), Vec3::new(0.0, 1.0, 0.0), R, None)
        .unwrap();
    assert!(c.normal.y < 0.0);
    // Near an edge and a vertex, beyond the face.
    let c = t
        .contact(Vec3::new(1.05, 0.0, 1.05), Vec3::ZERO, R, None)
        .unwrap();
    assert!(close(c.depth, R - 0.05 * 2.0f32.sqrt()));
    let c = t
        .contact(Vec3::new(-0.06, 0.0, -0.06), Vec3::ZERO, R, None)
        .unwrap();
    assert!(close(c.depth, R - 0.06 * 2.0f32.sqrt()));
    assert!(
        t.contact(Vec3::new(0.5, 0.2, 0.5), Vec3::ZERO, R, None)
            .is_none()
    );
}

#[test]
fn degenerate_shapes_are_refused() {
    use spatium::Error;
    let flat = Shape::Triangle([
        Vec3::ZERO,
        Vec3::new(1.0, 0.0, 0.0),
        Vec3::new(2.0, 0.0, 0.0),
    ]);
    assert_eq!(flat.check(), Err(Error::InvalidShape));
    let dot = Shape::Sphere {
        center: Vec3::ZERO,
        radius: 0.0,
    };
    assert_eq!(dot.check(), Err(Error::InvalidShape));
    let nan = Shape::Sphere {
        center: Vec3::new(f32::NAN, 0.0, 0.0),
        radius: 1.0,
    };
    assert_eq!(nan.check(), Err(Error::NonFinite));
    let ok = Shape::Triangle([Vec2::ZERO, Vec2::new(1.0, 0.0), Vec2::new(0.0, 1.0)]);
    assert_eq!(ok.check(), Ok(()));
}
