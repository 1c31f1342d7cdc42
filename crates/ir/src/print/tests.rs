//! Printer tests: hand-built jaxprs printed against JAX 0.10.2's exact text
//! (corpus cases and outputs of `jax.make_jaxpr` recorded here).

use super::print_jaxpr;
use crate::aval::{AbstractRef, Aval, MemorySpace, ShapedArray};
use crate::dtype::DType;
use crate::jaxpr::{Atom, Binder, ClosedJaxpr, Eqn, Jaxpr, Var};
use crate::literal::Literal;
use crate::primitive::*;
use crate::primitive::{
    AddUpdateParams, AtomicRmwParams, BroadcastInDimParams, CondParams, Control,
    ConvGeneralDilatedParams, ConvertElementTypeParams, DotGeneralParams, Elementwise,
    GatherParams, GetParams, Indexing, IotaParams, JitParams, Linalg, LoadParams, Pallas,
    PallasCallParams, ProgramIdParams, ReduceParams, Reduction, ScanParams, ScatterParams,
    SortParams, SplitParams, State, StoreParams, Structural, SwapParams, WhileParams,
};
use std::sync::Arc;

fn ty(dt: DType, dims: &[usize]) -> Aval {
    Aval::Array(ShapedArray::of(dt, dims))
}

fn f32s(dims: &[usize]) -> Aval {
    ty(DType::F32, dims)
}

fn lit(v: f64, dt: DType) -> Atom {
    Atom::Lit(Literal::new(v, dt))
}

/// A small jaxpr builder.
#[derive(Default)]
struct B {
    j: Jaxpr,
}

impl B {
    fn inv(&mut self, a: Aval) -> Var {
        let v = self.j.new_var(a);
        self.j.invars.push(v);
        v
    }
    fn constv(&mut self, a: Aval) -> Var {
        let v = self.j.new_var(a);
        self.j.constvars.push(v);
        v
    }
    fn eqn(&mut self, p: Primitive, ins: Vec<Atom>, outs: Vec<Aval>) -> Vec<Var> {
        let vs: Vec<Var> = outs.into_iter().map(|a| self.j.new_var(a)).collect();
        self.j.eqns.push(Eqn {
            primitive: p,
            inputs: ins,
            outputs: vs.iter().map(|v| Binder::Var(*v)).collect(),
        });
        vs
    }
    fn eqn1(&mut self, p: Primitive, ins: Vec<Atom>, out: Aval) -> Atom {
        Atom::Var(self.eqn(p, ins, vec![out])[0])
    }
    fn eqn_binders(&mut self, p: Primitive, ins: Vec<Atom>, outs: Vec<Binder>) {
        self.j.eqns.push(Eqn {
            primitive: p,
            inputs: ins,
            outputs: outs,
        });
    }
    fn done(mut self, outs: Vec<Atom>) -> Jaxpr {
        self.j.outvars = outs;
        self.j
    }
}

fn v(x: Var) -> Atom {
    Atom::Var(x)
}

fn closed(j: Jaxpr) -> ClosedJaxpr {
    ClosedJaxpr::without_consts(j)
}

fn un(op: UnaryOp) -> Primitive {
    Primitive::Elementwise(Elementwise::Unary(op))
}

fn bin(op: BinaryOp) -> Primitive {
    Primitive::Elementwise(Elementwise::Binary(op))
}

#[test]
fn one_line_layout() {
    let mut b = B::default();
    let a = b.inv(f32s(&[3, 4]));
    let o = b.eqn1(un(UnaryOp::Neg), vec![v(a)], f32s(&[3, 4]));
    assert_eq!(
        print_jaxpr(&b.done(vec![o])),
        "{ lambda ; a:f32[3,4]. let b:f32[3,4] = neg a in (b,) }"
    );
}

#[test]
fn readme_dropvar_one_line_with_literal_operand() {
    // README: `{ lambda ; a:f32[]. let _:f32[] = neg a; b:f32[] = neg 1.0:f32[] in (b,) }`
    let mut b = B::default();
    let a = b.inv(f32s(&[]));
    b.eqn1(un(UnaryOp::Neg), vec![v(a)], f32s(&[]));
    let o = b.eqn1(un(UnaryOp::Neg), vec![lit(1.0, DType::F32)], f32s(&[]));
    assert_eq!(
        print_jaxpr(&b.done(vec![o])),
        "{ lambda ; a:f32[]. let _:f32[] = neg a; b:f32[] = neg 1.0:f32[] in (b,) }"
    );
}

