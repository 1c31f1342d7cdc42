//! `jaxon::distributed` over real MPI processes (`mpirun -np 2`), with the
//! `mpi` feature: data-parallel training equals one process on the whole
//! batch, the collectives equal their definitions, and mismatched or
//! missing peers give errors, not hangs.
//!
//! The binary is its own MPI program: run by `cargo test`, it is the
//! driver (it trains in-process for the reference, then starts itself
//! under `mpirun` once per scenario and checks what the ranks print);
//! started by `mpirun` with `JAXON_MPI_ROLE` set, it is a rank.

#[path = "../examples/data_parallel.rs"]
#[allow(dead_code)]
mod example;

mod mpi_launch;

use jaxon::distributed;
use jaxon::prelude::*;
use mpi_launch::{mpirun, mpirun_found, tail, Checks};
use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    match std::env::var("JAXON_MPI_ROLE") {
        Ok(role) => rank_main(&role),
        Err(_) => driver(),
    }
}

// ---------------------------------------------------------------- driver

fn driver() -> ExitCode {
    if !mpirun_found() {
        return ExitCode::SUCCESS;
    }
    let mut checks = Checks::default();
    let mut check = |name: &str, ok: bool, detail: String| checks.check(name, ok, detail);

    // One process on the whole batch: the reference.
    let single = example::train().expect("single-process training");
    let params_file = std::env::temp_dir().join(format!("jaxon-mpi-{}-params", std::process::id()));
    let (code, text, took) = mpirun("train", Duration::from_secs(300), Some(&params_file), &[]);
    let got: Vec<f32> = std::fs::read(&params_file)
        .unwrap_or_default()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let _ = std::fs::remove_file(&params_file);
    let want: Vec<f32> = flat(&single.params);
    let close = got.len() == want.len()
        && got
            .iter()
            .zip(&want)
            .all(|(g, w)| (g - w).abs() <= 1e-5 + 1e-5 * w.abs());
    check(
        "2 processes train to the parameters of 1 process on the whole batch",
        code == Some(0) && close,
        format!(
            "status {code:?}, {} of {} values, output:\n{}",
            got.len(),
            want.len(),
            tail(&text, 30)
        ),
    );
    let losses = parse_floats(&text, "LOSS");
    let losses_close = losses.len() == single.losses.len()
        && losses
            .iter()
            .zip(&single.losses)
            .all(|(g, w)| (g - w).abs() <= 1e-5 * w.abs().max(1.0));
    check(
        "the pmean of the shares' losses is the whole batch's loss",
        losses_close,
        format!("{losses:?} against {:?}", single.losses),
    );
    if let Some(t2) = parse_floats(&text, "STEP_SECONDS").first() {
        let t1 = single.step_time.as_secs_f64();
        println!(
            "     step time: 1 process {:.3} ms, 2 processes {:.3} ms (pmean {:.3} ms; ratio {:.2}), mpirun {:.1} s",
            t1 * 1e3,
            f64::from(*t2) * 1e3,
            parse_floats(&text, "PMEAN_SECONDS").first().map_or(0.0, |t| f64::from(*t) * 1e3),
            t1 / f64::from(*t2),
            took.as_secs_f64()
        );
    }

    // Sums go through the shared window (both ranks on this host) unless
    // `JAXON_DISTRIBUTED_SHM=0`, then through MPI's all-reduce.
    for (how, env) in [
        ("", Vec::new()),
        (
            " (MPI all-reduce)",
            vec!["JAXON_DISTRIBUTED_SHM=0".to_string()],
        ),
    ] {
        let (code, text, _) = mpirun("collectives", Duration::from_secs(120), None, &env);
        let n_ok = text.matches("COLLECTIVES OK").count();
        check(
            &format!("collectives equal their definitions; mismatched calls and an NCCL bootstrap without GPUs are errors on both ranks{how}"),
            code == Some(0) && n_ok == 2,
            format!("status {code:?}, output:\n{}", tail(&text, 30)),
        );
    }

    let (code, text, took) = mpirun("timeout", Duration::from_secs(60), None, &[]);
    check(
        "a peer that does not take part: an error after the timeout, then a poisoned session",
        text.contains("TIMEOUT OK")
            && text.contains("POISONED OK")
            && took < Duration::from_secs(30),
        format!(
            "status {code:?} after {took:?}, output:\n{}",
            tail(&text, 30)
        ),
    );

    let (code, text, took) = mpirun("die", Duration::from_secs(60), None, &[]);
    check(
        "a peer that dies before a collective: the job ends, with an error status, and nothing hangs",
        code != Some(0) && took < Duration::from_secs(30),
        format!("status {code:?} after {took:?}, output:\n{}", tail(&text, 30)),
    );

    checks.finish()
}

