//! `pallas_call` under tracing: the printed equation (kernel with `Ref`
//! binders, grid mapping with index maps) parses back to the same text and
//! evaluates to the same values; `jit` runs it; and every user error is
//! reported with JAX's wording.

use crate::common;
use jaxon_ir::primitive::{Pallas, PallasCallParams};

use common::Rng;
use jaxon_ir::DType::{F32, I32};
use jaxon_pallas::*;
use jaxon_trace::error::ok_or_raise;
use jaxon_trace::{jit, lax, make_jaxpr, numpy as jnp, Array};

fn add_call() -> PallasCall {
    let add = |r: &[Ref]| r[2].store(r[0].load() + r[1].load());
    let spec = || BlockSpec::map1([2], |i| i);
    pallas_call(add, shape_dtype(&[8], I32))
        .grid(4)
        .in_specs(vec![spec(), spec()])
        .out_spec(spec())
        .name("add_kernel")
        .interpret(true)
}

#[test]
fn make_jaxpr_prints_kernel_and_parses_back() {
    let call = add_call();
    let f = move |(x, y): (Array, Array)| call.call1(&[x, y]).unwrap();
    let x = Array::from_vec((0..8).collect::<Vec<i32>>(), &[8]);
    let y = Array::from_vec((8..16).collect::<Vec<i32>>(), &[8]);
    let closed = make_jaxpr(f)((x.clone(), y.clone())).unwrap();
    let text = closed.to_string();
    assert!(text.contains("pallas_call["), "{text}");
    assert!(text.contains("Ref<default>{i32[2]}"), "{text}");
    assert!(text.contains("grid=(4,)"), "{text}");
    assert!(text.contains("name=add_kernel"), "{text}");
    assert!(
        text.contains("<- a[...]") || text.contains("[...]"),
        "{text}"
    );
    // The text parses back to a jaxpr that prints identically and runs.
    let parsed = jaxon_ir::parse_closed_jaxpr(&text, vec![]).unwrap();
    assert_eq!(parsed.to_string(), text);
    let host = |a: &Array| a.try_to_host("test").unwrap();
    let outs = jaxon_ir::eval_closed_jaxpr(&parsed, &[host(&x), host(&y)]).unwrap();
    let o = &outs[0];
    assert_eq!(
        o.data().clone(),
        jaxon_ir::Storage::I32((0..8).map(|i| 2 * i + 8).collect())
    );
}

#[test]
fn masked_store_binds_its_old_values_dropped() {
    // JAX's `masked_swap` has one result (the old values); the user API
    // drops it, so the kernel prints `_:i32[8], b[...] <- b[...], c mask=d`.
    let k = |r: &[Ref]| {
        let x = r[0].load();
        let m = x.gt(0);
        store(&r[1], .., &x).mask(&m);
    };
    let call = pallas_call(k, shape_dtype(&[8], I32)).interpret(true);
    let mut rng = Rng::new(12);
    let a = rng.i32s(8, -9, 9);
    let x = Array::from_vec(a.clone(), &[8]);
    let closed = make_jaxpr(move |x: Array| call.call1(&[x]).unwrap())(x.clone()).unwrap();
    let text = closed.to_string();
    let line = text
        .lines()
        .find(|l| l.contains(" mask="))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.trim_start().starts_with("_:i32[8], "), "{line}");
    let parsed = jaxon_ir::parse_closed_jaxpr(&text, vec![]).unwrap();
    assert_eq!(parsed.to_string(), text);
    let outs = jaxon_ir::eval_closed_jaxpr(&parsed, &[x.try_to_host("test").unwrap()]).unwrap();
    // Masked-off lanes keep the output's initial contents (zeros here).
    let want: Vec<i32> = a.iter().map(|&v| if v > 0 { v } else { 0 }).collect();
    assert_eq!(outs[0].data().clone(), jaxon_ir::Storage::I32(want));
}

#[test]
fn runs_under_jit() {
    let mut rng = Rng::new(11);
    let (a, b) = (rng.i32s(8, -9, 9), rng.i32s(8, -9, 9));
    let call = add_call();
    let f = jit(move |(x, y): (Array, Array)| call.call1(&[x, y]).unwrap() * 3);
    let out = f
        .call((
            Array::from_vec(a.clone(), &[8]),
            Array::from_vec(b.clone(), &[8]),
        ))
        .unwrap();
    let want: Vec<i32> = a.iter().zip(&b).map(|(x, y)| 3 * (x + y)).collect();
    assert_eq!(out.to_vec::<i32>(), want);
}