#[test]
fn grad_multiline_with_unused_var_named_underscore() {
    let mut b = B::default();
    let a = b.inv(f32s(&[3, 4]));
    let x = b.eqn1(un(UnaryOp::Neg), vec![v(a)], f32s(&[3, 4]));
    b.eqn1(
        Primitive::Reduction(Reduction::Reduce(ReduceParams {
            op: ReduceOp::Sum,
            axes: vec![0, 1],
            np_int64: Vec::new(),
            out_sharding: None,
        })),
        vec![x],
        f32s(&[]),
    );
    let c = b.eqn1(
        Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape: vec![Some(3), Some(4)],
            broadcast_dimensions: vec![].into(),
        })),
        vec![lit(1.0, DType::F32)],
        f32s(&[3, 4]),
    );
    let d = b.eqn1(un(UnaryOp::Neg), vec![c], f32s(&[3, 4]));
    assert_eq!(
        print_jaxpr(&b.done(vec![d])),
        "{ lambda ; a:f32[3,4]. let\n    b:f32[3,4] = neg a\n    _:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] b\n    c:f32[3,4] = broadcast_in_dim 1.0:f32[]\n    d:f32[3,4] = neg c\n  in (d,) }"
    );
}

#[test]
fn empty_body_and_identity() {
    let mut b = B::default();
    let a = b.inv(f32s(&[2]));
    assert_eq!(
        print_jaxpr(&b.done(vec![v(a), lit(2.0, DType::F32)])),
        "{ lambda ; a:f32[2]. let  in (a, 2.0:f32[]) }"
    );
}

#[test]
fn iota_trailing_space() {
    let mut b = B::default();
    b.inv(f32s(&[2, 3]));
    let o = b.eqn1(
        Primitive::Structural(Structural::Iota(IotaParams {
            dtype: DType::I32,
            shape: vec![Some(4)],
            dimension: 0,
        })),
        vec![],
        ty(DType::I32, &[4]),
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![o])),
        "{ lambda ; a:f32[2,3]. let\n    b:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) sharding=None] \n  in (b,) }"
    );
}

#[test]
fn literals_of_narrow_dtypes() {
    let mut b = B::default();
    let a = b.inv(ty(DType::BF16, &[4]));
    let x = b.eqn1(
        bin(BinaryOp::Mul),
        vec![v(a), lit(1.5, DType::BF16)],
        ty(DType::BF16, &[4]),
    );
    let y = b.eqn1(
        bin(BinaryOp::Sub),
        vec![x, lit(0.1, DType::BF16)],
        ty(DType::BF16, &[4]),
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![y])),
        "{ lambda ; a:bf16[4]. let\n    b:bf16[4] = mul a 1.5:bf16[]\n    c:bf16[4] = sub b 0.10009765625:bf16[]\n  in (c,) }"
    );
    let mut b = B::default();
    let a = b.inv(ty(DType::F16, &[]));
    let x = b.eqn1(
        bin(BinaryOp::Mul),
        vec![v(a), lit(0.1, DType::F16)],
        ty(DType::F16, &[]),
    );
    let y = b.eqn1(
        bin(BinaryOp::Add),
        vec![x, lit(1.0, DType::Bool)],
        ty(DType::F16, &[]),
    );
    let z = b.eqn1(
        bin(BinaryOp::Add),
        vec![y, lit(3.0, DType::U8)],
        ty(DType::F16, &[]),
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![z])),
        "{ lambda ; a:f16[]. let\n    b:f16[] = mul a 0.0999755859375:f16[]\n    c:f16[] = add b True:bool[]\n    d:f16[] = add c 3:u8[]\n  in (d,) }"
    );
}

#[test]
fn cond_branches() {
    let mut br0 = B::default();
    let f = br0.inv(f32s(&[2, 3]));
    let g = br0.eqn1(un(UnaryOp::Cos), vec![v(f)], f32s(&[2, 3]));
    let h = br0.eqn1(
        bin(BinaryOp::Mul),
        vec![g, lit(2.0, DType::F32)],
        f32s(&[2, 3]),
    );
    let br0 = br0.done(vec![h]);
    let mut br1 = B::default();
    let i = br1.inv(f32s(&[2, 3]));
    let jj = br1.eqn1(un(UnaryOp::Sin), vec![v(i)], f32s(&[2, 3]));
    let br1 = br1.done(vec![jj]);
    let mut b = B::default();
    let a = b.inv(f32s(&[2, 3]));
    let s = b.eqn1(
        Primitive::Reduction(Reduction::Reduce(ReduceParams {
            op: ReduceOp::Sum,
            axes: vec![0, 1],
            np_int64: Vec::new(),
            out_sharding: None,
        })),
        vec![v(a)],
        f32s(&[]),
    );
    let c = b.eqn1(
        bin(BinaryOp::Gt),
        vec![s, lit(0.0, DType::F32)],
        ty(DType::Bool, &[]),
    );
    let d = b.eqn1(
        Primitive::Elementwise(Elementwise::ConvertElementType(ConvertElementTypeParams {
            new_dtype: DType::I32,
            weak_type: false,
        })),
        vec![c],
        ty(DType::I32, &[]),
    );
    let e = b.eqn1(
        Primitive::Control(Control::Cond(CondParams {
            branches: vec![closed(br0), closed(br1)],
            branches_platforms: None,
        })),
        vec![d, v(a)],
        f32s(&[2, 3]),
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![e])),
        "{ lambda ; a:f32[2,3]. let\n    b:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] a\n    c:bool[] = gt b 0.0:f32[]\n    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c\n    e:f32[2,3] = cond[\n      branches=(\n        { lambda ; f:f32[2,3]. let\n            g:f32[2,3] = cos f\n            h:f32[2,3] = mul g 2.0:f32[]\n          in (h,) }\n        { lambda ; i:f32[2,3]. let j:f32[2,3] = sin i in (j,) }\n      )\n    ] d a\n  in (e,) }"
    );
}

