//! The distributed SPH step against one process: run by `cargo test`, this
//! binary starts itself on 1, 2 and 4 ranks (`mpirun`); on each rank it
//! steps a [`DistFluid`] and, beside it, the whole fluid in one
//! [`Fluid::par_step`] (every rank computes that reference itself), and
//! requires the two to agree **bit for bit** after every checked step: the
//! same ids, each exactly once (nothing lost or duplicated by migrations or
//! rebalancing), the same positions and the same solver state. Scenes: a
//! 3D and a 2D collapsing block (dam break) with frequent rebalancing, and
//! the main job's scene (a pipe pouring onto spheres). Then a bad input on
//! one rank must come back as the same error on every rank, with nothing
//! added anywhere.

mod common;

use std::process::ExitCode;

use spatium::exec::Serial;
use spatium::sph::{Fluid, GatherSlot, ParticleState, SphParams, StepControl};
use spatium::{Aabb2, Aabb3, Point, Vec2, Vec3};
use spatium_demo::scene;
use spatium_host::make::cell_sorted;
use spatium_host::runtime::BroadKind;
use spatium_mpi::{Balance, DistError, DistFluid, Particle, Ranks};

/// One check, run on every rank.
type Check = fn(&mut Ranks) -> Result<(), String>;

fn main() -> ExitCode {
    if !common::under_mpirun() {
        return common::launch("distributed");
    }
    let Some(universe) = mpi::initialize() else {
        eprintln!("MPI could not be initialised");
        return ExitCode::FAILURE;
    };
    let mut ranks = Ranks::new(universe.world());
    let checks: [(&str, Check); 5] = [
        ("3D dam break, bit for bit", dam_break_3d),
        ("2D dam break, bit for bit", dam_break_2d),
        (
            "main job scene (pipe and spheres), bit for bit",
            main_job_scene,
        ),
        ("a bad input on one rank fails every rank", bad_input),
        ("a step failing on one rank fails every rank", failing_step),
    ];
    let mut ok = true;
    for (name, check) in checks {
        let local = check(&mut ranks);
        // Every rank learns every rank's verdict, so none goes on alone.
        match ranks.agree(local) {
            Ok(()) => {
                if ranks.rank() == 0 {
                    println!("[{} ranks] ok: {name}", ranks.size());
                }
            }
            Err(e) => {
                if ranks.rank() == 0 {
                    println!("[{} ranks] FAILED: {name}: {e}", ranks.size());
                }
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The whole fluid in one process, stepped as the distributed one claims
/// to be: particles by id, [`Fluid::par_step`] with a cell-sorted hash.
struct Reference<P: Point> {
    fluid: Fluid<P, Vec<P>, Vec<ParticleState<P>>>,
    search: spatium_host::make::VecCellSorted<P>,
    work: Vec<GatherSlot<P>>,
}

impl<P: Point> Reference<P> {
    fn new(params: SphParams<P>, capacity: usize) -> Result<Self, String> {
        let mut search = cell_sorted(capacity, (2 * capacity).next_power_of_two());
        search
            .set_anchor(Some(spatium_mpi::fluid::anchor(&params)))
            .map_err(|e| e.to_string())?;
        Ok(Self {
            fluid: Fluid::new(
                vec![P::ZERO; capacity],
                vec![ParticleState::EMPTY; capacity],
                params,
            ),
            search,
            work: vec![GatherSlot::EMPTY; capacity],
        })
    }

    fn step<C: spatium::sph::boundary::ParCollider<P>>(
        &mut self,
        solids: &mut C,
    ) -> Result<(), String> {
        self.fluid
            .par_step(&Serial, &mut self.search, solids, &mut (), &mut self.work)
            .map_err(|e| format!("reference step: {e}"))
    }
}

/// The bit pattern of a value made of `f32`s.
fn bits<T: bytemuck::Pod>(x: &T) -> &[u32] {
    bytemuck::cast_slice(core::slice::from_ref(x))
}

/// Gathers the distributed fluid and compares it with the reference.
fn compare<P>(
    ranks: &mut Ranks,
    dist: &DistFluid<P>,
    reference: &Fluid<P, Vec<P>, Vec<ParticleState<P>>>,
    when: &str,
) -> Result<(), String>
where
    P: Point + bytemuck::Pod,
    ParticleState<P>: bytemuck::Pod,
{
    let all: Vec<Particle<P>> = dist.gather(ranks).map_err(|e| e.to_string())?;
    let n = reference.len();
    if all.len() != n {
        return Err(format!(
            "{when}: {} particles on all ranks, {n} in the reference",
            all.len()
        ));
    }
    for (k, q) in all.iter().enumerate() {
        if q.id as usize != k {
            return Err(format!(
                "{when}: ids are not 0..{n} each once: position {k} holds id {}",
                q.id
            ));
        }
        let (x, s) = (reference.positions()[k], reference.state()[k]);
        if bits(&q.x) != bits(&x) || bits(&q.state) != bits(&s) {
            return Err(format!(
                "{when}: particle {k} differs: distributed x {:?} v {:?} rho {}, reference x {:?} v {:?} rho {}",
                q.x, q.state.velocity, q.state.density, x, s.velocity, s.density
            ));
        }
    }
    Ok(())
}

/// A block collapsing in a tank, `steps` steps, compared every `every`;
/// the subdomains are rebuilt whenever a rank holds 2 % above the mean
/// (at most every 5 steps), so migrations and rebuilds both happen.
fn dam_break<P>(
    ranks: &mut Ranks,
    domain: P::Aabb,
    block: P::Aabb,
    spacing: f32,
    steps: usize,
) -> Result<(), String>
where
    P: Point + bytemuck::Pod,
    ParticleState<P>: bytemuck::Pod,
{
    let err = |e: DistError| e.to_string();
    let params = SphParams::seed(domain, spacing).map_err(|e| e.to_string())?;
    let balance = Balance {
        tolerance: 0.02,
        min_interval: 5,
    };
    let mut dist = DistFluid::new(ranks, params, balance).map_err(err)?;
    // The seed's Δt = 0.005 at these spacings (0.01, 0.0125) is past the
    // acoustic bound: the stability monitor stops both scenes within their
    // run (Courant number over 1). They are here for the bit-for-bit
    // agreement, so both fluids run unchecked.
    dist.set_control(StepControl::UNCHECKED)
        .map_err(|e| e.to_string())?;
    let added = dist
        .fill_block(ranks, block, spacing, P::ZERO)
        .map_err(err)?;
    // The first subdomains are cut from the block itself.
    dist.rebalance(ranks).map_err(err)?;
    let mut reference = Reference::new(params, added)?;
    reference
        .fluid
        .set_control(StepControl::UNCHECKED)
        .map_err(|e| e.to_string())?;
    reference
        .fluid
        .fill_block(block, spacing, P::ZERO)
        .map_err(|e| e.to_string())?;
    compare(ranks, &dist, &reference.fluid, "after filling")?;
    let (mut ghosts, mut migrated, mut rebuilt) = (0usize, 0usize, 0usize);
    for step in 1..=steps {
        let report = dist.step(ranks, &Serial, &mut (), &mut ()).map_err(err)?;
        reference.step(&mut ())?;
        ghosts += report.ghosts;
        migrated += report.migrated;
        rebuilt += usize::from(report.rebalanced);
        if step % 10 == 0 || step == steps {
            compare(
                ranks,
                &dist,
                &reference.fluid,
                &format!("after step {step}"),
            )?;
        }
    }
    let migrated = ranks.sum_u64(migrated as u64);
    let ghosts = ranks.sum_u64(ghosts as u64);
    if ranks.size() > 1 && (ghosts == 0 || migrated == 0 || rebuilt == 0) {
        return Err(format!(
            "the check did not exercise the exchange: {ghosts} ghosts, {migrated} migrations, {rebuilt} rebuilds"
        ));
    }
    if ranks.rank() == 0 {
        println!(
            "  {added} particles, {steps} steps: {ghosts} ghosts received, {migrated} migrations, {rebuilt} rebuilds in all"
        );
    }
    Ok(())
}

fn dam_break_3d(ranks: &mut Ranks) -> Result<(), String> {
    let b = |lo: [f32; 3], hi: [f32; 3]| {
        Aabb3::new(
            Vec3::new(lo[0], lo[1], lo[2]),
            Vec3::new(hi[0], hi[1], hi[2]),
        )
        .map_err(|e| e.to_string())
    };
    let domain = b([0.0; 3], [0.5, 0.4, 0.2])?;
    let block = b([0.0; 3], [0.2, 0.3, 0.1])?;
    dam_break::<Vec3>(ranks, domain, block, 0.0125, 40)
}

fn dam_break_2d(ranks: &mut Ranks) -> Result<(), String> {
    let domain = Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(0.8, 0.5)).map_err(|e| e.to_string())?;
    let block = Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(0.25, 0.4)).map_err(|e| e.to_string())?;
    dam_break::<Vec2>(ranks, domain, block, 0.01, 60)
}

/// The main job's scene at its default spacing and time step, 150 steps
/// (about 1 900 particles poured onto 200 spheres).
fn main_job_scene(ranks: &mut Ranks) -> Result<(), String> {
    let err = |e: DistError| e.to_string();
    let (spacing, dt, budget) = (1.0 / 64.0, 0.0025, 4000);
    let params = scene::params(spacing, dt)?;
    let mut solids = scene::solids(200, 2009, BroadKind::Hhg, &params)?;
    let mut ref_solids = scene::solids(200, 2009, BroadKind::Hhg, &params)?;
    let mut pipe = scene::pipe(spacing, budget)?;
    let mut ref_pipe = scene::pipe(spacing, budget)?;
    let balance = Balance {
        tolerance: 0.05,
        min_interval: 10,
    };
    let mut dist = DistFluid::new(ranks, params, balance).map_err(err)?;
    let mut reference = Reference::new(params, budget)?;
    for step in 1..=150 {
        dist.emit(ranks, &mut pipe, dt).map_err(err)?;
        ref_pipe
            .emit(&mut reference.fluid, dt)
            .map_err(|e| e.to_string())?;
        dist.step(ranks, &Serial, &mut solids, &mut ())
            .map_err(err)?;
        reference.step(&mut ref_solids)?;
        if step % 50 == 0 {
            compare(
                ranks,
                &dist,
                &reference.fluid,
                &format!("after step {step}"),
            )?;
        }
    }
    if ranks.rank() == 0 {
        println!(
            "  {} particles after 150 steps, {} rebuilds",
            dist.total(),
            dist.subdomains().rebuilds()
        );
    }
    Ok(())
}

/// `Ok` if `result` is the error of rank `last` (which was given `what`).
fn failed_on<T>(result: Result<T, DistError>, last: u32, what: &str) -> Result<(), String> {
    match result {
        Ok(_) => Err(format!("{what} on rank {last} went unnoticed")),
        Err(e) if e.rank == last => Ok(()),
        Err(e) => Err(format!(
            "the error names rank {} instead of {last}: {e}",
            e.rank
        )),
    }
}

/// The last rank passes a NaN point; every rank must get that rank's
/// error, and no rank may keep any of the points.
fn bad_input(ranks: &mut Ranks) -> Result<(), String> {
    let domain = Aabb2::new(Vec2::new(0.0, 0.0), Vec2::new(1.0, 1.0)).map_err(|e| e.to_string())?;
    let params = SphParams::seed(domain, 0.05).map_err(|e| e.to_string())?;
    let mut dist = DistFluid::new(ranks, params, Balance::default()).map_err(|e| e.to_string())?;
    let last = ranks.size() - 1;
    let bad = ranks.rank() == last;
    let points: Vec<Vec2> = (0..50)
        .map(|i| {
            let t = i as f32 / 50.0;
            if bad && i == 7 {
                Vec2::new(f32::NAN, t)
            } else {
                Vec2::new(t, t)
            }
        })
        .collect();
    failed_on(
        dist.extend(ranks, points.into_iter(), Vec2::ZERO),
        last,
        "a NaN point",
    )?;
    let all = dist.gather(ranks).map_err(|e| e.to_string())?;
    if dist.total() != 0 || !all.is_empty() || !dist.owned().is_empty() {
        return Err(format!(
            "after the refused input: total {}, {} particles on all ranks",
            dist.total(),
            all.len()
        ));
    }
    // A bad step input: a domain the decomposition refuses is caught at
    // construction, on every rank.
    let mut p = params;
    if bad {
        p.h = f32::NAN;
    }
    failed_on(DistFluid::new(ranks, p, Balance::default()), last, "NaN h")
}

/// A collider that fails on its `fail_at`-th call (each step calls it
/// twice with leapfrog: after the half step and at the end) and does
/// nothing otherwise.
struct FailAt {
    calls: usize,
    fail_at: usize,
}

impl<P: Point> spatium::sph::boundary::Collider<P> for FailAt {
    fn collide(
        &mut self,
        _: &mut P,
        _: &mut P,
        _: f32,
        _: f32,
        _: &P::Aabb,
    ) -> Result<(), spatium::Error> {
        Ok(())
    }
}

impl<P: Point> spatium::sph::boundary::ParCollider<P> for FailAt {
    fn par_collide<E: spatium::exec::Executor>(
        &mut self,
        exec: &E,
        x: &mut [P],
        state: &mut [ParticleState<P>],
        radius: f32,
        damping: f32,
        walls: &P::Aabb,
    ) -> Result<(), spatium::Error> {
        self.calls += 1;
        if self.calls == self.fail_at {
            return Err(spatium::Error::NonFinite);
        }
        ().par_collide(exec, x, state, radius, damping, walls)
    }
}

/// The last rank's solids fail once in the middle of a step (before the
/// half-step sync point: the others wait there) and once at its end
/// (after the last sync point: the others wait in the final agreement);
/// every rank must get that rank's error, with its particles as before the
/// step, and the next step must run.
fn failing_step(ranks: &mut Ranks) -> Result<(), String> {
    let err = |e: DistError| e.to_string();
    let domain = Aabb3::new(Vec3::ZERO, Vec3::new(0.4, 0.4, 0.4)).map_err(|e| e.to_string())?;
    let block = Aabb3::new(Vec3::ZERO, Vec3::new(0.2, 0.2, 0.2)).map_err(|e| e.to_string())?;
    let params = SphParams::seed(domain, 0.02).map_err(|e| e.to_string())?;
    let mut dist = DistFluid::new(ranks, params, Balance::default()).map_err(err)?;
    dist.fill_block(ranks, block, 0.02, Vec3::ZERO)
        .map_err(err)?;
    dist.rebalance(ranks).map_err(err)?;
    let last = ranks.size() - 1;
    // Calls 1 and 2: step 1; call 3: mid step 2; calls 4 and 5: step 3 (5 fails).
    for fail_at in [3, 5] {
        let mut solids = FailAt {
            calls: 0,
            fail_at: if ranks.rank() == last { fail_at } else { 0 },
        };
        dist.step(ranks, &Serial, &mut solids, &mut ())
            .map_err(err)?;
        let before = dist.gather(ranks).map_err(err)?;
        if fail_at == 5 {
            // As if a step had run: this step's calls are 4 and 5, so it
            // fails at its end (after the last sync point).
            solids.calls = 3;
        }
        failed_on(
            dist.step(ranks, &Serial, &mut solids, &mut ()),
            last,
            &format!("a failing collider (call {fail_at})"),
        )?;
        let after = dist.gather(ranks).map_err(err)?;
        if after != before {
            return Err(format!(
                "call {fail_at}: the failed step changed the particles"
            ));
        }
        dist.step(ranks, &Serial, &mut solids, &mut ())
            .map_err(err)?;
    }
    Ok(())
}
