//! `shard_map` and the mesh collectives on `cuda-sim` with 2 and 4
//! simulated devices (`CudaSimBackend::with_devices`): every collective
//! against the interpreter, bit for bit, on random shapes of f32 and i32
//! (psum, pmax, pmin, all_gather tiled and stacked, psum_scatter, ppermute
//! ring, all_to_all, axis_index, pvary, psum_invariant), psum also against
//! a loop; a 2x2 mesh body; a `scan` with a `psum` in its body; and the
//! errors: a mesh larger than the devices (naming both numbers), an
//! instance that diverges (an error, no hang), an axis not in scope.
//! The environment variable's tests are in `tests/sim_devices_env.rs`.

mod lowering_util;
use jaxon_backend_cuda::lower::CudaSimBackend;
use jaxon_ir::{Backend, ClosedJaxpr, DType, HostArray};
use lowering_util::{compare, parse, random, ty, Dist, Rng, Tol};

fn sim(devices: usize) -> CudaSimBackend {
    CudaSimBackend::new().with_devices(devices)
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

/// `shard_map` over a 1-D mesh `x` of `n` devices of a one-equation body
/// (`eqn` applied to the shard).
#[allow(clippy::too_many_arguments)]
fn one_op(
    n: usize,
    dt: &str,
    global: &[usize],
    shard: &[usize],
    out_shard: &[usize],
    out_global: &[usize],
    eqn: &str,
    out_spec: &str,
) -> String {
    format!(
        "{{ lambda ; a:{g}. let
    b:{og} = shard_map[
      check_vma=False
      in_specs=(P('x',),)
      jaxpr={{ lambda ; c:{s}. let d:{os} = {eqn} c in (d,) }}
      mesh=Mesh('x': {n}, axis_types=(Auto,))
      newly_manual_axes=frozenset({{'x'}})
      out_specs=({out_spec},)
    ] a
  in (b,) }}",
        g = ty(dt, global),
        og = ty(dt, out_global),
        s = ty(dt, shard),
        os = ty(dt, out_shard),
    )
}

/// Runs `text` on `n` simulated devices and on the interpreter with `x`;
/// the results must be equal bit for bit. Returns cuda-sim's.
fn same_as_interpreter(n: usize, text: &str, args: &[HostArray]) -> Vec<HostArray> {
    let closed = parse(text);
    let want = jaxon_ir::eval_closed_jaxpr(&closed, args)
        .unwrap_or_else(|e| panic!("interpreter: {e}\n{text}"));
    let got = try_run(&sim(n), &closed, args).unwrap_or_else(|e| panic!("cuda-sim: {e}\n{text}"));
    assert_eq!(got.len(), want.len(), "{text}");
    for (g, w) in got.iter().zip(&want) {
        compare(text, g, w, Tol::Exact);
        assert_eq!(g, w, "{text}");
    }
    got
}

/// The collectives of a 1-D mesh of `n`, each as `(eqn, shard, out_shard,
/// out_global, out_spec)` for an operand of `[n * b, c]` split by rows.
fn cases(n: usize, b: usize, c: usize) -> Vec<(String, Vec<usize>, Vec<usize>, &'static str)> {
    let ring: Vec<String> = (0..n).map(|i| format!("({i}, {})", (i + 1) % n)).collect();
    vec![
        (
            "psum[axes=('x',) axis_index_groups=None]".into(),
            vec![b, c],
            vec![b, c],
            "P()",
        ),
        (
            "pmax[axes=('x',) axis_index_groups=None]".into(),
            vec![b, c],
            vec![b, c],
            "P()",
        ),
        (
            "pmin[axes=('x',) axis_index_groups=None]".into(),
            vec![b, c],
            vec![b, c],
            "P()",
        ),
        (
            format!(
                "all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=('x',) \
                 axis_size={n} tiled=True]"
            ),
            vec![n * b, c],
            vec![n * b, c],
            "P()",
        ),
        (
            format!(
                "all_gather[all_gather_dimension=1 axis_index_groups=None axis_name=('x',) \
                 axis_size={n} tiled=False]"
            ),
            vec![b, n, c],
            vec![b, n, c],
            "P()",
        ),
        (
            format!("ppermute[axis_name=('x',) perm=({})]", ring.join(", ")),
            vec![b, c],
            vec![n * b, c],
            "P('x',)",
        ),
        (
            "pvary[axes=('x',)]".into(),
            vec![b, c],
            vec![n * b, c],
            "P('x',)",
        ),
        (
            "psum_invariant[axes=('x',)]".into(),
            vec![b, c],
            vec![b, c],
            "P()",
        ),
    ]
}

