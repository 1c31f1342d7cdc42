//! Every user-facing item the facade re-exports from `jaxon-trace` and
//! `jaxon-transforms` is reachable as `jaxon::...` and does what it says:
//! dynamic-shape control flow (`for_loop`, `while_loop_with`,
//! `Jit::abstracted_axes`, `dynshape`), `linear_transpose`, the named-axis
//! `pmin`, the pytree trait, `raise`/`catch_flat` and the builder and result
//! types of the transforms.

use jaxon::collectives::pmin;
use jaxon::dynshape::{self, Size};
use jaxon::prelude::*;
use jaxon::{
    catch, catch_flat, checkpoint, custom_jvp, custom_vjp, for_loop, for_loop_with,
    linear_transpose, linear_transpose_tree, linearize, ok_or_raise, raise, tree_map,
    while_loop_with, Checkpoint, CustomJvp, CustomVjp, ForBound, ForLoopOptions, GradOutput,
    Jacobian, Linearized, LoopBound, Pullback, TreeDef, Vmap, WeakScalar,
};

fn vec_f32(xs: &[f32]) -> Array {
    Array::from_vec(xs.to_vec(), &[xs.len()])
}

#[test]
fn for_loop_and_its_options() {
    // carry = 10 * carry + i over i = 0, 1, 2.
    let body = |i: Array, c: Array| &c * 10.0 + i.astype(DType::F32);
    let init = Array::scalar(0f32);
    let up: ForBound = 3i64.into();
    let y = for_loop(0, up, 1, body, init.clone()).unwrap();
    assert_eq!(y.item::<f32>(), 12.0);
    let upper = Array::scalar(3i32);
    let y = for_loop(0, ForBound::from(&upper), 1, body, init.clone()).unwrap();
    assert_eq!(y.item::<f32>(), 12.0);
    // Catalyst's reverse transform allows a negative step: i = 2, 1, 0.
    let opts = ForLoopOptions {
        apply_reverse_transform: true,
        ..ForLoopOptions::default()
    };
    let y = for_loop_with(opts, 2, -1, -1, body, init).unwrap();
    assert_eq!(y.item::<f32>(), 210.0);
}

/// `LoopBound` names the bounds `fori_loop` takes.
fn count_to(upper: impl LoopBound) -> Array {
    ok_or_raise(fori_loop(
        0,
        upper,
        |_, c: Array| c + 1.0,
        Array::scalar(0f32),
    ))
}

#[test]
fn loop_bound_is_nameable() {
    assert_eq!(count_to(4).item::<f32>(), 4.0);
    assert_eq!(count_to(Array::scalar(6i32)).item::<f32>(), 6.0);
}

#[test]
fn while_loop_with_changes_sizes() {
    // Without preserved dimensions the carry may grow: `iota(n)` doubled
    // (`[a, a]`) until its length reaches 8.
    let f = jit(|n: Array| {
        let a = ok_or_raise(while_loop_with(
            false,
            |a: Array| ok_or_raise(dynshape::size_of(&a, 0)).lt(8),
            |a: Array| ok_or_raise(dynshape::concatenate(&[a.clone(), a], 0)),
            ok_or_raise(dynshape::iota(DType::F32, &n)),
        ));
        (a.sum(All), ok_or_raise(dynshape::size_of(&a, 0)))
    });
    let (sum, len) = f.call(Array::scalar(2i64)).unwrap();
    assert_eq!((sum.item::<f32>(), len.item::<i64>()), (4.0, 8));
    let (sum, len) = f.call(Array::scalar(3i64)).unwrap();
    assert_eq!((sum.item::<f32>(), len.item::<i64>()), (12.0, 12));
}

#[test]
fn abstracted_axes_and_dynshape_sizes() {
    let f = jit(|x: Array| {
        let sizes = ok_or_raise(dynshape::sizes(&x));
        assert!(matches!(sizes[0], Size::Dyn(_)), "{sizes:?}");
        let n = ok_or_raise(dynshape::size_of(&x, 0)).astype(DType::F32);
        x.sum(All) + n
    })
    .abstracted_axes(&[&[(0, "n")]]);
    for xs in [&[1.0f32, 2.0, 3.0][..], &[0.5, 0.5, 0.5, 0.5, 1.0]] {
        let y = f.call(vec_f32(xs)).unwrap();
        assert_eq!(y.item::<f32>(), xs.iter().sum::<f32>() + xs.len() as f32);
    }
    assert_eq!(f.trace_count(), 1);
}

