//! Unit tests of the parser: quirks of JAX's layout, sharing, dropvars,
//! state/Pallas forms, const binding, and error positions and messages.

use super::*;
use crate::aval::{Aval, Dim, ShapedArray};
use crate::dtype::DType;
use crate::jaxpr::{Atom, Binder, Var};
use crate::literal::Scalar;
use crate::primitive::{AtomicOp, BinaryOp, IndexEntry, IndexValue, Indexer, Primitive, UnaryOp};
use crate::primitive::{
    AtomicRmwParams, BroadcastInDimParams, Control, CumulativeParams, DotGeneralParams,
    Elementwise, ForLoopParams, GetParams, Indexing, JitParams, Linalg, LoadParams, Pallas,
    PallasCallParams, ProgramIdParams, ReduceParams, ReducePrecisionParams, Reduction,
    ScatterParams, SplitParams, StackParams, State, StoreParams, Structural, SwapParams,
    TileParams, TopKParams,
};
use crate::print::print_jaxpr;
use std::sync::Arc;

fn err(text: &str) -> ParseError {
    match parse_jaxpr(text) {
        Ok(j) => panic!("expected an error for {text:?}, parsed {j:?}"),
        Err(e) => e,
    }
}

#[test]
fn one_line_form_with_literals_and_dropvar() {
    let t = "{ lambda ; a:f32[]. let _:f32[] = neg a; b:f32[] = neg 1.0:f32[] in (b,) }";
    let j = parse_jaxpr(t).unwrap();
    assert_eq!(j.vars.len(), 2);
    assert_eq!(j.eqns.len(), 2);
    assert_eq!(
        j.eqns[0].outputs,
        vec![Binder::Drop(Aval::Array(ShapedArray::scalar(DType::F32)))]
    );
    match j.eqns[1].inputs[0] {
        Atom::Lit(l) => assert_eq!((l.value, l.dtype), (Scalar::Float(1.0), DType::F32)),
        Atom::Var(_) => panic!("literal expected"),
    }
    assert_eq!(j.outvars, vec![Atom::Var(Var(1))]);
    assert_eq!(print_jaxpr(&j), t);
}

#[test]
fn special_float_literals_and_bools() {
    let t = "{ lambda ; a:f32[3]. let\n    b:bool[3] = eq a inf:f32[]\n    c:f32[3] = max a -inf:f32[]\n    \
             d:f32[3] = add nan:f32[] c\n    e:bool[3] = and b True:bool[]\n  in (d, e, 9.999999747378752e-06:f32[]) }";
    let j = parse_jaxpr(t).unwrap();
    let lit = |k: usize, i: usize| match j.eqns[k].inputs[i] {
        Atom::Lit(l) => l,
        Atom::Var(_) => panic!("literal expected in eqn {k}"),
    };
    assert_eq!(lit(0, 1).value, Scalar::Float(f64::INFINITY));
    assert_eq!(lit(1, 1).value, Scalar::Float(f64::NEG_INFINITY));
    assert!(matches!(lit(2, 0).value, Scalar::Float(x) if x.is_nan()));
    assert_eq!(lit(3, 1).value, Scalar::Bool(true));
    assert!(
        matches!(j.outvars[2], Atom::Lit(l) if l.value == Scalar::Float(9.999999747378752e-06))
    );
}

#[test]
fn variable_named_in_and_wrapped_operands() {
    let t = "{ lambda ; in:f32[2] b:f32[2]. let\n    c:f32[2] = add in\n      b\n    d:f32[2] = mul c in\n  in (in, d) }";
    let j = parse_jaxpr(t).unwrap();
    assert_eq!(j.eqns.len(), 2);
    assert_eq!(j.eqns[0].inputs, vec![Atom::Var(Var(0)), Atom::Var(Var(1))]);
    assert_eq!(j.outvars, vec![Atom::Var(Var(0)), Atom::Var(Var(3))]);
}

