//! The `serde`, `glam` and `mint` features: a [`Fluid`] snapshot restores
//! into fresh buffers and continues bit for bit; configuration and geometry
//! types round-trip (and invalid ones are refused on the way in); the
//! vector conversions.

use spatium::decomp::{Cut, Periodic};
use spatium::hhash::HashConfig;
use spatium::kdtree::{SortAlgo, Split};
use spatium::sph::boundary::{Obstacle, Shape};
use spatium::sph::{EquationOfState, Fluid, Integrator, ParticleState, SphParams};
use spatium::uniform::{CellRecord, CellSortedHash, SortedParticle, TableSlot};
use spatium::{
    Aabb2, Aabb3, Error, HhgConfig, KdConfig, Point, Storage, UpdateStrategy, Vec2, Vec3,
};

type Hash3 = CellSortedHash<Vec3, Vec<TableSlot>, Vec<SortedParticle<Vec3>>, Vec<CellRecord<Vec3>>>;
type VecFluid<P> = Fluid<P, Vec<P>, Vec<ParticleState<P>>>;

fn hash3(n: usize) -> Hash3 {
    CellSortedHash::new(
        vec![TableSlot::EMPTY; 4096],
        vec![SortedParticle::EMPTY; n],
        vec![CellRecord::EMPTY; n],
    )
}

fn fluid<P: Point>(cap: usize, params: SphParams<P>) -> VecFluid<P> {
    Fluid::new(vec![P::ZERO; cap], vec![ParticleState::EMPTY; cap], params)
}

fn bits<P: Point>(v: P) -> Vec<u32> {
    (0..P::DIM).map(|k| v.coord(k).to_bits()).collect()
}

fn state_bits<P: Point>(s: &ParticleState<P>) -> Vec<u32> {
    let mut b = Vec::new();
    for v in [
        s.velocity,
        s.acceleration,
        s.normal,
        s.start_position,
        s.start_velocity,
    ] {
        b.extend(bits(v));
    }
    b.extend([s.density.to_bits(), s.pressure.to_bits()]);
    b
}

/// Positions and states equal bit for bit, and the same step count.
fn assert_identical<P: Point, X: Storage<P>, S: Storage<ParticleState<P>>>(
    a: &Fluid<P, X, S>,
    b: &Fluid<P, X, S>,
) {
    assert_eq!(a.len(), b.len());
    assert_eq!(a.steps(), b.steps());
    for (i, (x, y)) in a.positions().iter().zip(b.positions()).enumerate() {
        assert_eq!(bits(*x), bits(*y), "position {i}");
    }
    for (i, (x, y)) in a.state().iter().zip(b.state()).enumerate() {
        assert_eq!(state_bits(x), state_bits(y), "state {i}");
    }
}

fn dam_break() -> (VecFluid<Vec3>, SphParams<Vec3>) {
    let domain = Aabb3::new(Vec3::ZERO, Vec3::new(0.4, 0.4, 0.4)).unwrap();
    let params = SphParams::seed(domain, 0.025).unwrap();
    let mut f = fluid(1000, params);
    let block = Aabb3::new(Vec3::ZERO, Vec3::new(0.2, 0.25, 0.2)).unwrap();
    f.fill_block(block, 0.025, Vec3::new(0.3, 0.0, 0.0))
        .unwrap();
    (f, params)
}

#[test]
fn a_restored_fluid_continues_bit_for_bit() {
    let (mut a, params) = dam_break();
    let n = a.len();
    assert!(n > 500, "{n}");
    let mut search_a = hash3(n);
    for _ in 0..8 {
        a.step(&mut search_a, &mut (), &mut ()).unwrap();
    }
    let json = serde_json::to_vec(&a).unwrap();

    // Larger buffers, other parameters, a fresh search.
    // The reference height is the domain's (the preset's old derivation).
    let height = params.domain.max.y - params.domain.min.y;
    let other = SphParams::water(params.domain, 0.05, height).unwrap();
    let mut b = fluid(n + 100, other);
    b.restore(&mut serde_json::Deserializer::from_slice(&json))
        .unwrap();
    assert_eq!(*b.params(), params);
    assert_identical(&a, &b);
    let mut search_b = hash3(n);
    for _ in 0..8 {
        a.step(&mut search_a, &mut (), &mut ()).unwrap();
        b.step(&mut search_b, &mut (), &mut ()).unwrap();
    }
    assert_identical(&a, &b);
    assert_eq!(a.steps(), 16);
}

