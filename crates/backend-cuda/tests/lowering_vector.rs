//! Vectorised fused kernels (`lower/fused_vec.rs`) and grid-stride launch
//! sizing (`lower/run.rs::sized`) on `cuda-sim` (or the GPU under
//! `JAXON_LOWERING_BACKEND=cuda`) against the reference interpreter:
//! random inputs of lengths that do and do not divide the vector width
//! (0, 1, 3, 4, 5, 7, 8, 9, 1023, 4097, 16387), f32/f16/bf16/f64/i8 and
//! mixed dtypes, scalar broadcasts, row broadcasts (a bias), sliced
//! (offset) operands at aligned and unaligned offsets; the lowered KIR:
//! vector accesses of the expected width where every access is contiguous
//! and aligned, none where an operand is strided, broadcast along columns
//! or misaligned; vector reductions and row runs (values, widths, equal
//! across runs); and NVRTC's report on the vector kernels for sm_80 and
//! sm_90 (no spills, no stack frame: the 16-byte structs stay in
//! registers).

mod lowering_util;

use jaxon_backend_cuda::kir::{Kernel, LaunchDims, Stmt};
use jaxon_backend_cuda::lower::plan::{Program, Step};
use jaxon_backend_cuda::lower::run::{sized, BLOCKS_PER_SM};
use lowering_util::{args_for, check_with, parse, Dist, Tol};

const LENS: [usize; 11] = [0, 1, 3, 4, 5, 7, 8, 9, 1023, 4097, 16387];

fn lower(text: &str) -> Program {
    jaxon_backend_cuda::lower::lower(&parse(text)).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Widths of every global load and store of `k` (vector or scalar).
fn access_widths(k: &Kernel) -> (Vec<usize>, Vec<usize>) {
    fn walk(ss: &[Stmt], loads: &mut Vec<usize>, stores: &mut Vec<usize>) {
        for s in ss {
            match s {
                Stmt::Load { dst, .. } => loads.push(dst.len()),
                Stmt::Store { values, .. } => stores.push(values.len()),
                Stmt::If {
                    then, otherwise, ..
                } => {
                    walk(then, loads, stores);
                    walk(otherwise, loads, stores);
                }
                Stmt::For { body, .. } | Stmt::While { body, .. } => walk(body, loads, stores),
                _ => {}
            }
        }
    }
    let (mut l, mut s) = (Vec::new(), Vec::new());
    walk(&k.body, &mut l, &mut s);
    (l, s)
}

/// The widest load and store over the program's kernels.
fn widest(prog: &Program) -> (usize, usize) {
    let mut out = (0, 0);
    for k in &prog.kernels {
        let (l, s) = access_widths(k);
        out.0 = out.0.max(l.into_iter().max().unwrap_or(0));
        out.1 = out.1.max(s.into_iter().max().unwrap_or(0));
    }
    out
}

fn tol(dt: &str) -> Tol {
    match dt {
        "f32" | "f64" => Tol::Ulp(1),
        "f16" | "bf16" => Tol::Ulp(1),
        _ => Tol::Exact,
    }
}

/// `d = a * b + a` over `n` elements of `dt`.
fn fma(dt: &str, n: usize) -> String {
    format!(
        "{{ lambda ; a:{dt}[{n}] b:{dt}[{n}]. let
    c:{dt}[{n}] = mul a b
    d:{dt}[{n}] = add c a
  in (d,) }}"
    )
}

/// Every dtype and length: the interpreter's values, and vector accesses
/// of `16 / size` elements (at most 8) whenever the length holds one.
#[test]
fn fused_elementwise_is_vectorised_per_dtype() {
    for (dt, w) in [
        ("f32", 4),
        ("f16", 8),
        ("bf16", 8),
        ("f64", 2),
        ("i8", 8),
        ("i32", 4),
    ] {
        for (i, &n) in LENS.iter().enumerate() {
            let t = fma(dt, n);
            let dist = if dt == "i8" {
                Dist::Uniform(100.0)
            } else {
                Dist::Uniform(3.0)
            };
            let args = args_for(&t, 17 + i as u64, dist);
            check_with(&t, &args, tol(dt));
            let prog = lower(&t);
            let want = if n >= w {
                (w, w)
            } else if n == 0 {
                (0, 0)
            } else {
                (1, 1)
            };
            assert_eq!(widest(&prog), want, "{dt}[{n}]");
        }
    }
}

