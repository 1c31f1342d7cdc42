//! `shard_map` on the cpu backend with 2 and 4 CPU devices: every mesh
//! collective against its single-device definition on random shapes
//! (psum = the sum of the shards, on the buffer path for f32/f64 and the
//! generic one for i32, also over one axis of a 2x2 mesh; pmax;
//! all_gather = concatenation or stack; psum_scatter = blocks of the sum;
//! ppermute ring = roll of the blocks; all_to_all = transpose of blocks;
//! axis_index), whole bodies against the interpreter, a `scan` with a
//! `psum` inside the body, and the errors: a mesh larger than the devices,
//! diverging devices (no hang), an axis not in scope, a bad device count.

mod common;
use common::{assert_close, parse, random, random_args, Dist, Rng, Tol};
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::{Backend, ClosedJaxpr, DType, HostArray};

fn cpu(devices: usize) -> CpuBackend {
    CpuBackend::with_threads(2).with_devices(devices)
}

fn try_run(
    b: &dyn Backend,
    closed: &ClosedJaxpr,
    args: &[HostArray],
) -> Result<Vec<HostArray>, String> {
    let exe = b.compile(closed).map_err(|e| e.to_string())?;
    let bufs: Vec<_> = args
        .iter()
        .map(|a| b.to_device(a).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    exe.execute(&bufs)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|b| b.to_host().map_err(|e| e.to_string()))
        .collect()
}

fn f64s(a: &HostArray) -> Vec<f64> {
    a.to_f64_vec()
}

fn ty(dt: &str, shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{dt}[{}]", dims.join(","))
}

/// `shard_map` over a 1-D mesh `x` of `n` devices of a one-equation body.
#[allow(clippy::too_many_arguments)]
fn one_op(
    n: usize,
    dt: &str,
    global: &[usize],
    shard: &[usize],
    out_dt: &str,
    out_shard: &[usize],
    out_global: &[usize],
    eqn: &str,
    in_spec: &str,
    out_spec: &str,
) -> ClosedJaxpr {
    parse(&format!(
        "{{ lambda ; a:{g}. let
    b:{og} = shard_map[
      check_vma=False
      in_specs=({in_spec},)
      jaxpr={{ lambda ; c:{s}. let d:{os} = {eqn} c in (d,) }}
      mesh=Mesh('x': {n}, axis_types=(Auto,))
      newly_manual_axes=frozenset({{'x'}})
      out_specs=({out_spec},)
    ] a
  in (b,) }}",
        g = ty(dt, global),
        og = ty(out_dt, out_global),
        s = ty(dt, shard),
        os = ty(out_dt, out_shard),
    ))
}

/// Checks `got` against `want` exactly or within `tol` (relative).
fn check(got: &HostArray, want: &[f64], tol: f64, what: &str) {
    let g = f64s(got);
    assert_eq!(g.len(), want.len(), "{what}: length");
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}: element {i}: got {a}, want {b}"
        );
    }
}

/// The blocks of `rows` rows of a row-major `[.., cols]` array.
fn row_blocks(x: &[f64], rows: usize, cols: usize) -> Vec<Vec<f64>> {
    x.chunks(rows * cols).map(<[f64]>::to_vec).collect()
}

#[test]
fn psum_is_the_sum_of_the_shards() {
    let mut rng = Rng::new(1);
    for n in [2, 4] {
        for (dt, dtype, tol) in [
            ("f32", DType::F32, 1e-6),
            ("f64", DType::F64, 1e-14),
            ("i32", DType::I32, 0.0),
        ] {
            // Sizes that do not divide by n exercise the chunk edges.
            let (b, c) = (rng.range(1, 5) as usize, rng.range(1, 7) as usize);
            let x = random(&mut rng, dtype, &[n * b, c], Dist::Uniform(50.0));
            let t = one_op(
                n,
                dt,
                &[n * b, c],
                &[b, c],
                dt,
                &[b, c],
                &[b, c],
                "psum[axes=('x',) axis_index_groups=None]",
                "P('x',)",
                "P()",
            );
            let got = try_run(&cpu(n), &t, std::slice::from_ref(&x)).unwrap();
            let mut want = vec![0.0; b * c];
            for blk in row_blocks(&f64s(&x), b, c) {
                for (w, v) in want.iter_mut().zip(blk) {
                    *w += v;
                }
            }
            check(&got[0], &want, tol, &format!("psum {dt} n={n}"));
        }
    }
}