#[test]
fn let_shared_jaxprs_with_forward_reference_are_one_arc() {
    let t = "let f = { lambda ; a:f32[]. let b:f32[] = jit[name=g jaxpr=g] a in (b,) } in\n\
             let g = { lambda ; a:f32[]. let b:f32[] = sin a in (b,) } in\n\
             { lambda ; a:f32[]. let\n    b:f32[] = jit[name=f jaxpr=f] a\n    c:f32[] = jit[name=f jaxpr=f] b\n  in (c,) }";
    let j = parse_jaxpr(t).unwrap();
    let inner = |k: usize| match &j.eqns[k].primitive {
        Primitive::Control(Control::Jit(JitParams { jaxpr, .. })) => jaxpr.clone(),
        other => panic!("jit expected, got {other:?}"),
    };
    assert!(Arc::ptr_eq(&inner(0).jaxpr, &inner(1).jaxpr));
    let Primitive::Control(Control::Jit(JitParams { jaxpr: g, .. })) =
        &inner(0).jaxpr.eqns[0].primitive
    else {
        panic!("nested jit expected");
    };
    assert_eq!(
        g.jaxpr.eqns[0].primitive,
        Primitive::Elementwise(Elementwise::Unary(UnaryOp::Sin))
    );
}

#[test]
fn underscore_names_inside_jit_resolve_to_real_vars() {
    let t = "{ lambda ; a:f32[]. let\n    _:f32[] b:f32[] = jit[\n      name=f\n      jaxpr={ lambda ; a:f32[]. let\n          \
             _:f32[] = sin a\n          _:f32[] = exp a\n          b:f32[] = cos a\n        in (_, b) }\n    ] a\n  in (b,) }";
    let j = parse_jaxpr(t).unwrap();
    let Primitive::Control(Control::Jit(JitParams { jaxpr, .. })) = &j.eqns[0].primitive else {
        panic!("jit expected");
    };
    let inner = &jaxpr.jaxpr;
    // `sin`'s output is unread: a real dropvar; `exp`'s is the first outvar.
    assert!(matches!(inner.eqns[0].outputs[0], Binder::Drop(_)));
    let Binder::Var(e) = inner.eqns[1].outputs[0] else {
        panic!("exp output must be a var");
    };
    assert_eq!(inner.outvars[0], Atom::Var(e));
    assert_eq!(inner.vars.len(), 3);
}

#[test]
fn dynamic_dims_and_catalyst_for_loop() {
    // From Catalyst's FRONTEND.md: untyped literals, `shape=(None,)`.
    let t = "{ lambda ; a:i64[]. let\n    b:f64[a] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] 1.0 a\n    \
             _:i64[] c:f64[a] = for_loop[\n      apply_reverse_transform=False\n      \
             body_jaxpr={ lambda ; d:i64[] e:i64[] f:i64[] g:f64[e]. let\n          \
             h:f64[] = convert_element_type[new_dtype=float64 weak_type=False] d\n          \
             i:f64[e] = broadcast_in_dim[broadcast_dimensions=() shape=(None,)] h e\n          \
             j:f64[e] = mul g i\n        in (e, j) }\n      body_nconsts=1\n      nimplicit=1\n      \
             preserve_dimensions=True\n    ] a a 0 10 1 0 b\n    k:f64[a] = add b c\n  in (k,) }";
    let j = parse_jaxpr(t).unwrap();
    assert_eq!(j.aval(Var(1)).shape(), &[Dim::Var(Var(0))]);
    let Primitive::Control(Control::ForLoop(ForLoopParams {
        body_jaxpr,
        body_nconsts,
        nimplicit,
        preserve_dimensions,
        apply_reverse_transform,
    })) = &j.eqns[1].primitive
    else {
        panic!("for_loop expected");
    };
    assert_eq!(
        (
            *body_nconsts,
            *nimplicit,
            *preserve_dimensions,
            *apply_reverse_transform
        ),
        (1, 1, true, false)
    );
    let body = &body_jaxpr.jaxpr;
    assert_eq!(body.aval(Var(3)).shape(), &[Dim::Var(Var(1))]);
    assert_eq!(j.eqns[1].inputs.len(), 7);
    assert!(matches!(j.eqns[1].outputs[0], Binder::Drop(_)));
    assert_eq!(
        j.eqns[0].primitive,
        Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape: vec![None],
            broadcast_dimensions: vec![].into()
        }))
    );
}