/// Mixed dtypes pick the width of the widest element: f16 → f32 is 4
/// wide, i8 with f64 is 2 wide, bool with f16 is 8 wide.
#[test]
fn mixed_dtypes_use_the_widest_elements_width() {
    let cases = [
        (
            "a:f16[{n}] b:f32[{n}]",
            "c:f32[{n}] = convert_element_type[new_dtype=float32 weak_type=False] a
    d:f32[{n}] = mul c b",
            4,
        ),
        (
            "a:i8[{n}] b:f64[{n}]",
            "c:f64[{n}] = convert_element_type[new_dtype=float64 weak_type=False] a
    d:f64[{n}] = add c b",
            2,
        ),
        (
            "a:f16[{n}] b:f16[{n}]",
            "c:bool[{n}] = lt a b
    d:f16[{n}] = select_n c a b",
            8,
        ),
        (
            "a:f32[{n}] b:bf16[{n}]",
            "c:bf16[{n}] = convert_element_type[new_dtype=bfloat16 weak_type=False] a
    d:bf16[{n}] = sub c b",
            4,
        ),
    ];
    for (ins, body, w) in cases {
        for (i, &n) in LENS.iter().enumerate() {
            let t = format!(
                "{{ lambda ; {}. let\n    {}\n  in (d,) }}",
                ins.replace("{n}", &n.to_string()),
                body.replace("{n}", &n.to_string())
            );
            let args = args_for(&t, 40 + i as u64, Dist::Uniform(4.0));
            check_with(&t, &args, Tol::Ulp(1));
            if n >= 8 {
                assert_eq!(widest(&lower(&t)), (w, w), "{t}");
            }
        }
    }
}

/// A scalar operand broadcast over the space is loaded once per thread;
/// the rest stays vectorised.
#[test]
fn scalar_broadcasts_stay_vectorised() {
    for &n in &LENS[1..] {
        let t = format!(
            "{{ lambda ; a:f32[{n}] s:f32[]. let
    b:f32[{n}] = broadcast_in_dim[broadcast_dimensions=() shape=({n},) sharding=None] s
    c:f32[{n}] = mul a b
    d:f32[{n}] = add c 1.5:f32[]
  in (d,) }}"
        );
        let args = args_for(&t, n as u64, Dist::Uniform(2.0));
        check_with(&t, &args, Tol::Ulp(1));
        if n >= 4 {
            assert_eq!(widest(&lower(&t)), (4, 4), "{t}");
        }
    }
}

/// A slice's operand is read at an offset: vectorised when the offset is
/// a multiple of the width, scalar otherwise; right values either way.
#[test]
fn offset_operands_vectorise_only_when_aligned() {
    for (off, w) in [
        (0usize, 4usize),
        (4, 4),
        (8, 4),
        (1, 1),
        (2, 1),
        (3, 1),
        (5, 1),
    ] {
        for &n in &[4usize, 5, 9, 1023, 4097] {
            let m = n + off + 3;
            let t = format!(
                "{{ lambda ; a:f32[{m}] b:f32[{n}]. let
    c:f32[{n}] = slice[limit_indices=({lim},) start_indices=({off},) strides=None] a
    d:f32[{n}] = add c b
  in (d,) }}",
                lim = off + n
            );
            let args = args_for(&t, (off * 31 + n) as u64, Dist::Uniform(2.0));
            check_with(&t, &args, Tol::Exact);
            let (l, s) = widest(&lower(&t));
            assert_eq!(l, w, "offset {off}, {n} elements: load width");
            assert_eq!(s, w, "offset {off}, {n} elements: store width");
        }
    }
}

