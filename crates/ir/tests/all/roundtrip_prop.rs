//! Property tests of the text format: random well-typed jaxprs survive
//! `parse(print(j)) == j`, and mutated texts never make the parser panic.

use jaxon_ir::aval::ShapedArray;
use jaxon_ir::jaxpr::{Atom, Binder, ClosedJaxpr, Eqn, Jaxpr, Var};
use jaxon_ir::primitive::{BinaryOp, Primitive, ReduceOp, UnaryOp};
use jaxon_ir::primitive::{
    BroadcastInDimParams, CondParams, Control, ConvertElementTypeParams, Elementwise, JitParams,
    ReduceParams, Reduction, Structural, TransposeParams,
};
use jaxon_ir::print::print_jaxpr;
use jaxon_ir::{parse_jaxpr, Aval, DType, Literal};
use proptest::prelude::*;

/// A tiny deterministic generator driven by proptest's seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const SHAPES: [&[usize]; 4] = [&[], &[3], &[2, 3], &[3, 2]];
const UNARY: [UnaryOp; 6] = [
    UnaryOp::Neg,
    UnaryOp::Sin,
    UnaryOp::Exp,
    UnaryOp::Tanh,
    UnaryOp::Abs,
    UnaryOp::Log1p,
];
const BINARY: [BinaryOp; 5] = [
    BinaryOp::Add,
    BinaryOp::Mul,
    BinaryOp::Sub,
    BinaryOp::Max,
    BinaryOp::Div,
];

fn f32_aval(shape: &[usize]) -> Aval {
    Aval::Array(ShapedArray::of(DType::F32, shape))
}

fn sizes(j: &Jaxpr, v: Var) -> Vec<usize> {
    j.aval(v).array().static_sizes().unwrap_or_default()
}

fn lit(rng: &mut Rng) -> Atom {
    // Values exact in f32 and with short reprs.
    let x = (rng.below(41) as f64 - 20.0) * 0.25;
    Atom::Lit(Literal::new(x, DType::F32))
}

struct Gen<'r> {
    rng: &'r mut Rng,
}