const KERNEL: &str = "{ lambda ; a:Ref<default>{i32[2]} b:Ref<default>{i32[2]} c:Ref<default>{i32[4]}. let
    d:i32[] = program_id[axis=0] 
    e:i32[2] = iota[dimension=0 dtype=int32 shape=(2,) sharding=None] 
    f:bool[2] = lt e 1:i32[]
    g:i32[2] <- a[:] mask=f other=0:i32[]
    h:i32[2] <- a[...]
    i:i32[2], b[...] <- b[...], h
    j:i32[2], c[d:d+2] <- c[d:d+2], g mask=f
    k:i32[2] = atomic_rmw[
      args_tree=PyTreeDef((*, (CustomNode(NDIndexer[(PyTreeDef((CustomNode(Slice[(0, 2, 1)], [None, None]),)), (4,), ())], []),), *, None))
      atomic_type=AtomicOpType.ADD
    ] c g
    l:i32[], b[0] <- b[0], 3:i32[]
    m:i32[2] <- a[:]
    n:i32[2] <- b[d:d+2]
    o:i32[2] = add n m
    p:i32[2], b[d:d+2] <- b[d:d+2], o
  in () }";

#[test]
fn pallas_kernel_state_forms_as_jax_prints_them() {
    let j = parse_jaxpr(KERNEL).unwrap();
    let prims: Vec<&Primitive> = j.eqns.iter().map(|e| &e.primitive).collect();
    let full = |n: usize| Indexer {
        entries: vec![IndexEntry::Slice {
            start: IndexValue::Static(0),
            size: n,
            stride: 1,
        }],
    };
    let dyn2 = Indexer {
        entries: vec![IndexEntry::Slice {
            start: IndexValue::Dynamic(1),
            size: 2,
            stride: 1,
        }],
    };
    assert_eq!(prims[0], &Primitive::from(ProgramIdParams { axis: 0 }));
    assert_eq!(
        prims[3],
        &Primitive::from(LoadParams {
            indexers: vec![full(2)],
            has_mask: true,
            has_other: true
        })
    );
    assert_eq!(j.eqns[3].inputs.len(), 3);
    assert_eq!(prims[4], &Primitive::from(GetParams { indexers: vec![] }));
    assert_eq!(prims[5], &Primitive::from(SwapParams { indexers: vec![] }));
    assert_eq!(
        prims[6],
        &Primitive::from(StoreParams {
            indexers: vec![dyn2.clone()],
            has_mask: true
        })
    );
    // ref, dynamic start, value, mask
    assert_eq!(
        j.eqns[6].inputs,
        vec![
            Atom::Var(Var(2)),
            Atom::Var(Var(3)),
            Atom::Var(Var(6)),
            Atom::Var(Var(5))
        ]
    );
    assert_eq!(
        prims[7],
        &Primitive::from(AtomicRmwParams {
            indexers: vec![full(2)],
            op: AtomicOp::Add
        })
    );
    assert_eq!(
        prims[8],
        &Primitive::from(SwapParams {
            indexers: vec![Indexer {
                entries: vec![IndexEntry::Int(IndexValue::Static(0))]
            }]
        })
    );
    assert_eq!(prims[11], &Primitive::from(BinaryOp::Add));
    assert_eq!(
        prims[12],
        &Primitive::from(SwapParams {
            indexers: vec![dyn2]
        })
    );
}

#[test]
fn state_forms_print_back() {
    // Forms our printer writes (JAX's, plus `r[idx] <- v` and `r[idx] += v`).
    let t = "{ lambda ; a:Ref<default>{f32[4]} b:f32[2] c:i32[]. let\n    a[1:3] += b\n    a[c:c+2] <- b\n    \
             d:f32[2] <- a[2:]\n  in (d,) }";
    let j = parse_jaxpr(t).unwrap();
    assert!(matches!(
        j.eqns[0].primitive,
        Primitive::State(State::AddUpdate(_))
    ));
    assert!(matches!(
        j.eqns[1].primitive,
        Primitive::State(State::Swap(_))
    ));
    assert!(matches!(j.eqns[1].outputs[0], Binder::Drop(_)));
    assert_eq!(
        j.eqns[2].primitive,
        Primitive::State(State::Get(GetParams {
            indexers: vec![Indexer {
                entries: vec![IndexEntry::Slice {
                    start: IndexValue::Static(2),
                    size: 2,
                    stride: 1
                }]
            }]
        }))
    );
    assert_eq!(print_jaxpr(&j), t);
}

fn f32s(shape: &[usize], v: &[f64]) -> HostArray {
    HostArray::from_f64(DType::F32, shape, v).unwrap()
}