fn err_of(r: jaxon_trace::Result<Vec<Array>>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn errors_use_jax_wording() {
    let x = Array::from_vec(vec![1.0f32; 8], &[8]);
    let copy = |r: &[Ref]| r[1].store(r[0].load());
    let out = shape_dtype(&[8], F32);

    let e = err_of(
        pallas_call(copy, out.clone())
            .grid(4)
            .in_specs(vec![BlockSpec::map1([2, 2], |i| (i, 0))])
            .interpret(true)
            .call(std::slice::from_ref(&x)),
    );
    assert!(e.contains("Block shape for args[0] (= (2, 2)) must have the same number of dimensions as the array shape (8,)"), "{e}");

    let e = err_of(
        pallas_call(copy, out.clone())
            .grid(4)
            .in_specs(vec![BlockSpec::map2([2], |i, _| i)])
            .call(std::slice::from_ref(&x)),
    );
    assert!(
        e.contains("takes 2 argument(s) but the grid has rank 1"),
        "{e}"
    );

    let e = err_of(
        pallas_call(copy, out.clone())
            .grid(4)
            .in_specs(vec![BlockSpec::map1([2], |i| (i.clone(), i))])
            .call(std::slice::from_ref(&x)),
    );
    assert!(e.contains("Index map function for args[0] must return 1 values to match block_shape=(2,). Currently returning 2 values."), "{e}");

    let e = err_of(
        pallas_call(copy, out.clone())
            .grid(4)
            .in_specs(vec![BlockSpec::map1([2], |i| i.astype(F32))])
            .call(std::slice::from_ref(&x)),
    );
    assert!(
        e.contains("must return integer scalars. Output[0] has type f32[]"),
        "{e}"
    );

    let e = err_of(
        pallas_call(copy, out.clone())
            .in_specs(vec![BlockSpec::whole(), BlockSpec::whole()])
            .call(std::slice::from_ref(&x)),
    );
    assert!(
        e.contains("Pytree for `in_specs` and `inputs` do not match"),
        "{e}"
    );

    let e = err_of(
        pallas_call(copy, out.clone())
            .out_specs(vec![])
            .call(std::slice::from_ref(&x)),
    );
    assert!(
        e.contains("Pytree for `out_specs` and `out_shape` do not match"),
        "{e}"
    );

    let c = Array::from_vec(vec![2.0f32; 8], &[8]);
    let captures = move |r: &[Ref]| r[1].store(r[0].load() * &c);
    let e = err_of(
        pallas_call(captures, out.clone())
            .name("cap")
            .call(std::slice::from_ref(&x)),
    );
    assert!(e.contains("The kernel function in the pallas_call cap captures constants [f32[8]]. You should pass them as inputs."), "{e}");

    let returns = |r: &[Ref]| r[0].load();
    let e = err_of(
        pallas_call(returns, out.clone())
            .name("ret")
            .call(std::slice::from_ref(&x)),
    );
    assert!(
        e.contains("The kernel function in the pallas_call ret should return None."),
        "{e}"
    );

    let reads_ref = |r: &[Ref]| r[1].store(ok_or_raise(lax::sin(r[0].as_array())));
    let e = err_of(pallas_call(reads_ref, out.clone()).call(std::slice::from_ref(&x)));
    assert!(e.contains("read it first"), "{e}");

    let e = err_of(
        pallas_call(copy, out)
            .input_output_aliases(&[(0, 3)])
            .call(std::slice::from_ref(&x)),
    );
    assert!(e.contains("input_output_aliases contains the mapping '0:3' with output index 3 outside the range [0, 1)"), "{e}");
}

#[test]
fn debug_and_default_name() {
    fn my_copy_kernel(r: &[Ref]) {
        r[1].store(r[0].load());
    }
    let x = Array::from_vec(vec![1.0f32, 2.0], &[2]);
    let p = pallas_call(my_copy_kernel, shape_dtype(&[2], F32))
        .debug(true)
        .primitive(&[x.ty().clone()])
        .unwrap();
    let jaxon_ir::Primitive::Pallas(Pallas::PallasCall(PallasCallParams { name, kernel, .. })) = p
    else {
        panic!("not a pallas_call")
    };
    assert_eq!(name.as_deref(), Some("my_copy_kernel"));
    assert!(kernel.to_string().contains("Ref<default>{f32[2]}"));
    let i32s = jaxon_ir::ShapedArray::of(I32, &[8]);
    let info = add_call().debug_info(&[i32s.clone(), i32s]).unwrap();
    assert!(
        info.contains("The kernel jaxpr for pallas_call add_kernel:"),
        "{info}"
    );
    assert!(info.contains("Ref<default>{i32[2]}"), "{info}");
    assert!(info.contains("GridMapping(grid=(4,)"), "{info}");
    assert!(
        info.contains("BlockMapping(block_shape=(2,), array_aval=i32[8]"),
        "{info}"
    );
}

/// Atomics at static integer indices print as JAX prints them (the index
/// an `i32` operand, `*` in the `args_tree`), parse back to the same text,
/// and evaluate as the kernel did; a dynamic index after a static one
/// keeps its place.
#[test]
fn atomics_at_static_indices_print_and_parse_back() {
    let k = |r: &[Ref]| {
        let x = r[0].load();
        r[1].store(jnp::zeros(&[3, 4], I32).unwrap());
        let i = program_id(0);
        let old = atomic_add(&r[1], ix![1, i.clone()], x.sum(jnp::All));
        atomic_max(&r[1], ix![2, 3], old);
        atomic_add(&r[1], ix![0, 0], 5);
    };
    let call = pallas_call(k, shape_dtype(&[3, 4], I32))
        .grid(1)
        .interpret(true);
    let mut rng = Rng::new(13);
    let a = rng.i32s(6, -9, 9);
    let x = Array::from_vec(a.clone(), &[6]);
    let run = call.clone();
    let direct = run.call1(std::slice::from_ref(&x)).unwrap().to_vec::<i32>();
    let closed = make_jaxpr(move |x: Array| call.call1(&[x]).unwrap())(x.clone()).unwrap();
    let text = closed.to_string();
    assert!(text.contains("atomic_rmw["), "{text}");
    let parsed = jaxon_ir::parse_closed_jaxpr(&text, vec![]).unwrap();
    assert_eq!(parsed.to_string(), text);
    let outs = jaxon_ir::eval_closed_jaxpr(&parsed, &[x.try_to_host("test").unwrap()]).unwrap();
    assert_eq!(
        outs[0].data().clone(),
        jaxon_ir::Storage::I32(direct.clone())
    );
    // [1, program 0] gets the sum; [2, 3] the max of 0 and the old value
    // (0); [0, 0] gets 5.
    let sum: i32 = a.iter().sum();
    let mut want = vec![0; 12];
    want[4] = sum;
    want[0] = 5;
    assert_eq!(direct, want);
}
