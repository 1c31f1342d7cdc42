//! `psum_64mib_cpu2`: `psum` of a 64 MiB f32 array between 2 CPU devices
//! of the cpu backend (`CpuBackend::with_devices(2)`), against a plain
//! 64 MiB copy measured in the same run (`copy_64mib`: one thread's
//! `copy_from_slice` into a buffer already touched). Each round times the
//! copy (best of 3) and the psum back to back; `ratio_to_copy` is the
//! median of the rounds' ratios (psum bandwidth / copy bandwidth).
//!
//! The psum's own cost is isolated from the `shard_map` around it (the
//! split of the operand, the copy of the result to the host): two
//! programs differ only in a chain of 1 or 9 psums in the body, and the
//! time of one psum is the difference over 8. Its bandwidth counts the
//! 64 MiB array once, as the copy does.

use super::Settings;
use crate::measure::{emit, sig};
use jaxon_ir::{parse_closed_jaxpr, Backend, HostArray, Storage};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

const ELEMS: usize = 16 << 20;
const BYTES: f64 = (ELEMS * 4) as f64;

/// A `shard_map` over `n` devices whose body is a chain of `k` psums.
fn program(n: usize, k: usize) -> String {
    let mut body = String::new();
    let mut prev = "c".to_string();
    for i in 0..k {
        let v = format!("p{i}");
        body.push_str(&format!(
            "          {v}:f32[1,{ELEMS}] = psum[axes=('x',) axis_index_groups=None] {prev}\n"
        ));
        prev = v;
    }
    format!(
        "{{ lambda ; a:f32[{n},{ELEMS}]. let
    b:f32[1,{ELEMS}] = shard_map[
      check_vma=False
      in_specs=(P('x',),)
      jaxpr={{ lambda ; c:f32[1,{ELEMS}]. let
{body}        in ({prev},) }}
      mesh=Mesh('x': {n}, axis_types=(Auto,))
      newly_manual_axes=frozenset({{'x'}})
      out_specs=(P(),)
    ] a
  in (b,) }}"
    )
}

/// A compiled program of `k` psums, checked once: its first 4 results.
fn compiled(
    cpu: &jaxon_backend_cpu::CpuBackend,
    n: usize,
    k: usize,
    x: &Arc<dyn jaxon_ir::Buffer>,
) -> (Arc<dyn jaxon_ir::Executable>, Vec<f32>) {
    let closed = parse_closed_jaxpr(&program(n, k), Vec::new()).expect("the program parses");
    let exe = cpu.compile(&closed).expect("the program compiles");
    let first = exe.execute(std::slice::from_ref(x)).expect("runs");
    let out = first[0].to_host().expect("to host");
    let vals = match out.data() {
        Storage::F32(v) => v[..4].to_vec(),
        _ => Vec::new(),
    };
    (exe, vals)
}

/// Seconds of one call of `f`.
fn once(mut f: impl FnMut()) -> f64 {
    let t0 = Instant::now();
    f();
    t0.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `psum_64mib_cpu2` and its anchor `copy_64mib`. The machine's speed
/// drifts (shared virtual CPUs), so each round times the copy, then the
/// two programs, back to back, and the ratio is the median of the rounds'.
pub fn psum_64mib_cpu2(s: Settings) {
    let src: Vec<f32> = (0..ELEMS).map(|i| (i % 1000) as f32).collect();
    let mut dst = vec![0.0f32; ELEMS];
    let cpu = jaxon_backend_cpu::CpuBackend::new().with_devices(2);
    // Device 0 holds 0, 1, 2, ..; device 1 holds 1, 1, 1, ..
    let mut global: Vec<f32> = (0..ELEMS).map(|i| (i % 4096) as f32).collect();
    global.extend(std::iter::repeat_n(1.0f32, ELEMS));
    let x = cpu
        .to_device(&HostArray::new(vec![2, ELEMS], Storage::F32(global)).expect("shape"))
        .expect("to device");
    let (p1, v1) = compiled(&cpu, 2, 1, &x);
    let (p9, v9) = compiled(&cpu, 2, 9, &x);
    // The same step on one device: a streamed copy of its operand.
    let x1 = cpu
        .to_device(&HostArray::new(vec![1, ELEMS], Storage::F32(src.clone())).expect("shape"))
        .expect("to device");
    let (q1, _) = compiled(&cpu, 1, 1, &x1);
    let (q9, _) = compiled(&cpu, 1, 9, &x1);
    let args1 = [x1];
    let run1 = |p: &Arc<dyn jaxon_ir::Executable>| {
        std::hint::black_box(p.execute(&args1).expect("runs"));
    };
    // psum once: x0 + 1; then doubled by each further psum.
    let values_ok = v1 == [1.0, 2.0, 3.0, 4.0] && v9 == [256.0, 512.0, 768.0, 1024.0];
    let args = [x];
    let run = |p: &Arc<dyn jaxon_ir::Executable>| {
        std::hint::black_box(p.execute(&args).expect("runs"));
    };
    run(&p1);
    run(&p9);
    let rounds = s.reps.max(3);
    let (mut copies, mut psums, mut ratios, mut ones) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let copy = (0..3)
            .map(|_| {
                once(|| {
                    dst.copy_from_slice(&src);
                    std::hint::black_box(&dst);
                })
            })
            .fold(f64::INFINITY, f64::min);
        let t1 = once(|| run(&p1));
        let t9 = once(|| run(&p9));
        let psum = ((t9 - t1) / 8.0).max(1e-9);
        let u1 = once(|| run1(&q1));
        let u9 = once(|| run1(&q9));
        ones.push(((u9 - u1) / 8.0).max(1e-9));
        copies.push(copy);
        psums.push(psum);
        ratios.push(copy / psum);
    }
    let copy = median(copies);
    let psum = median(psums);
    let copy_gbs = BYTES / copy / 1e9;
    let mut d = serde_json::Map::new();
    d.insert("bytes".into(), json!(BYTES));
    d.insert("median_ms".into(), json!(sig(copy * 1e3, 4)));
    d.insert("rounds".into(), json!(rounds));
    emit("copy_64mib", "bandwidth", sig(copy_gbs, 4), "GB/s", d);
    let mut d = serde_json::Map::new();
    d.insert("bytes".into(), json!(BYTES));
    d.insert("psum_ms".into(), json!(sig(psum * 1e3, 4)));
    d.insert("copy_ms".into(), json!(sig(copy * 1e3, 4)));
    d.insert(
        "one_device_psum_ms".into(),
        json!(sig(median(ones) * 1e3, 4)),
    );
    d.insert(
        "ratio_to_copy".into(),
        json!(sig(median(ratios.clone()), 3)),
    );
    d.insert(
        "ratios".into(),
        json!(ratios.iter().map(|r| sig(*r, 3)).collect::<Vec<_>>()),
    );
    d.insert("values_ok".into(), json!(values_ok));
    d.insert("backend".into(), json!("cpu, 2 devices"));
    emit(
        "psum_64mib_cpu2",
        "bandwidth",
        sig(BYTES / psum / 1e9, 4),
        "GB/s",
        d,
    );
}
