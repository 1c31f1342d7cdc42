//! A global mesh across MPI processes (the `mpi` feature): with 2
//! processes of 2 CPU devices each, `shard_map` programs over the 4-device
//! mesh (1-D, and 2x2 with axis `a` across the processes and `b` inside
//! each) give, bit for bit, what one process with 4 CPU devices gives, on
//! the CPU backend and on the interpreter; and the errors (a mesh too
//! large, a mesh between the local and the global count, processes running
//! different programs, a process that does not take part).
//!
//! The binary is its own MPI program, as `distributed_mpi.rs`: run by
//! `cargo test` it is the driver (it computes the references with 4 local
//! devices, then starts itself under `mpirun -np 2` once per scenario);
//! started with `JAXON_MPI_ROLE` set, it is a rank.

use jaxon::collectives::{all_gather, axis_index, pmax, pmean, pmin, ppermute, psum, psum_scatter};
mod mpi_launch;

use jaxon::distributed;
use jaxon::prelude::*;
use jaxon::{
    devices, local_devices, make_mesh, set_cpu_device_count, shard_map, with_backend, Mesh, P,
};
use mpi_launch::{mpirun, mpirun_found, tail, Checks};
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    match std::env::var("JAXON_MPI_ROLE") {
        Ok(role) => rank_main(&role),
        Err(_) => driver(),
    }
}

/// The same random input on every process: x of shape [8, 8].
fn input() -> Array {
    random::normal(&random::key(7), &[8, 8], DType::F32).expect("random input")
}

type Program = fn(&Array) -> jaxon::Result<Array>;

fn line(_name: &str) -> jaxon::Result<Mesh> {
    make_mesh(&[4], &["x"])
}

fn square() -> jaxon::Result<Mesh> {
    make_mesh(&[2, 2], &["a", "b"])
}

/// Every program, by name. Device `d` of the 1-D mesh is global device `d`
/// (process `d / 2`); on the 2x2 mesh axis `a` crosses the processes.
fn programs() -> Vec<(&'static str, Program)> {
    vec![
        ("psum x", |x| {
            let f = shard_map(
                |s: Array| psum(&s, "x").unwrap(),
                &line("x")?,
                P!("x"),
                P!(),
            );
            f.call(x.clone())
        }),
        ("pmean x", |x| {
            let f = shard_map(
                |s: Array| pmean(&s, "x").unwrap(),
                &line("x")?,
                P!("x"),
                P!(),
            );
            f.call(x.clone())
        }),
        ("pmax x", |x| {
            let f = shard_map(
                |s: Array| pmax(&s, "x").unwrap(),
                &line("x")?,
                P!("x"),
                P!(),
            );
            f.call(x.clone())
        }),
        ("pmin x", |x| {
            let f = shard_map(
                |s: Array| pmin(&s, "x").unwrap(),
                &line("x")?,
                P!("x"),
                P!(),
            );
            f.call(x.clone())
        }),
        ("all_gather x", |x| {
            let f = shard_map(
                |s: Array| all_gather(&s, "x").unwrap(),
                &line("x")?,
                P!("x"),
                P!(),
            );
            f.call(x.clone())
        }),
        ("ppermute ring x", |x| {
            let f = shard_map(
                |s: Array| ppermute(&s, "x", &[(0, 1), (1, 2), (2, 3), (3, 0)]).unwrap(),
                &line("x")?,
                P!("x"),
                P!("x"),
            );
            f.call(x.clone())
        }),
        ("psum_scatter x", |x| {
            let f = shard_map(
                |s: Array| psum_scatter(&s, "x", 1, true).unwrap(),
                &line("x")?,
                P!("x", None),
                P!(None, "x"),
            );
            f.call(x.clone())
        }),
        ("axis_index x", |x| {
            let f = shard_map(
                |s: Array| &s * &axis_index("x").unwrap().astype(DType::F32),
                &line("x")?,
                P!("x"),
                P!("x"),
            );
            f.call(x.clone())
        }),
        ("psum a (across processes)", |x| {
            let f = shard_map(
                |s: Array| psum(&s, "a").unwrap(),
                &square()?,
                P!("a", "b"),
                P!(None, "b"),
            );
            f.call(x.clone())
        }),
        ("psum b (inside each process)", |x| {
            let f = shard_map(
                |s: Array| psum(&s, "b").unwrap(),
                &square()?,
                P!("a", "b"),
                P!("a", None),
            );
            f.call(x.clone())
        }),
        ("pmax a then pmean b", |x| {
            let f = shard_map(
                |s: Array| pmean(&pmax(&s, "a").unwrap(), "b").unwrap(),
                &square()?,
                P!("a", "b"),
                P!(),
            );
            f.call(x.clone())
        }),
        ("all_gather a", |x| {
            let f = shard_map(
                |s: Array| all_gather(&s, "a").unwrap(),
                &square()?,
                P!("a", "b"),
                P!(None, None, "b"),
            );
            f.call(x.clone())
        }),
        ("jit(psum a and b)", |x| {
            let mesh = square()?;
            let g = jit(move |x: Array| {
                let f = shard_map(
                    |s: Array| psum(&psum(&s, "a").unwrap(), "b").unwrap(),
                    &mesh,
                    P!("a", "b"),
                    P!(),
                );
                f.call(x).unwrap()
            });
            g.call(x.clone())
        }),
    ]
}

