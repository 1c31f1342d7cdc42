//! A suite of KIR kernels that together use every statement kind, every
//! `MathFn`, every cast pair among the 13 dtypes, every bitcast, every
//! `UnOp`/`BinOp` on every dtype it applies to, every vector width, masks,
//! shuffles of 16/32/64 bits of each kind, atomics of each op and dtype,
//! both `mma` shapes and `If`/`For`/`While`.
//!
//! Invariant: every kernel here verifies; applicability of an operation to
//! a dtype is decided by the verifier itself (`Kernel::type_of`), so the
//! suite follows the KIR rules as they change.

use jaxon_backend_cuda::kir::{
    AtomicOp, Axis, BinOp, Const, Expr, Kernel, KernelBuilder, MathFn, MmaShape, ParamId,
    ShuffleKind, Space, Special, Stmt, UnOp, Var,
};
use jaxon_ir::DType;

pub const UNOPS: [UnOp; 7] = [
    UnOp::Neg,
    UnOp::Not,
    UnOp::Abs,
    UnOp::IsNan,
    UnOp::IsInf,
    UnOp::Clz,
    UnOp::Popc,
];

pub const BINOPS: [BinOp; 18] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Rem,
    BinOp::Min,
    BinOp::Max,
    BinOp::And,
    BinOp::Or,
    BinOp::Xor,
    BinOp::Shl,
    BinOp::Shr,
    BinOp::Eq,
    BinOp::Ne,
    BinOp::Lt,
    BinOp::Le,
    BinOp::Gt,
    BinOp::Ge,
];

pub const MATH: [MathFn; 35] = [
    MathFn::Exp,
    MathFn::Exp2,
    MathFn::Expm1,
    MathFn::Log,
    MathFn::Log2,
    MathFn::Log1p,
    MathFn::Sqrt,
    MathFn::Rsqrt,
    MathFn::Cbrt,
    MathFn::Sin,
    MathFn::Cos,
    MathFn::Tan,
    MathFn::Asin,
    MathFn::Acos,
    MathFn::Atan,
    MathFn::Sinh,
    MathFn::Cosh,
    MathFn::Tanh,
    MathFn::Asinh,
    MathFn::Acosh,
    MathFn::Atanh,
    MathFn::Erf,
    MathFn::Erfc,
    MathFn::ErfInv,
    MathFn::Lgamma,
    MathFn::Floor,
    MathFn::Ceil,
    MathFn::RoundEven,
    MathFn::RoundAway,
    MathFn::Trunc,
    MathFn::Pow,
    MathFn::Atan2,
    MathFn::CopySign,
    MathFn::NextAfter,
    MathFn::Fma,
];

/// A kernel with one input buffer and one output buffer per dtype, one
/// variable per dtype loaded from its input, and a sink that stores any
/// value to the next slot of its dtype's output.
struct Harness {
    k: KernelBuilder,
    outs: Vec<ParamId>,
    vals: Vec<Var>,
    slots: Vec<i64>,
    /// A kernel with the same variables, to ask the verifier about types.
    scratch: Kernel,
}

/// The dtypes kernels hold: every dtype but the complex ones, which never
/// lower (`lower::unsupported`).
fn lowered() -> Vec<DType> {
    DType::ALL.into_iter().filter(|d| !d.is_complex()).collect()
}

fn dtype_index(d: DType) -> usize {
    lowered().iter().position(|&x| x == d).unwrap_or(0)
}