#[test]
fn every_collective_equals_the_interpreter_on_2_and_4_devices() {
    let mut rng = Rng::new(11);
    for n in [2, 4] {
        for (dt, dtype) in [("f32", DType::F32), ("i32", DType::I32)] {
            for _ in 0..2 {
                let (b, c) = (rng.range(1, 3) as usize, rng.range(1, 5) as usize);
                let x = random(&mut rng, dtype, &[n * b, c], Dist::Uniform(50.0));
                for (eqn, out_shard, out_global, spec) in cases(n, b, c) {
                    let text = one_op(
                        n,
                        dt,
                        &[n * b, c],
                        &[b, c],
                        &out_shard,
                        &out_global,
                        &eqn,
                        spec,
                    );
                    same_as_interpreter(n, &text, std::slice::from_ref(&x));
                }
                // psum_scatter: each device's [n*b, c] block summed, device
                // i keeping row block i.
                let y = random(&mut rng, dtype, &[n * n * b, c], Dist::Uniform(50.0));
                let text = one_op(
                    n,
                    dt,
                    &[n * n * b, c],
                    &[n * b, c],
                    &[b, c],
                    &[n * b, c],
                    &format!(
                        "reduce_scatter[axis_index_groups=None axis_name=('x',) axis_size={n} \
                         scatter_dimension=0 tiled=True]"
                    ),
                    "P('x',)",
                );
                same_as_interpreter(n, &text, std::slice::from_ref(&y));
                // all_to_all: row blocks to devices, concatenated by columns.
                let text = one_op(
                    n,
                    dt,
                    &[n * n * b, c],
                    &[n * b, c],
                    &[b, n * c],
                    &[n * b, n * c],
                    "all_to_all[axis_index_groups=None axis_name=x concat_axis=1 split_axis=0 \
                     tiled=True]",
                    "P('x',)",
                );
                same_as_interpreter(n, &text, std::slice::from_ref(&y));
            }
        }
    }
}

#[test]
fn psum_is_the_sum_of_the_shards() {
    let mut rng = Rng::new(12);
    for n in [2, 4] {
        let (b, c) = (rng.range(1, 4) as usize, rng.range(1, 6) as usize);
        let x = random(&mut rng, DType::I32, &[n * b, c], Dist::Uniform(1000.0));
        let text = one_op(
            n,
            "i32",
            &[n * b, c],
            &[b, c],
            &[b, c],
            &[b, c],
            "psum[axes=('x',) axis_index_groups=None]",
            "P()",
        );
        let got = same_as_interpreter(n, &text, std::slice::from_ref(&x));
        let xs = x.to_f64_vec();
        let want: Vec<f64> = (0..b * c)
            .map(|k| (0..n).map(|i| xs[i * b * c + k]).sum())
            .collect();
        assert_eq!(got[0].to_f64_vec(), want, "psum n={n}");
    }
}

#[test]
fn axis_index_is_the_device_coordinate() {
    for n in [2, 4] {
        let text = format!(
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
        );
        let x = HostArray::from_f64(DType::F32, &[n], &vec![0.0; n]).unwrap();
        let got = same_as_interpreter(n, &text, &[x]);
        let want: Vec<f64> = (0..n).map(|i| i as f64).collect();
        assert_eq!(got[0].to_f64_vec(), want);
    }
}

