//! Multi-process `pmap` (the `mpi` feature), as JAX's: under `mpirun -np 2`
//! with `L` = 1 and 2 CPU devices per process (`JAXON_CPU_DEVICES`), each
//! process passes inputs whose mapped axis is `L` long, the map runs over
//! all `2·L` devices, collectives span both processes, and each process
//! gets its own `L` rows of every mapped result. On both ranks, every
//! program's results equal **bit for bit** the matching rows of one process
//! with `2·L` devices run on the concatenated inputs, on the CPU backend and
//! on the interpreter: psum, pmean, all_gather, a ppermute ring,
//! axis_index, `in_axes`/`out_axes` 1, `jit(pmap)`, `vmap(pmap)`, the
//! gradient of a pmean'd loss inside the map, and `grad` from outside the
//! map (of a mapped input: this process's rows; of a replicated one: the
//! whole gradient). Also the device and process counts after `initialize`, and
//! the error for a mapped axis that is not the local device count (on
//! both processes, or on one: the other then fails at once).
//!
//! The binary is its own MPI program, as `global_mesh_mpi.rs`: run by
//! `cargo test` it is the driver (the one-process references, then
//! `mpirun -np 2` per scenario); with `JAXON_MPI_ROLE` set, it is a rank.

mod mpi_launch;

use jaxon::collectives::{all_gather, axis_index, pmean, ppermute, psum};
use jaxon::prelude::*;
use jaxon::{
    device_count, local_device_count, pmap, process_count, process_index, set_cpu_device_count,
    with_backend,
};
use mpi_launch::{mpirun, mpirun_found, tail, Checks};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The processes of every `mpirun` here.
const PROCS: usize = 2;

fn main() -> ExitCode {
    match std::env::var("JAXON_MPI_ROLE") {
        Ok(role) => rank_main(&role),
        Err(_) => driver(),
    }
}

/// The global inputs for `n` devices, the same on every process: `x` of
/// shape [n, 3, 4] (mapped) and `w` of shape [4] (replicated).
fn global_inputs(n: usize) -> jaxon::Result<(Array, Array)> {
    let x = random::normal(&random::key(11), &[n, 3, 4], DType::F32)?;
    let w = random::normal(&random::key(12), &[4], DType::F32)?;
    Ok((x, w))
}

/// One result: its values, and whether its leading axis is the mapped one
/// (each process then holds its own rows of it) or it is whole.
type Out = (Array, bool);
type Program = fn(&Array, &Array) -> jaxon::Result<Vec<Out>>;

fn loss(w: &Array, x: &Array) -> jaxon::Result<Array> {
    jnp::sum(&jnp::sin(&(x * w))?, All, false)
}

/// Every program, by name: `x` is the mapped input (the global array on
/// one process, this process's rows under `mpirun`), `w` replicated.
fn programs() -> Vec<(&'static str, Program)> {
    vec![
        ("psum", |x, _| {
            let f = pmap(|s: Array| psum(&s, "i").unwrap()).axis_name("i");
            Ok(vec![(f.call(x.clone())?, true)])
        }),
        ("pmean", |x, _| {
            let f = pmap(|s: Array| pmean(&s, "i").unwrap()).axis_name("i");
            Ok(vec![(f.call(x.clone())?, true)])
        }),
        ("all_gather", |x, _| {
            let f = pmap(|s: Array| all_gather(&s, "i").unwrap()).axis_name("i");
            Ok(vec![(f.call(x.clone())?, true)])
        }),
        ("ppermute ring", |x, _| {
            let n = device_count()?;
            let perm: Vec<(usize, usize)> = (0..n).map(|j| (j, (j + 1) % n)).collect();
            let f = pmap(move |s: Array| ppermute(&s, "i", &perm).unwrap()).axis_name("i");
            Ok(vec![(f.call(x.clone())?, true)])
        }),
        ("axis_index", |x, _| {
            let f = pmap(|s: Array| {
                let i = axis_index("i").unwrap();
                (&s * &i.astype(DType::F32), i)
            })
            .axis_name("i");
            let (y, i) = f.call(x.clone())?;
            Ok(vec![(y, true), (i, true)])
        }),
        ("in_axes 1, out_axes 1, a replicated input", |x, w| {
            let f = pmap(|(s, w): (Array, Array)| psum(&(&s * &w), "i").unwrap())
                .axis_name("i")
                .in_axes((1, None::<i32>))
                .out_axes(1);
            let y = f.call((jnp::moveaxis(x, &[0], &[1])?, w.clone()))?;
            Ok(vec![(jnp::moveaxis(&y, &[1], &[0])?, true)])
        }),
        ("jit(pmap(psum - x))", |x, _| {
            let f = jit(|x: Array| {
                pmap(|s: Array| &psum(&s, "i").unwrap() - &s)
                    .axis_name("i")
                    .call(x)
                    .unwrap()
            });
            Ok(vec![(f.call(x.clone())?, true)])
        }),
        ("vmap over axis 1 of pmap(psum - axis_index)", |x, _| {
            let f = vmap(|x: Array| {
                pmap(|s: Array| {
                    &psum(&s, "i").unwrap() - &axis_index("i").unwrap().astype(DType::F32)
                })
                .axis_name("i")
                .call(x)
                .unwrap()
            })
            .in_axes(1)
            .out_axes(1);
            Ok(vec![(f.call(x.clone())?, true)])
        }),
        ("grad of a pmean'd loss inside pmap", |x, w| {
            let f = pmap(|(w, s): (Array, Array)| {
                let g = grad(|w: Array| pmean(&loss(&w, &s).unwrap(), "i").unwrap());
                g(w).unwrap()
            })
            .axis_name("i")
            .in_axes((None::<i32>, 0));
            Ok(vec![(f.call((w.clone(), x.clone()))?, true)])
        }),
        (
            "grad outside pmap (mapped and replicated inputs)",
            |x, w| {
                let outer = |(w, x): (Array, Array)| {
                    let per_device = pmap(|(w, s): (Array, Array)| {
                        pmean(&loss(&w, &s).unwrap(), "i").unwrap() * 0.5 + loss(&w, &s).unwrap()
                    })
                    .axis_name("i")
                    .in_axes((None::<i32>, 0))
                    .call((w, x))
                    .unwrap();
                    jnp::sum(&per_device, All, false).unwrap()
                };
                let (gw, gx) = grad(outer)((w.clone(), x.clone()))?;
                Ok(vec![(gx, true), (gw, false)])
            },
        ),
    ]
}