#[test]
fn while_loop() {
    let mut body = B::default();
    let d = body.inv(ty(DType::I32, &[]));
    let e = body.inv(f32s(&[3]));
    let f = body.eqn1(
        bin(BinaryOp::Add),
        vec![v(d), lit(1.0, DType::I32)],
        ty(DType::I32, &[]),
    );
    let g = body.eqn1(
        bin(BinaryOp::Mul),
        vec![v(e), lit(0.9, DType::F32)],
        f32s(&[3]),
    );
    let h = body.eqn1(
        bin(BinaryOp::Add),
        vec![g, lit(1.0, DType::F32)],
        f32s(&[3]),
    );
    let body = body.done(vec![f, h]);
    let mut cond = B::default();
    let i = cond.inv(ty(DType::I32, &[]));
    cond.inv(f32s(&[3]));
    let k = cond.eqn1(
        bin(BinaryOp::Lt),
        vec![v(i), lit(5.0, DType::I32)],
        ty(DType::Bool, &[]),
    );
    let cond = cond.done(vec![k]);
    let mut b = B::default();
    let a = b.inv(f32s(&[3]));
    let outs = b.eqn(
        Primitive::Control(Control::While(WhileParams {
            cond_jaxpr: closed(cond),
            body_jaxpr: closed(body),
            cond_nconsts: 0,
            body_nconsts: 0,
        })),
        vec![lit(0.0, DType::I32), v(a)],
        vec![ty(DType::I32, &[]), f32s(&[3])],
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![v(outs[1]), v(outs[0])])),
        "{ lambda ; a:f32[3]. let\n    b:i32[] c:f32[3] = while[\n      body_jaxpr={ lambda ; d:i32[] e:f32[3]. let\n          f:i32[] = add d 1:i32[]\n          g:f32[3] = mul e 0.8999999761581421:f32[]\n          h:f32[3] = add g 1.0:f32[]\n        in (f, h) }\n      body_nconsts=0\n      cond_jaxpr={ lambda ; i:i32[] j:f32[3]. let\n          k:bool[] = lt i 5:i32[]\n        in (k,) }\n      cond_nconsts=0\n    ] 0:i32[] a\n  in (c, b) }"
    );
}

#[test]
fn scan_params() {
    let mut body = B::default();
    let e = body.inv(f32s(&[2]));
    let f = body.inv(f32s(&[2]));
    let g = body.eqn1(
        bin(BinaryOp::Mul),
        vec![v(e), lit(0.5, DType::F32)],
        f32s(&[2]),
    );
    let h = body.eqn1(bin(BinaryOp::Add), vec![g, v(f)], f32s(&[2]));
    let i = body.eqn1(bin(BinaryOp::Mul), vec![v(e), v(f)], f32s(&[2]));
    let body = body.done(vec![h, i]);
    let mut b = B::default();
    let a = b.inv(f32s(&[2]));
    let xs = b.inv(f32s(&[5, 2]));
    let outs = b.eqn(
        Primitive::Control(Control::Scan(ScanParams {
            jaxpr: closed(body),
            length: 5,
            reverse: false,
            num_consts: 0,
            num_carry: 1,
            unroll: 1,
            linear: vec![false, false],
            split_transpose: false,
        })),
        vec![v(a), v(xs)],
        vec![f32s(&[2]), f32s(&[5, 2])],
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![v(outs[0]), v(outs[1])])),
        "{ lambda ; a:f32[2] b:f32[5,2]. let\n    c:f32[2] d:f32[5,2] = scan[\n      jaxpr={ lambda ; e:f32[2] f:f32[2]. let\n          g:f32[2] = mul e 0.5:f32[]\n          h:f32[2] = add g f\n          i:f32[2] = mul e f\n        in (h, i) }\n      length=5\n      num_carry=1\n      num_consts=0\n      reverse=False\n      unroll=1\n    ] a b\n  in (c, d) }"
    );
}

fn argsort_inner() -> Jaxpr {
    let mut inner = B::default();
    let a = inner.inv(f32s(&[2, 3]));
    let c = inner.eqn1(
        Primitive::Structural(Structural::Iota(IotaParams {
            dtype: DType::I32,
            shape: vec![Some(2), Some(3)],
            dimension: 1,
        })),
        vec![],
        ty(DType::I32, &[2, 3]),
    );
    let outs = inner.eqn(
        Primitive::Reduction(Reduction::Sort(SortParams {
            dimension: 1,
            is_stable: true,
            num_keys: 1,
        })),
        vec![v(a), c],
        vec![f32s(&[2, 3]), ty(DType::I32, &[2, 3])],
    );
    inner.done(vec![v(outs[1])])
}