/// Operands broadcast along rows (a bias) vectorise when the rows (the
/// contiguous block of trailing dimensions) are a multiple of the width;
/// a column broadcast does not.
#[test]
fn row_broadcasts_vectorise_when_rows_hold_whole_vectors() {
    for (dt, rows, c, w) in [
        ("f32", 37usize, 64usize, 4usize),
        ("f32", 5, 4, 4),
        ("f32", 37, 66, 1),
        ("f16", 9, 24, 8),
        ("bf16", 3, 20, 1),
        ("f64", 7, 6, 2),
        ("i8", 4, 40, 8),
    ] {
        let t = format!(
            "{{ lambda ; a:{dt}[{rows},{c}] b:{dt}[{c}]. let
    c:{dt}[{rows},{c}] = broadcast_in_dim[broadcast_dimensions=(1,) shape=({rows}, {c}) sharding=None] b
    d:{dt}[{rows},{c}] = mul a c
    e:{dt}[{rows},{c}] = add d a
  in (e,) }}"
        );
        let args = args_for(&t, (rows * c) as u64, Dist::Uniform(3.0));
        check_with(&t, &args, tol(dt));
        assert_eq!(widest(&lower(&t)), (w, w), "{t}");
    }
    // Broadcast over a middle dimension: rows of 4·8 elements.
    let t = "{ lambda ; a:f32[3,4,8] b:f32[4,8]. let
    c:f32[3,4,8] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(3, 4, 8) sharding=None] b
    d:f32[3,4,8] = sub a c
  in (d,) }";
    let args = args_for(t, 3, Dist::Uniform(3.0));
    check_with(t, &args, Tol::Exact);
    assert_eq!(widest(&lower(t)), (4, 4), "{t}");
    // A column broadcast is strided along the rows.
    let t = "{ lambda ; a:f32[16,64] b:f32[16]. let
    c:f32[16,64] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(16, 64) sharding=None] b
    d:f32[16,64] = sub a c
  in (d,) }";
    let args = args_for(t, 4, Dist::Uniform(3.0));
    check_with(t, &args, Tol::Exact);
    assert_eq!(widest(&lower(t)), (1, 1), "{t}");
}

/// Strided operands keep the scalar kernel: a bias along rows not a
/// multiple of the width, a transposed operand, a strided slice.
#[test]
fn non_contiguous_operands_stay_scalar() {
    let texts = [
        "{ lambda ; a:f32[37,66] b:f32[66]. let
    c:f32[37,66] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(37, 66) sharding=None] b
    d:f32[37,66] = add a c
  in (d,) }",
        "{ lambda ; a:f32[33,40] b:f32[40,33]. let
    c:f32[33,40] = transpose[permutation=(1, 0)] b
    d:f32[33,40] = mul a c
  in (d,) }",
        "{ lambda ; a:f32[256] b:f32[128]. let
    c:f32[128] = slice[limit_indices=(256,) start_indices=(0,) strides=(2,)] a
    d:f32[128] = sub c b
  in (d,) }",
    ];
    for (i, t) in texts.iter().enumerate() {
        let args = args_for(t, 90 + i as u64, Dist::Uniform(2.0));
        check_with(t, &args, Tol::Exact);
        assert_eq!(widest(&lower(t)), (1, 1), "{t}");
    }
}

/// Grid-stride launches ask for one trip per thread and are capped at
/// the SMs' resident blocks; other launches are untouched; small launches
/// stay one block (no idle blocks on the simulator).
#[test]
fn grid_stride_launches_are_sized_from_the_sm_count() {
    let small = lower(&fma("f32", 1023));
    let big = lower(&fma("f32", 1 << 24));
    let dims = |p: &Program| -> Vec<(LaunchDims, bool)> {
        p.all_steps()
            .iter()
            .filter_map(|s| match s {
                Step::Launch { kernel, dims, .. } => Some((*dims, p.kernels[*kernel].grid_stride)),
                _ => None,
            })
            .collect()
    };
    let [(d, gs)] = dims(&small)[..] else {
        panic!("one launch")
    };
    assert!(gs);
    assert_eq!(d.grid[0], 1, "1023 f32 elements are one block's vectors");
    let [(d, gs)] = dims(&big)[..] else {
        panic!("one launch")
    };
    assert!(gs);
    // 2^24 elements, 4 per vector, 4 vectors per thread, 256 threads.
    assert_eq!(d.grid[0], (1 << 24) / 4 / 4 / 256);
    let k = &big.kernels[0];
    assert_eq!(sized(Some(k), d, 132).grid[0], 132 * BLOCKS_PER_SM);
    assert_eq!(sized(Some(k), d, 100_000).grid[0], d.grid[0]);
    let mut fixed = k.clone();
    fixed.grid_stride = false;
    assert_eq!(sized(Some(&fixed), d, 132), d);
}

/// The CUDA C of a vectorised kernel moves vector types; the scalar
/// kernel of a strided operand does not.
#[test]
fn printed_cuda_c_has_vector_accesses() {
    let v = lower(&fma("f16", 4097));
    let ks: Vec<&Kernel> = v.kernels.iter().collect();
    let c = jaxon_backend_cuda::cuda_c::print_module(&ks);
    assert!(c.contains("kir_vec_f16_8"), "{c}");
    let t = "{ lambda ; a:f32[256] b:f32[128]. let
    c:f32[128] = slice[limit_indices=(256,) start_indices=(0,) strides=(2,)] a
    d:f32[128] = sub c b
  in (d,) }";
    let s = lower(t);
    let ks: Vec<&Kernel> = s.kernels.iter().collect();
    let c = jaxon_backend_cuda::cuda_c::print_module(&ks);
    assert!(!c.contains("kir_vec_f32_4 kir_t"), "{c}");
}