/// Every program on both backends: `name#k|backend|mapped|shape|bits` lines.
fn run_all(x: &Array, w: &Array) -> Result<String, String> {
    let mut out = String::new();
    for backend in ["cpu", "interpreter"] {
        for (name, p) in programs() {
            let ys = with_backend(backend, || p(x, w))
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("{name} on {backend}: {e}"))?;
            for (k, (y, mapped)) in ys.iter().enumerate() {
                let bits: Vec<String> = match y.dtype() {
                    DType::I32 => y.to_vec::<i32>().iter().map(|v| v.to_string()).collect(),
                    _ => y
                        .to_vec::<f32>()
                        .iter()
                        .map(|v| format!("{:08x}", v.to_bits()))
                        .collect(),
                };
                out.push_str(&format!(
                    "{name}#{k}|{backend}|{mapped}|{:?}|{}\n",
                    y.shape(),
                    bits.join(",")
                ));
            }
        }
    }
    Ok(out)
}

/// A result line split into its key (`name#k|backend`), whether it is
/// mapped, its shape and its values.
struct Row {
    key: String,
    mapped: bool,
    shape: Vec<usize>,
    values: Vec<String>,
}

fn rows(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            let [name, backend, mapped, shape, values] = f[..] else {
                return None;
            };
            let shape = shape
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().parse().ok())
                .collect::<Option<Vec<usize>>>()?;
            Some(Row {
                key: format!("{name}|{backend}"),
                mapped: mapped == "true",
                shape,
                values: values.split(',').map(str::to_string).collect(),
            })
        })
        .collect()
}

/// What process `p` of [`PROCS`] must hold of a one-process result: its
/// `1 / PROCS` of the leading axis when mapped, else all of it.
fn expected_slice(r: &Row, p: usize) -> (Vec<usize>, Vec<String>) {
    if !r.mapped {
        return (r.shape.clone(), r.values.clone());
    }
    let mut shape = r.shape.clone();
    shape[0] /= PROCS;
    let per = r.values.len() / PROCS;
    (shape, r.values[p * per..(p + 1) * per].to_vec())
}

// ---------------------------------------------------------------- driver