#[test]
fn a_large_psum_takes_the_buffer_path_and_equals_the_interpreter() {
    // 40000 elements: several blocks per device, bit-identical sums (same
    // order as the interpreter's).
    let t = one_op(
        2,
        "f32",
        &[2, 40000],
        &[1, 40000],
        "f32",
        &[1, 40000],
        &[1, 40000],
        "psum[axes=('x',) axis_index_groups=None]",
        "P('x',)",
        "P()",
    );
    let args = random_args(&t, 7, Dist::Uniform(3.0));
    let got = try_run(&cpu(2), &t, &args).unwrap();
    let want = try_run(&InterpreterBackend, &t, &args).unwrap();
    assert_eq!(got[0], want[0]);
}

#[test]
fn pmax_is_the_max_of_the_shards() {
    let mut rng = Rng::new(2);
    for n in [2, 4] {
        let c = rng.range(1, 9) as usize;
        let x = random(&mut rng, DType::F32, &[n, c], Dist::Uniform(10.0));
        let t = one_op(
            n,
            "f32",
            &[n, c],
            &[1, c],
            "f32",
            &[1, c],
            &[1, c],
            "pmax[axes=('x',) axis_index_groups=None]",
            "P('x',)",
            "P()",
        );
        let got = try_run(&cpu(n), &t, std::slice::from_ref(&x)).unwrap();
        let xs = f64s(&x);
        let want: Vec<f64> = (0..c)
            .map(|j| (0..n).map(|i| xs[i * c + j]).fold(f64::MIN, f64::max))
            .collect();
        check(&got[0], &want, 0.0, "pmax");
    }
}

#[test]
fn all_gather_concatenates_or_stacks_and_psum_scatter_splits_the_sum() {
    let mut rng = Rng::new(3);
    for n in [2, 4] {
        let (b, c) = (rng.range(1, 3) as usize, rng.range(1, 4) as usize);
        let x = random(&mut rng, DType::F32, &[n * b, c], Dist::Uniform(1.0));
        let tiled = one_op(
            n,
            "f32",
            &[n * b, c],
            &[b, c],
            "f32",
            &[n * b, c],
            &[n * b, c],
            &format!(
                "all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=('x',) \
                 axis_size={n} tiled=True]"
            ),
            "P('x',)",
            "P()",
        );
        let got = try_run(&cpu(n), &tiled, std::slice::from_ref(&x)).unwrap();
        check(&got[0], &f64s(&x), 0.0, "all_gather tiled");
        let stacked = one_op(
            n,
            "f32",
            &[n * b, c],
            &[b, c],
            "f32",
            &[b, n, c],
            &[b, n, c],
            &format!(
                "all_gather[all_gather_dimension=1 axis_index_groups=None axis_name=('x',) \
                 axis_size={n} tiled=False]"
            ),
            "P('x',)",
            "P()",
        );
        let got = try_run(&cpu(n), &stacked, std::slice::from_ref(&x)).unwrap();
        let xs = f64s(&x);
        let mut want = Vec::new();
        for r in 0..b {
            for i in 0..n {
                want.extend_from_slice(&xs[(i * b + r) * c..(i * b + r + 1) * c]);
            }
        }
        check(&got[0], &want, 0.0, "all_gather stacked");
        // Each device holds its own [n*b, c] block; the sum over devices
        // is split into n row blocks, device i keeping block i.
        let y = random(&mut rng, DType::F32, &[n * n * b, c], Dist::Uniform(1.0));
        let scatter = one_op(
            n,
            "f32",
            &[n * n * b, c],
            &[n * b, c],
            "f32",
            &[b, c],
            &[n * b, c],
            &format!(
                "reduce_scatter[axis_index_groups=None axis_name=('x',) axis_size={n} \
                 scatter_dimension=0 tiled=True]"
            ),
            "P('x',)",
            "P('x',)",
        );
        let got = try_run(&cpu(n), &scatter, std::slice::from_ref(&y)).unwrap();
        let mut sum = vec![0.0; n * b * c];
        for blk in row_blocks(&f64s(&y), n * b, c) {
            for (s, v) in sum.iter_mut().zip(blk) {
                *s += v;
            }
        }
        check(&got[0], &sum, 1e-6, "psum_scatter");
    }
}

