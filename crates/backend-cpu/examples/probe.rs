//! A quick throughput probe of a few WORKLOADS.md kernels on the cpu
//! backend (`cargo run --release -p jaxon-backend-cpu --example probe`).
//! The real side-by-side benchmark lives in `benches/`; this is for
//! development.

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::{parse_closed_jaxpr, Backend, DType, HostArray};
use std::time::Instant;

/// Minor page faults of this process so far (`/proc/self/stat` field 10).
fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            rest.split(' ').nth(7)?.parse().ok()
        })
        .unwrap_or(0)
}

/// Nanoseconds this thread has run on a CPU (`/proc/thread-self/schedstat`).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split(' ').next()?.parse().ok())
        .unwrap_or(0)
}

/// Seconds of CPU time of the whole process (user + system, 10 ms ticks).
fn process_cpu_s() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split(' ').collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
        })
        .unwrap_or(0.0)
}

fn time(name: &str, text: &str, shapes: &[&[usize]], bytes: f64, flops: f64) -> f64 {
    if let Some(f) = std::env::args().nth(1) {
        if !name.contains(&f) {
            return 0.0;
        }
    }
    let cpu = CpuBackend::new();
    let closed = parse_closed_jaxpr(text, Vec::new()).expect("parses");
    let t0 = Instant::now();
    let exe = cpu.compile(&closed).expect("compiles");
    let compile = t0.elapsed();
    let args: Vec<_> = shapes
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let n: usize = s.iter().product();
            let v: Vec<f64> = (0..n)
                .map(|i| (((i * 7919 + k * 31) % 1000) as f64 / 500.0) - 1.0)
                .collect();
            cpu.to_device(&HostArray::from_f64(DType::F32, s, &v).expect("array"))
                .expect("buffer")
        })
        .collect();
    let _ = exe.execute(&args).expect("runs");
    let _ = exe.execute(&args).expect("runs");
    // Calibrate to about 0.3 s, then take the median of 7 repetitions.
    let t0 = Instant::now();
    let _ = exe.execute(&args).expect("runs");
    let once = t0.elapsed().as_secs_f64();
    let reps = ((0.3 / once) as usize).clamp(1, 100_000);
    let f0 = minor_faults();
    let (c0, p0) = (thread_cpu_ns(), process_cpu_s());
    let mut times = Vec::new();
    for _ in 0..7 {
        let t0 = Instant::now();
        for _ in 0..reps {
            let _ = exe.execute(&args).expect("runs");
        }
        times.push(t0.elapsed().as_secs_f64() / reps as f64);
    }
    let calls = (7 * reps) as f64;
    let faults = (minor_faults() - f0) as f64 / calls;
    let main_cpu = (thread_cpu_ns() - c0) as f64 * 1e-9 / calls;
    let all_cpu = (process_cpu_s() - p0) / calls;
    times.sort_by(f64::total_cmp);
    let dt = times[3];
    println!(
        "{name:>18}: {:9.4} ms/call (main thread on-cpu {:9.4} ms, all threads {:9.4} ms)  {:7.2} GB/s  {:7.2} GFLOP/s  {:8.1} faults/call  (compile {:.2} ms)",
        dt * 1e3,
        main_cpu * 1e3,
        all_cpu * 1e3,
        bytes / dt / 1e9,
        flops / dt / 1e9,
        faults,
        compile.as_secs_f64() * 1e3
    );
    dt
}

fn fori_loop(n: usize) {
    let scan = format!(
        "{{ lambda ; a:f32[64]. let
    _:i32[] b:f32[64] = scan[
      jaxpr={{ lambda ; c:i32[] d:f32[64]. let
          e:i32[] = add c 1:i32[]
          f:f32[64] = mul d 0.999:f32[]
          g:f32[64] = sin d
          h:f32[64] = mul 0.001:f32[] g
          i:f32[64] = add f h
        in (e, i) }}
      length={n}
      num_carry=2
      num_consts=0
      reverse=False
      unroll=1
    ] 0:i32[] a
  in (b,) }}"
    );
    let dt = time("fori_loop_scan", &scan, &[&[64]], 0.0, 0.0);
    println!("{:>18}  {:.4} us/iter (wall)", "", dt * 1e6 / n as f64);
    let whl = format!(
        "{{ lambda ; a:f32[64]. let
    _:i32[] b:f32[64] = while[
      body_jaxpr={{ lambda ; c:i32[] d:f32[64]. let
          e:i32[] = add c 1:i32[]
          f:f32[64] = mul d 0.999:f32[]
          g:f32[64] = sin d
          h:f32[64] = mul 0.001:f32[] g
          i:f32[64] = add f h
        in (e, i) }}
      body_nconsts=0
      cond_jaxpr={{ lambda ; j:i32[] k:f32[64]. let l:bool[] = lt j {n}:i32[] in (l,) }}
      cond_nconsts=0
    ] 0:i32[] a
  in (b,) }}"
    );
    let dt = time("fori_loop_while", &whl, &[&[64]], 0.0, 0.0);
    println!("{:>18}  {:.4} us/iter (wall)", "", dt * 1e6 / n as f64);
}

