//! `shard_map` on the interpreter: each collective against its
//! single-device definition on random shapes, over meshes of 1, 2, 4 and
//! 2x2 devices (`psum` = sum of the shards, `all_gather` = concatenate,
//! `ppermute` ring = roll of the blocks, `all_to_all` = transpose of
//! blocks, `reduce_scatter` = sum then split), and the errors: a spec
//! that does not divide a dimension, an axis not in the mesh, a body whose
//! types do not match the shards, diverging devices (no deadlock).

use jaxon_ir::{check_jaxpr, eval_closed_jaxpr, parse_closed_jaxpr, HostArray, Storage};

/// A small deterministic generator (no dependency).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn size(&mut self, lo: usize, hi: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (self.0 >> 33) as usize % (hi - lo + 1)
    }
    fn array(&mut self, shape: &[usize]) -> HostArray {
        let n: usize = shape.iter().product();
        let data: Vec<f32> = (0..n).map(|_| self.next()).collect();
        HostArray::new(shape.to_vec(), Storage::F32(data)).unwrap()
    }
}

fn f32s(a: &HostArray) -> Vec<f32> {
    match a.data() {
        Storage::F32(v) => v.clone(),
        other => panic!("expected f32, got {other:?}"),
    }
}

fn ty(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("f32[{}]", dims.join(","))
}

fn mesh1(n: usize) -> String {
    format!("Mesh('x': {n}, axis_types=(Auto,))")
}

/// `shard_map` of a one-equation body `prim x` over mesh axis `x`.
#[allow(clippy::too_many_arguments)]
fn one_op(
    n: usize,
    global: &[usize],
    shard: &[usize],
    out_shard: &[usize],
    out_global: &[usize],
    eqn: &str,
    in_spec: &str,
    out_spec: &str,
) -> String {
    format!(
        "{{ lambda ; a:{g}. let
    b:{og} = shard_map[
      check_vma=False
      in_specs=({in_spec},)
      jaxpr={{ lambda ; c:{s}. let d:{os} = {eqn} c in (d,) }}
      mesh={mesh}
      newly_manual_axes=frozenset({{'x'}})
      out_specs=({out_spec},)
    ] a
  in (b,) }}",
        g = ty(global),
        og = ty(out_global),
        s = ty(shard),
        os = ty(out_shard),
        mesh = mesh1(n),
    )
}

fn run(text: &str, args: &[HostArray]) -> Result<Vec<HostArray>, String> {
    let closed = parse_closed_jaxpr(text, Vec::new()).map_err(|e| e.to_string())?;
    check_jaxpr(&closed.jaxpr).map_err(|e| e.to_string())?;
    eval_closed_jaxpr(&closed, args).map_err(|e| e.to_string())
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-5 + 1e-5 * w.abs(), "got {g}, want {w}");
    }
}

/// Rows of `x` (shape `[rows, cols]`) as blocks of `rows / n` rows.
fn blocks(x: &[f32], n: usize, cols: usize) -> Vec<Vec<f32>> {
    let per = x.len() / n;
    assert_eq!(per % cols, 0);
    x.chunks(per).map(|c| c.to_vec()).collect()
}

#[test]
fn psum_is_the_sum_of_the_shards() {
    let mut r = Lcg(1);
    for n in [1, 2, 4] {
        let (b, c) = (r.size(1, 3), r.size(1, 4));
        let x = r.array(&[n * b, c]);
        let t = one_op(
            n,
            &[n * b, c],
            &[b, c],
            &[b, c],
            &[b, c],
            "psum[axes=('x',) axis_index_groups=None]",
            "P('x',)",
            "P()",
        );
        let out = run(&t, std::slice::from_ref(&x)).unwrap();
        let mut want = vec![0.0f32; b * c];
        for blk in blocks(&f32s(&x), n, c) {
            for (w, v) in want.iter_mut().zip(blk) {
                *w += v;
            }
        }
        close(&f32s(&out[0]), &want);
    }
}

#[test]
fn all_gather_is_concatenation_and_reduce_scatter_sums_then_splits() {
    let mut r = Lcg(2);
    for n in [2, 4] {
        let (b, c) = (r.size(1, 3), r.size(1, 3));
        let x = r.array(&[n * b, c]);
        let gather = one_op(
            n,
            &[n * b, c],
            &[b, c],
            &[n * b, c],
            &[n * b, c],
            &format!(
                "all_gather[all_gather_dimension=0 axis_index_groups=None axis_name=('x',) \
                 axis_size={n} tiled=True]"
            ),
            "P('x',)",
            "P()",
        );
        let out = run(&gather, std::slice::from_ref(&x)).unwrap();
        close(&f32s(&out[0]), &f32s(&x));
        // Every device holds the whole x: the sum is n x, device i keeps block i.
        let scatter = one_op(
            n,
            &[n * b, c],
            &[n * b, c],
            &[b, c],
            &[n * b, c],
            &format!(
                "reduce_scatter[axis_index_groups=None axis_name=('x',) axis_size={n} \
                 scatter_dimension=0 tiled=True]"
            ),
            "P()",
            "P('x',)",
        );
        let out = run(&scatter, std::slice::from_ref(&x)).unwrap();
        let want: Vec<f32> = f32s(&x).iter().map(|v| v * n as f32).collect();
        close(&f32s(&out[0]), &want);
    }
}