#[test]
fn consts_bind_in_text_order_including_nested() {
    let t = "{ lambda a:f32[3] b:f32[2]; c:f32[3]. let\n    d:f32[3] = add a c\n    e:f32[2] = jit[\n      name=f\n      \
             jaxpr={ lambda f:f32[2]; g:f32[2]. let h:f32[2] = mul f g in (h,) }\n    ] b\n  in (d, e) }";
    let c = parse_closed_jaxpr(
        t,
        vec![
            f32s(&[3], &[1., 2., 3.]),
            f32s(&[2], &[4., 5.]),
            f32s(&[2], &[6., 7.]),
        ],
    )
    .unwrap();
    assert_eq!(c.consts.len(), 2);
    assert_eq!(c.consts[1].to_f64_vec(), vec![4., 5.]);
    let Primitive::Control(Control::Jit(JitParams { jaxpr, .. })) = &c.jaxpr.eqns[1].primitive
    else {
        panic!("jit expected");
    };
    assert_eq!(jaxpr.consts.len(), 1);
    assert_eq!(jaxpr.consts[0].to_f64_vec(), vec![6., 7.]);
    // Count and type mismatches.
    let e = parse_closed_jaxpr(t, vec![f32s(&[3], &[1., 2., 3.])]).unwrap_err();
    assert_eq!((e.line, e.column), (1, 19));
    assert!(e.message.contains("found no more consts"), "{e}");
    let e = parse_closed_jaxpr(
        t,
        vec![
            f32s(&[2], &[1., 2.]),
            f32s(&[2], &[4., 5.]),
            f32s(&[2], &[6., 7.]),
        ],
    )
    .unwrap_err();
    assert_eq!((e.line, e.column), (1, 10));
    assert!(
        e.message
            .contains("expected a const of type f32[3], found one of type f32[2]"),
        "{e}"
    );
    let four = vec![
        f32s(&[3], &[1., 2., 3.]),
        f32s(&[2], &[4., 5.]),
        f32s(&[2], &[6., 7.]),
        f32s(&[1], &[0.]),
    ];
    assert!(parse_closed_jaxpr(t, four)
        .unwrap_err()
        .message
        .contains("unused"));
}

#[test]
fn error_unknown_primitive() {
    let e = err("{ lambda ; a:f32[]. let\n    b:f32[] = frobnicate a\n  in (b,) }");
    assert_eq!((e.line, e.column), (2, 15));
    assert_eq!(
        e.message,
        "expected a primitive name, found unknown primitive `frobnicate`"
    );
}

#[test]
fn error_unknown_or_unsupported_param() {
    // A misspelt key is an error at its value, not silently dropped.
    let e = err(
        "{ lambda ; a:f32[3]. let\n    b:f32[] = reduce_sum[axes=(0,) axis=(0,)] a\n  in (b,) }",
    );
    assert_eq!((e.line, e.column), (2, 41));
    assert!(
        e.message.contains("unknown param `axis` for `reduce_sum`"),
        "{}",
        e.message
    );
    // A param JAX prints with one value only: that value parses, another is
    // an error naming it.
    let ok = "{ lambda ; a:f32[6]. let\n    b:f32[2,3] = reshape[dimensions=None new_sizes=(2, 3) sharding=None] a\n  in (b,) }";
    assert!(parse_closed_jaxpr(ok, Vec::new()).is_ok());
    let e = err(&ok.replace("sharding=None", "sharding=P('x')"));
    assert_eq!(e.line, 2);
    assert!(
        e.message
            .contains("param `sharding` of `reshape`: only `None` is supported, found `P('x')`"),
        "{}",
        e.message
    );
    // Older JAX prints `sharding=None` on more primitives: accepted on any,
    // but another value where no rule reads it is an error.
    let older = "{ lambda ; a:f32[]. let b:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,) sharding=None] a in (b,) }";
    assert!(parse_closed_jaxpr(older, Vec::new()).is_ok());
    let e = err(&older.replace("sharding=None", "sharding=P('x')"));
    assert!(
        e.message
            .contains("unknown param `sharding` for `broadcast_in_dim`"),
        "{}",
        e.message
    );
    let e = err("{ lambda ; a:f32[2,2]. let\n    b:f32[2,2] c:f32[2] = qr[full_matrices=False use_magma=True] a\n  in (b,) }");
    assert!(e.message.contains("`use_magma` of `qr`"), "{}", e.message);
}