#[test]
fn ppermute_ring_rolls_and_all_to_all_transposes_blocks() {
    let mut rng = Rng::new(4);
    for n in [2, 4] {
        let (b, c) = (rng.range(1, 3) as usize, rng.range(1, 3) as usize);
        let x = random(&mut rng, DType::F32, &[n * b, c], Dist::Uniform(1.0));
        let pairs: Vec<String> = (0..n).map(|i| format!("({i}, {})", (i + 1) % n)).collect();
        let t = one_op(
            n,
            "f32",
            &[n * b, c],
            &[b, c],
            "f32",
            &[b, c],
            &[n * b, c],
            &format!("ppermute[axis_name=('x',) perm=({})]", pairs.join(", ")),
            "P('x',)",
            "P('x',)",
        );
        let got = try_run(&cpu(n), &t, std::slice::from_ref(&x)).unwrap();
        let bl = row_blocks(&f64s(&x), b, c);
        let want: Vec<f64> = (0..n).flat_map(|i| bl[(i + n - 1) % n].clone()).collect();
        check(&got[0], &want, 0.0, "ppermute ring");

        let z = random(&mut rng, DType::F32, &[n * n * b, c], Dist::Uniform(1.0));
        let t = one_op(
            n,
            "f32",
            &[n * n * b, c],
            &[n * b, c],
            "f32",
            &[b, n * c],
            &[n * b, n * c],
            "all_to_all[axis_index_groups=None axis_name=x concat_axis=1 split_axis=0 tiled=True]",
            "P('x',)",
            "P('x',)",
        );
        let got = try_run(&cpu(n), &t, std::slice::from_ref(&z)).unwrap();
        let zs = f64s(&z);
        let mut want = Vec::new();
        for j in 0..n {
            for row in 0..b {
                for i in 0..n {
                    want.extend_from_slice(&zs[(i * n * b + j * b + row) * c..][..c]);
                }
            }
        }
        check(&got[0], &want, 0.0, "all_to_all");
    }
}

#[test]
fn axis_index_is_the_device_coordinate() {
    for n in [2, 4] {
        let t = parse(&format!(
            "{{ lambda ; a:f32[{n}]. let
    b:i32[{n}] = shard_map[
      check_vma=False
      in_specs=(P('x',),)
      jaxpr={{ lambda ; c:f32[1]. let
          d:i32[] = axis_index[axis_name=x] 
          e:i32[1] = broadcast_in_dim[broadcast_dimensions=() shape=(1,) sharding=None] d
        in (e,) }}
      mesh=Mesh('x': {n}, axis_types=(Auto,))
      newly_manual_axes=frozenset({{'x'}})
      out_specs=(P('x',),)
    ] a
  in (b,) }}"
        ));
        let x = HostArray::from_f64(DType::F32, &[n], &vec![0.0; n]).unwrap();
        let got = try_run(&cpu(n), &t, &[x]).unwrap();
        let want: Vec<f64> = (0..n).map(|i| i as f64).collect();
        check(&got[0], &want, 0.0, "axis_index");
    }
}

/// A 2x2 mesh: rows over 'a', columns over 'b', a psum over 'a' (groups of
/// two devices; the buffer path) and a body mixing fused ops, a dot and
/// collectives, against the interpreter.
const MESH_2X2: &str = "{ lambda ; a:f32[4,6] b:f32[6,3]. let
    c:f32[2,6] d:f32[4,3] = shard_map[
      check_vma=False
      in_specs=(P('a', 'b'), P('b',))
      jaxpr={ lambda ; e:f32[2,3] f:f32[3,3]. let
          g:f32[2,3] = psum[axes=('a',) axis_index_groups=None] e
          h:f32[2,3] = tanh g
          i:f32[2,3] = dot_general[dimension_numbers=(([1], [0]), ([], [])) precision=None preferred_element_type=float32] e f
          j:f32[2,3] = psum[axes=('b',) axis_index_groups=None] i
          k:f32[2,3] = mul j 0.5:f32[]
        in (h, k) }
      mesh=Mesh('a': 2, 'b': 2, axis_types=(Auto, Auto))
      newly_manual_axes=frozenset({'a', 'b'})
      out_specs=(P(None, 'b'), P('a',))
    ] a b
  in (c, d) }";