impl Gen<'_> {
    /// Binds an eqn's outputs: each a new var, or (sometimes) dropped.
    fn outputs(
        &mut self,
        j: &mut Jaxpr,
        avals: Vec<Aval>,
        live: &mut Vec<Var>,
        drop_pct: u64,
    ) -> Vec<Binder> {
        avals
            .into_iter()
            .map(|a| {
                if self.rng.chance(drop_pct) {
                    Binder::Drop(a)
                } else {
                    let v = j.new_var(a);
                    live.push(v);
                    Binder::Var(v)
                }
            })
            .collect()
    }

    /// A jaxpr over f32 inputs of the given shapes; `depth` bounds nesting.
    /// With `drops`, some equation outputs are dropped (`_`).
    fn jaxpr(
        &mut self,
        in_shapes: &[Vec<usize>],
        n_eqns: usize,
        depth: usize,
        drops: bool,
    ) -> Jaxpr {
        canonical(self.jaxpr_raw(in_shapes, n_eqns, depth, drops))
    }

    fn jaxpr_raw(
        &mut self,
        in_shapes: &[Vec<usize>],
        n_eqns: usize,
        depth: usize,
        drops: bool,
    ) -> Jaxpr {
        let mut j = Jaxpr::new();
        let mut live: Vec<Var> = Vec::new();
        let mut floats: Vec<Var> = Vec::new();
        for s in in_shapes {
            let v = j.new_var(f32_aval(s));
            j.invars.push(v);
            floats.push(v);
        }
        let drop_pct = if drops { 15 } else { 0 };
        for _ in 0..n_eqns {
            let x = floats[self.rng.below(floats.len())];
            let xs = sizes(&j, x);
            let choice = self.rng.below(if depth > 0 { 9 } else { 7 });
            let mut new_live = Vec::new();
            let eqn = match choice {
                0 | 1 => {
                    let op = UNARY[self.rng.below(UNARY.len())];
                    Eqn {
                        primitive: Primitive::Elementwise(Elementwise::Unary(op)),
                        inputs: vec![Atom::Var(x)],
                        outputs: self.outputs(&mut j, vec![f32_aval(&xs)], &mut new_live, drop_pct),
                    }
                }
                2 => {
                    let op = BINARY[self.rng.below(BINARY.len())];
                    let same: Vec<Var> = floats
                        .iter()
                        .copied()
                        .filter(|&y| sizes(&j, y) == xs)
                        .collect();
                    let y = if self.rng.chance(30) {
                        lit(self.rng)
                    } else {
                        Atom::Var(same[self.rng.below(same.len())])
                    };
                    let inputs = if self.rng.chance(50) {
                        vec![Atom::Var(x), y]
                    } else {
                        vec![y, Atom::Var(x)]
                    };
                    Eqn {
                        primitive: Primitive::Elementwise(Elementwise::Binary(op)),
                        inputs,
                        outputs: self.outputs(&mut j, vec![f32_aval(&xs)], &mut new_live, drop_pct),
                    }
                }
                3 => {
                    // broadcast_in_dim to [2,3] (from [], [3] or [2,3]).
                    let (dims, ok) = match xs.as_slice() {
                        [] => (vec![], true),
                        [3] => (vec![1], true),
                        [2, 3] => (vec![0, 1], true),
                        _ => (vec![], false),
                    };
                    let (input, dims) = if ok {
                        (Atom::Var(x), dims)
                    } else {
                        (lit(self.rng), vec![])
                    };
                    Eqn {
                        primitive: Primitive::Structural(Structural::BroadcastInDim(
                            BroadcastInDimParams {
                                shape: vec![Some(2), Some(3)],
                                broadcast_dimensions: dims.into(),
                            },
                        )),
                        inputs: vec![input],
                        outputs: self.outputs(
                            &mut j,
                            vec![f32_aval(&[2, 3])],
                            &mut new_live,
                            drop_pct,
                        ),
                    }
                }
                4 => {
                    // reduce_sum over some axes.
                    let nd = xs.len();
                    let axes: Vec<usize> = (0..nd).filter(|_| self.rng.chance(60)).collect();
                    let out: Vec<usize> = (0..nd)
                        .filter(|a| !axes.contains(a))
                        .map(|a| xs[a])
                        .collect();
                    Eqn {
                        primitive: Primitive::Reduction(Reduction::Reduce(ReduceParams {
                            op: ReduceOp::Sum,
                            axes,
                            np_int64: Vec::new(),
                            out_sharding: None,
                        })),
                        inputs: vec![Atom::Var(x)],
                        outputs: self.outputs(
                            &mut j,
                            vec![f32_aval(&out)],
                            &mut new_live,
                            drop_pct,
                        ),
                    }
                }
                5 => {
                    let perm: Vec<usize> = (0..xs.len()).rev().collect();
                    let out: Vec<usize> = perm.iter().map(|&p| xs[p]).collect();
                    Eqn {
                        primitive: Primitive::Structural(Structural::Transpose(TransposeParams {
                            permutation: perm,
                        })),
                        inputs: vec![Atom::Var(x)],
                        outputs: self.outputs(
                            &mut j,
                            vec![f32_aval(&out)],
                            &mut new_live,
                            drop_pct,
                        ),
                    }
                }
                6 => {
                    // A comparison then a select: bool intermediates.
                    let b = j.new_var(Aval::Array(ShapedArray::of(DType::Bool, &xs)));
                    j.eqns.push(Eqn {
                        primitive: Primitive::Elementwise(Elementwise::Binary(BinaryOp::Lt)),
                        inputs: vec![Atom::Var(x), lit(self.rng)],
                        outputs: vec![Binder::Var(b)],
                    });
                    live.push(b);
                    Eqn {
                        primitive: Primitive::Elementwise(Elementwise::SelectN),
                        inputs: vec![Atom::Var(b), Atom::Var(x), Atom::Var(x)],
                        outputs: self.outputs(&mut j, vec![f32_aval(&xs)], &mut new_live, drop_pct),
                    }
                }
                7 => {
                    // A nested jit over 1-2 live floats; some results dropped.
                    let k = 1 + self.rng.below(2);
                    let args: Vec<Var> = (0..k)
                        .map(|_| floats[self.rng.below(floats.len())])
                        .collect();
                    let shapes: Vec<Vec<usize>> = args.iter().map(|&a| sizes(&j, a)).collect();
                    let n = 1 + self.rng.below(3);
                    let inner = self.jit_body(&shapes, n, depth - 1);
                    let outs: Vec<Aval> = inner.out_avals();
                    Eqn {
                        primitive: Primitive::Control(Control::Jit(JitParams {
                            name: ["f", "<lambda>", "_where"][self.rng.below(3)].to_string(),
                            jaxpr: ClosedJaxpr::without_consts(inner),
                        })),
                        inputs: args.into_iter().map(Atom::Var).collect(),
                        outputs: self.outputs(&mut j, outs, &mut new_live, drop_pct * 2),
                    }
                }
                _ => {
                    // cond on a bool->i32 index with two small branches.
                    let b = j.new_var(Aval::Array(ShapedArray::scalar(DType::Bool)));
                    let i = j.new_var(Aval::Array(ShapedArray::scalar(DType::I32)));
                    let s = floats[self.rng.below(floats.len())];
                    let scalar_src = if sizes(&j, s).is_empty() {
                        Atom::Var(s)
                    } else {
                        lit(self.rng)
                    };
                    j.eqns.push(Eqn {
                        primitive: Primitive::Elementwise(Elementwise::Binary(BinaryOp::Gt)),
                        inputs: vec![scalar_src, lit(self.rng)],
                        outputs: vec![Binder::Var(b)],
                    });
                    j.eqns.push(Eqn {
                        primitive: Primitive::Elementwise(Elementwise::ConvertElementType(
                            ConvertElementTypeParams {
                                new_dtype: DType::I32,
                                weak_type: false,
                            },
                        )),
                        inputs: vec![Atom::Var(b)],
                        outputs: vec![Binder::Var(i)],
                    });
                    live.push(b);
                    live.push(i);
                    let shapes = vec![xs.clone()];
                    let branches = (0..2)
                        .map(|_| ClosedJaxpr::without_consts(self.branch(&shapes)))
                        .collect();
                    Eqn {
                        primitive: Primitive::Control(Control::Cond(CondParams {
                            branches,
                            branches_platforms: None,
                        })),
                        inputs: vec![Atom::Var(i), Atom::Var(x)],
                        outputs: self.outputs(&mut j, vec![f32_aval(&xs)], &mut new_live, drop_pct),
                    }
                }
            };
            j.eqns.push(eqn);
            for v in new_live {
                live.push(v);
                if j.aval(v).dtype() == DType::F32 {
                    floats.push(v);
                }
            }
        }
        let n_out = 1 + self.rng.below(3);
        for _ in 0..n_out {
            j.outvars.push(if self.rng.chance(10) {
                lit(self.rng)
            } else {
                Atom::Var(floats[self.rng.below(floats.len())])
            });
        }
        j
    }

    /// A jit body: no `_` binders inside, and its outvars are exactly the
    /// equation outputs nothing else reads. (A caller that drops an output
    /// makes it print as `_`; were such a `_` also read inside, or mixed
    /// with real dropvars, the text could not say which `_` is meant.)
    fn jit_body(&mut self, in_shapes: &[Vec<usize>], n_eqns: usize, depth: usize) -> Jaxpr {
        let mut j = self.jaxpr_raw(in_shapes, n_eqns, depth, false);
        // A final unread output, so that there is at least one outvar.
        let last = j
            .eqns
            .iter()
            .flat_map(|e| e.outputs.iter())
            .rev()
            .find_map(|b| match b {
                Binder::Var(v) if j.aval(*v).dtype() == DType::F32 => Some(*v),
                _ => None,
            });
        let x = last.unwrap_or(j.invars[0]);
        let y = j.new_var(j.aval(x).clone());
        j.eqns.push(Eqn {
            primitive: Primitive::Elementwise(Elementwise::Unary(UnaryOp::Neg)),
            inputs: vec![Atom::Var(x)],
            outputs: vec![Binder::Var(y)],
        });
        let read: Vec<Var> = j
            .eqns
            .iter()
            .flat_map(|e| e.inputs.iter())
            .filter_map(|a| match a {
                Atom::Var(v) => Some(*v),
                Atom::Lit(_) => None,
            })
            .collect();
        j.outvars = j
            .eqns
            .iter()
            .flat_map(|e| e.outputs.iter())
            .filter_map(|b| match b {
                Binder::Var(v) if !read.contains(v) => Some(Atom::Var(*v)),
                _ => None,
            })
            .collect();
        canonical(j)
    }

    /// A cond branch: a chain of unary ops per input, same types out.
    fn branch(&mut self, in_shapes: &[Vec<usize>]) -> Jaxpr {
        let mut j = Jaxpr::new();
        let mut outs = Vec::new();
        for s in in_shapes {
            let mut v = j.new_var(f32_aval(s));
            j.invars.push(v);
            for _ in 0..self.rng.below(3) {
                let w = j.new_var(f32_aval(s));
                j.eqns.push(Eqn {
                    primitive: Primitive::Elementwise(Elementwise::Unary(
                        UNARY[self.rng.below(UNARY.len())],
                    )),
                    inputs: vec![Atom::Var(v)],
                    outputs: vec![Binder::Var(w)],
                });
                v = w;
            }
            outs.push(Atom::Var(v));
        }
        j.outvars = outs;
        canonical(j)
    }
}