#[test]
fn a_restored_2d_euler_fluid_continues_bit_for_bit() {
    use spatium::BruteForceNeighbors;
    let domain = Aabb2::new(Vec2::ZERO, Vec2::new(1.0, 1.0)).unwrap();
    let mut params = SphParams::seed(domain, 0.05).unwrap();
    params.integrator = Integrator::Euler;
    params.dt = 0.002;
    params.eos = EquationOfState::IdealGas;
    let mut a = fluid(200, params);
    let block = Aabb2::new(Vec2::ZERO, Vec2::new(0.5, 0.5)).unwrap();
    a.fill_block(block, 0.05, Vec2::ZERO).unwrap();
    let n = a.len();
    let mut sa = BruteForceNeighbors::<Vec2, _>::new(vec![Vec2::ZERO; n]);
    for _ in 0..5 {
        a.step(&mut sa, &mut (), &mut ()).unwrap();
    }
    let json = serde_json::to_string(&a).unwrap();
    let mut b = fluid(n, SphParams::seed(domain, 0.1).unwrap());
    b.restore(&mut serde_json::Deserializer::from_str(&json))
        .unwrap();
    let mut sb = BruteForceNeighbors::<Vec2, _>::new(vec![Vec2::ZERO; n]);
    for _ in 0..5 {
        a.step(&mut sa, &mut (), &mut ()).unwrap();
        b.step(&mut sb, &mut (), &mut ()).unwrap();
    }
    assert_identical(&a, &b);
}

/// Restoring `json` into `b` fails; `b` is left empty with its parameters
/// and step count.
fn refused(b: &mut VecFluid<Vec3>, json: &str) -> String {
    let (params, steps) = (*b.params(), b.steps());
    let e = b
        .restore(&mut serde_json::Deserializer::from_str(json))
        .unwrap_err();
    assert!(b.is_empty());
    assert_eq!(*b.params(), params);
    assert_eq!(b.steps(), steps);
    e.to_string()
}

#[test]
fn bad_snapshots_are_refused_and_leave_the_fluid_empty() {
    let (mut a, params) = dam_break();
    let n = a.len();
    let mut s = hash3(n);
    a.step(&mut s, &mut (), &mut ()).unwrap();
    let json = serde_json::to_string(&a).unwrap();

    // More particles than the buffers hold.
    let mut small = fluid(n - 1, params);
    small.push(Vec3::new(0.1, 0.1, 0.1), Vec3::ZERO).unwrap();
    let e = refused(&mut small, &json);
    assert!(e.contains("invalid length"), "{e}");

    let mut b = fluid(n, params);
    b.push(Vec3::new(0.1, 0.1, 0.1), Vec3::ZERO).unwrap();
    // Missing, repeated and unknown fields; fewer states than positions;
    // parameters the solver refuses.
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut missing = value.clone();
    missing.as_object_mut().unwrap().remove("steps");
    assert!(refused(&mut b, &missing.to_string()).contains("missing field `steps`"));
    let mut short = value.clone();
    short["state"].as_array_mut().unwrap().pop();
    assert!(refused(&mut b, &short.to_string()).contains("invalid length"));
    let mut bad = value.clone();
    bad["params"]["dt"] = serde_json::json!(-1.0);
    assert!(refused(&mut b, &bad.to_string()).contains("`dt`"));
    let mut unknown = value.clone();
    unknown["extra"] = serde_json::json!(1);
    assert!(refused(&mut b, &unknown.to_string()).contains("unknown field"));
    let text = value.to_string();
    let dup = format!("{},\"steps\":3}}", &text[..text.len() - 1]);
    assert!(refused(&mut b, &dup).contains("duplicate field `steps`"));

    // And the good one still restores.
    b.restore(&mut serde_json::Deserializer::from_str(&json))
        .unwrap();
    assert_identical(&a, &b);
}

fn round_trip<T>(v: &T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + core::fmt::Debug,
{
    let json = serde_json::to_string(v).unwrap();
    let back: T = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, v, "{json}");
    back
}

#[test]
fn configs_and_geometry_round_trip() {
    let b3 = Aabb3::new(Vec3::new(-1.0, 0.0, 0.5), Vec3::new(1.0, 2.0, 0.75)).unwrap();
    let b2 = Aabb2::new(Vec2::new(-1.0, 0.0), Vec2::new(1.0, 2.5)).unwrap();
    round_trip(&Vec2::new(1.5, -0.0));
    round_trip(&Vec3::new(1.5, -2.0, 1e-30));
    round_trip(&b2);
    round_trip(&b3);
    round_trip(
        &HhgConfig::DEFAULT
            .with_hierarchy_factor(4.0)
            .unwrap()
            .with_density(0.5)
            .unwrap()
            .with_initial_cells_log2(3)
            .unwrap()
            .with_small_n_threshold(7),
    );
    round_trip(&UpdateStrategy::ClearAndReinsert);
    round_trip(
        &HashConfig::<Vec3>::new(0.25, 0b1010)
            .unwrap()
            .with_origin(Vec3::new(1.0, 2.0, 3.0))
            .unwrap(),
    );
    round_trip(&HashConfig::<Vec2>::DEFAULT);
    round_trip(
        &KdConfig::<Aabb3>::DEFAULT
            .with_split(Split::None)
            .unwrap()
            .with_octree(true)
            .with_bits_per_axis(7)
            .with_root(Some(b3))
            .unwrap()
            .with_sort(SortAlgo::Comparison)
            .with_temporal_reuse(true)
            .with_box_copies(false),
    );
    round_trip(&KdConfig::<Aabb2>::DEFAULT);
    round_trip(&SphParams::<Vec3>::water(b3, 0.05, b3.max.y - b3.min.y).unwrap());
    round_trip(&SphParams::<Vec2>::seed(b2, 0.05).unwrap());
    round_trip(&Cut { axis: 2, at: 0.5 });
    round_trip(&Periodic::new(0b101));
    for shape in [
        Shape::Sphere {
            center: Vec3::new(0.1, 0.2, 0.3),
            radius: 0.5,
        },
        Shape::Box(b3),
        Shape::Triangle([
            Vec3::ZERO,
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
        ]),
    ] {
        round_trip(&Obstacle {
            shape,
            velocity: Vec3::new(0.0, -1.0, 0.0),
        });
    }
    round_trip(&Obstacle::<Vec2>::EMPTY);
    round_trip(&ParticleState {
        velocity: Vec3::new(1.0, 2.0, 3.0),
        density: 1000.5,
        ..ParticleState::EMPTY
    });
    assert_eq!(
        serde_json::to_string(&Error::CapacityExceeded { capacity: 3 }).unwrap(),
        r#"{"CapacityExceeded":{"capacity":3}}"#
    );
}