#[test]
fn error_bad_type() {
    let e = err("{ lambda ; a:f33[2]. let  in (a,) }");
    assert_eq!((e.line, e.column), (1, 14));
    assert_eq!(e.message, "expected a dtype such as `f32`, found `f33`");
    let e = err("{ lambda ; a:f32[2,]. let  in (a,) }");
    assert_eq!((e.line, e.column), (1, 20));
    assert_eq!(e.message, "expected a dimension size, found `]`");
}

#[test]
fn error_unbound_variable() {
    let e =
        err("{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n    c:f32[] = mul b zz\n  in (c,) }");
    assert_eq!((e.line, e.column), (3, 21));
    assert_eq!(e.message, "unbound variable `zz`");
    // Scopes are closed: a nested jaxpr cannot see its caller's names.
    let e = err("{ lambda ; a:f32[]. let\n    b:f32[] = jit[name=f jaxpr={ lambda ; c:f32[]. let d:f32[] = sin a in (d,) }] a\n  in (b,) }");
    assert_eq!(e.line, 2);
    assert_eq!(e.message, "unbound variable `a`");
}

#[test]
fn error_missing_in() {
    let e = err("{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n  (b,) }");
    assert_eq!((e.line, e.column), (3, 3));
    assert_eq!(e.message, "expected a variable or a literal, found `(`");
    let e = err("{ lambda ; a:f32[]. let b:f32[] = sin a }");
    assert_eq!(e.message, "expected an equation or `in`, found `}`");
}

#[test]
fn error_truncated_text() {
    let t = "{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n  in (b,) }";
    let e = err(&t[..t.len() - 2]);
    assert_eq!((e.line, e.column), (3, 10));
    assert_eq!(e.message, "expected `}`, found end of input");
    let e = err(&t[..30]);
    assert_eq!(e.line, 2);
    assert!(e.message.starts_with("expected"), "{e}");
    assert!(e.message.ends_with("found end of input"), "{e}");
}

#[test]
fn error_missing_param() {
    let e =
        err("{ lambda ; a:f32[2]. let\n    b:f32[] = reduce_sum[out_sharding=None] a\n  in (b,) }");
    assert_eq!((e.line, e.column), (2, 15));
    assert_eq!(
        e.message,
        "expected param `axes` for `reduce_sum`, found none"
    );
}

#[test]
fn error_unknown_let_name_and_cycle() {
    let e = err("{ lambda ; a:f32[]. let\n    b:f32[] = jit[name=f jaxpr=nope] a\n  in (b,) }");
    assert_eq!((e.line, e.column), (2, 32));
    assert_eq!(
        e.message,
        "expected a jaxpr, found unknown jaxpr name `nope`"
    );
    let e = err("let f = { lambda ; a:f32[]. let b:f32[] = jit[name=f jaxpr=f] a in (b,) } in\n{ lambda ; a:f32[]. let  in (a,) }");
    assert!(e.message.contains("cycle"), "{e}");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let t = format!(
        "{{ lambda ; a:f32[]. let b:f32[] = foo[x={}] a in (b,) }}",
        "(".repeat(100_000)
    );
    let e = err(&t);
    assert!(e.message.starts_with("nesting too deep"), "{}", e.message);
}

#[test]
fn keyword_like_variable_names() {
    // JAX's names reach `in`, `inf`, `let` and `nan` in long jaxprs.
    let t = "{ lambda ; in:f32[] nan:f32[]. let\n    inf:f32[] = add in nan\n    \
             let:f32[] = mul inf inf:f32[]\n  in (let, in) }";
    let j = parse_jaxpr(t).unwrap();
    assert_eq!(j.eqns[0].inputs, vec![Atom::Var(Var(0)), Atom::Var(Var(1))]);
    assert_eq!(j.eqns[1].inputs[0], Atom::Var(Var(2)));
    assert!(matches!(j.eqns[1].inputs[1], Atom::Lit(l) if l.value == Scalar::Float(f64::INFINITY)));
    assert_eq!(j.outvars, vec![Atom::Var(Var(3)), Atom::Var(Var(0))]);
}

/// JAX 0.10.2's printout of primitives the corpus lacks.
const MORE: &str = include_str!("testdata/more_prims.txt");

