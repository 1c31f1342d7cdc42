//! Tests of the fusion planner: expected groupings on parsed jaxprs, and
//! the plan's invariants checked by evaluating the jaxpr group by group with
//! the reference interpreter and comparing with a direct evaluation.

use super::tests::{parse, random_args};
use super::*;
use crate::interp::{eval_closed_jaxpr, eval_jaxpr, Value};
use crate::jaxpr::{Atom, ClosedJaxpr, Jaxpr};

/// Evaluates `jaxpr` one group at a time through `FusionPlan::group_jaxpr`
/// and checks the plan's structural invariants on the way.
fn eval_by_groups(jaxpr: &Jaxpr, plan: &FusionPlan, args: &[crate::HostArray]) -> Vec<Value> {
    let mut env: Vec<Option<Value>> = vec![None; jaxpr.vars.len()];
    for (v, a) in jaxpr.invars.iter().zip(args) {
        env[v.index()] = Some(Value::Array(a.clone()));
    }
    let mut seen = vec![0usize; jaxpr.eqns.len()];
    for (g, group) in plan.groups.iter().enumerate() {
        for &e in &group.eqns {
            seen[e] += 1;
        }
        if group.kind != GroupKind::Opaque {
            assert_eq!(group.maps.len(), group.eqns.len());
            assert_eq!(group.outputs.len(), 1, "fused groups have one output");
        }
        let sub = plan.group_jaxpr(jaxpr, g).expect("group jaxpr");
        let ins: Vec<Value> = group
            .inputs
            .iter()
            .map(|v| {
                env[v.index()]
                    .clone()
                    .expect("group input computed earlier")
            })
            .collect();
        let outs = eval_jaxpr(&sub, &[], &ins).expect("group evaluates");
        for (v, o) in group.outputs.iter().zip(outs) {
            env[v.index()] = Some(o);
        }
    }
    assert!(seen.iter().all(|&n| n == 1), "each equation in one group");
    jaxpr
        .outvars
        .iter()
        .map(|a| match a {
            Atom::Var(v) => env[v.index()].clone().expect("outvar computed"),
            Atom::Lit(l) => Value::Array(super::simplify::literal_array(l)),
        })
        .collect()
}

fn check_plan(text: &str) -> FusionPlan {
    let c = parse(text);
    let plan = plan_fusion(&c.jaxpr).expect("plans");
    for seed in 1..4 {
        let args = random_args(&c.jaxpr, seed);
        let want = eval_closed_jaxpr(&c, &args).expect("evaluates");
        let got = eval_by_groups(&c.jaxpr, &plan, &args);
        for (w, g) in want.iter().zip(&got) {
            match g {
                Value::Array(g) => assert_eq!(w, g, "seed {seed}\n{plan}"),
                Value::Ref(_) => panic!("ref output"),
            }
        }
    }
    plan
}

fn kinds(plan: &FusionPlan) -> Vec<String> {
    plan.groups
        .iter()
        .map(|g| match &g.kind {
            GroupKind::Loop => format!("loop{}", g.eqns.len()),
            GroupKind::Reduce { .. } => format!("reduce{}", g.eqns.len()),
            GroupKind::Opaque => "opaque".to_string(),
        })
        .collect()
}

#[test]
fn elementwise_chain_is_one_loop() {
    // tanh(x*2+1)*x - exp(-x)
    let plan = check_plan(
        "{ lambda ; a:f32[37]. let
    b:f32[37] = mul a 2.0:f32[]
    c:f32[37] = add b 1.0:f32[]
    d:f32[37] = tanh c
    e:f32[37] = mul d a
    f:f32[37] = neg a
    g:f32[37] = exp f
    h:f32[37] = sub e g
  in (h,) }",
    );
    assert_eq!(kinds(&plan), ["loop7"]);
    assert_eq!(plan.groups[0].inputs.len(), 1);
    let dump = plan.to_string();
    assert!(dump.contains("loop[37]"), "{dump}");
}