#[test]
fn ppermute_ring_is_a_roll_of_the_blocks() {
    let mut r = Lcg(3);
    for n in [2, 4] {
        let (b, c) = (r.size(1, 3), r.size(1, 3));
        let x = r.array(&[n * b, c]);
        let pairs: Vec<String> = (0..n).map(|i| format!("({i}, {})", (i + 1) % n)).collect();
        let t = one_op(
            n,
            &[n * b, c],
            &[b, c],
            &[b, c],
            &[n * b, c],
            &format!("ppermute[axis_name=('x',) perm=({})]", pairs.join(", ")),
            "P('x',)",
            "P('x',)",
        );
        let out = run(&t, std::slice::from_ref(&x)).unwrap();
        let bl = blocks(&f32s(&x), n, c);
        let want: Vec<f32> = (0..n).flat_map(|i| bl[(i + n - 1) % n].clone()).collect();
        close(&f32s(&out[0]), &want);
    }
}

#[test]
fn all_to_all_transposes_blocks() {
    let mut r = Lcg(4);
    for n in [2, 4] {
        let (b, c) = (r.size(1, 2), r.size(1, 2));
        // Global [n*n*b, c]: device i holds rows i*n*b.., splits them into n
        // chunks of b rows, chunk j goes to device j, concatenated along 1.
        let x = r.array(&[n * n * b, c]);
        let t = one_op(
            n,
            &[n * n * b, c],
            &[n * b, c],
            &[b, n * c],
            &[n * b, n * c],
            "all_to_all[axis_index_groups=None axis_name=x concat_axis=1 split_axis=0 tiled=True]",
            "P('x',)",
            "P('x',)",
        );
        let out = run(&t, std::slice::from_ref(&x)).unwrap();
        let xs = f32s(&x);
        let at = |row: usize, col: usize| xs[row * c + col];
        let mut want = Vec::new();
        for j in 0..n {
            for row in 0..b {
                for i in 0..n {
                    for col in 0..c {
                        want.push(at(i * n * b + j * b + row, col));
                    }
                }
            }
        }
        close(&f32s(&out[0]), &want);
    }
}

#[test]
fn psum_over_one_axis_of_a_2x2_mesh() {
    let mut r = Lcg(5);
    let c = r.size(1, 3);
    let x = r.array(&[2, 2 * c]);
    // Rows split over 'a', columns over 'b'; the sum over 'a' of each column block.
    let t = format!(
        "{{ lambda ; a:f32[2,{c2}]. let
    b:f32[1,{c2}] = shard_map[
      check_vma=False
      in_specs=(P('a', 'b'),)
      jaxpr={{ lambda ; c:f32[1,{c}]. let d:f32[1,{c}] = psum[axes=('a',) axis_index_groups=None] c in (d,) }}
      mesh=Mesh('a': 2, 'b': 2, axis_types=(Auto, Auto))
      newly_manual_axes=frozenset({{'a', 'b'}})
      out_specs=(P(None, 'b'),)
    ] a
  in (b,) }}",
        c2 = 2 * c
    );
    let out = run(&t, std::slice::from_ref(&x)).unwrap();
    let xs = f32s(&x);
    let want: Vec<f32> = (0..2 * c).map(|j| xs[j] + xs[2 * c + j]).collect();
    close(&f32s(&out[0]), &want);
}

#[test]
fn a_spec_that_does_not_divide_is_an_error_naming_shape_and_spec() {
    let t = one_op(
        2,
        &[3, 2],
        &[1, 2],
        &[1, 2],
        &[2, 2],
        "neg",
        "P('x',)",
        "P('x',)",
    );
    let e = run(&t, &[]).unwrap_err();
    assert!(e.contains("P('x',)") && e.contains("[3, 2]"), "{e}");
}

#[test]
fn an_axis_not_in_the_mesh_is_an_error_naming_it() {
    let t = one_op(
        2,
        &[2, 2],
        &[1, 2],
        &[1, 2],
        &[2, 2],
        "neg",
        "P('y',)",
        "P('x',)",
    );
    let e = run(&t, &[]).unwrap_err();
    assert!(e.contains("'y'"), "{e}");
    let x = HostArray::new(vec![2, 2], Storage::F32(vec![1.0; 4])).unwrap();
    let t = one_op(
        2,
        &[2, 2],
        &[1, 2],
        &[1, 2],
        &[2, 2],
        "psum[axes=('y',) axis_index_groups=None]",
        "P('x',)",
        "P('x',)",
    );
    let e = run(&t, &[x]).unwrap_err();
    assert!(e.contains("'y'"), "{e}");
}

#[test]
fn a_body_whose_types_do_not_match_the_shards_is_an_error() {
    let t = one_op(
        2,
        &[4, 2],
        &[4, 2],
        &[4, 2],
        &[8, 2],
        "neg",
        "P('x',)",
        "P('x',)",
    );
    let e = run(&t, &[]).unwrap_err();
    assert!(e.contains("body input 0"), "{e}");
}

#[test]
fn diverging_devices_fail_instead_of_waiting() {
    // Device 1 runs a psum that device 0 never reaches.
    let t = "{ lambda ; a:f32[2]. let
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
  in (b,) }";
    let x = HostArray::new(vec![2], Storage::F32(vec![1.0, 2.0])).unwrap();
    let e = run(t, &[x]).unwrap_err();
    assert!(e.contains("diverged"), "{e}");
}

#[test]
fn shard_map_text_round_trips() {
    let t = one_op(
        4,
        &[8, 3],
        &[2, 3],
        &[2, 3],
        &[8, 3],
        "ppermute[axis_name=('x',) perm=((0, 1), (1, 2), (2, 3), (3, 0))]",
        "P('x',)",
        "P('x',)",
    );
    let closed = parse_closed_jaxpr(&t, Vec::new()).unwrap();
    let printed = closed.jaxpr.to_string();
    let again = parse_closed_jaxpr(&printed, Vec::new()).unwrap();
    assert_eq!(again.jaxpr.to_string(), printed);
}