/// The form the text can express: an equation output nobody reads is a
/// dropvar (JAX prints it `_`), and vars are numbered in binding order.
fn canonical(j: Jaxpr) -> Jaxpr {
    let mut used = vec![false; j.vars.len()];
    let mut mark = |a: &Atom| {
        if let Atom::Var(v) = a {
            used[v.index()] = true;
        }
    };
    j.eqns
        .iter()
        .flat_map(|e| e.inputs.iter())
        .for_each(&mut mark);
    j.outvars.iter().for_each(&mut mark);
    let mut map = vec![None; j.vars.len()];
    let mut out = Jaxpr::new();
    for &v in j.constvars.iter().chain(j.invars.iter()) {
        map[v.index()] = Some(out.new_var(j.aval(v).clone()));
    }
    out.constvars = j
        .constvars
        .iter()
        .map(|v| map[v.index()].unwrap())
        .collect();
    out.invars = j.invars.iter().map(|v| map[v.index()].unwrap()).collect();
    for e in &j.eqns {
        let outputs = e
            .outputs
            .iter()
            .map(|b| match b {
                Binder::Var(v) if used[v.index()] => {
                    let nv = out.new_var(j.aval(*v).clone());
                    map[v.index()] = Some(nv);
                    Binder::Var(nv)
                }
                Binder::Var(v) => Binder::Drop(j.aval(*v).clone()),
                Binder::Drop(a) => Binder::Drop(a.clone()),
            })
            .collect();
        let remap = |a: &Atom| match a {
            Atom::Var(v) => Atom::Var(map[v.index()].unwrap()),
            Atom::Lit(l) => Atom::Lit(*l),
        };
        out.eqns.push(Eqn {
            primitive: e.primitive.clone(),
            inputs: e.inputs.iter().map(remap).collect(),
            outputs,
        });
    }
    out.outvars = j
        .outvars
        .iter()
        .map(|a| match a {
            Atom::Var(v) => Atom::Var(map[v.index()].unwrap()),
            Atom::Lit(l) => Atom::Lit(*l),
        })
        .collect();
    out
}

