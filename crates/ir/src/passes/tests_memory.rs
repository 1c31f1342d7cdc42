//! Tests of the memory planner: the no-overlap invariant on random and real
//! (conformance corpus) jaxprs, and an evaluation that keeps every placed
//! value in one byte arena at its planned offset, compared with the
//! interpreter (a wrong overlap corrupts a value that is read later).

use super::tests::{parse, random_args, Rng};
use super::*;
use crate::array::{HostArray, Storage};
use crate::interp::{eval_closed_jaxpr, eval_jaxpr, Value};
use crate::jaxpr::{Atom, Jaxpr, Var};
use std::collections::HashSet;

/// A random f32 jaxpr over `[4,8]` and `[4]` values: elementwise ops,
/// broadcasts, reductions and opaque `cumsum`s, several outputs.
pub(super) fn random_jaxpr(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut pick = |n: usize| (rng.next() % n as u64) as usize;
    let name = |i: usize| format!("v{i}");
    // (name index, is_matrix)
    let mut vals: Vec<(usize, bool)> = vec![(0, true), (1, true), (2, false)];
    let mut lines = Vec::new();
    let n_eqns = 6 + pick(14);
    for k in 0..n_eqns {
        let id = 3 + k;
        let mats: Vec<usize> = vals.iter().filter(|v| v.1).map(|v| v.0).collect();
        let vecs: Vec<usize> = vals.iter().filter(|v| !v.1).map(|v| v.0).collect();
        let m = |p: &mut dyn FnMut(usize) -> usize| mats[p(mats.len())];
        let (line, is_mat) = match pick(6) {
            0 => {
                let a = m(&mut pick);
                let op = ["sin", "exp", "neg", "tanh"][pick(4)];
                (format!("{}:f32[4,8] = {op} {}", name(id), name(a)), true)
            }
            1 | 2 => {
                let (a, b) = (m(&mut pick), m(&mut pick));
                let op = ["add", "mul", "sub", "max"][pick(4)];
                let line = format!("{}:f32[4,8] = {op} {} {}", name(id), name(a), name(b));
                (line, true)
            }
            3 => {
                let a = m(&mut pick);
                let line = format!(
                    "{}:f32[4] = reduce_sum[axes=(1,) out_sharding=None] {}",
                    name(id),
                    name(a)
                );
                (line, false)
            }
            4 => {
                let a = vecs[pick(vecs.len())];
                let line = format!(
                    "{}:f32[4,8] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 8) \
                     sharding=None] {}",
                    name(id),
                    name(a)
                );
                (line, true)
            }
            _ => {
                let a = m(&mut pick);
                let line = format!(
                    "{}:f32[4,8] = cumsum[axis=1 reverse=False] {}",
                    name(id),
                    name(a)
                );
                (line, true)
            }
        };
        lines.push(line);
        vals.push((id, is_mat));
    }
    // Two or three outputs, the last value always among them.
    let mut outs = vec![vals[vals.len() - 1].0];
    for _ in 0..1 + pick(2) {
        outs.push(vals[3 + pick(vals.len() - 3)].0);
    }
    let outs: Vec<String> = outs.into_iter().map(name).collect();
    format!(
        "{{ lambda ; v0:f32[4,8] v1:f32[4,8] v2:f32[4]. let\n    {}\n  in ({},) }}",
        lines.join("\n    "),
        outs.join(", ")
    )
}

fn f32s(a: &HostArray) -> &[f32] {
    match a.data() {
        Storage::F32(v) => v,
        _ => panic!("f32 test values"),
    }
}

/// Evaluates group by group, storing each placed value only in a byte
/// arena at its offset (invars and excluded values stay in the
/// environment); the arena starts as NaN bytes. The groups of each row run
/// go `block` rows at a time, each writing only those rows of its outputs.
pub(super) fn eval_in_arena(
    jaxpr: &Jaxpr,
    plan: &FusionPlan,
    runs: &[(usize, usize)],
    mem: &MemoryPlan,
    args: &[HostArray],
    block: usize,
) -> Vec<HostArray> {
    let mut arena = vec![0xffu8; mem.size];
    let mut env: Vec<Option<HostArray>> = vec![None; jaxpr.vars.len()];
    for (v, a) in jaxpr.invars.iter().zip(args) {
        env[v.index()] = Some(a.clone());
    }
    let shape_of = |v: Var| -> Vec<usize> {
        jaxpr.vars[v.index()]
            .array()
            .static_sizes()
            .expect("static")
    };
    let read = |env: &[Option<HostArray>], arena: &[u8], v: Var| -> HostArray {
        match mem.offset(v) {
            Some(off) => {
                let shape = shape_of(v);
                let n: usize = shape.iter().product();
                let vals: Vec<f32> = (0..n)
                    .map(|i| {
                        let b = &arena[off + 4 * i..off + 4 * i + 4];
                        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
                    })
                    .collect();
                HostArray::new(shape, Storage::F32(vals)).expect("sizes")
            }
            None => env[v.index()].clone().expect("computed earlier"),
        }
    };
    // (group, first row, end row) in execution order.
    let mut schedule = Vec::new();
    let mut g = 0;
    while g < plan.groups.len() {
        match runs.iter().find(|r| r.0 == g) {
            Some(&(first, last)) => {
                let rows = plan.groups[first].space[0];
                let mut lo = 0;
                while lo < rows {
                    let hi = (lo + block).min(rows);
                    for m in first..=last {
                        schedule.push((m, lo, Some(hi)));
                    }
                    lo = hi;
                }
                g = last + 1;
            }
            None => {
                schedule.push((g, 0, None));
                g += 1;
            }
        }
    }
    for (g, lo, hi) in schedule {
        let group = &plan.groups[g];
        let sub = plan.group_jaxpr(jaxpr, g).expect("group jaxpr");
        let ins: Vec<Value> = group
            .inputs
            .iter()
            .map(|v| Value::Array(read(&env, &arena, *v)))
            .collect();
        let outs = eval_jaxpr(&sub, &[], &ins).expect("group evaluates");
        for (v, o) in group.outputs.iter().zip(outs) {
            let Value::Array(o) = o else { panic!("ref") };
            let Some(off) = mem.offset(*v) else {
                assert!(hi.is_none(), "row run values are placed");
                env[v.index()] = Some(o);
                continue;
            };
            let vals = f32s(&o);
            let rows = shape_of(*v).first().copied().unwrap_or(1).max(1);
            let per_row = vals.len() / rows;
            let (from, to) = match hi {
                Some(hi) => (lo * per_row, hi * per_row),
                None => (0, vals.len()),
            };
            for (i, x) in vals.iter().enumerate().take(to).skip(from) {
                arena[off + 4 * i..off + 4 * i + 4].copy_from_slice(&x.to_le_bytes());
            }
        }
    }
    jaxpr
        .outvars
        .iter()
        .map(|a| match a {
            Atom::Var(v) => read(&env, &arena, *v),
            Atom::Lit(_) => panic!("literal outvar"),
        })
        .collect()
}