#[test]
fn jit_reuses_caller_names() {
    // jax.make_jaxpr(jnp.argsort)(f32[2,3])
    let mut b = B::default();
    let a = b.inv(f32s(&[2, 3]));
    let o = b.eqn1(
        Primitive::Control(Control::Jit(JitParams {
            name: "argsort".into(),
            jaxpr: closed(argsort_inner()),
        })),
        vec![v(a)],
        ty(DType::I32, &[2, 3]),
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![o])),
        "{ lambda ; a:f32[2,3]. let\n    b:i32[2,3] = jit[\n      name=argsort\n      jaxpr={ lambda ; a:f32[2,3]. let\n          c:i32[2,3] = iota[dimension=1 dtype=int32 shape=(2, 3) sharding=None] \n          d:f32[2,3] b:i32[2,3] = sort[dimension=1 is_stable=True num_keys=1] a c\n        in (b,) }\n    ] a\n  in (b,) }"
    );
}

#[test]
fn jit_with_dropped_result_names_inner_underscore() {
    // The caller drops the jit's result: the inner outvar is named `_` too.
    let mut b = B::default();
    let a = b.inv(f32s(&[2, 3]));
    b.eqn_binders(
        Primitive::Control(Control::Jit(JitParams {
            name: "argsort".into(),
            jaxpr: closed(argsort_inner()),
        })),
        vec![v(a)],
        vec![Binder::Drop(ty(DType::I32, &[2, 3]))],
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![v(a)])),
        "{ lambda ; a:f32[2,3]. let\n    _:i32[2,3] = jit[\n      name=argsort\n      jaxpr={ lambda ; a:f32[2,3]. let\n          b:i32[2,3] = iota[dimension=1 dtype=int32 shape=(2, 3) sharding=None] \n          c:f32[2,3] _:i32[2,3] = sort[dimension=1 is_stable=True num_keys=1] a b\n        in (_,) }\n    ] a\n  in (a,) }"
    );
}

#[test]
fn shared_let_for_big_jit() {
    let mut inner = B::default();
    let mut x = v(inner.inv(f32s(&[3])));
    for k in 0..6 {
        let s = inner.eqn1(un(UnaryOp::Sin), vec![x], f32s(&[3]));
        let m = inner.eqn1(
            bin(BinaryOp::Mul),
            vec![s, lit(0.5, DType::F32)],
            f32s(&[3]),
        );
        x = inner.eqn1(
            bin(BinaryOp::Add),
            vec![m, lit(k as f64, DType::F32)],
            f32s(&[3]),
        );
    }
    let inner = inner.done(vec![x]);
    let mut b = B::default();
    let t = b.inv(f32s(&[3]));
    let u = b.eqn1(
        Primitive::Control(Control::Jit(JitParams {
            name: "_big_fn".into(),
            jaxpr: closed(inner),
        })),
        vec![v(t)],
        f32s(&[3]),
    );
    let w = b.eqn1(
        bin(BinaryOp::Mul),
        vec![u, lit(2.0, DType::F32)],
        f32s(&[3]),
    );
    let mut want = String::from("let _big_fn = { lambda ; a:f32[3]. let\n");
    let names = "abcdefghijklmnopqrs".as_bytes();
    for k in 0..6 {
        let n = |i: usize| names[3 * k + i] as char;
        want += &format!("    {}:f32[3] = sin {}\n", n(1), n(0));
        want += &format!("    {}:f32[3] = mul {} 0.5:f32[]\n", n(2), n(1));
        want += &format!("    {}:f32[3] = add {} {}.0:f32[]\n", n(3), n(2), k);
    }
    want += "  in (s,) } in\n{ lambda ; t:f32[3]. let\n    u:f32[3] = jit[name=_big_fn jaxpr=_big_fn] t\n    v:f32[3] = mul u 2.0:f32[]\n  in (v,) }";
    assert_eq!(print_jaxpr(&b.done(vec![w])), want);
}