#[test]
fn linear_transposes() {
    // f(x, y) = (3x + y, sum(x)); its transpose maps (u, s) to
    // (3u + s, u).
    let x = vec_f32(&[1.0, 2.0]);
    let y = vec_f32(&[0.0, 0.0]);
    let t = linear_transpose(
        |v: Vec<Array>| Ok(vec![&v[0] * 3.0 + &v[1]]),
        &[x.clone(), y.clone()],
    )
    .unwrap();
    let cts = t(&[vec_f32(&[1.0, -1.0])]).unwrap();
    assert_eq!(cts[0].to_vec::<f32>(), vec![3.0, -3.0]);
    assert_eq!(cts[1].to_vec::<f32>(), vec![1.0, -1.0]);
    let t = linear_transpose_tree(|(a, b): (Array, Array)| (&a * 3.0 + &b, a.sum(All)), (x, y))
        .unwrap();
    let (tx, ty): (Array, Array) = t((vec_f32(&[1.0, -1.0]), Array::scalar(2f32))).unwrap();
    assert_eq!(tx.to_vec::<f32>(), vec![5.0, -1.0]);
    assert_eq!(ty.to_vec::<f32>(), vec![1.0, -1.0]);
}

#[test]
fn pmin_over_a_named_axis() {
    let v: Vmap<_, Array, Array> = vmap(|x: Array| ok_or_raise(pmin(&x, "i"))).axis_name("i");
    let y = v.call(vec_f32(&[3.0, 1.0, 2.0])).unwrap();
    assert_eq!(y.to_vec::<f32>(), vec![1.0, 1.0, 1.0]);
}

/// The number of leaves of any pytree, through the re-exported trait.
fn num_leaves<T: jaxon::Pytree>(t: &T) -> (usize, TreeDef) {
    let (leaves, def) = t.flatten();
    (leaves.len(), def)
}

#[test]
fn pytree_trait_and_tree_map() {
    let t = (vec_f32(&[1.0]), vec![vec_f32(&[2.0, 3.0])]);
    let (n, def) = num_leaves(&t);
    assert_eq!((n, def.num_leaves()), (2, 2));
    let doubled = tree_map(&t, |a| a * 2.0).unwrap();
    assert_eq!(doubled.1[0].to_vec::<f32>(), vec![4.0, 6.0]);
}

/// `WeakScalar` names the Rust scalars that become weakly typed arrays.
fn weak<T: WeakScalar>(x: T) -> Array {
    Array::weak(x)
}

#[test]
fn weak_scalars_raise_and_catch_flat() {
    assert_eq!(weak(2.5f64).dtype(), DType::F32);
    assert_eq!(weak(3i32).dtype(), DType::I32);
    let r: Result<Array> = catch_flat(|| {
        let x = vec_f32(&[1.0]);
        if x.ndim() == 1 {
            raise(Error::InvalidArgument(
                "a vector is not allowed here".into(),
            ));
        }
        Ok(x)
    });
    assert_eq!(r.unwrap_err().to_string(), "a vector is not allowed here");
}

#[test]
fn transform_types_are_nameable() {
    let x = Array::scalar(2f32);
    // checkpoint: same values, and differentiable.
    let c: Checkpoint<Array, Array> = checkpoint(|x: Array| x.sin() * 2.0);
    let g = grad(move |x: Array| ok_or_raise(c.call(x)))(x.clone()).unwrap();
    assert!((g.item::<f32>() - 2.0 * 2f32.cos()).abs() < 1e-5);
    // custom_jvp: the rule, not the function, gives the derivative.
    let cj: CustomJvp<Array, Array> = custom_jvp(|x: Array| x)
        .name("ident")
        .defjvp(|p: Array, t: Array| (p, t * 7.0));
    let g = grad(move |x: Array| ok_or_raise(cj.call(x)))(x.clone()).unwrap();
    assert_eq!(g.item::<f32>(), 7.0);
    // custom_vjp: the backward rule gives the cotangent.
    let cv: CustomVjp<Array, Array> = custom_vjp(|x: Array| x)
        .name("ident_vjp")
        .defvjp(|x: Array| (x, ()), |_res: (), ct: Array| ct * 5.0);
    let g = grad(move |x: Array| ok_or_raise(cv.call(x)))(x.clone()).unwrap();
    assert_eq!(g.item::<f32>(), 5.0);
    // Jacobian, Linearized, Pullback.
    let j: Jacobian = jacfwd(|x: Array| &x * &x)(vec_f32(&[1.0, 3.0])).unwrap();
    assert_eq!(
        j.single().unwrap().to_vec::<f32>(),
        vec![2.0, 0.0, 0.0, 6.0]
    );
    let (y, lin): (Array, Linearized) = linearize(|x: Array| &x * &x, x.clone()).unwrap();
    assert_eq!(y.item::<f32>(), 4.0);
    assert_eq!(
        lin.jvp(&[Array::scalar(1f32)]).unwrap()[0].item::<f32>(),
        4.0
    );
    let (_, pb): (Array, Pullback<Array>) = vjp(|x: Array| x.sin(), x.clone()).unwrap();
    let ct = pb.call(Array::scalar(1f32)).unwrap();
    assert!((ct.item::<f32>() - 2f32.cos()).abs() < 1e-6);
    // GradOutput: what a differentiated function may return.
    fn value_of<G: GradOutput>(g: G) -> Array {
        g.split().0
    }
    assert_eq!(value_of((Array::scalar(1f32), ())).item::<f32>(), 1.0);
    assert!(catch(|| value_of(x.clone())).is_ok());
}
