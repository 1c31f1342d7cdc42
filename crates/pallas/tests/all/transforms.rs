//! Transforms of `pallas_call` in interpret mode: vmap adds a leading grid
//! axis (batched and unbatched operands, program ids still addressing the
//! user's axes), jvp builds one kernel for primals and tangents (checked
//! against the analytic derivative), and plain reverse mode fails clearly.

use crate::common;

use common::{assert_close, Rng};
use jaxon_ir::DType::F32;
use jaxon_pallas::*;
use jaxon_trace::{make_jaxpr, Array};
use jaxon_transforms::{grad, jvp, vmap, Axes};

/// o = x * y + program_id(0), in blocks of 2 over a grid of 2.
fn scaled() -> PallasCall {
    let k = |r: &[Ref]| {
        let pid = program_id(0).astype(F32);
        r[2].store(r[0].load() * r[1].load() + pid);
    };
    let spec = || BlockSpec::map1([2], |i| i);
    pallas_call(k, shape_dtype(&[4], F32))
        .grid(2)
        .in_specs(vec![spec(), spec()])
        .out_spec(spec())
        .interpret(true)
}

#[test]
fn vmap_adds_a_leading_grid_axis() {
    let mut rng = Rng::new(21);
    let (xs, ys) = (rng.f32s(12), rng.f32s(12));
    let call = scaled();
    let f = move |(x, y): (Array, Array)| call.call1(&[x, y]).unwrap();
    let x = Array::from_vec(xs.clone(), &[3, 4]);
    let y = Array::from_vec(ys.clone(), &[3, 4]);
    let fv = vmap(f.clone());
    let text = make_jaxpr(|a| fv.call(a).unwrap())((x.clone(), y.clone()))
        .unwrap()
        .to_string();
    assert!(text.contains("grid=(3, 2)"), "{text}");
    assert!(text.contains("Squeezed"), "{text}");
    let parsed = jaxon_ir::parse_closed_jaxpr(&text, vec![]).unwrap();
    assert_eq!(parsed.to_string(), text);
    let out = vmap(f).call((x, y)).unwrap();
    let want: Vec<f64> = (0..12)
        .map(|k| xs[k] as f64 * ys[k] as f64 + ((k % 4) / 2) as f64)
        .collect();
    assert_close(&out.to_vec::<f32>(), &want, 1e-6);
}

#[test]
fn vmap_with_an_unbatched_operand_and_batch_axis_1() {
    let mut rng = Rng::new(22);
    let (xs, ys) = (rng.f32s(12), rng.f32s(4));
    let call = scaled();
    let f = move |(x, y): (Array, Array)| call.call1(&[x, y]).unwrap();
    // x is (4, 3) mapped along axis 1; y is shared.
    let x = Array::from_vec(xs.clone(), &[4, 3]);
    let y = Array::from_vec(ys.clone(), &[4]);
    let out = vmap(f)
        .in_axes(Axes::Leaves(vec![Some(1), None]))
        .call((x, y))
        .unwrap();
    assert_eq!(out.shape(), vec![3, 4]);
    let want: Vec<f64> = (0..3)
        .flat_map(|b| (0..4).map(move |i| (b, i)))
        .map(|(b, i)| xs[i * 3 + b] as f64 * ys[i] as f64 + (i / 2) as f64)
        .collect();
    assert_close(&out.to_vec::<f32>(), &want, 1e-6);
}

#[test]
fn jvp_builds_one_kernel_for_primals_and_tangents() {
    let mut rng = Rng::new(23);
    let (xs, ys, txs, tys) = (rng.f32s(4), rng.f32s(4), rng.f32s(4), rng.f32s(4));
    let k = |r: &[Ref]| {
        let x = r[0].load();
        let m = jaxon_trace::numpy::arange(2).unwrap().lt(2);
        let y = load(&r[1], ..).mask(&m).other(0.0).read();
        store(&r[2], .., x.sin() * y).mask(&m);
    };
    let spec = || BlockSpec::map1([2], |i| i);
    let call = pallas_call(k, shape_dtype(&[4], F32))
        .grid(2)
        .in_specs(vec![spec(), spec()])
        .out_spec(spec())
        .interpret(true);
    let c2 = call.clone();
    let f = move |(x, y): (Array, Array)| call.call1(&[x, y]).unwrap();
    let arr = |v: &Vec<f32>| Array::from_vec(v.clone(), &[4]);
    let (p, t) = jvp(f, (arr(&xs), arr(&ys)), (arr(&txs), arr(&tys))).unwrap();
    let want_p: Vec<f64> = (0..4)
        .map(|i| (xs[i] as f64).sin() * ys[i] as f64)
        .collect();
    let want_t: Vec<f64> = (0..4)
        .map(|i| {
            let (x, y) = (xs[i] as f64, ys[i] as f64);
            x.cos() * txs[i] as f64 * y + x.sin() * tys[i] as f64
        })
        .collect();
    assert_close(&p.to_vec::<f32>(), &want_p, 1e-6);
    assert_close(&t.to_vec::<f32>(), &want_t, 1e-5);
    // One pallas_call with 4 inputs (primals, tangents) and 2 outputs.
    let g = move |(x, y, tx, ty): (Array, Array, Array, Array)| {
        let c = c2.clone();
        let f = move |(x, y): (Array, Array)| c.call1(&[x, y]).unwrap();
        jvp(f, (x, y), (tx, ty)).unwrap()
    };
    let text = make_jaxpr(g)((arr(&xs), arr(&ys), arr(&txs), arr(&tys)))
        .unwrap()
        .to_string();
    assert_eq!(text.matches("pallas_call[").count(), 1, "{text}");
    let parsed = jaxon_ir::parse_closed_jaxpr(&text, vec![]).unwrap();
    assert_eq!(parsed.to_string(), text);
}