#[test]
fn shared_jaxpr_used_twice_gets_suffixed_names() {
    // Two distinct shared jaxprs both named `_pad` get `_pad` and `_pad1`;
    // the second is referenced twice.
    let mk = |op: UnaryOp| {
        let mut i = B::default();
        let a = i.inv(f32s(&[2]));
        let o = i.eqn1(un(op), vec![v(a)], f32s(&[2]));
        Arc::new(i.done(vec![o]))
    };
    let j1 = mk(UnaryOp::Sin);
    let j2 = mk(UnaryOp::Cos);
    let call = |j: &Arc<Jaxpr>| {
        Primitive::Control(Control::Jit(JitParams {
            name: "<_pad>".into(),
            jaxpr: ClosedJaxpr {
                jaxpr: j.clone(),
                consts: Arc::from(Vec::new()),
            },
        }))
    };
    let mut b = B::default();
    let a = b.inv(f32s(&[2]));
    let x = b.eqn1(call(&j1), vec![v(a)], f32s(&[2]));
    let y = b.eqn1(call(&j1), vec![x], f32s(&[2]));
    let z = b.eqn1(call(&j2), vec![y], f32s(&[2]));
    let w = b.eqn1(call(&j2), vec![z], f32s(&[2]));
    assert_eq!(
        print_jaxpr(&b.done(vec![w])),
        "let _pad = { lambda ; a:f32[2]. let b:f32[2] = sin a in (b,) } in\nlet _pad1 = { lambda ; c:f32[2]. let d:f32[2] = cos c in (d,) } in\n{ lambda ; e:f32[2]. let\n    f:f32[2] = jit[name=<_pad> jaxpr=_pad] e\n    g:f32[2] = jit[name=<_pad> jaxpr=_pad] f\n    h:f32[2] = jit[name=<_pad> jaxpr=_pad1] g\n    i:f32[2] = jit[name=<_pad> jaxpr=_pad1] h\n  in (i,) }"
    );
}

#[test]
fn dot_general_wrapped_params() {
    let mut b = B::default();
    let a = b.inv(f32s(&[2, 3]));
    let o = b.eqn1(
        Primitive::Linalg(Linalg::DotGeneral(DotGeneralParams {
            dimension_numbers: DotDimensionNumbers {
                lhs_contracting: vec![1],
                rhs_contracting: vec![1],
                lhs_batch: vec![],
                rhs_batch: vec![],
            },
            precision: Some((Precision::High, Precision::Default)),
            preferred_element_type: None,
        })),
        vec![v(a), v(a)],
        f32s(&[2, 2]),
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![o])),
        "{ lambda ; a:f32[2,3]. let\n    b:f32[2,2] = dot_general[\n      dimension_numbers=(([1], [1]), ([], []))\n      precision=(Precision.HIGH, Precision.DEFAULT)\n    ] a a\n  in (b,) }"
    );
}

#[test]
fn gather_params() {
    let mut b = B::default();
    let a = b.inv(f32s(&[3, 6]));
    let i = b.inv(ty(DType::I32, &[2, 2]));
    let c = b.eqn1(
        bin(BinaryOp::Lt),
        vec![v(i), lit(0.0, DType::I32)],
        ty(DType::Bool, &[2, 2]),
    );
    let d = b.eqn1(
        bin(BinaryOp::Add),
        vec![v(i), lit(6.0, DType::I32)],
        ty(DType::I32, &[2, 2]),
    );
    let e = b.eqn1(
        Primitive::Elementwise(Elementwise::SelectN),
        vec![c, v(i), d],
        ty(DType::I32, &[2, 2]),
    );
    let f = b.eqn1(
        Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape: vec![Some(2), Some(2), Some(1)],
            broadcast_dimensions: vec![0, 1].into(),
        })),
        vec![e],
        ty(DType::I32, &[2, 2, 1]),
    );
    let g = b.eqn1(
        Primitive::Indexing(Indexing::Gather(GatherParams {
            dimension_numbers: GatherDimensionNumbers {
                offset_dims: vec![0].into(),
                collapsed_slice_dims: vec![1].into(),
                start_index_map: vec![1].into(),
                operand_batching_dims: Ints::default(),
                start_indices_batching_dims: Ints::default(),
            },
            fill_value: None,
            indices_are_sorted: false,
            mode: GatherScatterMode::PromiseInBounds,
            slice_sizes: vec![3, 1].into(),
            unique_indices: false,
        })),
        vec![v(a), f],
        f32s(&[3, 2, 2]),
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![g])),
        "{ lambda ; a:f32[3,6] b:i32[2,2]. let\n    c:bool[2,2] = lt b 0:i32[]\n    d:i32[2,2] = add b 6:i32[]\n    e:i32[2,2] = select_n c b d\n    f:i32[2,2,1] = broadcast_in_dim[broadcast_dimensions=(0, 1)] e\n    g:f32[3,2,2] = gather[\n      dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(), start_indices_batching_dims=())\n      fill_value=None\n      indices_are_sorted=False\n      mode=GatherScatterMode.PROMISE_IN_BOUNDS\n      slice_sizes=(3, 1)\n      unique_indices=False\n    ] a f\n  in (g,) }"
    );
}