/// Every program on every backend: `name|backend|shape|bits,...` lines.
fn run_all() -> Result<String, String> {
    let x = input();
    let mut out = String::new();
    for backend in ["cpu", "interpreter"] {
        for (name, p) in programs() {
            let y = with_backend(backend, || p(&x))
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("{name} on {backend}: {e}"))?;
            let bits: Vec<String> = y
                .to_vec::<f32>()
                .iter()
                .map(|v| format!("{:08x}", v.to_bits()))
                .collect();
            out.push_str(&format!(
                "{name}|{backend}|{:?}|{}\n",
                y.shape(),
                bits.join(",")
            ));
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------- driver

fn driver() -> ExitCode {
    if !mpirun_found() {
        return ExitCode::SUCCESS;
    }
    let mut checks = Checks::default();
    let mut check = |name: &str, ok: bool, detail: String| checks.check(name, ok, detail);

    // One process with 4 CPU devices: the reference.
    set_cpu_device_count(4).expect("4 host devices");
    let reference = match run_all() {
        Ok(r) => r,
        Err(e) => {
            println!("FAIL the single-process reference: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rows = |text: &str| -> Vec<(String, String)> {
        text.lines()
            .filter_map(|l| {
                l.rsplit_once('|')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect()
    };
    let want = rows(&reference);
    // The CPU backend and the interpreter agree bit for bit on 4 devices.
    let half = want.len() / 2;
    let same: Vec<&str> = (0..half)
        .filter(|&i| want[i].1 != want[i + half].1)
        .map(|i| want[i].0.as_str())
        .collect();
    check(
        "one process: the cpu backend equals the interpreter bit for bit",
        same.is_empty(),
        format!("differ: {same:?}"),
    );

    let out = std::env::temp_dir().join(format!("jaxon-gmesh-{}-out", std::process::id()));
    let (code, text, took) = mpirun("programs", Duration::from_secs(300), Some(&out), &[]);
    for rank in 0..2 {
        let path = format!("{}.{rank}", out.display());
        let got = rows(&std::fs::read_to_string(&path).unwrap_or_default());
        let _ = std::fs::remove_file(&path);
        let bad: Vec<String> = want
            .iter()
            .filter(|w| !got.contains(w))
            .map(|w| w.0.clone())
            .collect();
        check(
            &format!(
                "rank {rank} of 2x2 devices: {} results equal 1 process x 4 devices bit for bit",
                want.len()
            ),
            code == Some(0) && got.len() == want.len() && bad.is_empty(),
            format!(
                "status {code:?} after {took:?}, {} of {} results, differing: {bad:?}\n{}",
                got.len(),
                want.len(),
                tail(&text, 40)
            ),
        );
    }

    let (code, text, _) = mpirun("errors", Duration::from_secs(120), None, &[]);
    check(
        "errors: mesh sizes, different programs on the processes; afterwards it works",
        code == Some(0) && text.matches("ERRORS OK").count() == 2,
        format!("status {code:?}, output:\n{}", tail(&text, 40)),
    );

    let (code, text, took) = mpirun("timeout", Duration::from_secs(60), None, &[]);
    check(
        "a process that does not take part: the other's shard_map fails after the timeout",
        text.contains("TIMEOUT OK") && took < Duration::from_secs(30),
        format!(
            "status {code:?} after {took:?}, output:\n{}",
            tail(&text, 40)
        ),
    );

    checks.finish()
}

// ------------------------------------------------------------------ ranks

fn rank_main(role: &str) -> ExitCode {
    if let Err(e) = set_cpu_device_count(2) {
        println!("rank: {e}");
        return ExitCode::FAILURE;
    }
    mpi_launch::rank_main(role, |role, me| match role {
        "programs" => programs_rank(me),
        "errors" => errors_rank(me),
        "timeout" => timeout_rank(me),
        other => Err(format!("unknown role {other}")),
    })
}

fn programs_rank(me: usize) -> Result<(), String> {
    let e = |e: jaxon::Error| e.to_string();
    let (all, local) = (devices().map_err(e)?, local_devices().map_err(e)?);
    let ids: Vec<usize> = local.iter().map(|d| d.id).collect();
    if all.len() != 4 || ids != vec![2 * me, 2 * me + 1] {
        return Err(format!("devices {all:?}, local {local:?}"));
    }
    let text = run_all()?;
    let path = std::env::var("JAXON_MPI_OUT").map_err(|_| "JAXON_MPI_OUT is not set")?;
    std::fs::write(format!("{path}.{me}"), text).map_err(|e| format!("{path}: {e}"))
}

fn expect_err<T>(what: &str, r: jaxon::Result<T>, needles: &[&str]) -> Result<(), String> {
    match r {
        Err(e) if needles.iter().all(|n| e.to_string().contains(n)) => Ok(()),
        Err(e) => Err(format!("{what}: the error does not name {needles:?}: {e}")),
        Ok(_) => Err(format!("{what}: expected an error")),
    }
}

fn errors_rank(me: usize) -> Result<(), String> {
    distributed::set_timeout(Duration::from_secs(30));
    for backend in ["cpu", "interpreter"] {
        let run = |f: &dyn Fn() -> jaxon::Result<Array>| {
            with_backend(backend, f).map_err(|e| e.to_string())
        };
        let too_big = run(&|| make_mesh(&[8], &["x"]).map(|_| input()))?;
        expect_err("a mesh of 8", too_big, &["8 devices", "2 processes have 4"])?;
        let three = run(&|| {
            let x = random::normal(&random::key(1), &[6, 2], DType::F32)?;
            let f = shard_map(
                |s: Array| psum(&s, "x").unwrap(),
                &make_mesh(&[3], &["x"])?,
                P!("x"),
                P!(),
            );
            f.call(x)
        })?;
        expect_err("a mesh of 3", three, &["3 devices", "not all 4"])?;
        // Different shapes on the two processes.
        let rows = if me == 0 { 8 } else { 4 };
        let shapes = run(&|| {
            let x = random::normal(&random::key(1), &[rows, 2], DType::F32)?;
            let f = shard_map(
                |s: Array| psum(&s, "x").unwrap(),
                &line("x")?,
                P!("x"),
                P!(),
            );
            f.call(x)
        })?;
        expect_err("different shapes", shapes, &["different program"])?;
        // Different bodies.
        let bodies = run(&|| {
            if me == 0 {
                shard_map(
                    |s: Array| psum(&s, "x").unwrap(),
                    &line("x")?,
                    P!("x"),
                    P!(),
                )
                .call(input())
            } else {
                shard_map(
                    |s: Array| pmax(&s, "x").unwrap(),
                    &line("x")?,
                    P!("x"),
                    P!(),
                )
                .call(input())
            }
        })?;
        expect_err("different bodies", bodies, &["different program"])?;
        // The session still works: psum over 4 devices is the sum of the
        // four blocks of 2 rows.
        let x = input();
        let got = run(&|| {
            shard_map(
                |s: Array| psum(&s, "x").unwrap(),
                &line("x")?,
                P!("x"),
                P!(),
            )
            .call(x.clone())
        })?
        .map_err(|e| format!("psum after the errors on {backend}: {e}"))?
        .to_vec::<f32>();
        let xv = x.to_vec::<f32>();
        let want: Vec<f64> = (0..16)
            .map(|i| (0..4).map(|d| f64::from(xv[d * 16 + i])).sum())
            .collect();
        if got.len() != 16
            || got
                .iter()
                .zip(&want)
                .any(|(g, w)| (f64::from(*g) - w).abs() > 1e-5)
        {
            return Err(format!(
                "psum after the errors on {backend}: {got:?} against {want:?}"
            ));
        }
    }
    println!("ERRORS OK");
    Ok(())
}

fn timeout_rank(me: usize) -> Result<(), String> {
    if me == 1 {
        // Never takes part; mpirun ends it when rank 0 leaves.
        std::thread::sleep(Duration::from_secs(20));
        return Ok(());
    }
    distributed::set_timeout(Duration::from_secs(1));
    let t0 = Instant::now();
    let r = shard_map(
        |s: Array| psum(&s, "x").unwrap(),
        &line("x").map_err(|e| e.to_string())?,
        P!("x"),
        P!(),
    )
    .call(input());
    let took = t0.elapsed();
    expect_err("a shard_map without its peer", r, &["timed out"])?;
    if took > Duration::from_secs(5) {
        return Err(format!("the timeout of 1 s took {took:?}"));
    }
    println!("TIMEOUT OK after {:.2} s", took.as_secs_f64());
    // Leave at once: the session cannot be finalized.
    std::process::exit(0);
}
