//! A quick throughput probe of a few WORKLOADS.md kernels on the cpu
//! backend (`cargo run --release -p jaxon-backend-cpu --example probe`).
//! The real side-by-side benchmark lives in `benches/`; this is for
//! development.

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::{parse_closed_jaxpr, Backend, DType, HostArray};
use std::time::Instant;

fn time(name: &str, text: &str, shapes: &[&[usize]], bytes: f64, flops: f64) {
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
    let reps = 10;
    let t0 = Instant::now();
    for _ in 0..reps {
        let _ = exe.execute(&args).expect("runs");
    }
    let dt = t0.elapsed().as_secs_f64() / reps as f64;
    println!(
        "{name:>18}: {:8.3} ms/call  {:7.2} GB/s  {:7.2} GFLOP/s  (compile {:.2} ms)",
        dt * 1e3,
        bytes / dt / 1e9,
        flops / dt / 1e9,
        compile.as_secs_f64() * 1e3
    );
}

fn main() {
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