#[test]
fn broadcast_operands_get_zero_strides() {
    let plan = check_plan(
        "{ lambda ; a:f32[4,5] b:f32[5] c:f32[4]. let
    d:f32[4,5] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 5) sharding=None] b
    e:f32[4,5] = add a d
    f:f32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 1) sharding=None] c
    g:f32[4,5] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(4, 5) sharding=None] f
    h:f32[4,5] = mul e g
  in (h,) }",
    );
    assert_eq!(kinds(&plan), ["loop5"]);
    let g = &plan.groups[0];
    // The broadcasts' results: d is the identity, f:[4,1] repeats along dim 1.
    assert_eq!(g.map_of(0).unwrap().strides(&[4, 5]), [5, 1]);
    assert_eq!(g.map_of(2).unwrap().strides(&[4, 1]), [1, 0]);
    let c = parse_again();
    let m = operand_map(&c, &c.eqns[0], g.map_of(0).unwrap(), 0).unwrap();
    assert_eq!(m.strides(&[5]), [0, 1]);
    let m = operand_map(&c, &c.eqns[2], g.map_of(2).unwrap(), 0).unwrap();
    assert_eq!(m.strides(&[4]), [1, 0]);
}

fn parse_again() -> Jaxpr {
    parse(
        "{ lambda ; a:f32[4,5] b:f32[5] c:f32[4]. let
    d:f32[4,5] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 5) sharding=None] b
    e:f32[4,5] = add a d
    f:f32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 1) sharding=None] c
    g:f32[4,5] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(4, 5) sharding=None] f
    h:f32[4,5] = mul e g
  in (h,) }",
    )
    .jaxpr
    .as_ref()
    .clone()
}

#[test]
fn reduction_absorbs_producers_and_softmax_splits_at_reductions() {
    let plan = check_plan(
        "{ lambda ; a:f32[6,10]. let
    b:f32[6] = reduce_max[axes=(1,) out_sharding=None] a
    c:f32[6,10] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 10) sharding=None] b
    d:f32[6,10] = sub a c
    e:f32[6,10] = exp d
    f:f32[6] = reduce_sum[axes=(1,) out_sharding=None] e
    g:f32[6,10] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 10) sharding=None] f
    h:f32[6,10] = div e g
  in (h,) }",
    );
    // max | sub+exp (used twice: materialised) | sum | div+broadcast
    assert_eq!(kinds(&plan), ["reduce1", "loop3", "reduce1", "loop2"]);

    let plan = check_plan(
        "{ lambda ; a:f32[3,7,5] b:f32[3,7,5]. let
    c:f32[3,7,5] = mul a b
    d:f32[3,7,5] = integer_pow[y=2] c
    e:f32[7] = reduce_sum[axes=(0, 2) out_sharding=None] d
  in (e,) }",
    );
    assert_eq!(kinds(&plan), ["reduce3"]);
    assert_eq!(plan.groups[0].space, [3, 7, 5]);
}

#[test]
fn expensive_ops_are_not_recomputed_under_broadcasts() {
    let plan = check_plan(
        "{ lambda ; a:f32[5] b:f32[4,5]. let
    c:f32[5] = exp a
    d:f32[4,5] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 5) sharding=None] c
    e:f32[4,5] = add d b
  in (e,) }",
    );
    assert_eq!(kinds(&plan), ["loop1", "loop2"]);
}

#[test]
fn reshape_fuses_as_a_flat_read() {
    let plan = check_plan(
        "{ lambda ; a:f32[12] b:f32[3,4]. let
    c:f32[12] = sin a
    d:f32[3,4] = reshape[dimensions=None new_sizes=(3, 4) sharding=None] c
    e:f32[3,4] = mul d b
  in (e,) }",
    );
    assert_eq!(kinds(&plan), ["loop3"]);
    // A broadcast below a reshape cannot be indexed: it stays outside.
    let plan = check_plan(
        "{ lambda ; a:f32[3] b:f32[3,4]. let
    c:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 3) sharding=None] a
    d:f32[3,4] = reshape[dimensions=None new_sizes=(3, 4) sharding=None] c
    e:f32[3,4] = mul d b
  in (e,) }",
    );
    assert_eq!(kinds(&plan), ["loop1", "loop2"]);
}