#[test]
fn invalid_configs_and_boxes_are_refused_on_the_way_in() {
    let inverted = r#"{"min":{"x":1.0,"y":0.0},"max":{"x":0.0,"y":1.0}}"#;
    let e = serde_json::from_str::<Aabb2>(inverted).unwrap_err();
    assert!(e.to_string().contains("min > max"), "{e}");
    let hhg =
        r#"{"hierarchy_factor":2.0,"density":0.0,"initial_cells_log2":4,"small_n_threshold":32}"#;
    let e = serde_json::from_str::<HhgConfig>(hhg).unwrap_err();
    assert!(e.to_string().contains("`density`"), "{e}");
    let hash = r#"{"base":0.0,"levels":1,"origin":{"x":0.0,"y":0.0}}"#;
    assert!(serde_json::from_str::<HashConfig<Vec2>>(hash).is_err());
    let kd = serde_json::to_string(&KdConfig::<Aabb2>::DEFAULT).unwrap();
    let kd = kd.replace(r#""min_gain_log2":3"#, r#""min_gain_log2":33"#);
    assert!(serde_json::from_str::<KdConfig<Aabb2>>(&kd).is_err());
}

#[test]
fn glam_conversions() {
    let v = Vec3::new(1.0, -2.0, 3.5);
    assert_eq!(glam::Vec3::from(v), glam::Vec3::new(1.0, -2.0, 3.5));
    assert_eq!(glam::Vec3A::from(v), glam::Vec3A::new(1.0, -2.0, 3.5));
    assert_eq!(Vec3::from(glam::Vec3::from(v)), v);
    assert_eq!(Vec3::from(glam::Vec3A::from(v)), v);
    let w = Vec2::new(0.25, f32::NAN);
    let g = glam::Vec2::from(w);
    assert_eq!((g.x, g.y.is_nan()), (0.25, true));
    assert_eq!(Vec2::from(glam::Vec2::new(3.0, 4.0)), Vec2::new(3.0, 4.0));

    let b = Aabb3::new(Vec3::ZERO, v.max(Vec3::ZERO)).unwrap();
    let (lo, hi): (glam::Vec3, glam::Vec3) = b.into();
    assert_eq!(Aabb3::try_from((lo, hi)), Ok(b));
    let (lo, hi): (glam::Vec3A, glam::Vec3A) = b.into();
    assert_eq!(Aabb3::try_from((lo, hi)), Ok(b));
    assert_eq!(Aabb3::try_from((hi, lo)), Err(Error::InvertedBox));
    let (lo, hi): (glam::Vec2, glam::Vec2) =
        Aabb2::new(Vec2::ZERO, Vec2::new(1.0, 2.0)).unwrap().into();
    assert_eq!((lo, hi), (glam::Vec2::ZERO, glam::Vec2::new(1.0, 2.0)));
    assert_eq!(
        Aabb2::try_from((lo, glam::Vec2::new(f32::INFINITY, 1.0))),
        Err(Error::NonFinite)
    );
}

#[test]
fn mint_conversions() {
    let v = Vec3::new(1.0, -2.0, 3.5);
    let m = mint::Vector3::from(v);
    assert_eq!(
        m,
        mint::Vector3 {
            x: 1.0,
            y: -2.0,
            z: 3.5
        }
    );
    assert_eq!(Vec3::from(m), v);
    let m2: mint::Vector2<f32> = Vec2::new(5.0, 6.0).into();
    assert_eq!(Vec2::from(m2), Vec2::new(5.0, 6.0));
    let b = Aabb3::new(Vec3::ZERO, Vec3::new(1.0, 1.0, 1.0)).unwrap();
    let pair: (mint::Vector3<f32>, mint::Vector3<f32>) = b.into();
    assert_eq!(Aabb3::try_from(pair), Ok(b));
    assert_eq!(Aabb3::try_from((pair.1, pair.0)), Err(Error::InvertedBox));
    let b2 = Aabb2::new(Vec2::ZERO, Vec2::new(1.0, 1.0)).unwrap();
    let pair: (mint::Vector2<f32>, mint::Vector2<f32>) = b2.into();
    assert_eq!(Aabb2::try_from(pair), Ok(b2));
}