#[test]
fn shard_map_bodies_equal_the_interpreter() {
    let closed = parse(MESH_2X2);
    for seed in 0..3 {
        let args = random_args(&closed, 10 + seed, Dist::Uniform(2.0));
        let want = try_run(&InterpreterBackend, &closed, &args).unwrap();
        let got = try_run(&cpu(4), &closed, &args).unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert_close(g, w, Tol::Rel(1e-5), 1.0, "2x2 body");
        }
    }
}

/// A `scan` inside the body whose step `psum`s its carry.
const SCAN_PSUM: &str = "{ lambda ; a:f32[2,5]. let
    b:f32[1,5] = shard_map[
      check_vma=False
      in_specs=(P('x',),)
      jaxpr={ lambda ; c:f32[1,5]. let
          d:f32[1,5] = scan[
            _split_transpose=False
            jaxpr={ lambda ; e:f32[1,5]. let
                f:f32[1,5] = psum[axes=('x',) axis_index_groups=None] e
                g:f32[1,5] = mul f 0.25:f32[]
                h:f32[1,5] = sin g
              in (h,) }
            length=3
            linear=(False,)
            num_carry=1
            num_consts=0
            reverse=False
            unroll=1
          ] c
        in (d,) }
      mesh=Mesh('x': 2, axis_types=(Auto,))
      newly_manual_axes=frozenset({'x'})
      out_specs=(P(),)
    ] a
  in (b,) }";

#[test]
fn a_scan_with_psum_in_its_body_runs_per_device() {
    let closed = parse(SCAN_PSUM);
    let args = random_args(&closed, 3, Dist::Uniform(1.0));
    let got = try_run(&cpu(2), &closed, &args).unwrap();
    let xs = f64s(&args[0]);
    let mut carry: Vec<f64> = (0..5).map(|j| xs[j] + xs[5 + j]).collect();
    for step in 0..3 {
        if step > 0 {
            carry = carry.iter().map(|v| 2.0 * v).collect();
        }
        carry = carry.iter().map(|v| (v * 0.25).sin()).collect();
    }
    check(&got[0], &carry, 1e-5, "scan with psum");
    let want = try_run(&InterpreterBackend, &closed, &args).unwrap();
    assert_close(
        &got[0],
        &want[0],
        Tol::Rel(1e-6),
        1.0,
        "scan vs interpreter",
    );
}

#[test]
fn a_mesh_larger_than_the_devices_is_an_error_naming_both() {
    let t = one_op(
        4,
        "f32",
        &[4, 2],
        &[1, 2],
        "f32",
        &[1, 2],
        &[4, 2],
        "neg",
        "P('x',)",
        "P('x',)",
    );
    let x = HostArray::from_f64(DType::F32, &[4, 2], &[1.0; 8]).unwrap();
    let e = try_run(&cpu(2), &t, std::slice::from_ref(&x)).unwrap_err();
    assert!(e.contains("4 devices") && e.contains("has 2"), "{e}");
    assert_eq!(cpu(2).device_count(), 2);
    assert_eq!(CpuBackend::with_threads(1).device_count(), 1);
}