/// A 2x2 mesh: rows over 'a', columns over 'b', psums over one axis each
/// (groups of two), fused ops and a dot in the body.
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
fn a_2x2_mesh_body_equals_the_interpreter() {
    let closed = parse(MESH_2X2);
    let mut rng = Rng::new(13);
    for _ in 0..3 {
        let args = vec![
            random(&mut rng, DType::F32, &[4, 6], Dist::Uniform(2.0)),
            random(&mut rng, DType::F32, &[6, 3], Dist::Uniform(2.0)),
        ];
        let want = jaxon_ir::eval_closed_jaxpr(&closed, &args).unwrap();
        let got = try_run(&sim(4), &closed, &args).unwrap();
        for (g, w) in got.iter().zip(&want) {
            // tanh and the product are the simulator's kernels.
            compare("2x2 body", g, w, Tol::Rel(1e-5));
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
    let mut rng = Rng::new(14);
    let x = random(&mut rng, DType::F32, &[2, 5], Dist::Uniform(1.0));
    let got = try_run(&sim(2), &closed, std::slice::from_ref(&x)).unwrap();
    // f64 oracle: step 1 sums the two shards, later steps double the
    // (replicated) carry.
    let xs = x.to_f64_vec();
    let mut carry: Vec<f64> = (0..5).map(|j| xs[j] + xs[5 + j]).collect();
    for step in 0..3 {
        if step > 0 {
            carry = carry.iter().map(|v| 2.0 * v).collect();
        }
        carry = carry.iter().map(|v| (v * 0.25).sin()).collect();
    }
    let oracle = HostArray::from_f64(DType::F32, &[1, 5], &carry).unwrap();
    compare("scan with psum vs f64", &got[0], &oracle, Tol::Rel(1e-5));
    let want = jaxon_ir::eval_closed_jaxpr(&closed, &[x]).unwrap();
    compare("scan vs interpreter", &got[0], &want[0], Tol::Rel(1e-6));
}

#[test]
fn a_mesh_larger_than_the_devices_is_an_error_naming_both() {
    let text = one_op(
        4,
        "f32",
        &[4, 2],
        &[1, 2],
        &[1, 2],
        &[4, 2],
        "neg",
        "P('x',)",
    );
    let x = HostArray::from_f64(DType::F32, &[4, 2], &[1.0; 8]).unwrap();
    let e = try_run(&sim(2), &parse(&text), std::slice::from_ref(&x)).unwrap_err();
    assert!(e.contains("4 devices") && e.contains("has 2"), "{e}");
    assert_eq!(sim(2).device_count(), 2);
    assert_eq!(sim(0).device_count(), 1);
    // Enough devices: the same program runs.
    let got = try_run(&sim(4), &parse(&text), std::slice::from_ref(&x)).unwrap();
    assert_eq!(got[0].to_f64_vec(), vec![-1.0; 8]);
}

#[test]
fn a_failing_instance_fails_the_others_instead_of_hanging() {
    // Device 1 runs a psum that device 0 never reaches (it finishes).
    let closed = parse(
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
    let e = try_run(&sim(2), &closed, &[x]).unwrap_err();
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
        Ok(closed) => try_run(&sim(2), &closed, std::slice::from_ref(&x)).unwrap_err(),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("'y'") || e.contains(" y"), "{e}");
}

/// Under `JAXON_LOWERING_BACKEND=cuda` (`cargo xtask gpu-check`): the
/// collectives on meshes of 2 and 4 GPUs where there are that many (NCCL
/// between them; a float sum in NCCL's order, so within 1e-6), against
/// the interpreter. Elsewhere a skip line. (A mesh of one GPU is the
/// coverage test's `shard_map` case.)
#[test]
fn on_the_gpus_every_collective_matches_the_interpreter() {
    if std::env::var("JAXON_LOWERING_BACKEND").map_or(true, |b| b != "cuda") {
        println!("skipped: JAXON_LOWERING_BACKEND is not cuda");
        return;
    }
    let gpu = jaxon_backend_cuda::lower::CudaBackend::new();
    let gpus = gpu.device_count();
    if gpus < 2 {
        println!("gpu-check: lowering_spmd: skipped, {gpus} GPU(s) (meshes of 2 and 4 need them)");
        return;
    }
    let mut rng = Rng::new(15);
    let mut ran = 0;
    for n in [2, 4].into_iter().filter(|n| *n <= gpus) {
        for (dt, dtype, tol) in [
            ("f32", DType::F32, Tol::Rel(1e-6)),
            ("i32", DType::I32, Tol::Exact),
        ] {
            let (b, c) = (rng.range(1, 3) as usize, rng.range(1, 5) as usize);
            let x = random(&mut rng, dtype, &[n * b, c], Dist::Uniform(50.0));
            for (eqn, out_shard, out_global, spec) in cases(n, b, c) {
                let text = one_op(
                    n,
                    dt,
                    &[n * b, c],
                    &[b, c],
                    &out_shard,
                    &out_global,
                    &eqn,
                    spec,
                );
                let closed = parse(&text);
                let want = jaxon_ir::eval_closed_jaxpr(&closed, std::slice::from_ref(&x)).unwrap();
                let got = try_run(&gpu, &closed, std::slice::from_ref(&x))
                    .unwrap_or_else(|e| panic!("cuda: {e}\n{text}"));
                compare(&text, &got[0], &want[0], tol);
                ran += 1;
            }
        }
    }
    println!("gpu-check: lowering_spmd: {ran} collective cases on {gpus} GPU(s)");
}