/// Compile time of every corpus jaxpr that compiles (fresh backend each).
fn corpus_compile() {
    let text = std::fs::read_to_string("tests/data/jax-0.10.2-public.jsonl").unwrap_or_default();
    let key = "\"jaxpr\":\"";
    let mut times = Vec::new();
    for line in text.lines() {
        let Some(start) = line.find(key) else {
            continue;
        };
        let mut j = String::new();
        let mut chars = line[start + key.len()..].chars();
        while let Some(ch) = chars.next() {
            match ch {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => j.push('\n'),
                    Some(c) => j.push(c),
                    None => break,
                },
                c => j.push(c),
            }
        }
        let Ok(closed) = parse_closed_jaxpr(&j, Vec::new()) else {
            continue;
        };
        let t0 = Instant::now();
        if CpuBackend::new().compile(&closed).is_ok() {
            let n = closed.jaxpr.eqns.len();
            times.push((t0.elapsed().as_secs_f64() * 1e3, n));
        }
    }
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    for t in times.iter().rev().take(5) {
        println!("  {:8.2} ms  {} eqns", t.0, t.1);
    }
    let total: f64 = times.iter().map(|t| t.0).sum();
    println!(
        "corpus: {} jaxprs compiled, total {:.1} ms, median {:.2} ms, max {:.2} ms ({} eqns)",
        times.len(),
        total,
        times.get(times.len() / 2).map_or(0.0, |t| t.0),
        times.last().map_or(0.0, |t| t.0),
        times.last().map_or(0, |t| t.1)
    );
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("compile") {
        corpus_compile();
        return;
    }
    let dt = time(
        "dispatch_tiny",
        "{ lambda ; a:f32[4]. let b:f32[4] = add a 1.0:f32[] in (b,) }",
        &[&[4]],
        0.0,
        0.0,
    );
    println!("{:>18}  {:.3} us/call (wall)", "", dt * 1e6);
    fori_loop(1000);
    time(
        "scan_rnn_fwd",
        "{ lambda ; wx:f32[128,256] wh:f32[256,256] b:f32[256] h0:f32[32,256] xs:f32[200,32,128]. let
    h:f32[32,256] hs:f32[200,32,256] = scan[
      jaxpr={ lambda ; a:f32[128,256] c:f32[256,256] d:f32[256] e:f32[32,256] x:f32[32,128]. let
          f:f32[32,256] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] x a
          g:f32[32,256] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] e c
          i:f32[32,256] = add f g
          j:f32[32,256] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(32, 256) sharding=None] d
          k:f32[32,256] = add i j
          l:f32[32,256] = tanh k
        in (l, l) }
      length=200
      num_carry=1
      num_consts=3
      reverse=False
      unroll=1
    ] wx wh b h0 xs
    m:f32[200,32,256] = integer_pow[y=2] hs
    n:f32[] = reduce_sum[axes=(0, 1, 2) out_sharding=None] m
    o:f32[] = div n 1638400.0:f32[]
  in (o,) }",
        &[&[128, 256], &[256, 256], &[256], &[32, 256], &[200, 32, 128]],
        0.0,
        2.0 * 200.0 * 32.0 * 256.0 * (128.0 + 256.0),
    );
    let n = 16usize << 20;
    {
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let t0 = Instant::now();
        for _ in 0..10 {
            let y: Vec<f32> = x.iter().map(|v| -v).collect();
            std::hint::black_box(&y);
        }
        let dt = t0.elapsed().as_secs_f64() / 10.0;
        println!(
            "rust baseline neg: {:.3} ms, {:.2} GB/s",
            dt * 1e3,
            8.0 * n as f64 / dt / 1e9
        );
    }
    for op in ["neg", "exp", "tanh"] {
        time(
            &format!("{op}_16M"),
            &format!("{{ lambda ; a:f32[{n}]. let b:f32[{n}] = {op} a in (b,) }}"),
            &[&[n]],
            8.0 * n as f64,
            0.0,
        );
    }
    time(
        "eltwise_fused_16M",
        &format!(
            "{{ lambda ; a:f32[{n}]. let
    b:f32[{n}] = mul a 2.0:f32[]
    c:f32[{n}] = add b 1.0:f32[]
    d:f32[{n}] = tanh c
    e:f32[{n}] = mul d a
    f:f32[{n}] = neg a
    g:f32[{n}] = exp f
    h:f32[{n}] = sub e g
  in (h,) }}"
        ),
        &[&[n]],
        8.0 * n as f64,
        0.0,
    );
    time(
        "reduce_sum_rows",
        "{ lambda ; a:f32[4096,4096]. let b:f32[4096] = reduce_sum[axes=(1,) out_sharding=None] a in (b,) }",
        &[&[4096, 4096]],
        4.0 * 4096.0 * 4096.0,
        0.0,
    );
    time(
        "softmax_4096",
        "{ lambda ; a:f32[4096,4096]. let
    b:f32[4096] = reduce_max[axes=(1,)] a
    c:f32[4096,4096] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4096, 4096) sharding=None] b
    d:f32[4096,4096] = sub a c
    e:f32[4096,4096] = exp d
    f:f32[4096] = reduce_sum[axes=(1,) out_sharding=None] e
    g:f32[4096,4096] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4096, 4096) sharding=None] f
    h:f32[4096,4096] = div e g
  in (h,) }",
        &[&[4096, 4096]],
        8.0 * 4096.0 * 4096.0,
        0.0,
    );
    for m in [1024usize, 2048] {
        time(
            &format!("matmul_{m}"),
            &format!(
                "{{ lambda ; a:f32[{m},{m}] b:f32[{m},{m}]. let c:f32[{m},{m}] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b in (c,) }}"
            ),
            &[&[m, m], &[m, m]],
            0.0,
            2.0 * (m as f64).powi(3),
        );
    }
}
