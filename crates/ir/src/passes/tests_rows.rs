//! Tests of row runs: evaluating each run a block of rows at a time, with
//! the memory planner's spans, in an arena whose unwritten bytes are NaN,
//! gives the interpreter's results (a run that read another row of a value
//! it makes would read NaN or a stale row).

use super::tests::{parse, random_args, Rng};
use super::tests_memory::{f32s, random_jaxpr};
use super::*;
use crate::array::{HostArray, Storage};
use crate::interp::{eval_closed_jaxpr, eval_jaxpr, Value};
use crate::jaxpr::{Atom, Jaxpr, Var};

/// Evaluates group by group; the groups of each run go `block` rows at a
/// time, each writing only those rows of its outputs.
fn eval_by_rows(
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
            let off = mem.offset(*v).expect("not excluded");
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

/// A random f32 jaxpr over square `[6,6]` and `[6]` values with row and
/// column reductions, broadcasts along either axis and transposes: the
/// reads that must break a row run.
fn random_square_jaxpr(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut pick = |n: usize| (rng.next() % n as u64) as usize;
    let mut mats = vec![0usize, 1];
    let mut vecs = vec![2usize];
    let mut lines = Vec::new();
    for k in 0..8 + pick(10) {
        let id = 3 + k;
        let m = mats[pick(mats.len())];
        let line = match pick(6) {
            0 => format!("v{id}:f32[6,6] = {} v{m}", ["exp", "neg", "sin"][pick(3)]),
            1 => {
                let m2 = mats[pick(mats.len())];
                format!(
                    "v{id}:f32[6,6] = {} v{m} v{m2}",
                    ["add", "mul", "max"][pick(3)]
                )
            }
            2 => {
                vecs.push(id);
                let ax = pick(2);
                format!("v{id}:f32[6] = reduce_sum[axes=({ax},) out_sharding=None] v{m}")
            }
            3 => {
                let v = vecs[pick(vecs.len())];
                let d = pick(2);
                format!(
                    "v{id}:f32[6,6] = broadcast_in_dim[broadcast_dimensions=({d},) \
                     shape=(6, 6) sharding=None] v{v}"
                )
            }
            4 => format!("v{id}:f32[6,6] = transpose[permutation=(1, 0)] v{m}"),
            _ => format!(
                "v{id}:f32[6,6] = cumsum[axis={} reverse=False] v{m}",
                pick(2)
            ),
        };
        if !line.contains(":f32[6] ") {
            mats.push(id);
        }
        lines.push(line);
    }
    let last = *mats.last().unwrap_or(&0);
    let other = mats[pick(mats.len())];
    format!(
        "{{ lambda ; v0:f32[6,6] v1:f32[6,6] v2:f32[6]. let\n    {}\n  in (v{last}, v{other}) }}",
        lines.join("\n    ")
    )
}

#[test]
fn random_row_runs_evaluate_correctly_by_row_blocks() {
    let mut found = 0;
    for seed in 1..240u64 {
        let text = if seed % 2 == 0 {
            random_jaxpr(seed)
        } else {
            random_square_jaxpr(seed)
        };
        let c = parse(&text);
        let plan = plan_fusion(&c.jaxpr).expect("plans");
        let runs = row_runs(&c.jaxpr, &plan);
        for w in runs.windows(2) {
            assert!(w[0].1 < w[1].0, "runs overlap: {runs:?}");
        }
        found += runs.len();
        let opts = MemoryOptions {
            spans: runs.clone(),
            ..MemoryOptions::default()
        };
        let mem = plan_memory(&c.jaxpr, &plan, &opts).expect("memory plan");
        mem.check()
            .unwrap_or_else(|e| panic!("{e}\n{text}\n{plan}\n{mem}"));
        let args = random_args(&c.jaxpr, seed);
        let want = eval_closed_jaxpr(&c, &args).expect("evaluates");
        for block in [1, 3] {
            let got = eval_by_rows(&c.jaxpr, &plan, &runs, &mem, &args, block);
            assert_eq!(
                want, got,
                "seed {seed} block {block} runs {runs:?}\n{text}\n{plan}\n{mem}"
            );
        }
    }
    assert!(found > 20, "only {found} row runs in the random jaxprs");
}

#[test]
fn softmax_is_one_row_run() {
    let c = parse(
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
    let plan = plan_fusion(&c.jaxpr).expect("plans");
    assert_eq!(plan.groups.len(), 4, "{plan}");
    assert_eq!(row_runs(&c.jaxpr, &plan), vec![(0, 3)]);
}

#[test]
fn column_reductions_and_transposes_break_runs() {
    // The column sum needs every row of `b` before any row of its result.
    let c = parse(
        "{ lambda ; a:f32[6,6]. let
    b:f32[6,6] = exp a
    c:f32[6] = reduce_sum[axes=(0,) out_sharding=None] b
    d:f32[6,6] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 6) sharding=None] c
    e:f32[6,6] = mul b d
    f:f32[6,6] = transpose[permutation=(1, 0)] e
    g:f32[6,6] = add f a
  in (g, b) }",
    );
    let plan = plan_fusion(&c.jaxpr).expect("plans");
    let runs = row_runs(&c.jaxpr, &plan);
    for &(first, last) in &runs {
        for g in &plan.groups[first..=last] {
            if let GroupKind::Reduce { axes, .. } = &g.kind {
                assert!(!axes.contains(&0), "{plan}\n{runs:?}");
            }
        }
    }
    let opts = MemoryOptions {
        spans: runs.clone(),
        ..MemoryOptions::default()
    };
    let mem = plan_memory(&c.jaxpr, &plan, &opts).expect("memory plan");
    let args = random_args(&c.jaxpr, 7);
    let want = eval_closed_jaxpr(&c, &args).expect("evaluates");
    let got = eval_by_rows(&c.jaxpr, &plan, &runs, &mem, &args, 2);
    assert_eq!(want, got, "{plan}\n{runs:?}");
}