#[test]
fn opaque_ops_and_shared_values_split_groups() {
    let plan = check_plan(
        "{ lambda ; a:f32[4,3] b:f32[3,2]. let
    c:f32[4,3] = tanh a
    d:f32[4,2] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] c b
    e:f32[4,2] = logistic d
    f:f32[4,2] = mul e d
    g:f32[4,3] = add c 1.0:f32[]
  in (f, g, e) }",
    );
    assert_eq!(kinds(&plan), ["loop1", "opaque", "loop1", "loop1", "loop1"]);
    let c = parse("{ lambda ; a:f32[3]. let b:f32[3] = cumsum[axis=0 reverse=False] a in (b,) }");
    let plan = plan_fusion(&c.jaxpr).expect("plans");
    assert_eq!(kinds(&plan), ["opaque"]);
    let _ = ClosedJaxpr::without_consts(c.jaxpr.clone());
}

#[test]
fn transposes_fuse_as_permuted_reads() {
    let plan = check_plan(
        "{ lambda ; a:f32[3,4,5] b:f32[5,3,4]. let
    c:f32[5,3,4] = transpose[permutation=(2, 0, 1)] a
    d:f32[5,3,4] = mul c b
    e:f32[4,3,5] = transpose[permutation=(2, 1, 0)] d
    f:f32[4,3,5] = exp e
  in (f,) }",
    );
    assert_eq!(kinds(&plan), ["loop4"]);
    let g = &plan.groups[0];
    let c = parse(
        "{ lambda ; a:f32[3,4,5] b:f32[5,3,4]. let
    c:f32[5,3,4] = transpose[permutation=(2, 0, 1)] a
    d:f32[5,3,4] = mul c b
    e:f32[4,3,5] = transpose[permutation=(2, 1, 0)] d
    f:f32[4,3,5] = exp e
  in (f,) }",
    );
    // `a` is read at a[k, j, i] for f[j, i', k]... check against strides:
    // f[i0,i1,i2] = exp(d[i2, i1, i0]); d[p,q,r] = a[q, r, p] * b[p, q, r].
    let m = operand_map(&c.jaxpr, &c.jaxpr.eqns[0], g.map_of(0).unwrap(), 0).unwrap();
    // a[q=i1, r=i0, p=i2] with a strides (20, 5, 1): i0 -> 5, i1 -> 20, i2 -> 1.
    assert_eq!(m.strides(&[3, 4, 5]), [5, 20, 1]);
}

#[test]
fn slices_and_reversals_fuse_as_affine_reads() {
    let text = "{ lambda ; a:f32[7,9] b:f32[3,4]. let
    c:f32[3,4] = slice[limit_indices=(7, 9) start_indices=(1, 2) strides=(2, 2)] a
    d:f32[3,4] = rev[dimensions=(0, 1)] c
    e:f32[3,4] = add d b
  in (e,) }";
    let plan = check_plan(text);
    assert_eq!(kinds(&plan), ["loop3"]);
    let c = parse(text);
    let g = &plan.groups[0];
    let m = operand_map(&c.jaxpr, &c.jaxpr.eqns[0], g.map_of(0).unwrap(), 0).unwrap();
    // e[i, j] reads a[1 + 2 (2 - i), 2 + 2 (3 - j)] = a[5 - 2i, 8 - 2j].
    assert_eq!(m.strides(&[7, 9]), [-18, -2]);
    assert_eq!(m.base(&[7, 9]), 5 * 9 + 8);
}