/// Whether `j` or a jaxpr nested in it shares a variable space (`==`
/// ignores spaces; the printer makes none here, so the parser must not).
fn any_shared_space(j: &Jaxpr) -> bool {
    j.var_space.key().is_some()
        || j.eqns
            .iter()
            .flat_map(|e| e.primitive.sub_jaxprs())
            .any(|s| any_shared_space(s))
}

fn random_jaxpr(seed: u64, n_eqns: usize) -> Jaxpr {
    let mut rng = Rng(seed | 1);
    let n_in = 1 + rng.below(3);
    let shapes: Vec<Vec<usize>> = (0..n_in)
        .map(|_| SHAPES[rng.below(SHAPES.len())].to_vec())
        .collect();
    Gen { rng: &mut rng }.jaxpr(&shapes, n_eqns, 2, true)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn parse_of_print_is_identity(seed in any::<u64>(), n in 1usize..14) {
        let j = random_jaxpr(seed, n);
        let text = print_jaxpr(&j);
        let back = parse_jaxpr(&text);
        prop_assert!(back.is_ok(), "{}\n{:?}", text, back);
        let back = back.unwrap();
        prop_assert_eq!(&back, &j, "{}", text);
        prop_assert!(!any_shared_space(&back), "{}", text);
        // And printing is stable.
        prop_assert_eq!(print_jaxpr(&back), text);
    }

    #[test]
    fn mutated_text_never_panics(seed in any::<u64>(), n in 1usize..10, edits in proptest::collection::vec((any::<u32>(), 0u8..6, any::<u8>()), 0..6), cut in any::<u32>()) {
        let base = if seed % 3 == 0 {
            SAMPLES[(seed / 3) as usize % SAMPLES.len()].to_string()
        } else {
            print_jaxpr(&random_jaxpr(seed, n))
        };
        let mut bytes = base.into_bytes();
        const PUNCT: &[u8] = b"{}()[],;:.=<>-+*_ \n0123456789abfinlmetyu";
        for (pos, kind, byte) in edits {
            if bytes.is_empty() { break; }
            let p = pos as usize % bytes.len();
            let c = PUNCT[byte as usize % PUNCT.len()];
            match kind {
                0 => { bytes[p] = c; }
                1 => { bytes.insert(p, c); }
                2 => { bytes.remove(p); }
                3 => { let q = (p + byte as usize) .min(bytes.len()); bytes.drain(p..q); }
                4 => { let chunk: Vec<u8> = bytes[p..(p + 12).min(bytes.len())].to_vec(); bytes.splice(p..p, chunk); }
                _ => { let q = (p + 1).min(bytes.len() - 1); bytes.swap(p, q); }
            }
        }
        if cut % 2 == 0 && !bytes.is_empty() {
            let k = cut as usize % bytes.len();
            bytes.truncate(k);
        }
        // Edits are ASCII on ASCII text, so this stays UTF-8.
        let text = String::from_utf8(bytes).expect("ascii edits keep utf-8");
        let r = parse_jaxpr(&text);
        if let Err(e) = &r {
            prop_assert!(e.line >= 1 && e.column >= 1);
            prop_assert!(!e.message.is_empty());
        }
    }
}