impl Harness {
    fn new(name: &str) -> Harness {
        let mut k = KernelBuilder::new(name, 128);
        let mut ins = Vec::new();
        let mut outs = Vec::new();
        for d in lowered() {
            ins.push(k.global(&format!("in_{d}"), d, false));
            outs.push(k.global(&format!("out_{d}"), d, true));
        }
        let vals: Vec<Var> = lowered()
            .iter()
            .map(|d| k.var(&format!("x_{d}"), *d))
            .collect();
        let mut scratch = KernelBuilder::new("scratch", 32);
        for d in lowered() {
            scratch.var("x", d);
        }
        let scratch = scratch.finish().expect("an empty kernel verifies");
        let tid = Expr::thread_x();
        for (i, d) in lowered().iter().enumerate() {
            let _ = d;
            k.load(&[vals[i]], ins[i].into(), tid.clone(), None);
        }
        Harness {
            k,
            outs,
            vals,
            slots: vec![0; lowered().len()],
            scratch,
        }
    }

    fn val(&self, d: DType) -> Expr {
        Expr::var(self.vals[dtype_index(d)])
    }

    /// Stores `e` (which must be well typed) to its dtype's next slot.
    fn sink(&mut self, e: Expr) {
        let t = self
            .scratch
            .type_of(&e)
            .expect("sink of a well-typed value");
        let i = dtype_index(t);
        let slot = self.slots[i];
        self.slots[i] += 1;
        let index = Expr::int(DType::U32, slot * 128) + Expr::thread_x();
        self.k.store(self.outs[i].into(), index, vec![e], None);
    }

    fn typed(&self, e: &Expr) -> bool {
        self.scratch.type_of(e).is_some()
    }

    fn finish(self) -> Kernel {
        self.k.finish().expect("suite kernel verifies")
    }
}

/// Every cast pair and every bitcast pair.
pub fn casts() -> Kernel {
    let mut h = Harness::new("suite_casts");
    for from in lowered() {
        for to in lowered() {
            h.sink(h.val(from).cast(to));
            let b = h.val(from).bitcast(to);
            if h.typed(&b) {
                h.sink(b);
            }
        }
    }
    h.finish()
}

/// Every unary and binary operator on every dtype it applies to, selects
/// and constants that must round-trip (NaN, -0, inf, extremes).
pub fn operators() -> Kernel {
    let mut h = Harness::new("suite_operators");
    for d in lowered() {
        for op in UNOPS {
            let e = h.val(d).unary(op);
            if h.typed(&e) {
                h.sink(e);
            }
        }
        for op in BINOPS {
            let e = Expr::Binary(op, Box::new(h.val(d)), Box::new(h.val(d)));
            if h.typed(&e) {
                h.sink(e);
            }
        }
        let c = h.val(DType::Bool);
        h.sink(Expr::select(c, h.val(d), h.val(d)));
    }
    let consts = [
        Const {
            dtype: DType::F32,
            bits: 0x7fc0_0001,
        },
        Const {
            dtype: DType::F32,
            bits: 0x8000_0000,
        },
        Const {
            dtype: DType::F32,
            bits: 0xff80_0000,
        },
        Const {
            dtype: DType::F64,
            bits: 0x7ff8_0000_0000_0001,
        },
        Const {
            dtype: DType::F64,
            bits: 0x8000_0000_0000_0000,
        },
        Const {
            dtype: DType::F16,
            bits: 0xfc00,
        },
        Const {
            dtype: DType::BF16,
            bits: 0x7fc1,
        },
        Const::int(DType::I64, i64::MIN),
        Const::int(DType::I32, i64::from(i32::MIN)),
        Const::int(DType::I8, -128),
        Const::int(DType::U64, -1),
        Const::int(DType::Bool, 1),
    ];
    for c in consts {
        h.sink(Expr::Const(c));
    }
    h.finish()
}

/// Every math function on f32 and f64.
pub fn math() -> Kernel {
    let mut h = Harness::new("suite_math");
    for d in [DType::F32, DType::F64] {
        for f in MATH {
            let args = vec![h.val(d); f.arity()];
            h.sink(Expr::Math(f, args));
        }
    }
    h.finish()
}

