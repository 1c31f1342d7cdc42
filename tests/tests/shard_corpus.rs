//! The shard corpus (`tests/data/jax-0.10.2-shard-public.jsonl`, JAX 0.10.2
//! on two CPU devices) on the interpreter (and the cpu backend with two
//! CPU devices): every jaxpr and grad jaxpr
//! parses, prints back byte for byte and evaluates to JAX's values; the
//! own transforms (jvp, grad, vmap) match JAX's for the cases listed in
//! `TRANSFORMED`.

use jaxon_ir::{check_jaxpr, eval_closed_jaxpr, parse_closed_jaxpr};
use jaxon_tests::own_transforms::{own_grad, own_jvp, own_vmap};
use jaxon_tests::{compare_outputs, decode_case, Case, Tolerance};

fn cases() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/jax-0.10.2-shard-public.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("shard corpus");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| decode_case(l).expect("case decodes"))
        .collect()
}

fn tol(c: &Case) -> Tolerance {
    Tolerance {
        rtol: c.rtol,
        atol: c.atol,
    }
}

/// Cases whose own jvp, grad and vmap are checked: every case.
const TRANSFORMED: &[&str] = &[
    "pmap_func13",
    "pmap_psum_pmean_axis_index",
    "pmap_data_parallel_grad",
    "shard_map_psum",
    "shard_map_all_gather",
    "shard_map_ppermute_ring",
    "shard_map_all_to_all",
    "shard_map_psum_scatter",
    "shard_map_sharded_contraction",
    "shard_map_check_vma_false_scan",
    "shard_map_mesh_2x1_axis_index",
    "with_sharding_constraint",
];

#[test]
fn the_shard_corpus_has_twelve_cases() {
    assert_eq!(cases().len(), 12);
}

#[test]
fn every_jaxpr_parses_prints_back_and_evaluates_to_jax_values() {
    for c in cases() {
        let closed = parse_closed_jaxpr(&c.jaxpr, c.consts.clone())
            .unwrap_or_else(|e| panic!("{}: parse: {e}", c.name));
        check_jaxpr(&closed.jaxpr).unwrap_or_else(|e| panic!("{}: check: {e}", c.name));
        assert_eq!(closed.jaxpr.to_string(), c.jaxpr, "{}: print", c.name);
        let out = eval_closed_jaxpr(&closed, &c.inputs)
            .unwrap_or_else(|e| panic!("{}: eval: {e}", c.name));
        compare_outputs(&out, &c.outputs, tol(&c)).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        if let Some(g) = &c.grad {
            let gc = parse_closed_jaxpr(&g.jaxpr, g.consts.clone())
                .unwrap_or_else(|e| panic!("{}: grad parse: {e}", c.name));
            assert_eq!(gc.jaxpr.to_string(), g.jaxpr, "{}: grad print", c.name);
            let out = eval_closed_jaxpr(&gc, &c.inputs)
                .unwrap_or_else(|e| panic!("{}: grad eval: {e}", c.name));
            compare_outputs(&out, &g.outputs, tol(&c))
                .unwrap_or_else(|e| panic!("{}: grad: {e}", c.name));
        }
    }
}

#[test]
fn own_transforms_match_jax() {
    for c in cases() {
        if !TRANSFORMED.contains(&c.name.as_str()) {
            continue;
        }
        if let Some(j) = &c.jvp {
            own_jvp(&c, j, tol(&c)).unwrap_or_else(|e| panic!("{}: jvp: {e}", c.name));
        }
        if let Some(g) = &c.grad {
            own_grad(&c, g, tol(&c)).unwrap_or_else(|e| panic!("{}: grad: {e}", c.name));
        }
        if let Some(v) = &c.vmap {
            own_vmap(&c, v, tol(&c)).unwrap_or_else(|e| panic!("{}: vmap: {e}", c.name));
        }
    }
}

/// Compiles and runs `closed` on `backend`.
fn run_on(
    backend: &dyn jaxon_ir::Backend,
    closed: &jaxon_ir::ClosedJaxpr,
    inputs: &[jaxon_ir::HostArray],
) -> Result<Vec<jaxon_ir::HostArray>, String> {
    let exe = backend.compile(closed).map_err(|e| e.to_string())?;
    let bufs = inputs
        .iter()
        .map(|a| backend.to_device(a).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    exe.execute(&bufs)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|b| b.to_host().map_err(|e| e.to_string()))
        .collect()
}

#[test]
fn every_jaxpr_evaluates_to_jax_values_on_two_cpu_devices() {
    let cpu = jaxon_backend_cpu::CpuBackend::new().with_devices(2);
    for c in cases() {
        let closed = parse_closed_jaxpr(&c.jaxpr, c.consts.clone())
            .unwrap_or_else(|e| panic!("{}: parse: {e}", c.name));
        let out = run_on(&cpu, &closed, &c.inputs)
            .unwrap_or_else(|e| panic!("{}: cpu eval: {e}", c.name));
        compare_outputs(&out, &c.outputs, tol(&c)).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        if let Some(g) = &c.grad {
            let gc = parse_closed_jaxpr(&g.jaxpr, g.consts.clone())
                .unwrap_or_else(|e| panic!("{}: grad parse: {e}", c.name));
            let out = run_on(&cpu, &gc, &c.inputs)
                .unwrap_or_else(|e| panic!("{}: cpu grad eval: {e}", c.name));
            compare_outputs(&out, &g.outputs, tol(&c))
                .unwrap_or_else(|e| panic!("{}: cpu grad: {e}", c.name));
        }
    }
    // One device is too few for these meshes: an error naming both counts.
    let one = jaxon_backend_cpu::CpuBackend::new().with_devices(1);
    let c = &cases()[3];
    let closed = parse_closed_jaxpr(&c.jaxpr, c.consts.clone()).expect("parses");
    let e = run_on(&one, &closed, &c.inputs).unwrap_err();
    assert!(
        e.contains("has 2 devices") && e.contains("has 1"),
        "{}: {e}",
        c.name
    );
}