/// Row reductions over trailing axes load vectors when the row length is
/// a multiple of the width (alone and with fused producers), scalars
/// otherwise; values within the existing reduction tolerance, and equal
/// across runs.
#[test]
fn row_reductions_load_vectors_when_rows_are_aligned() {
    let cases = [
        ("f32", "reduce_sum", 4usize),
        ("f16", "reduce_max", 8),
        ("bf16", "reduce_sum", 8),
        ("f64", "reduce_min", 2),
        ("i8", "reduce_max", 8),
    ];
    for (dt, op, w) in cases {
        for rows in [1usize, 3, 37] {
            for c in [1usize, 3, 4, 5, 8, 16, 1023, 1024, 4096, 4100] {
                let alone = format!(
                    "{{ lambda ; a:{dt}[{rows},{c}]. let
    b:{dt}[{rows}] = {op}[axes=(1,) out_sharding=None] a
  in (b,) }}"
                );
                let fused = format!(
                    "{{ lambda ; a:{dt}[{rows},{c}] s:{dt}[]. let
    b:{dt}[{rows},{c}] = broadcast_in_dim[broadcast_dimensions=() shape=({rows}, {c}) sharding=None] s
    m:{dt}[{rows},{c}] = mul a b
    e:{dt}[{rows}] = {op}[axes=(1,) out_sharding=None] m
  in (e,) }}"
                );
                for t in [alone, fused] {
                    let dist = if dt == "i8" {
                        Dist::Uniform(10.0)
                    } else {
                        Dist::Uniform(2.0)
                    };
                    let args = args_for(&t, (rows * 7 + c) as u64, dist);
                    let tol = match dt {
                        "f16" | "bf16" => Tol::Rel(2e-2),
                        // Sums of up to 16k terms in another order
                        // than the interpreter's.
                        "f32" => Tol::Rel(1e-4),
                        "f64" => Tol::Rel(1e-12),
                        _ => Tol::Exact,
                    };
                    check_with(&t, &args, tol);
                    let prog = lower(&t);
                    let want = if c >= w && c % w == 0 { w } else { 1 };
                    assert_eq!(widest(&prog).0, want, "{t}");
                    let once = jaxon_backend_cuda::lower::run::run_simulated(&prog, &args).unwrap();
                    let again =
                        jaxon_backend_cuda::lower::run::run_simulated(&prog, &args).unwrap();
                    assert_eq!(once, again, "{t}: not deterministic");
                }
            }
        }
    }
}

/// A reduction over a leading axis (strided rows) stays scalar.
#[test]
fn leading_axis_reductions_stay_scalar() {
    let t = "{ lambda ; a:f32[64,33]. let
    b:f32[33] = reduce_sum[axes=(0,) out_sharding=None] a
  in (b,) }";
    let args = args_for(t, 5, Dist::Uniform(2.0));
    check_with(t, &args, Tol::Rel(1e-5));
    assert_eq!(widest(&lower(t)).0, 1);
}

/// A softmax over rows of `c` elements of `dt`, also returning `exp`.
fn softmax(dt: &str, rows: usize, c: usize) -> String {
    format!(
        "{{ lambda ; a:{dt}[{rows},{c}]. let
    b:{dt}[{rows}] = reduce_max[axes=(1,) out_sharding=None] a
    d:{dt}[{rows},1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({rows}, 1) sharding=None] b
    e:{dt}[{rows},1] = stop_gradient d
    f:{dt}[{rows},{c}] = sub a e
    g:{dt}[{rows},{c}] = exp f
    h:{dt}[{rows}] = reduce_sum[axes=(1,) out_sharding=None] g
    i:{dt}[{rows},1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({rows}, 1) sharding=None] h
    j:{dt}[{rows},{c}] = div g i
  in (j, g) }}"
    )
}