/// Vector loads and stores of every width that fits 16 bytes, for every
/// dtype, global and shared, masked and not; a barrier between.
pub fn memory() -> Kernel {
    let mut k = KernelBuilder::new("suite_memory", 128);
    let t = Expr::thread_x();
    for d in lowered() {
        let src = k.global(&format!("src_{d}"), d, false);
        let dst = k.global(&format!("dst_{d}"), d, true);
        let sh = k.shared(&format!("tile_{d}"), d, (16 / d.size_bytes() as u32) * 128);
        let zero = Expr::Const(Const::int(d, 0));
        for n in [1usize, 2, 4, 8] {
            if n * d.size_bytes() > 16 {
                continue;
            }
            let vs: Vec<Var> = (0..n).map(|i| k.var(&format!("v{n}_{i}"), d)).collect();
            let idx = t.clone() * Expr::u32(n as u32);
            let odd = (t.clone() & Expr::u32(1)).eq(Expr::u32(1));
            k.load(&vs, src.into(), idx.clone(), None);
            k.load(
                &vs,
                src.into(),
                idx.clone(),
                Some((odd.clone(), zero.clone())),
            );
            let vals: Vec<Expr> = vs.iter().map(|v| Expr::var(*v)).collect();
            k.store(sh.into(), idx.clone(), vals.clone(), None);
            k.barrier();
            k.load(
                &vs,
                sh.into(),
                idx.clone(),
                Some((odd.clone(), Expr::var(vs[0]))),
            );
            k.barrier();
            k.store(dst.into(), idx.clone(), vals.clone(), Some(odd));
            k.store(dst.into(), idx, vals, None);
        }
    }
    k.finish().expect("memory suite verifies")
}

/// Shuffles of each kind on every dtype of 16, 32 or 64 bits, at full and
/// partial width.
pub fn shuffles() -> Kernel {
    let mut k = KernelBuilder::new("suite_shuffles", 128);
    for d in lowered() {
        if d.is_bool() || d.size_bytes() < 2 {
            continue;
        }
        let buf = k.global(&format!("buf_{d}"), d, true);
        let v = k.var("v", d);
        let r = k.var("r", d);
        k.load(&[v], buf.into(), Expr::thread_x(), None);
        for kind in [
            ShuffleKind::Xor,
            ShuffleKind::Down,
            ShuffleKind::Up,
            ShuffleKind::Idx,
        ] {
            for width in [32, 8] {
                k.shuffle(r, kind, Expr::var(v), Expr::u32(1), width);
                k.store(buf.into(), Expr::thread_x(), vec![Expr::var(r)], None);
            }
        }
    }
    k.finish().expect("shuffle suite verifies")
}

/// Atomics of every op on every dtype that has them, global and shared,
/// with and without the old value.
pub fn atomics() -> Kernel {
    let mut k = KernelBuilder::new("suite_atomics", 128);
    for d in [
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::F32,
        DType::F64,
    ] {
        let buf = k.global(&format!("acc_{d}"), d, true);
        let sh = k.shared(&format!("sacc_{d}"), d, 32);
        let old = k.var("old", d);
        let v = k.var("v", d);
        k.load(&[v], buf.into(), Expr::thread_x(), None);
        for op in [AtomicOp::Add, AtomicOp::Min, AtomicOp::Max, AtomicOp::Exch] {
            for space in [Space::from(buf), Space::from(sh)] {
                k.atomic(op, space, Expr::u32(3), Expr::var(v));
                k.push(Stmt::Atomic {
                    op,
                    space,
                    index: Expr::lane(),
                    value: Expr::var(v),
                    dst: Some(old),
                });
                k.store(buf.into(), Expr::thread_x(), vec![Expr::var(old)], None);
            }
        }
    }
    k.finish().expect("atomic suite verifies")
}