#[test]
fn scatter_mul_with_constvar_and_update_jaxpr() {
    let mut upd = B::default();
    let i = upd.inv(f32s(&[]));
    let j = upd.inv(f32s(&[]));
    let k = upd.eqn1(bin(BinaryOp::Mul), vec![v(i), v(j)], f32s(&[]));
    let upd = Arc::new(upd.done(vec![k]));
    let mut b = B::default();
    let a = b.constv(ty(DType::I32, &[1]));
    let x = b.inv(f32s(&[2, 3]));
    let c = b.eqn1(
        bin(BinaryOp::Lt),
        vec![v(a), lit(0.0, DType::I32)],
        ty(DType::Bool, &[1]),
    );
    let d = b.eqn1(
        bin(BinaryOp::Add),
        vec![v(a), lit(2.0, DType::I32)],
        ty(DType::I32, &[1]),
    );
    let e = b.eqn1(
        Primitive::Elementwise(Elementwise::SelectN),
        vec![c, v(a), d],
        ty(DType::I32, &[1]),
    );
    let f = b.eqn1(
        Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape: vec![Some(1), Some(1)],
            broadcast_dimensions: vec![0].into(),
        })),
        vec![e],
        ty(DType::I32, &[1, 1]),
    );
    let g = b.eqn1(
        Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape: vec![Some(1), Some(3)],
            broadcast_dimensions: vec![].into(),
        })),
        vec![lit(2.0, DType::F32)],
        f32s(&[1, 3]),
    );
    let h = b.eqn1(
        Primitive::Indexing(Indexing::Scatter(ScatterParams {
            kind: ScatterKind::Mul,
            dimension_numbers: ScatterDimensionNumbers {
                update_window_dims: vec![1].into(),
                inserted_window_dims: vec![0].into(),
                scatter_dims_to_operand_dims: vec![0].into(),
                operand_batching_dims: Ints::default(),
                scatter_indices_batching_dims: Ints::default(),
            },
            indices_are_sorted: false,
            mode: GatherScatterMode::FillOrDrop,
            unique_indices: false,
            update_jaxpr: Some(upd),
        })),
        vec![v(x), f, g],
        f32s(&[2, 3]),
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![h])),
        "{ lambda a:i32[1]; b:f32[2,3]. let\n    c:bool[1] = lt a 0:i32[]\n    d:i32[1] = add a 2:i32[]\n    e:i32[1] = select_n c a d\n    f:i32[1,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e\n    g:f32[1,3] = broadcast_in_dim 2.0:f32[]\n    h:f32[2,3] = scatter-mul[\n      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())\n      indices_are_sorted=False\n      mode=GatherScatterMode.FILL_OR_DROP\n      unique_indices=False\n      update_consts=()\n      update_jaxpr={ lambda ; i:f32[] j:f32[]. let k:f32[] = mul i j in (k,) }\n    ] b f g\n  in (h,) }"
    );
}

#[test]
fn conv_params() {
    let mut b = B::default();
    let a = b.inv(f32s(&[2, 1, 7, 6]));
    let w = b.inv(f32s(&[2, 1, 2, 3]));
    let o = b.eqn1(
        Primitive::Linalg(Linalg::ConvGeneralDilated(ConvGeneralDilatedParams {
            window_strides: vec![2, 1],
            padding: vec![(1, 1), (2, 0)],
            lhs_dilation: vec![1, 1],
            rhs_dilation: vec![2, 1],
            dimension_numbers: ConvDimensionNumbers {
                lhs_spec: vec![0, 1, 2, 3],
                rhs_spec: vec![0, 1, 2, 3],
                out_spec: vec![0, 1, 2, 3],
            },
            feature_group_count: 1,
            batch_group_count: 1,
            precision: None,
            preferred_element_type: None,
        })),
        vec![v(a), v(w)],
        f32s(&[2, 2, 4, 6]),
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![o])),
        "{ lambda ; a:f32[2,1,7,6] b:f32[2,1,2,3]. let\n    c:f32[2,2,4,6] = conv_general_dilated[\n      batch_group_count=1\n      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3))\n      feature_group_count=1\n      lhs_dilation=(1, 1)\n      out_sharding=None\n      padding=((1, 1), (2, 0))\n      precision=None\n      preferred_element_type=None\n      rhs_dilation=(2, 1)\n      window_strides=(2, 1)\n    ] a b\n  in (c,) }"
    );
}

#[test]
fn numpy_int_params_and_split() {
    let mut b = B::default();
    let a = b.inv(f32s(&[2, 3]));
    let outs = b.eqn(
        Primitive::Structural(Structural::Split(SplitParams {
            sizes: Ints {
                values: vec![1, 2],
                np_int64: vec![true, true],
            },
            axis: 1,
        })),
        vec![v(a)],
        vec![f32s(&[2, 1]), f32s(&[2, 2])],
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![v(outs[0]), v(outs[1])])),
        "{ lambda ; a:f32[2,3]. let\n    b:f32[2,1] c:f32[2,2] = split[axis=1 sizes=(np.int64(1), np.int64(2))] a\n  in (b, c) }"
    );
}

fn iref(n: usize) -> Aval {
    Aval::Ref(AbstractRef {
        inner: ShapedArray::of(DType::I32, &[n]),
        memory_space: MemorySpace::Default,
    })
}