#[test]
fn grad_of_pallas_call_fails_clearly() {
    let call = scaled();
    let f = move |x: Array| {
        jaxon_trace::error::ok_or_raise(call.call1(&[x.clone(), x])).sum(jaxon_trace::numpy::All)
    };
    let e = grad(f)(Array::from_vec(vec![1.0f32; 4], &[4])).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("reverse-mode differentiation"), "{msg}");
    assert!(msg.contains("custom_vjp"), "{msg}");
}

#[test]
fn jvp_through_fori_loop_and_when_in_a_kernel() {
    // o = sum_k x[:, k-block] @ y[k-block, :], then o[0, 0] += 1 in program 0.
    let mut rng = Rng::new(24);
    let arr = |rng: &mut Rng, s: &[usize]| rng.array(s);
    let (x, y) = (arr(&mut rng, &[4, 6]), arr(&mut rng, &[6, 4]));
    let (tx, ty) = (arr(&mut rng, &[4, 6]), arr(&mut rng, &[6, 4]));
    let k = |r: &[Ref]| {
        let acc0 = jaxon_trace::numpy::zeros(&[4, 4], F32).unwrap();
        let acc = fori_loop(
            0,
            3,
            |k, acc: Array| {
                let s = &k * 2;
                acc + dot(&r[0].get(ix![.., ds(&s, 2)]), &r[1].get(ix![ds(&s, 2), ..]))
            },
            acc0,
        )
        .unwrap();
        r[2].store(acc);
        when(&program_id(0).eq(0), || {
            r[2].add(ix![0, 0], r[0].get(ix![0, 0]) * 0.0 + 1.0)
        });
    };
    let call = pallas_call(k, shape_dtype(&[4, 4], F32))
        .grid(1)
        .interpret(true);
    let f = move |(x, y): (Array, Array)| call.call1(&[x, y]).unwrap();
    let (p, t) = jvp(f, (x.clone(), y.clone()), (tx.clone(), ty.clone())).unwrap();
    let mm = |a: &Array, b: &Array| jaxon_trace::numpy::matmul(a, b).unwrap();
    let mut want_p = mm(&x, &y).to_vec::<f32>();
    want_p[0] += 1.0;
    let want_t = (mm(&tx, &y) + mm(&x, &ty)).to_vec::<f32>();
    let f64s = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
    assert_close(&p.to_vec::<f32>(), &f64s(want_p), 1e-5);
    assert_close(&t.to_vec::<f32>(), &f64s(want_t), 1e-5);
}

#[test]
fn jit_of_vmap_keeps_num_programs_on_the_user_axis() {
    // o[i] = x[i] * num_programs(0) + program_id(0), one element per program.
    let mut rng = Rng::new(25);
    let xs = rng.f32s(10);
    let k = |r: &[Ref]| {
        let n = num_programs(0).astype(F32);
        let i = program_id(0);
        r[1].set(&i, r[0].get(&i) * n + i.astype(F32));
    };
    let call = pallas_call(k, shape_dtype(&[5], F32))
        .grid(5)
        .interpret(true);
    let f = jaxon_trace::jit(move |x: Array| {
        vmap(|x: Array| call.call1(&[x]).unwrap()).call(x).unwrap()
    });
    let out = f.call(Array::from_vec(xs.clone(), &[2, 5])).unwrap();
    let want: Vec<f64> = (0..10)
        .map(|k| xs[k] as f64 * 5.0 + (k % 5) as f64)
        .collect();
    assert_close(&out.to_vec::<f32>(), &want, 1e-6);
}