fn flat(params: &example::Params) -> Vec<f32> {
    params
        .iter()
        .flat_map(|(w, b)| [w.to_vec::<f32>(), b.to_vec::<f32>()])
        .flatten()
        .collect()
}

/// The numbers after `TAG` on the lines that start with it, in order.
fn parse_floats(text: &str, tag: &str) -> Vec<f32> {
    text.lines()
        .filter_map(|l| l.strip_prefix(tag))
        .filter(|rest| rest.starts_with(' '))
        .flat_map(|rest| {
            rest.split_whitespace()
                .filter_map(|w| w.parse::<f32>().ok())
        })
        .collect()
}

// ------------------------------------------------------------------ ranks

fn rank_main(role: &str) -> ExitCode {
    mpi_launch::rank_main(role, |role, me| match role {
        "train" => train_rank(me),
        "collectives" => collectives_rank(me),
        "timeout" => timeout_rank(me),
        "die" => die_rank(me),
        other => Err(format!("unknown role {other}")),
    })
}

fn train_rank(me: usize) -> Result<(), String> {
    let run = example::train().map_err(|e| e.to_string())?;
    if me == 0 {
        let path = std::env::var("JAXON_MPI_OUT").map_err(|_| "JAXON_MPI_OUT is not set")?;
        let bytes: Vec<u8> = flat(&run.params)
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        std::fs::write(&path, bytes).map_err(|e| format!("{path}: {e}"))?;
        for l in &run.losses {
            println!("LOSS {l}");
        }
        println!("STEP_SECONDS {}", run.step_time.as_secs_f64());
        println!("PMEAN_SECONDS {}", run.pmean_time.as_secs_f64());
    }
    Ok(())
}

fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

fn expect_err<T>(what: &str, r: jaxon::Result<T>, needle: &str) -> Result<(), String> {
    match r {
        Err(e) if e.to_string().contains(needle) => Ok(()),
        Err(e) => Err(format!("{what}: the error does not name `{needle}`: {e}")),
        Ok(_) => Err(format!("{what}: expected an error")),
    }
}

fn collectives_rank(me: usize) -> Result<(), String> {
    let r = me as f32;
    let e = |e: jaxon::Error| e.to_string();
    let x = Array::from_vec(vec![r + 1.0, 2.0 * r, -r], &[3]);
    // Every rank's x, by formula: rank 0 [1, 0, 0], rank 1 [2, 2, -1].
    let s = distributed::psum(&x).map_err(e)?;
    expect_eq("psum f32", s.to_vec::<f32>(), vec![3.0, 2.0, -1.0])?;
    let m = distributed::pmean(&x).map_err(e)?;
    expect_eq("pmean f32", m.to_vec::<f32>(), vec![1.5, 1.0, -0.5])?;
    expect_eq(
        "pmax",
        distributed::pmax(&x).map_err(e)?.to_vec::<f32>(),
        vec![2.0, 2.0, 0.0],
    )?;
    expect_eq(
        "pmin",
        distributed::pmin(&x).map_err(e)?.to_vec::<f32>(),
        vec![1.0, 0.0, -1.0],
    )?;
    let i = Array::from_vec(vec![me as i32 * 10 + 1; 2], &[2, 1]);
    expect_eq(
        "psum i32",
        distributed::psum(&i).map_err(e)?.to_vec::<i32>(),
        vec![12, 12],
    )?;
    let h = x.astype(DType::BF16);
    expect_eq(
        "psum bf16",
        distributed::psum(&h)
            .map_err(e)?
            .astype(DType::F32)
            .to_vec::<f32>(),
        vec![3.0, 2.0, -1.0],
    )?;
    let g = distributed::all_gather(&(x.clone(), i.clone())).map_err(e)?;
    expect_eq("all_gather shape", g.0.shape(), vec![2, 3])?;
    expect_eq(
        "all_gather f32",
        g.0.to_vec::<f32>(),
        vec![1.0, 0.0, 0.0, 2.0, 2.0, -1.0],
    )?;
    expect_eq("all_gather i32", g.1.to_vec::<i32>(), vec![1, 1, 11, 11])?;
    large_sums(me).map_err(|m| format!("large sums: {m}"))?;
    let b = distributed::broadcast(&x, 1).map_err(e)?;
    expect_eq("broadcast from 1", b.to_vec::<f32>(), vec![2.0, 2.0, -1.0])?;
    // A mismatch is an error on both ranks, and the session stays usable.
    let n = if me == 0 { 3 } else { 4 };
    let odd = Array::from_vec(vec![1.0f32; n], &[n]);
    expect_err(
        "mismatched shapes",
        distributed::psum(&odd),
        "different collective",
    )?;
    let which = if me == 0 {
        distributed::psum(&x)
    } else {
        distributed::pmax(&x)
    };
    expect_err("psum against pmax", which, "different collective")?;
    let flag = Array::from_vec(vec![true, false], &[2]);
    expect_err("psum of bool", distributed::psum(&flag), "bool")?;
    expect_err("pmean of i32", distributed::pmean(&i), "i32")?;
    expect_err(
        "broadcast root",
        distributed::broadcast(&x, 2),
        "root process 2",
    )?;
    // NCCL bootstrapped over MPI: here (no GPU, no NCCL) an error on both
    // ranks, agreed before anyone waits in NCCL; the session stays usable.
    match distributed::nccl_communicator(me) {
        Ok(comm) => println!("rank {me}: an NCCL communicator of {} ranks", comm.size()),
        Err(err) => {
            let text = err.to_string();
            if !text.contains("nccl_communicator") {
                return Err(format!("nccl_communicator: unexpected error {text}"));
            }
        }
    }
    let again = distributed::psum(&x).map_err(e)?;
    expect_eq(
        "psum after errors",
        again.to_vec::<f32>(),
        vec![3.0, 2.0, -1.0],
    )?;
    println!("COLLECTIVES OK rank {me}");
    Ok(())
}

