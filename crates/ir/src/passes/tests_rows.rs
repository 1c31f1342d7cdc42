//! Tests of row runs: evaluating each run a block of rows at a time, with
//! the memory planner's spans, in an arena whose unwritten bytes are NaN,
//! gives the interpreter's results (a run that read another row of a value
//! it makes would read NaN or a stale row).

use super::tests::{parse, random_args, Rng};
use super::tests_memory::{eval_in_arena, random_jaxpr};
use super::*;
use crate::interp::eval_closed_jaxpr;

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
            let got = eval_in_arena(&c.jaxpr, &plan, &runs, &mem, &args, block);
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
    let got = eval_in_arena(&c.jaxpr, &plan, &runs, &mem, &args, 2);
    assert_eq!(want, got, "{plan}\n{runs:?}");
}