#[test]
fn vmap_of_an_aliased_accumulator_and_jvp_of_vmap() {
    // acc (aliased to the output) += x * x, with acc shared across the batch.
    let mut rng = Rng::new(26);
    let (xs, accs) = (rng.f32s(8), rng.f32s(4));
    let k = |r: &[Ref]| {
        let x = r[0].load();
        r[2].store(r[1].load() + &x * &x);
    };
    let call = pallas_call(k, shape_dtype(&[4], F32))
        .input_output_aliases(&[(1, 0)])
        .interpret(true);
    let c = call.clone();
    let f = move |(x, acc): (Array, Array)| c.call1(&[x, acc]).unwrap();
    let out = vmap(f)
        .in_axes(Axes::Leaves(vec![Some(0), None]))
        .call((
            Array::from_vec(xs.clone(), &[2, 4]),
            Array::from_vec(accs.clone(), &[4]),
        ))
        .unwrap();
    let want: Vec<f64> = (0..8)
        .map(|k| accs[k % 4] as f64 + (xs[k] as f64).powi(2))
        .collect();
    assert_close(&out.to_vec::<f32>(), &want, 1e-6);

    // jvp of a vmapped kernel without aliases: d(x * x) = 2 x dx.
    let sq = |r: &[Ref]| r[1].store(r[0].load() * r[0].load());
    let sq = pallas_call(sq, shape_dtype(&[4], F32)).interpret(true);
    let g = move |x: Array| vmap(|x: Array| sq.call1(&[x]).unwrap()).call(x).unwrap();
    let tx = rng.f32s(8);
    let (_, t) = jvp(
        g,
        Array::from_vec(xs.clone(), &[2, 4]),
        Array::from_vec(tx.clone(), &[2, 4]),
    )
    .unwrap();
    let want_t: Vec<f64> = (0..8).map(|k| 2.0 * xs[k] as f64 * tx[k] as f64).collect();
    assert_close(&t.to_vec::<f32>(), &want_t, 1e-6);
}

/// A kernel (JAX's text) using a masked store's result, the old values:
/// `k` first takes `b`'s block, then `a` where the global index is below
/// 5 with the old values bound to `s`, which output 1 receives. So output
/// 0 is `where(g < 5, a, b)` and output 1 is `b`; their tangents are the
/// same selections of the input tangents.
const MASKED_STORE_RESULT: &str = "{ lambda ; a:f32[8] b:f32[8]. let
    c:f32[8] d:f32[8] = pallas_call[
      compiler_params=None
      cost_estimate=None
      debug=False
      grid_mapping=GridMapping(grid=(2,), block_mappings=(BlockMapping(block_shape=(Blocked(block_size=4),), array_aval=ShapedArray(float32[8]), index_map={ lambda ; e:i32[]. let
          
        in (e,) }), BlockMapping(block_shape=(Blocked(block_size=4),), array_aval=ShapedArray(float32[8]), index_map={ lambda ; f:i32[]. let
          
        in (f,) }), BlockMapping(block_shape=(Blocked(block_size=4),), array_aval=ShapedArray(float32[8]), index_map={ lambda ; g:i32[]. let
          
        in (g,) }), BlockMapping(block_shape=(Blocked(block_size=4),), array_aval=ShapedArray(float32[8]), index_map={ lambda ; h:i32[]. let
          
        in (h,) })))
      input_output_aliases=()
      interpret=True
      jaxpr={ lambda ; i:Ref<default>{f32[4]} j:Ref<default>{f32[4]} k:Ref<default>{f32[4]}
          l:Ref<default>{f32[4]}. let
          m:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) sharding=None] 
          n:i32[] = program_id[axis=0] 
          o:i32[] = mul n 4:i32[]
          p:i32[4] = add m o
          q:bool[4] = lt p 5:i32[]
          r:f32[4] <- i[...]
          t:f32[4] <- j[...]
          _:f32[4], k[...] <- k[...], t
          s:f32[4], k[...] <- k[...], r mask=q
          _:f32[4], l[...] <- l[...], s
        in () }
      mesh=None
      metadata=None
      name=masked_store_result
      out_avals=(ShapedArray(float32[8]), ShapedArray(float32[8]))
    ] a b
  in (c, d) }";

#[test]
fn jvp_of_a_masked_store_result() {
    let closed = jaxon_ir::parse_closed_jaxpr(MASKED_STORE_RESULT, vec![]).unwrap();
    let mut rng = Rng::new(24);
    let (a, b, ta, tb) = (rng.f32s(8), rng.f32s(8), rng.f32s(8), rng.f32s(8));
    let arr = |v: &Vec<f32>| Array::from_vec(v.clone(), &[8]);
    let f = |(x, y): (Array, Array)| {
        jaxon_trace::interpret::eval_closed_jaxpr(&closed, &[x, y]).unwrap()
    };
    let (p, t) = jvp(f, (arr(&a), arr(&b)), (arr(&ta), arr(&tb))).unwrap();
    let sel = |x: &[f32], y: &[f32]| -> Vec<f64> {
        (0..8)
            .map(|g| if g < 5 { x[g] } else { y[g] } as f64)
            .collect()
    };
    let wide = |x: &[f32]| -> Vec<f64> { x.iter().map(|&v| v as f64).collect() };
    assert_close(&p[0].to_vec::<f32>(), &sel(&a, &b), 0.0);
    assert_close(&p[1].to_vec::<f32>(), &wide(&b), 0.0);
    assert_close(&t[0].to_vec::<f32>(), &sel(&ta, &tb), 0.0);
    assert_close(&t[1].to_vec::<f32>(), &wide(&tb), 0.0);
}