#[test]
fn pallas_kernel_state_forms() {
    // The kernel JAX 0.10.2 prints as `let jaxpr = ...` for a pallas_call
    // (more than 10 equations, so it is hoisted).
    let i32s = |d: &[usize]| ty(DType::I32, d);
    let mut k = B::default();
    let a = k.inv(iref(2));
    let bref = k.inv(iref(2));
    let c = k.eqn1(
        Primitive::Pallas(Pallas::ProgramId(ProgramIdParams { axis: 0 })),
        vec![],
        i32s(&[]),
    );
    let d = k.eqn1(
        Primitive::Structural(Structural::Iota(IotaParams {
            dtype: DType::I32,
            shape: vec![Some(2)],
            dimension: 0,
        })),
        vec![],
        i32s(&[2]),
    );
    let e = k.eqn1(
        bin(BinaryOp::Lt),
        vec![d, lit(1.0, DType::I32)],
        ty(DType::Bool, &[2]),
    );
    let slice = |start, size| Indexer {
        entries: vec![IndexEntry::Slice {
            start,
            size,
            stride: 1,
        }],
    };
    let f = k.eqn1(
        Primitive::Pallas(Pallas::Load(LoadParams {
            indexers: vec![slice(IndexValue::Static(0), 2)],
            has_mask: true,
            has_other: true,
        })),
        vec![v(a), e, lit(0.0, DType::I32)],
        i32s(&[2]),
    );
    let g = k.eqn1(
        Primitive::State(State::Get(GetParams { indexers: vec![] })),
        vec![v(a)],
        i32s(&[2]),
    );
    let h = k.eqn1(bin(BinaryOp::Add), vec![g, f], i32s(&[2]));
    k.eqn1(
        Primitive::State(State::Swap(SwapParams { indexers: vec![] })),
        vec![v(bref), h],
        i32s(&[2]),
    );
    k.eqn1(
        Primitive::Pallas(Pallas::Store(StoreParams {
            indexers: vec![slice(IndexValue::Dynamic(1), 2)],
            has_mask: true,
        })),
        vec![v(bref), c, f, e],
        i32s(&[2]),
    );
    k.eqn1(
        Primitive::State(State::Swap(SwapParams {
            indexers: vec![Indexer {
                entries: vec![IndexEntry::Int(IndexValue::Static(0))],
            }],
        })),
        vec![v(bref), lit(3.0, DType::I32)],
        i32s(&[]),
    );
    let l = k.eqn1(
        Primitive::State(State::Get(GetParams {
            indexers: vec![slice(IndexValue::Static(1), 1)],
        })),
        vec![v(bref)],
        i32s(&[1]),
    );
    let m = k.eqn1(
        Primitive::Structural(Structural::BroadcastInDim(BroadcastInDimParams {
            shape: vec![Some(1)],
            broadcast_dimensions: vec![].into(),
        })),
        vec![lit(1.0, DType::I32)],
        i32s(&[1]),
    );
    let n = k.eqn1(bin(BinaryOp::Add), vec![l, m], i32s(&[1]));
    k.eqn1(
        Primitive::State(State::Swap(SwapParams {
            indexers: vec![slice(IndexValue::Static(1), 1)],
        })),
        vec![v(bref), n],
        i32s(&[1]),
    );
    k.eqn1(
        Primitive::Pallas(Pallas::AtomicRmw(AtomicRmwParams {
            indexers: vec![slice(IndexValue::Static(0), 2)],
            op: AtomicOp::Add,
        })),
        vec![v(bref), f],
        i32s(&[2]),
    );
    k.eqn1(
        Primitive::Pallas(Pallas::AtomicRmw(AtomicRmwParams {
            indexers: vec![slice(IndexValue::Static(0), 2)],
            op: AtomicOp::Max,
        })),
        vec![v(bref), f, e],
        i32s(&[2]),
    );
    let kernel = Arc::new(k.done(vec![]));
    let index_map = {
        let mut im = B::default();
        let i = im.inv(i32s(&[]));
        ClosedJaxpr::without_consts(im.done(vec![v(i)]))
    };
    let bm = BlockMapping {
        block_shape: vec![BlockDim::Blocked(2)],
        index_map,
        array_aval: ShapedArray::of(DType::I32, &[2]),
    };
    let mut b = B::default();
    let r = b.inv(i32s(&[2]));
    let s = b.eqn1(
        Primitive::Pallas(Pallas::PallasCall(PallasCallParams {
            kernel,
            grid: vec![1],
            block_mappings: vec![bm.clone(), bm],
            out_avals: vec![ShapedArray::of(DType::I32, &[2])],
            name: None,
            interpret: true,
            debug: false,
            input_output_aliases: vec![],
        })),
        vec![v(r)],
        i32s(&[2]),
    );
    let text = print_jaxpr(&b.done(vec![s]));
    let want_kernel = "let jaxpr = { lambda ; a:Ref<default>{i32[2]} b:Ref<default>{i32[2]}. let
    c:i32[] = program_id[axis=0] 
    d:i32[2] = iota[dimension=0 dtype=int32 shape=(2,) sharding=None] 
    e:bool[2] = lt d 1:i32[]
    f:i32[2] <- a[:] mask=e other=0:i32[]
    g:i32[2] <- a[...]
    h:i32[2] = add g f
    i:i32[2], b[...] <- b[...], h
    j:i32[2], b[c:c+2] <- b[c:c+2], f mask=e
    k:i32[], b[0] <- b[0], 3:i32[]
    l:i32[1] <- b[1:]
    m:i32[1] = broadcast_in_dim 1:i32[]
    n:i32[1] = add l m
    o:i32[1], b[1:] <- b[1:], n
    p:i32[2] = atomic_rmw[
      args_tree=PyTreeDef((*, (CustomNode(NDIndexer[(PyTreeDef((CustomNode(Slice[(0, 2, 1)], [None, None]),)), (2,), ())], []),), *, None))
      atomic_type=AtomicOpType.ADD
    ] b f
    q:i32[2] = atomic_rmw[
      args_tree=PyTreeDef((*, (CustomNode(NDIndexer[(PyTreeDef((CustomNode(Slice[(0, 2, 1)], [None, None]),)), (2,), ())], []),), *, *))
      atomic_type=AtomicOpType.MAX
    ] b f e
  in () } in