#[test]
fn a_failing_instance_fails_the_others_instead_of_hanging() {
    // Device 1 runs a psum that device 0 never reaches (it finishes): the
    // waiting device fails at once instead of waiting for the timeout.
    let t = parse(
        "{ lambda ; a:f32[2]. let
    b:f32[2] = shard_map[
      check_vma=False
      in_specs=(P('x',),)
      jaxpr={ lambda ; c:f32[1]. let
          d:i32[] = axis_index[axis_name=x] 
          e:f32[1] = cond[
            branches=(
              { lambda ; f:f32[1]. let  in (f,) }
              { lambda ; g:f32[1]. let h:f32[1] = psum[axes=('x',) axis_index_groups=None] g in (h,) }
            )
          ] d c
        in (e,) }
      mesh=Mesh('x': 2, axis_types=(Auto,))
      newly_manual_axes=frozenset({'x'})
      out_specs=(P('x',),)
    ] a
  in (b,) }",
    );
    let x = HostArray::from_f64(DType::F32, &[2], &[1.0, 2.0]).unwrap();
    let start = std::time::Instant::now();
    let e = try_run(&cpu(2), &t, &[x]).unwrap_err();
    assert!(e.contains("diverged"), "{e}");
    assert!(start.elapsed().as_secs() < 60, "took {:?}", start.elapsed());
}

#[test]
fn a_collective_over_an_axis_not_in_scope_is_an_error_naming_it() {
    let x = HostArray::from_f64(DType::F32, &[2, 2], &[1.0; 4]).unwrap();
    let t = "{ lambda ; a:f32[2,2]. let
    b:f32[2,2] = shard_map[
      check_vma=False
      in_specs=(P('x',),)
      jaxpr={ lambda ; c:f32[1,2]. let d:f32[1,2] = psum[axes=('y',) axis_index_groups=None] c in (d,) }
      mesh=Mesh('x': 2, axis_types=(Auto,))
      newly_manual_axes=frozenset({'x'})
      out_specs=(P('x',),)
    ] a
  in (b,) }";
    let e = match jaxon_ir::parse_closed_jaxpr(t, Vec::new()) {
        Ok(closed) => try_run(&cpu(2), &closed, std::slice::from_ref(&x)).unwrap_err(),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("'y'") || e.contains(" y"), "{e}");
}

#[test]
fn the_device_count_comes_from_the_environment() {
    // Only this test touches the variable in this binary.
    std::env::set_var("JAXON_CPU_DEVICES", "3");
    assert_eq!(jaxon_backend_cpu::devices_from_env().unwrap(), 3);
    assert_eq!(CpuBackend::new().device_count(), 3);
    for bad in ["0", "two", "-1"] {
        std::env::set_var("JAXON_CPU_DEVICES", bad);
        let e = jaxon_backend_cpu::devices_from_env()
            .unwrap_err()
            .to_string();
        assert!(e.contains("JAXON_CPU_DEVICES"), "{e}");
        assert_eq!(CpuBackend::new().device_count(), 1);
    }
    std::env::remove_var("JAXON_CPU_DEVICES");
    assert_eq!(CpuBackend::new().device_count(), 1);
}

#[test]
fn devices_reaching_different_psums_fail() {
    // Device 0 sums one element, device 1 two: the buffer path sees the
    // mismatch and fails both instead of reading past a buffer.
    let t = parse(
        "{ lambda ; a:f32[2]. let
    b:f32[2] = shard_map[
      check_vma=False
      in_specs=(P('x',),)
      jaxpr={ lambda ; c:f32[1]. let
          d:i32[] = axis_index[axis_name=x] 
          e:f32[1] = cond[
            branches=(
              { lambda ; f:f32[1]. let k:f32[1] = psum[axes=('x',) axis_index_groups=None] f in (k,) }
              { lambda ; g:f32[1]. let
                  i:f32[2] = concatenate[dimension=0] g g
                  h:f32[2] = psum[axes=('x',) axis_index_groups=None] i
                  j:f32[1] = slice[limit_indices=(1,) start_indices=(0,) strides=(1,)] h
                in (j,) }
            )
          ] d c
        in (e,) }
      mesh=Mesh('x': 2, axis_types=(Auto,))
      newly_manual_axes=frozenset({'x'})
      out_specs=(P('x',),)
    ] a
  in (b,) }",
    );
    let x = HostArray::from_f64(DType::F32, &[2], &[1.0, 2.0]).unwrap();
    let e = try_run(&cpu(2), &t, &[x]).unwrap_err();
    assert!(e.contains("did not reach the same psum"), "{e}");
}