#[test]
fn random_plans_never_overlap_live_values_and_evaluate_correctly() {
    let mut shared = 0usize;
    for seed in 1..80u64 {
        let text = random_jaxpr(seed);
        let c = parse(&text);
        let plan = plan_fusion(&c.jaxpr).expect("plans");
        let mut opts = MemoryOptions::default();
        if seed % 2 == 0 {
            // As a backend does: results go straight to output buffers.
            opts.exclude = c
                .jaxpr
                .outvars
                .iter()
                .filter_map(|a| match a {
                    Atom::Var(v) => Some(*v),
                    Atom::Lit(_) => None,
                })
                .collect::<HashSet<_>>();
        }
        if seed % 3 == 0 && !plan.groups.is_empty() {
            opts.scratch.push((seed as usize % plan.groups.len(), 100));
        }
        let mem = plan_memory(&c.jaxpr, &plan, &opts).expect("memory plan");
        mem.check()
            .unwrap_or_else(|e| panic!("{e}\n{text}\n{plan}\n{mem}"));
        let total: usize = mem
            .allocations
            .iter()
            .map(|a| a.bytes.div_ceil(64) * 64)
            .sum();
        assert!(mem.size <= total);
        shared += total - mem.size;
        // Every materialised group result is placed unless excluded.
        for g in &plan.groups {
            for v in &g.outputs {
                assert_eq!(mem.offset(*v).is_some(), !opts.exclude.contains(v));
            }
        }
        let args = random_args(&c.jaxpr, seed);
        let want = eval_closed_jaxpr(&c, &args).expect("evaluates");
        let got = eval_in_arena(&c.jaxpr, &plan, &[], &mem, &args, 1);
        assert_eq!(want, got, "seed {seed}\n{text}\n{plan}\n{mem}");
    }
    assert!(shared > 0, "liveness never let two values share storage");
}

#[test]
fn chain_reuses_two_buffers() {
    // Each opaque cumsum result dies when the next is computed: a chain
    // needs two buffers, whatever its length.
    let c = parse(
        "{ lambda ; a:f32[16,16]. let
    b:f32[16,16] = cumsum[axis=1 reverse=False] a
    c:f32[16,16] = cumsum[axis=0 reverse=False] b
    d:f32[16,16] = cumsum[axis=1 reverse=False] c
    e:f32[16,16] = cumsum[axis=0 reverse=False] d
    f:f32[16,16] = cumsum[axis=1 reverse=False] e
  in (f,) }",
    );
    let plan = plan_fusion(&c.jaxpr).expect("plans");
    let mem = plan_memory(&c.jaxpr, &plan, &MemoryOptions::default()).expect("plans");
    mem.check().expect("valid");
    assert_eq!(mem.allocations.len(), 5);
    assert_eq!(mem.size, 2 * 1024, "{mem}");
}

/// The `"jaxpr":"..."` texts of the public conformance corpus.
fn corpus_jaxprs() -> Vec<String> {
    let text = include_str!("../../../../tests/data/jax-0.10.2-public.jsonl");
    let key = "\"jaxpr\":\"";
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(start) = line.find(key) else {
            continue;
        };
        let mut s = String::new();
        let mut chars = line[start + key.len()..].chars();
        while let Some(ch) = chars.next() {
            match ch {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some(c) => s.push(c),
                    None => break,
                },
                c => s.push(c),
            }
        }
        out.push(s);
    }
    out
}

fn check_all(jaxpr: &Jaxpr, checked: &mut usize) {
    if let Ok(plan) = plan_fusion(jaxpr) {
        if let Ok(mem) = plan_memory(jaxpr, &plan, &MemoryOptions::default()) {
            mem.check().unwrap_or_else(|e| panic!("{e}\n{plan}\n{mem}"));
            *checked += 1;
        }
    }
    for e in &jaxpr.eqns {
        for p in e.primitive.param_jaxprs() {
            check_all(p.jaxpr.jaxpr(), checked);
        }
    }
}

#[test]
fn corpus_plans_never_overlap_live_values() {
    let texts = corpus_jaxprs();
    assert!(texts.len() > 100);
    let mut checked = 0;
    for t in &texts {
        if let Ok(c) = crate::parse::parse_closed_jaxpr(t, Vec::new()) {
            check_all(&c.jaxpr, &mut checked);
        }
    }
    assert!(checked > 100, "only {checked} corpus jaxprs planned");
}