#[test]
fn params_of_primitives_outside_the_corpus() {
    // Two printouts, one after the other.
    let split = MORE.find("\n{ lambda").expect("two jaxprs");
    let (a, b) = MORE.split_at(split);
    let ja = parse_jaxpr(a).unwrap();
    let jb = parse_jaxpr(&b[1..]).unwrap();
    let find = |name: &str| {
        ja.eqns
            .iter()
            .chain(jb.eqns.iter())
            .map(|e| &e.primitive)
            .find(|p| p.name() == name)
            .unwrap_or_else(|| panic!("{name} missing"))
            .clone()
    };
    use crate::primitive::{CumulativeOp, Ints, Precision, ReduceOp, ScatterKind};
    assert_eq!(
        find("dot_general"),
        Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
            dimension_numbers: crate::primitive::DotDimensionNumbers {
                lhs_contracting: vec![1],
                rhs_contracting: vec![0],
                lhs_batch: vec![],
                rhs_batch: vec![]
            },
            precision: Some((Precision::Highest, Precision::Highest)),
            preferred_element_type: None
        }))
    );
    assert_eq!(
        find("cummin"),
        Primitive::Reduction(Reduction::Cumulative(CumulativeParams {
            op: CumulativeOp::Cummin,
            axis: 0,
            reverse: true
        }))
    );
    assert_eq!(
        find("tile"),
        Primitive::Structural(Structural::Tile(TileParams {
            reps: Ints::new(vec![2, 1])
        }))
    );
    assert_eq!(
        find("stack"),
        Primitive::Structural(Structural::Stack(StackParams { axis: 0 }))
    );
    assert_eq!(
        find("split"),
        Primitive::Structural(Structural::Split(SplitParams {
            sizes: Ints {
                values: vec![1, 1],
                np_int64: vec![true, true]
            },
            axis: 0
        }))
    );
    assert_eq!(
        find("reduce_xor"),
        Primitive::Reduction(Reduction::Reduce(ReduceParams::new(ReduceOp::Xor, vec![0])))
    );
    for (name, kind) in [
        ("scatter-mul", ScatterKind::Mul),
        ("scatter-min", ScatterKind::Min),
        ("scatter-max", ScatterKind::Max),
    ] {
        let Primitive::Indexing(Indexing::Scatter(ScatterParams {
            kind: k,
            update_jaxpr,
            unique_indices,
            ..
        })) = find(name)
        else {
            panic!("{name}");
        };
        assert_eq!(k, kind);
        assert!(unique_indices);
        assert_eq!(update_jaxpr.map(|u| u.eqns.len()), Some(1));
    }
    assert_eq!(
        find("top_k"),
        Primitive::Reduction(Reduction::TopK(TopKParams { k: 1, axis: 1 }))
    );
    assert_eq!(
        find("reduce_precision"),
        Primitive::Elementwise(Elementwise::ReducePrecision(ReducePrecisionParams {
            exponent_bits: 5,
            mantissa_bits: 10
        }))
    );
}

#[test]
fn pallas_call_with_index_maps() {
    let t = "{ lambda ; a:f32[4]. let
    b:f32[4] = pallas_call[
      compiler_params=None
      cost_estimate=None
      debug=False
      grid_mapping=GridMapping(grid=(2,), block_mappings=(BlockMapping(block_shape=(Blocked(block_size=2),), array_aval=ShapedArray(float32[4]), index_map={ lambda ; c:i32[]. let  in (c,) }), BlockMapping(block_shape=(Blocked(block_size=2),), array_aval=ShapedArray(float32[4]), index_map={ lambda ; d:i32[]. let  in (d,) })))
      input_output_aliases=((0, 0),)
      interpret=True
      jaxpr={ lambda ; e:Ref<default>{f32[2]} f:Ref<default>{f32[2]}. let
          g:f32[2] <- e[...]
          h:f32[2] = sin g
          _:f32[2], f[...] <- f[...], h
        in () }
      mesh=None
      metadata=None
      name=None
      out_avals=(ShapedArray(float32[4]),)
    ] a
  in (b,) }";
    let j = parse_jaxpr(t).unwrap();
    let Primitive::Pallas(Pallas::PallasCall(PallasCallParams {
        kernel,
        grid,
        block_mappings,
        out_avals,
        name,
        interpret,
        debug,
        input_output_aliases,
    })) = &j.eqns[0].primitive
    else {
        panic!("pallas_call expected");
    };
    assert_eq!(grid, &vec![2]);
    assert_eq!(block_mappings.len(), 2);
    assert_eq!(
        block_mappings[1].block_shape,
        vec![crate::primitive::BlockDim::Blocked(2)]
    );
    assert_eq!(
        block_mappings[0].array_aval,
        ShapedArray::of(DType::F32, &[4])
    );
    assert_eq!(block_mappings[0].index_map.jaxpr.outvars.len(), 1);
    assert_eq!(out_avals, &vec![ShapedArray::of(DType::F32, &[4])]);
    assert_eq!((name.clone(), *interpret, *debug), (None, true, false));
    assert_eq!(input_output_aliases, &vec![(0, 0)]);
    assert_eq!(kernel.eqns.len(), 3);
    assert!(matches!(kernel.eqns[2].outputs[0], Binder::Drop(_)));
    // Whatever our printer writes for it reads back the same.
    let again = parse_jaxpr(&print_jaxpr(&j)).unwrap();
    assert_eq!(again, j);
}

