//! Tests of the simplification passes: structural effects on parsed jaxprs,
//! and semantic preservation checked with the reference interpreter on
//! seeded random inputs.

use super::*;
use crate::array::HostArray;
use crate::check::check_closed_jaxpr;
use crate::dtype::DType;
use crate::interp::eval_closed_jaxpr;
use crate::jaxpr::{ClosedJaxpr, Jaxpr};
use crate::parse::parse_closed_jaxpr;

/// A small deterministic generator (xorshift64*).
pub(super) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [-2, 2).
    pub fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0
    }
}

/// Seeded random arguments for every invar of `jaxpr` (static shapes).
pub(super) fn random_args(jaxpr: &Jaxpr, seed: u64) -> Vec<HostArray> {
    let mut rng = Rng::new(seed);
    jaxpr
        .in_avals()
        .iter()
        .map(|a| {
            let shape = a.array().static_sizes().expect("static test shapes");
            let n: usize = shape.iter().product();
            let dt = a.dtype();
            let vals: Vec<f64> = (0..n)
                .map(|_| {
                    let u = rng.uniform();
                    if dt.is_float() {
                        u
                    } else if dt == DType::Bool {
                        (u > 0.0) as u8 as f64
                    } else {
                        (u * 10.0).trunc()
                    }
                })
                .collect();
            HostArray::from_f64(dt, &shape, &vals).expect("sizes match")
        })
        .collect()
}

pub(super) fn parse(text: &str) -> ClosedJaxpr {
    parse_closed_jaxpr(text, Vec::new()).expect("test jaxpr parses")
}

/// Asserts that two closed jaxprs agree bit for bit on random inputs.
pub(super) fn assert_same(a: &ClosedJaxpr, b: &ClosedJaxpr) {
    check_closed_jaxpr(b).expect("rewritten jaxpr checks");
    for seed in 1..4 {
        let args = random_args(&a.jaxpr, seed);
        let x = eval_closed_jaxpr(a, &args).expect("original evaluates");
        let y = eval_closed_jaxpr(b, &args).expect("rewritten evaluates");
        assert_eq!(x, y, "seed {seed}");
    }
}

fn prims(j: &Jaxpr) -> Vec<&'static str> {
    j.eqns.iter().map(|e| e.primitive.name()).collect()
}

const NESTED_JIT: &str = "{ lambda ; a:f32[8] b:f32[8]. let
    c:f32[8] = jit[
      name=outer
      jaxpr={ lambda ; d:f32[8] e:f32[8]. let
          f:f32[8] = mul d e
          g:f32[8] = jit[
            name=inner
            jaxpr={ lambda ; h:f32[8]. let i:f32[8] = sin h in (i,) }
          ] f
          j:f32[8] = add g d
        in (j,) }
    ] a b
    k:f32[8] = sub c b
  in (k,) }";

#[test]
fn inline_jit_flattens_nested_calls() {
    let c = parse(NESTED_JIT);
    let out = inline_jit(&c).expect("inlines");
    assert_eq!(prims(&out.jaxpr), ["mul", "sin", "add", "sub"]);
    assert_same(&c, &out);
}

#[test]
fn inline_jit_passes_through_outputs_that_are_inputs() {
    let c = parse(
        "{ lambda ; a:f32[3] b:f32[3]. let
    c:f32[3] d:f32[3] = jit[
      name=f
      jaxpr={ lambda ; e:f32[3] f:f32[3]. let g:f32[3] = max e f in (f, g) }
    ] a b
    h:f32[3] = mul c d
  in (h, c) }",
    );
    let out = inline_jit(&c).expect("inlines");
    assert_eq!(prims(&out.jaxpr), ["max", "mul"]);
    assert_same(&c, &out);
}

#[test]
fn dce_removes_unused_and_keeps_effects() {
    let c = parse(
        "{ lambda ; a:f32[4] b:f32[4]. let
    c:f32[4] = exp a
    d:f32[4] = log b
    e:f32[4] = add c c
    _:f32[] = reduce_sum[axes=(0,) out_sharding=None] d
  in (e,) }",
    );
    let out = dce(&c.jaxpr).expect("dce");
    assert_eq!(prims(&out), ["exp", "add"]);
    assert_same(&c, &ClosedJaxpr::without_consts(out));

    let stateful = parse(
        "{ lambda ; a:Ref<default>{f32[4]} b:f32[4]. let
    c:f32[4] = neg b
    a[...] += c
    d:f32[4] = exp b
  in () }",
    );
    let out = dce(&stateful.jaxpr).expect("dce");
    assert_eq!(prims(&out), ["neg", "addupdate"]);
}

