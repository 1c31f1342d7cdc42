//! `psum_64mib_cpu2`: `psum` of a 64 MiB f32 array between 2 CPU devices
//! of the cpu backend (`CpuBackend::with_devices(2)`), against a plain
//! 64 MiB copy measured in the same run (`copy_64mib`: one thread's
//! `copy_from_slice` into a buffer already touched, and the same split
//! over two threads).
//!
//! The psum's own cost is isolated from the `shard_map` around it (the
//! split of the operand, the copy of the result to the host): two
//! programs differ only in a chain of 1 or 9 psums in the body, and the
//! time of one psum is the difference over 8. Its bandwidth counts the
//! 64 MiB array once, as the copy does.

use super::Settings;
use crate::measure::{emit, measure, sig, timing_details, Measurement};
use jaxon_ir::{parse_closed_jaxpr, Backend, HostArray, Storage};
use serde_json::json;
use std::sync::Arc;

const ELEMS: usize = 16 << 20;
const BYTES: f64 = (ELEMS * 4) as f64;

/// A `shard_map` over 2 devices whose body is a chain of `k` psums.
fn program(k: usize) -> String {
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
        "{{ lambda ; a:f32[2,{ELEMS}]. let
    b:f32[1,{ELEMS}] = shard_map[
      check_vma=False
      in_specs=(P('x',),)
      jaxpr={{ lambda ; c:f32[1,{ELEMS}]. let
{body}        in ({prev},) }}
      mesh=Mesh('x': 2, axis_types=(Auto,))
      newly_manual_axes=frozenset({{'x'}})
      out_specs=(P(),)
    ] a
  in (b,) }}"
    )
}

fn time_program(
    cpu: &jaxon_backend_cpu::CpuBackend,
    k: usize,
    x: &Arc<dyn jaxon_ir::Buffer>,
    s: Settings,
) -> (Measurement, Vec<f32>) {
    let closed = parse_closed_jaxpr(&program(k), Vec::new()).expect("the program parses");
    let exe = cpu.compile(&closed).expect("the program compiles");
    let args = [x.clone()];
    let first = exe.execute(&args).expect("runs");
    let out = first[0].to_host().expect("to host");
    let vals = match out.data() {
        Storage::F32(v) => v[..4].to_vec(),
        _ => Vec::new(),
    };
    let m = measure(
        || {
            let y = exe.execute(&args).expect("runs");
            std::hint::black_box(&y);
        },
        s.reps,
        s.min_time,
        1,
    );
    (m, vals)
}

/// `psum_64mib_cpu2` and its anchor `copy_64mib`.
pub fn psum_64mib_cpu2(s: Settings) {
    // The anchor: a plain copy of 64 MiB, on one thread and on two.
    let src: Vec<f32> = (0..ELEMS).map(|i| (i % 1000) as f32).collect();
    let mut dst = vec![0.0f32; ELEMS];
    let copy1 = measure(
        || {
            dst.copy_from_slice(&src);
            std::hint::black_box(&dst);
        },
        s.reps,
        s.min_time,
        1,
    );
    let copy2 = measure(
        || {
            std::thread::scope(|sc| {
                let (d0, d1) = dst.split_at_mut(ELEMS / 2);
                let (s0, s1) = src.split_at(ELEMS / 2);
                sc.spawn(|| d1.copy_from_slice(s1));
                d0.copy_from_slice(s0);
            });
            std::hint::black_box(&dst);
        },
        s.reps,
        s.min_time,
        1,
    );
    drop(dst);
    let copy_gbs = BYTES / copy1.median_s / 1e9;
    let copy2_gbs = BYTES / copy2.median_s / 1e9;
    let mut d = timing_details(&copy1, 1e3, "ms", 1.0);
    d.insert("bytes".into(), json!(BYTES));
    d.insert("two_threads_GB_per_s".into(), json!(sig(copy2_gbs, 4)));
    emit("copy_64mib", "bandwidth", sig(copy_gbs, 4), "GB/s", d);

    let cpu = jaxon_backend_cpu::CpuBackend::new().with_devices(2);
    // Device 0 holds 0, 1, 2, ..; device 1 holds 1, 1, 1, ..
    let mut global: Vec<f32> = (0..ELEMS).map(|i| (i % 4096) as f32).collect();
    global.extend(std::iter::repeat_n(1.0f32, ELEMS));
    drop(src);
    let x = cpu
        .to_device(&HostArray::new(vec![2, ELEMS], Storage::F32(global)).expect("shape"))
        .expect("to device");
    let (m1, v1) = time_program(&cpu, 1, &x, s);
    let (m9, v9) = time_program(&cpu, 9, &x, s);
    // psum once: x0 + 1; then doubled by each further psum.
    let ok1 = v1 == [1.0, 2.0, 3.0, 4.0];
    let ok9 = v9 == [256.0, 512.0, 768.0, 1024.0];
    let per_psum = ((m9.median_s - m1.median_s) / 8.0).max(1e-9);
    let gbs = BYTES / per_psum / 1e9;
    let mut d = serde_json::Map::new();
    d.insert("bytes".into(), json!(BYTES));
    d.insert("psum_ms".into(), json!(sig(per_psum * 1e3, 4)));
    d.insert("program_1_psum_ms".into(), json!(sig(m1.median_s * 1e3, 4)));
    d.insert(
        "program_9_psums_ms".into(),
        json!(sig(m9.median_s * 1e3, 4)),
    );
    d.insert("copy_GB_per_s".into(), json!(sig(copy_gbs, 4)));
    d.insert("ratio_to_copy".into(), json!(sig(gbs / copy_gbs, 3)));
    d.insert(
        "ratio_to_two_thread_copy".into(),
        json!(sig(gbs / copy2_gbs, 3)),
    );
    d.insert("values_ok".into(), json!(ok1 && ok9));
    d.insert("backend".into(), json!("cpu, 2 devices"));
    emit("psum_64mib_cpu2", "bandwidth", sig(gbs, 4), "GB/s", d);
}