/// Row runs load their preloaded input and store their escaping results
/// with vectors when the row is a multiple of the width and at least one
/// vector per thread long; the scalar layout otherwise; one launch and
/// the interpreter's values either way.
#[test]
fn row_runs_use_vectors_on_long_aligned_rows() {
    let cases = [
        ("f32", 1024usize, 4usize),
        ("f32", 2052, 4),
        ("f32", 4096, 4),
        ("f32", 1000, 1),
        ("f32", 1030, 1),
        ("f16", 2048, 8),
        ("bf16", 4096, 8),
        ("bf16", 2056, 8),
        ("f16", 1024, 1),
        ("f64", 512, 2),
        ("f64", 1026, 2),
    ];
    for (i, (dt, c, w)) in cases.into_iter().enumerate() {
        for rows in [1usize, 3] {
            let t = softmax(dt, rows, c);
            let args = args_for(&t, 70 + i as u64, Dist::Uniform(3.0));
            let tol = match dt {
                "f16" | "bf16" => Tol::Rel(2e-2),
                _ => Tol::Rel(1e-5),
            };
            check_with(&t, &args, tol);
            let prog = lower(&t);
            let names: Vec<&str> = prog.kernels.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(prog.kernels.len(), 1, "{dt}[{rows},{c}]: {names:?}");
            let k = &prog.kernels[0];
            assert!(k.name.starts_with("row_run"), "{names:?}");
            let (l, s) = access_widths(k);
            let (l, s) = (l.into_iter().max(), s.into_iter().max());
            assert_eq!((l, s), (Some(w), Some(w)), "{dt}[{rows},{c}]");
            let once = jaxon_backend_cuda::lower::run::run_simulated(&prog, &args).unwrap();
            let again = jaxon_backend_cuda::lower::run::run_simulated(&prog, &args).unwrap();
            assert_eq!(once, again, "{dt}[{rows},{c}]: not deterministic");
        }
    }
}

/// NVRTC compiles every kernel with a vector access of the programs above
/// for sm_80 and sm_90 with no spills and no stack frame. Without NVRTC
/// the test prints a skip line, unless `JAXON_REQUIRE_NVRTC=1`.
#[test]
fn vector_kernels_compile_without_spills_or_stack() {
    use jaxon_backend_cuda::nvrtc::{self, Arch, Compiler, Request};
    if let Err(e) = nvrtc::nvrtc_version() {
        if std::env::var("JAXON_REQUIRE_NVRTC").is_ok_and(|v| v == "1") {
            panic!("JAXON_REQUIRE_NVRTC=1 but NVRTC is unavailable: {e}");
        }
        println!("vector_kernels_compile_without_spills_or_stack: skipped: NVRTC not found: {e}");
        return;
    }
    let mut texts: Vec<String> = ["f32", "f16", "bf16", "f64", "i8", "i32"]
        .iter()
        .map(|dt| fma(dt, 4097))
        .collect();
    for dt in ["f32", "f16", "bf16", "f64"] {
        texts.push(softmax(
            dt,
            3,
            4096.min(if dt == "f64" { 1024 } else { 4096 }),
        ));
        texts.push(format!(
            "{{ lambda ; a:{dt}[37,1024] b:{dt}[37,1024]. let
    m:{dt}[37,1024] = mul a b
    e:{dt}[37] = reduce_sum[axes=(1,) out_sharding=None] m
  in (e,) }}"
        ));
    }
    for dt in ["f32", "f16"] {
        texts.push(format!(
            "{{ lambda ; a:{dt}[37,64] b:{dt}[64]. let
    c:{dt}[37,64] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(37, 64) sharding=None] b
    d:{dt}[37,64] = add a c
  in (d,) }}"
        ));
    }
    let mut kernels = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        for mut k in lower(t).kernels {
            let (l, s) = access_widths(&k);
            if l.iter().chain(&s).any(|&w| w > 1) {
                k.name = format!("t{i}_{}", k.name);
                kernels.push(k);
            }
        }
    }
    assert!(
        kernels.len() >= texts.len(),
        "{} vector kernels",
        kernels.len()
    );
    let refs: Vec<&Kernel> = kernels.iter().collect();
    let src = jaxon_backend_cuda::cuda_c::print_module(&refs);
    let reqs: Vec<Request> = [Arch::SM80, Arch::SM90]
        .into_iter()
        .map(|arch| Request {
            source: &src,
            arch,
            name: "lowering_vector",
        })
        .collect();
    let compiler = Compiler::new(None);
    for (req, r) in reqs.iter().zip(compiler.compile_many(&reqs)) {
        let c = r.unwrap_or_else(|e| panic!("{}: {e}", req.arch));
        for k in &kernels {
            let res = c
                .resources_of(&k.name)
                .unwrap_or_else(|| panic!("{} {}: no resource report", k.name, req.arch));
            assert_eq!(
                (
                    res.spill_stores_bytes,
                    res.spill_loads_bytes,
                    res.stack_frame_bytes
                ),
                (0, 0, 0),
                "{} {}: {res:?}",
                k.name,
                req.arch
            );
        }
    }
}