fn driver() -> ExitCode {
    if !mpirun_found() {
        return ExitCode::SUCCESS;
    }
    let mut checks = Checks::default();
    let mut check = |name: &str, ok: bool, detail: String| checks.check(name, ok, detail);
    for local in [1usize, 2] {
        // One process with all the devices, on the concatenated inputs.
        let n = PROCS * local;
        set_cpu_device_count(n).expect("host devices");
        let reference = global_inputs(n)
            .map_err(|e| e.to_string())
            .and_then(|(x, w)| run_all(&x, &w));
        let want = match reference {
            Ok(r) => rows(&r),
            Err(e) => {
                check(
                    &format!("the one-process reference with {n} devices"),
                    false,
                    e,
                );
                continue;
            }
        };
        let out =
            std::env::temp_dir().join(format!("jaxon-pmap-mpi-{}-{local}-out", std::process::id()));
        let env = [format!("JAXON_CPU_DEVICES={local}")];
        let (code, text, took) = mpirun("programs", Duration::from_secs(300), Some(&out), &env);
        for rank in 0..PROCS {
            let path = format!("{}.{rank}", out.display());
            let got = rows(&std::fs::read_to_string(&path).unwrap_or_default());
            let _ = std::fs::remove_file(&path);
            let bad: Vec<&str> = want
                .iter()
                .filter(|w| {
                    let (shape, values) = expected_slice(w, rank);
                    !got.iter()
                        .any(|g| g.key == w.key && g.shape == shape && g.values == values)
                })
                .map(|w| w.key.as_str())
                .collect();
            check(
                &format!(
                    "rank {rank} of {PROCS} x {local} devices: {} pmap results equal its rows \
                     of 1 process x {n} devices bit for bit",
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
        let (code, text, _) = mpirun("errors", Duration::from_secs(120), None, &env);
        check(
            &format!(
                "{local} local devices: a mapped axis of another size is an error, on every \
                 process when one has it"
            ),
            code == Some(0) && text.matches("ERRORS OK").count() == PROCS,
            format!("status {code:?}, output:\n{}", tail(&text, 40)),
        );
    }
    checks.finish()
}

// ------------------------------------------------------------------ ranks

fn rank_main(role: &str) -> ExitCode {
    mpi_launch::rank_main(role, |role, me| match role {
        "programs" => programs_rank(me),
        "errors" => errors_rank(me),
        other => Err(format!("unknown role {other}")),
    })
}

/// This process's local device count, checked against the global one and
/// the process counts (JAX's values after `initialize`).
fn counts(me: usize) -> Result<usize, String> {
    let e = |e: jaxon::Error| e.to_string();
    let local = local_device_count().map_err(e)?;
    let all = device_count().map_err(e)?;
    if all != PROCS * local || process_count() != PROCS || process_index() != me {
        return Err(format!(
            "device_count {all}, local_device_count {local}, process {} of {}",
            process_index(),
            process_count()
        ));
    }
    Ok(local)
}

fn programs_rank(me: usize) -> Result<(), String> {
    let local = counts(me)?;
    let e = |e: jaxon::Error| e.to_string();
    let (x, w) = global_inputs(PROCS * local).map_err(e)?;
    let rows = me * local..(me + 1) * local;
    let mine = jaxon::lax::slice(&x, &[rows.start, 0, 0], &[rows.end, 3, 4], None).map_err(e)?;
    let text = run_all(&mine, &w)?;
    let path = std::env::var("JAXON_MPI_OUT").map_err(|_| "JAXON_MPI_OUT is not set")?;
    std::fs::write(format!("{path}.{me}"), text).map_err(|e| format!("{path}: {e}"))
}

fn errors_rank(me: usize) -> Result<(), String> {
    let local = counts(me)?;
    jaxon::distributed::set_timeout(Duration::from_secs(30));
    let bad = local + 1;
    for backend in ["cpu", "interpreter"] {
        let r = with_backend(backend, || {
            let x = random::normal(&random::key(3), &[bad, 2], DType::F32)?;
            pmap(|s: Array| psum(&s, "i").unwrap())
                .axis_name("i")
                .call(x)
        })
        .map_err(|e| e.to_string())?;
        let needles = [
            format!("size {bad}"),
            format!("{local} local devices"),
            format!("{} devices", PROCS * local),
        ];
        match r {
            Err(e) if needles.iter().all(|n| e.to_string().contains(n.as_str())) => {}
            Err(e) => {
                return Err(format!(
                    "on {backend}: the error does not name {needles:?}: {e}"
                ))
            }
            Ok(_) => return Err(format!("on {backend}: a mapped axis of {bad} ran")),
        }
        // Only process 1's mapped axis is wrong: it names the sizes, and
        // process 0, waiting in the map's handshake, fails at once.
        let rows = if me == 1 { bad } else { local };
        let t0 = Instant::now();
        let r = with_backend(backend, || {
            let x = random::normal(&random::key(4), &[rows, 2], DType::F32)?;
            pmap(|s: Array| psum(&s, "i").unwrap())
                .axis_name("i")
                .call(x)
        })
        .map_err(|e| e.to_string())?;
        let took = t0.elapsed();
        let needle = if me == 1 {
            format!("size {bad}")
        } else {
            "process 1 stopped".to_string()
        };
        match r {
            Err(e) if e.to_string().contains(&needle) && took < Duration::from_secs(10) => {}
            Err(e) => {
                return Err(format!(
                    "one wrong process on {backend}: after {took:?}, expected {needle:?}: {e}"
                ))
            }
            Ok(_) => return Err(format!("one wrong process on {backend}: it ran")),
        }
        // The session still works: psum of ones over every device.
        let ones = jnp::ones(&[local, 2], DType::F32).map_err(|e| e.to_string())?;
        let got = with_backend(backend, || {
            pmap(|s: Array| psum(&s, "i").unwrap())
                .axis_name("i")
                .call(ones.clone())
        })
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("psum after the error on {backend}: {e}"))?
        .to_vec::<f32>();
        if got != vec![(PROCS * local) as f32; 2 * local] {
            return Err(format!(
                "psum of ones after the error on {backend}: {got:?}"
            ));
        }
    }
    println!("ERRORS OK");
    Ok(())
}