/// `psum` and `pmean` of a pytree mixing every packed width, larger than
/// the shared window's first size (so it grows), twice (so the window and
/// the scratch buffers are reused), against their definitions on values
/// whose sums are exact.
fn large_sums(me: usize) -> Result<(), String> {
    let e = |e: jaxon::Error| e.to_string();
    let r = me as f64;
    let v = |i: usize| (i % 1000) as f64 * 0.5 + r;
    let want = |i: usize, mean: bool| {
        let s = 2.0 * ((i % 1000) as f64 * 0.5) + 1.0;
        if mean {
            s / 2.0
        } else {
            s
        }
    };
    let n = 300_001;
    let big = Array::from_vec((0..n).map(|i| v(i) as f32).collect::<Vec<f32>>(), &[n]);
    let wide = Array::from_vec(
        (0..77).map(|i| v(3 * i) + 0.25).collect::<Vec<f64>>(),
        &[7, 11],
    );
    let half = Array::from_vec((0..9).map(|i| v(i) as f32).collect::<Vec<f32>>(), &[9])
        .astype(DType::BF16);
    let tree = (big, wide, half);
    for round in 0..2 {
        for mean in [false, true] {
            let (b, w, h) = if mean {
                distributed::pmean(&tree).map_err(e)?
            } else {
                distributed::psum(&tree).map_err(e)?
            };
            let what = format!("round {round}, {}", if mean { "pmean" } else { "psum" });
            let b = b.to_vec::<f32>();
            if let Some(i) = (0..n).find(|&i| f64::from(b[i]) != want(i, mean)) {
                return Err(format!(
                    "{what}: f32 element {i}: {} against {}",
                    b[i],
                    want(i, mean)
                ));
            }
            let w = w.to_vec::<f64>();
            let shift = if mean { 0.25 } else { 0.5 };
            if let Some(i) = (0..77).find(|&i| w[i] != want(3 * i, mean) + shift) {
                return Err(format!("{what}: f64 element {i}: {}", w[i]));
            }
            expect_eq(&format!("{what}: bf16 dtype"), h.dtype(), DType::BF16)?;
            let h = h.astype(DType::F32).to_vec::<f32>();
            if let Some(i) = (0..9).find(|&i| f64::from(h[i]) != want(i, mean)) {
                return Err(format!("{what}: bf16 element {i}: {}", h[i]));
            }
        }
    }
    Ok(())
}

fn timeout_rank(me: usize) -> Result<(), String> {
    if me == 1 {
        // Busy elsewhere: never takes part; mpirun ends it when rank 0
        // leaves without finalizing.
        std::thread::sleep(Duration::from_secs(20));
        return Ok(());
    }
    distributed::set_timeout(Duration::from_secs(1));
    let x = Array::from_vec(vec![1.0f32], &[1]);
    let t0 = Instant::now();
    let r = distributed::psum(&x);
    let took = t0.elapsed();
    expect_err("psum without a peer", r, "timed out")?;
    if took > Duration::from_secs(5) {
        return Err(format!("the timeout of 1 s took {took:?}"));
    }
    println!("TIMEOUT OK after {:.2} s", took.as_secs_f64());
    expect_err(
        "psum after a timeout",
        distributed::psum(&x),
        "no longer be used",
    )?;
    println!("POISONED OK");
    // Leave at once: the session cannot be finalized.
    std::process::exit(0);
}

fn die_rank(me: usize) -> Result<(), String> {
    if me == 1 {
        std::process::exit(3);
    }
    distributed::set_timeout(Duration::from_secs(10));
    let x = Array::from_vec(vec![1.0f32], &[1]);
    let _ = distributed::psum(&x);
    Err("rank 0 outlived its dead peer's collective".into())
}
