//! Steady-state calls reuse memory: a 64 MiB result (above glibc's largest
//! mmap threshold, so a fresh one is always newly mapped and faulted in
//! page by page) comes from the output pool once the previous result is
//! dropped, and intermediates live in the program's reused arena.

#![cfg(target_os = "linux")]

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::{parse_closed_jaxpr, Backend, DType, HostArray};

/// Minor page faults of the calling thread (`/proc/thread-self/stat`).
fn thread_minor_faults() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/stat").expect("procfs");
    let rest = &s[s.rfind(')').expect("comm") + 2..];
    rest.split(' ')
        .nth(7)
        .expect("minflt")
        .parse()
        .expect("number")
}

#[test]
fn steady_state_calls_do_not_page_fault() {
    let n = 16usize << 20;
    // `b` is read by two groups, so it is a 64 MiB intermediate in the
    // arena; `e` is a 64 MiB result from the pool.
    let text = format!(
        "{{ lambda ; a:f32[{n}]. let
    b:f32[{n}] = mul a 2.0:f32[]
    c:f32[] = reduce_max[axes=(0,) out_sharding=None] b
    d:f32[{n}] = broadcast_in_dim[broadcast_dimensions=() shape=({n},) sharding=None] c
    e:f32[{n}] = sub b d
  in (e,) }}"
    );
    let closed = parse_closed_jaxpr(&text, Vec::new()).expect("parses");
    // One thread: every page the call touches is faulted in this thread.
    let cpu = CpuBackend::with_threads(1);
    let exe = cpu.compile(&closed).expect("compiles");
    let vals: Vec<f64> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f64 / 1000.0)
        .collect();
    let x = cpu
        .to_device(&HostArray::from_f64(DType::F32, &[n], &vals).expect("array"))
        .expect("buffer");
    drop(vals);
    let first = exe.execute(std::slice::from_ref(&x)).expect("runs");
    let want = first[0].to_host().expect("host");
    drop(first);
    let f0 = thread_minor_faults();
    for _ in 0..3 {
        let out = exe.execute(std::slice::from_ref(&x)).expect("runs");
        assert_eq!(out[0].aval().shape, want.aval().shape);
    }
    let per_call = (thread_minor_faults() - f0) / 3;
    // A fresh 64 MiB output or intermediate would be 16,384 faults each.
    assert!(per_call < 100, "{per_call} minor faults per call");
    let again = exe.execute(&[x]).expect("runs");
    assert_eq!(again[0].to_host().expect("host"), want);
}