/// JAX texts (from the corpus and JAX 0.10.2) used as mutation seeds.
const SAMPLES: &[&str] = &[
    "{ lambda ; a:f32[]. let _:f32[] = neg a; b:f32[] = neg 1.0:f32[] in (b,) }",
    "{ lambda ; a:f32[8]. let\n    b:f32[8] = jit[\n      name=round\n      jaxpr={ lambda ; a:f32[8]. let\n          b:f32[8] = round[rounding_method=1] a\n        in (b,) }\n    ] a\n  in (b,) }",
    "{ lambda ; a:f32[3,4]. let\n    b:f32[2,4] = slice[\n      limit_indices=(7, 4)\n      start_indices=(np.int64(0), np.int64(0))\n      strides=(np.int64(3), np.int64(1))\n    ] a\n    c:f32[4,5] = pad[padding_config=((1, -1, 2), (-1, 2, 0))] b -1.5:f32[]\n  in (c, nan:f32[]) }",
    "let _where = { lambda ; a:bool[] b:f32[] c:f32[]. let d:f32[] = select_n a c b in (d,) } in\n{ lambda ; a:f32[] b:f32[]. let\n    c:bool[] = gt a b\n    d:f32[] = jit[name=_where jaxpr=_where] c a b\n    e:f32[] = jit[name=_where jaxpr=_where] c b a\n  in (d, e) }",
    "{ lambda ; a:f32[2,3] b:i32[]. let\n    c:f32[2,3] = cond[\n      branches=(\n        { lambda ; f:f32[2,3]. let\n            g:f32[2,3] = cos f\n            h:f32[2,3] = mul g 2.0:f32[]\n          in (h,) }\n        { lambda ; i:f32[2,3]. let j:f32[2,3] = sin i in (j,) }\n      )\n    ] b a\n  in (c,) }",
    "{ lambda ; a:f32[3]. let\n    b:i32[] c:f32[3] = while[\n      body_jaxpr={ lambda ; d:i32[] e:f32[3]. let\n          f:i32[] = add d 1:i32[]\n          g:f32[3] = mul e 0.8999999761581421:f32[]\n        in (f, g) }\n      body_nconsts=0\n      cond_jaxpr={ lambda ; i:i32[] j:f32[3]. let k:bool[] = lt i 5:i32[] in (k,) }\n      cond_nconsts=0\n    ] 0:i32[] a\n  in (c,) }",
    "{ lambda ; a:Ref<default>{i32[4]} b:i32[2] c:i32[]. let\n    d:i32[2] <- a[c:c+2]\n    e:i32[2], a[1:3] <- a[1:3], b mask=True:bool[]\n    a[...] += d\n  in () }",
    "{ lambda ; a:f32[2,2]. let\n    b:f32[2,2] = dot_general[\n      dimension_numbers=(([1], [0]), ([], []))\n      precision=(Precision.HIGH, Precision.DEFAULT)\n      preferred_element_type=float32\n    ] a a\n    c:f32[4,2] = gather[\n      dimension_numbers=GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(), start_indices_batching_dims=())\n      fill_value=None\n      indices_are_sorted=False\n      mode=GatherScatterMode.PROMISE_IN_BOUNDS\n      slice_sizes=(2, 1)\n      unique_indices=False\n    ] a 1:i32[]\n  in (b, c) }",
];

#[test]
fn samples_parse() {
    for s in SAMPLES {
        assert!(parse_jaxpr(s).is_ok(), "{s}\n{:?}", parse_jaxpr(s));
    }
}