";
    assert!(text.starts_with(want_kernel), "{text}");
    // Our extension: the grid mapping carries the index maps.
    assert!(
        text.contains("grid_mapping=GridMapping(grid=(1,), block_mappings=(BlockMapping(block_shape=(Blocked(block_size=2),), array_aval=ShapedArray(int32[2]), index_map={ lambda ; t:i32[]. let\n          \n        in (t,) }), "),
        "{text}"
    );
}

#[test]
fn top_level_swap_with_dropped_result_prints_set_form() {
    let mut b = B::default();
    let r = b.inv(iref(2));
    let x = b.inv(ty(DType::I32, &[2]));
    b.eqn_binders(
        Primitive::State(State::Swap(SwapParams { indexers: vec![] })),
        vec![v(r), v(x)],
        vec![Binder::Drop(ty(DType::I32, &[2]))],
    );
    b.eqn_binders(
        Primitive::State(State::AddUpdate(AddUpdateParams { indexers: vec![] })),
        vec![v(r), v(x)],
        vec![],
    );
    assert_eq!(
        print_jaxpr(&b.done(vec![])),
        "{ lambda ; a:Ref<default>{i32[2]} b:i32[2]. let a[...] <- b; a[...] += b in () }"
    );
}

/// Decodes the JSON string starting right after an opening quote.
fn json_string(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        match c {
            '"' => break,
            '\\' => match it.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('u') => {
                    let hex: String = it.by_ref().take(4).collect();
                    let code = u32::from_str_radix(&hex, 16).unwrap_or(0xfffd);
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}

/// Every `"jaxpr"` text of the corpus (main and grad), with its case name.
fn corpus_jaxprs(path: &str) -> Vec<(String, String)> {
    let data = std::fs::read_to_string(path).expect("corpus");
    let mut out = Vec::new();
    for line in data.lines() {
        let name = line
            .find("\"name\":\"")
            .map(|i| json_string(&line[i + 8..]))
            .unwrap_or_default();
        let mut rest = line;
        let mut k = 0;
        while let Some(i) = rest.find("\"jaxpr\":\"") {
            let text = json_string(&rest[i + 9..]);
            let tag = if k == 0 {
                name.clone()
            } else {
                format!("{name}/grad")
            };
            out.push((tag, text));
            k += 1;
            rest = &rest[i + 9..];
        }
    }
    out
}

#[test]
#[ignore = "reads the conformance corpus in tests/data"]
fn corpus_round_trip_parse_then_print() {
    let cases = corpus_jaxprs(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/jax-0.10.2-public.jsonl"
    ));
    let mut ok = 0;
    let mut failures = Vec::new();
    for (name, text) in &cases {
        match crate::parse::parse_jaxpr(text) {
            Ok(j) => {
                let printed = print_jaxpr(&j);
                if &printed == text {
                    ok += 1;
                } else {
                    let at = printed
                        .bytes()
                        .zip(text.bytes())
                        .position(|(a, b)| a != b)
                        .unwrap_or(printed.len().min(text.len()));
                    let lo = at.saturating_sub(60);
                    failures.push(format!(
                        "{name}: differs at byte {at}\n  want: {:?}\n  got:  {:?}",
                        &text[lo..(at + 60).min(text.len())],
                        &printed[lo..(at + 60).min(printed.len())]
                    ));
                }
            }
            Err(e) => failures.push(format!("{name}: parse error {e}")),
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    eprintln!("round-trip: {ok}/{} byte for byte", cases.len());
    assert!(failures.is_empty(), "{} failures", failures.len());
}
