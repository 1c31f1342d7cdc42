//! Helpers of the `pallas_call` tests: seeded inputs, staging, and running
//! a call on the CPU backend and on the interpreter.
#![allow(dead_code)]

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::{Backend, ClosedJaxpr, HostArray, Storage};
use jaxon_pallas::*;
use jaxon_trace::Array;
use std::sync::Arc;

/// A seeded generator (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn f32s(&mut self, shape: &[usize]) -> HostArray {
        let n = shape.iter().product();
        let v = (0..n)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
            .collect();
        HostArray::new(shape.to_vec(), Storage::F32(v)).unwrap()
    }
    pub fn i32s(&mut self, shape: &[usize]) -> HostArray {
        let n = shape.iter().product();
        let v = (0..n).map(|_| (self.next() % 2001) as i32 - 1000).collect();
        HostArray::new(shape.to_vec(), Storage::I32(v)).unwrap()
    }
}

/// The host array as a concrete `Array`.
pub fn to_array(h: &HostArray) -> Array {
    match h.data() {
        Storage::F32(v) => Array::from_vec(v.clone(), h.shape()),
        Storage::I32(v) => Array::from_vec(v.clone(), h.shape()),
        _ => panic!("test inputs are f32 or i32"),
    }
}

/// Stages `call` on the arguments' types.
pub fn stage(call: &PallasCall, args: &[HostArray]) -> ClosedJaxpr {
    let arrays: Vec<Array> = args.iter().map(to_array).collect();
    jaxon_trace::make_jaxpr(|xs: Vec<Array>| call.call(&xs).unwrap())(arrays).unwrap()
}

/// Runs the staged call on the CPU backend and on the interpreter.
pub fn both(call: &PallasCall, args: &[HostArray]) -> (Vec<HostArray>, Vec<HostArray>) {
    let j = stage(call, args);
    assert!(jaxon_ir::print::print_jaxpr(&j.jaxpr).contains("pallas_call"));
    let want = jaxon_ir::eval_closed_jaxpr(&j, args).unwrap();
    let cpu = CpuBackend::with_threads(2);
    let exe = cpu.compile(&j).unwrap();
    let bufs: Vec<Arc<dyn jaxon_ir::Buffer>> =
        args.iter().map(|a| cpu.to_device(a).unwrap()).collect();
    let got = exe
        .execute(&bufs)
        .unwrap()
        .iter()
        .map(|b| b.to_host().unwrap())
        .collect();
    (got, want)
}

/// The elements of an f32 array.
pub fn f32s(a: &HostArray) -> &[f32] {
    match a.data() {
        Storage::F32(v) => v,
        _ => panic!("not f32"),
    }
}

/// Elementwise `|got - want| <= tol (1 + |want|)`.
pub fn assert_close(got: &HostArray, want: &HostArray, tol: f32) {
    assert_eq!(got.shape(), want.shape());
    for (i, (g, w)) in f32s(got).iter().zip(f32s(want)).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "element {i}: got {g}, want {w}"
        );
    }
}

/// f32 arrays of small integers: sums of their products are exact, so a
/// GEMM agrees with the interpreter's dot bit for bit.
pub fn small_ints(rng: &mut Rng, shape: &[usize]) -> HostArray {
    let n = shape.iter().product();
    let v = (0..n).map(|_| (rng.next() % 17) as f32 - 8.0).collect();
    HostArray::new(shape.to_vec(), Storage::F32(v)).unwrap()
}