/// Both `mma` shapes (f16, bf16 and tf32 operands), the accumulator fed
/// back as its own input.
pub fn mma() -> Kernel {
    let mut k = KernelBuilder::new("suite_mma", 32);
    let out = k.global("out", DType::F32, true);
    let acc: Vec<Var> = (0..4)
        .map(|i| k.var(&format!("acc{i}"), DType::F32))
        .collect();
    let accs = || acc.iter().map(|v| Expr::var(*v)).collect::<Vec<_>>();
    for d in [DType::F16, DType::BF16] {
        let ab = k.global(&format!("ab_{d}"), d, false);
        let a: Vec<Var> = (0..8).map(|i| k.var(&format!("a{i}"), d)).collect();
        let b: Vec<Var> = (0..4).map(|i| k.var(&format!("b{i}"), d)).collect();
        k.load(&a, ab.into(), Expr::lane() * Expr::u32(8), None);
        k.load(&b, ab.into(), Expr::lane() * Expr::u32(4), None);
        k.mma(
            MmaShape::M16N8K16,
            acc.clone(),
            a.iter().map(|v| Expr::var(*v)).collect(),
            b.iter().map(|v| Expr::var(*v)).collect(),
            accs(),
        );
    }
    let ab = k.global("ab_tf32", DType::F32, false);
    let a: Vec<Var> = (0..4)
        .map(|i| k.var(&format!("t{i}"), DType::F32))
        .collect();
    k.load(&a, ab.into(), Expr::lane() * Expr::u32(4), None);
    k.mma(
        MmaShape::M16N8K8Tf32,
        acc.clone(),
        a.iter().map(|v| Expr::var(*v)).collect(),
        vec![Expr::var(a[0]), Expr::var(a[1])],
        accs(),
    );
    k.store(out.into(), Expr::lane() * Expr::u32(4), accs(), None);
    k.finish().expect("mma suite verifies")
}

/// `If`/`For`/`While`, every special register, a block-uniform loop with a
/// barrier, and an `i8` loop that wraps.
pub fn control() -> Kernel {
    let mut k = KernelBuilder::new("suite_control", 1024);
    let out = k.global("out", DType::U32, true);
    let n = k.scalar("n", DType::U32);
    let acc = k.var("acc", DType::U32);
    let i = k.var("i", DType::U32);
    let j = k.var("j", DType::I8);
    let sh = k.shared("red", DType::U32, 1024);
    let mut specials = Expr::lane();
    for a in [Axis::X, Axis::Y, Axis::Z] {
        for s in [
            Special::ThreadIdx(a),
            Special::BlockIdx(a),
            Special::BlockDim(a),
            Special::GridDim(a),
        ] {
            specials = specials + Expr::Special(s);
        }
    }
    k.assign(acc, specials);
    k.for_(i, Expr::u32(0), Expr::param(n), Expr::u32(1), |k| {
        k.store(sh.into(), Expr::thread_x(), vec![Expr::var(acc)], None);
        k.barrier();
        k.if_else(
            Expr::var(i).lt(Expr::u32(7)),
            |k| k.assign(acc, Expr::var(acc) * Expr::u32(3)),
            |k| k.assign(acc, Expr::var(acc) ^ Expr::var(i)),
        );
        k.barrier();
    });
    k.for_(
        j,
        Expr::int(DType::I8, 100),
        Expr::int(DType::I8, 120),
        Expr::int(DType::I8, 7),
        |k| {
            k.assign(acc, Expr::var(acc) + Expr::var(j).cast(DType::U32));
        },
    );
    k.while_(Expr::var(acc).gt(Expr::u32(1000)), |k| {
        k.assign(acc, Expr::var(acc) >> Expr::u32(1));
    });
    k.store(
        out.into(),
        Expr::global_thread_id_x(),
        vec![Expr::var(acc)],
        None,
    );
    k.finish().expect("control suite verifies")
}

/// The whole suite.
pub fn all() -> Vec<Kernel> {
    vec![
        casts(),
        operators(),
        math(),
        memory(),
        shuffles(),
        atomics(),
        mma(),
        control(),
    ]
}