/// JAX names a jit body's variables after its caller's dropped outputs, so
/// operands print as `_`; a call's `_` operand must read a `_` binder of its
/// callee's invar type, even when the callee is a forward `let` reference.
#[test]
fn underscore_operand_of_a_call_takes_its_callee_invar_type() {
    // `outer` has more than 10 equations, so it is hoisted though used once.
    let negs: String = (0..10)
        .map(|k| {
            let (x, y) = ((b'b' + k) as char, (b'b' + k + 1) as char);
            format!("    {y}:f32[2] = neg {x}\n")
        })
        .collect();
    let t = format!(
        "let outer = {{ lambda ; a:f32[2]. let\n    \
         _:bool[2] _:f32[2] b:f32[2] = jit[\n      name=f\n      \
         jaxpr={{ lambda ; a:f32[2]. let\n          _:bool[2] = gt a 0.0:f32[]\n          \
         _:f32[2] = neg a\n          b:f32[2] = jit[name=_where jaxpr=_where] _ a _\n        \
         in (_, _, b) }}\n    ] a\n{negs}  in (l,) }} in\n\
         let _where = {{ lambda ; m:bool[2] n:f32[2] o:f32[2]. let\n    \
         p:f32[2] = select_n m o n\n  in (p,) }} in\n\
         {{ lambda ; q:f32[2]. let\n    r:f32[2] = jit[name=outer jaxpr=outer] q\n    \
         s:bool[2] = gt r 0.0:f32[]\n    t:f32[2] = jit[name=_where jaxpr=_where] s r q\n  \
         in (t,) }}"
    );
    let t = t.as_str();
    let j = parse_jaxpr(t).unwrap();
    crate::check::check_jaxpr(&j).unwrap();
    assert_eq!(print_jaxpr(&j), t);
    let Primitive::Control(Control::Jit(JitParams { jaxpr: outer, .. })) = &j.eqns[0].primitive
    else {
        panic!("jit expected");
    };
    let Primitive::Control(Control::Jit(JitParams { jaxpr: body, .. })) =
        &outer.jaxpr.eqns[0].primitive
    else {
        panic!("nested jit expected");
    };
    let body = &body.jaxpr;
    let out = |k: usize| match body.eqns[k].outputs[0] {
        Binder::Var(v) => Atom::Var(v),
        Binder::Drop(_) => panic!("eqn {k}'s output is read"),
    };
    // Latest-first would give `neg`'s f32 output to the bool predicate.
    assert_eq!(body.eqns[2].inputs[0], out(0));
    assert_eq!(body.eqns[2].inputs[2], out(1));
}