#[test]
fn cse_merges_equal_applications_only() {
    let c = parse(
        "{ lambda ; a:f32[5] b:f32[5]. let
    c:f32[5] = mul a b
    d:f32[5] = mul a b
    e:f32[5] = mul b a
    f:f32[5] = add c d
    g:f32[5] = mul a 0.0:f32[]
    h:f32[5] = mul a -0.0:f32[]
    i:f32[5] = sub g h
    j:f32[5] = add f e
    k:f32[5] = add j i
  in (k,) }",
    );
    let out = cse(&c.jaxpr).expect("cse");
    // `mul a b` twice merges; `mul b a` and the two signed zeros do not.
    assert_eq!(
        prims(&out),
        ["mul", "mul", "add", "mul", "mul", "sub", "add", "add"]
    );
    assert_same(&c, &ClosedJaxpr::without_consts(out));
}

#[test]
fn fold_constants_evaluates_scalar_literal_chains() {
    let c = parse(
        "{ lambda ; a:f32[6] b:i32[]. let
    c:f32[] = mul 2.0:f32[] 3.0:f32[]
    d:f32[] = exp c
    e:f32[6] = mul a d
    f:i32[] = add 7:i32[] 5:i32[]
    g:i32[] = mul b f
    h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] f
    i:f32[6] = add e h
  in (i, g) }",
    );
    let out = fold_constants(&c.jaxpr).expect("folds");
    assert_eq!(prims(&out), ["mul", "mul", "add"]);
    assert_same(&c, &ClosedJaxpr::without_consts(out));
}

#[test]
fn fold_constants_keeps_array_and_variable_equations() {
    let c = parse(
        "{ lambda ; a:f32[]. let
    b:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,) sharding=None] 1.0:f32[]
    c:f32[] = add a 1.0:f32[]
  in (b, c) }",
    );
    let out = fold_constants(&c.jaxpr).expect("folds");
    assert_eq!(prims(&out), ["broadcast_in_dim", "add"]);
}

#[test]
fn simplify_pipeline_preserves_values() {
    let c = parse(
        "{ lambda ; a:f32[4,3] b:f32[3]. let
    c:f32[] = add 1.0:f32[] 2.0:f32[]
    d:f32[4,3] = jit[
      name=g
      jaxpr={ lambda ; e:f32[4,3] f:f32[3]. let
          g:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 3) sharding=None] f
          h:f32[4,3] = mul e g
          i:f32[4,3] = mul e g
          j:f32[4,3] = add h i
        in (j,) }
    ] a b
    k:f32[4,3] = mul d c
    l:f32[4] = reduce_sum[axes=(1,) out_sharding=None] k
    _:f32[4,3] = exp k
  in (l,) }",
    );
    let out = simplify(&c, crate::primitive::Platform::Cpu).expect("simplifies");
    assert_eq!(
        prims(&out.jaxpr),
        ["broadcast_in_dim", "mul", "add", "mul", "reduce_sum"]
    );
    assert_same(&c, &out);
}

#[test]
fn passes_reject_malformed_jaxprs() {
    let mut j = parse("{ lambda ; a:f32[2]. let b:f32[2] = neg a in (b,) }")
        .jaxpr
        .as_ref()
        .clone();
    j.eqns[0].inputs[0] = crate::jaxpr::Atom::Var(crate::jaxpr::Var(99));
    assert!(dce(&j).is_err());
    assert!(cse(&j).is_err());
    assert!(fold_constants(&j).is_err());
}

#[test]
fn inline_calls_runs_custom_rules_primal_and_remat_bodies() {
    let c = parse(
        "{ lambda ; a:f32[2,3] b:f32[3,3]. let
    c:f32[2,3] = custom_jvp_call[
      name=softplus_cj
      call_jaxpr={ lambda ; d:f32[2,3]. let
          e:f32[2,3] = abs d
          f:f32[2,3] = neg e
          g:f32[2,3] = exp f
        in (g,) }
      jvp=<lambda>
      symbolic_zeros=False
    ] a
    h:f32[2,3] = remat2[
      differentiated=False
      jaxpr={ lambda ; i:f32[2,3] j:f32[3,3]. let
          k:f32[2,3] = dot_general[
            dimension_numbers=(([1], [0]), ([], []))
            preferred_element_type=float32
          ] i j
          l:f32[2,3] = tanh k
        in (l,) }
      policy=None
      prevent_cse=True
    ] c b
  in (h,) }",
    );
    // inline_jit leaves them alone; inline_calls runs the bodies.
    assert_eq!(
        prims(&inline_jit(&c).unwrap().jaxpr),
        ["custom_jvp_call", "remat2"]
    );
    let out = inline_calls(&c).expect("inlines");
    assert_eq!(
        prims(&out.jaxpr),
        ["abs", "neg", "exp", "dot_general", "tanh"]
    );
    assert_same(&c, &out);
}