/// Two distinct copies of a jaxpr that share one `VarSpace` print with the
/// same names (as JAX prints copies sharing `Var` objects), and the parser
/// recognises the copy by its reused names.
#[test]
fn copies_sharing_a_var_space_print_alike_and_parse_back() {
    use crate::jaxpr::{ClosedJaxpr, Eqn, Jaxpr, VarSpace};
    use crate::primitive::BinaryOp;
    let f32s = || Aval::Array(ShapedArray::scalar(DType::F32));
    let add_body = |space: &VarSpace| {
        let mut b = Jaxpr::new();
        let x = b.new_var(f32s());
        let y = b.new_var(f32s());
        let z = b.new_var(f32s());
        b.invars = vec![x, y];
        b.eqns.push(Eqn {
            primitive: Primitive::Elementwise(Elementwise::Binary(BinaryOp::Mul)),
            inputs: vec![Atom::Var(x), Atom::Var(y)],
            outputs: vec![Binder::Var(z)],
        });
        b.outvars = vec![Atom::Var(z)];
        b.var_space = space.clone();
        Arc::new(b)
    };
    // f(p, q) = jit(body)(q, p): the body's invars are named after q and p
    // the first time; the copy in f's twin keeps those names.
    let caller = |body: Arc<Jaxpr>| {
        let mut f = Jaxpr::new();
        let p = f.new_var(f32s());
        let q = f.new_var(f32s());
        let r = f.new_var(f32s());
        f.invars = vec![p, q];
        f.eqns.push(Eqn {
            primitive: Primitive::Control(Control::Jit(JitParams {
                name: "g".into(),
                jaxpr: ClosedJaxpr::without_consts(body),
            })),
            inputs: vec![Atom::Var(q), Atom::Var(p)],
            outputs: vec![Binder::Var(r)],
        });
        f.outvars = vec![Atom::Var(r)];
        Arc::new(f)
    };
    let main = |space_a: &VarSpace, space_b: &VarSpace| {
        let fs = [caller(add_body(space_a)), caller(add_body(space_b))];
        let mut m = Jaxpr::new();
        let mut x = m.new_var(f32s());
        m.invars = vec![x];
        for f in &fs {
            let y = m.new_var(f32s());
            m.eqns.push(Eqn {
                primitive: Primitive::Control(Control::Jit(JitParams {
                    name: "f".into(),
                    jaxpr: ClosedJaxpr::without_consts(f.clone()),
                })),
                inputs: vec![Atom::Var(x), Atom::Var(x)],
                outputs: vec![Binder::Var(y)],
            });
            x = y;
        }
        m.outvars = vec![Atom::Var(x)];
        m
    };
    let bodies = |j: &Jaxpr| -> Vec<Arc<Jaxpr>> {
        [0, 1]
            .iter()
            .map(|&k| {
                let Primitive::Control(Control::Jit(JitParams { jaxpr: f, .. })) =
                    &j.eqns[k].primitive
                else {
                    panic!("jit expected");
                };
                let Primitive::Control(Control::Jit(JitParams { jaxpr: b, .. })) =
                    &f.jaxpr.eqns[0].primitive
                else {
                    panic!("nested jit expected");
                };
                b.jaxpr.clone()
            })
            .collect()
    };
    let inline = |text: &str| -> Vec<String> {
        text.split("jaxpr={")
            .skip(1)
            .map(|s| s.split(" }").next().unwrap_or("").to_string())
            .filter(|s| s.contains("mul"))
            .collect()
    };

    let space = VarSpace::new();
    let shared = main(&space, &space);
    let text = print_jaxpr(&shared);
    let copies = inline(&text);
    assert_eq!(copies.len(), 2, "{text}");
    assert_eq!(copies[0], copies[1], "{text}");
    assert!(copies[0].contains("lambda ; c:f32[] a:f32[]"), "{text}");
    let back = parse_jaxpr(&text).unwrap();
    assert_eq!(back, shared);
    assert_eq!(print_jaxpr(&back), text);
    let bs = bodies(&back);
    assert!(!Arc::ptr_eq(&bs[0], &bs[1]));
    assert!(bs[0].var_space.key().is_some());
    assert_eq!(bs[0].var_space.key(), bs[1].var_space.key());
    // The callers have variables of their own.
    let Primitive::Control(Control::Jit(JitParams { jaxpr: f0, .. })) = &back.eqns[0].primitive
    else {
        panic!("jit expected");
    };
    assert_eq!(f0.jaxpr.var_space.key(), None);

    // Without a shared space the copy gets fresh names and stays apart.
    let apart = main(&VarSpace::default(), &VarSpace::default());
    let text = print_jaxpr(&apart);
    let copies = inline(&text);
    assert_ne!(copies[0], copies[1], "{text}");
    let back = parse_jaxpr(&text).unwrap();
    assert_eq!(print_jaxpr(&back), text);
    assert!(bodies(&back).iter().all(|b| b.var_space.key().is_none()));
}
