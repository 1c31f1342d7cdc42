//! Row runs (groups run a block of rows at a time, `ir::passes::row_runs`)
//! against the interpreter: softmax, layer norm and chains broken by a
//! column reduction, on shapes large enough to form runs, with row counts
//! that leave partial blocks and split unevenly across threads, and the
//! values a run writes into its result's buffer. One test
//! function, because it sets `JAXON_DUMP` to see the runs in the plan.

mod common;
use common::{check, parse, Dist, Tol};
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::Backend;

fn softmax(t: &str, r: usize, c: usize) -> String {
    format!(
        "{{ lambda ; a:{t}[{r},{c}]. let
    b:{t}[{r}] = reduce_max[axes=(1,) out_sharding=None] a
    c:{t}[{r},{c}] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, {c}) sharding=None] b
    d:{t}[{r},{c}] = sub a c
    e:{t}[{r},{c}] = exp d
    f:{t}[{r}] = reduce_sum[axes=(1,) out_sharding=None] e
    g:{t}[{r},{c}] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, {c}) sharding=None] f
    h:{t}[{r},{c}] = div e g
  in (h,) }}"
    )
}

/// A softmax whose rows are then scaled to unit length: `exp` moves into
/// the softmax, which moves into the result (a chain of two).
fn normalised_softmax(r: usize, c: usize) -> String {
    format!(
        "{{ lambda ; a:f32[{r},{c}]. let
    b:f32[{r}] = reduce_max[axes=(1,) out_sharding=None] a
    bb:f32[{r},{c}] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, {c}) sharding=None] b
    d:f32[{r},{c}] = sub a bb
    e:f32[{r},{c}] = exp d
    f:f32[{r}] = reduce_sum[axes=(1,) out_sharding=None] e
    fb:f32[{r},{c}] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, {c}) sharding=None] f
    p:f32[{r},{c}] = div e fb
    p2:f32[{r},{c}] = mul p p
    t:f32[{r}] = reduce_sum[axes=(1,) out_sharding=None] p2
    n:f32[{r}] = rsqrt t
    nb:f32[{r},{c}] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, {c}) sharding=None] n
    q:f32[{r},{c}] = mul p nb
  in (q,) }}"
    )
}

/// A softmax whose division reads each row of `exp` reversed.
fn reversed_softmax(r: usize, c: usize) -> String {
    softmax("f32", r, c).replace("div e g", "div er g").replace(
        "    f:f32",
        &format!("    er:f32[{r},{c}] = rev[dimensions=(1,)] e\n    f:f32"),
    )
}

fn layer_norm(r: usize, c: usize) -> String {
    format!(
        "{{ lambda ; a:f32[{r},{c}] w:f32[{c}]. let
    s:f32[{r}] = reduce_sum[axes=(1,) out_sharding=None] a
    m:f32[{r}] = div s {c}.0:f32[]
    mb:f32[{r},{c}] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, {c}) sharding=None] m
    x:f32[{r},{c}] = sub a mb
    x2:f32[{r},{c}] = mul x x
    v:f32[{r}] = reduce_sum[axes=(1,) out_sharding=None] x2
    vm:f32[{r}] = div v {c}.0:f32[]
    ve:f32[{r}] = add vm 1e-05:f32[]
    rs:f32[{r}] = rsqrt ve
    rb:f32[{r},{c}] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, {c}) sharding=None] rs
    y:f32[{r},{c}] = mul x rb
    wb:f32[{r},{c}] = broadcast_in_dim[broadcast_dimensions=(1,) shape=({r}, {c}) sharding=None] w
    o:f32[{r},{c}] = mul y wb
  in (o, v) }}"
    )
}

/// `exp` feeds a column sum (all rows first) and a row sum: the column
/// reduction must not join a run with the groups that use its result.
fn broken_by_columns(r: usize, c: usize) -> String {
    format!(
        "{{ lambda ; a:f32[{r},{c}]. let
    e:f32[{r},{c}] = exp a
    cs:f32[{c}] = reduce_sum[axes=(0,) out_sharding=None] e
    cb:f32[{r},{c}] = broadcast_in_dim[broadcast_dimensions=(1,) shape=({r}, {c}) sharding=None] cs
    d:f32[{r},{c}] = div e cb
    rs:f32[{r}] = reduce_max[axes=(1,) out_sharding=None] d
    rb:f32[{r},{c}] = broadcast_in_dim[broadcast_dimensions=(0,) shape=({r}, {c}) sharding=None] rs
    o:f32[{r},{c}] = sub d rb
  in (o,) }}"
    )
}

/// The `row runs:` lines of the plans `JAXON_DUMP` writes for `text`.
fn dumped_runs(text: &str) -> Vec<String> {
    dumped_lines(text, "row runs:")
}

/// The lines starting with `prefix` of the plans `JAXON_DUMP` writes for
/// `text`.
fn dumped_lines(text: &str, prefix: &str) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("jaxon-rows-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("JAXON_DUMP", &dir);
    let compiled = CpuBackend::new().compile(&parse(text));
    std::env::remove_var("JAXON_DUMP");
    compiled.expect("compiles");
    let mut runs = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("dump dir") {
        let path = entry.expect("entry").path();
        if path.to_string_lossy().ends_with(".plan.txt") {
            let plan = std::fs::read_to_string(&path).expect("plan");
            runs.extend(
                plan.lines()
                    .filter(|l| l.starts_with(prefix))
                    .map(str::to_string),
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    runs
}

#[test]
fn row_runs_match_the_interpreter() {
    // The runs are formed (large spaces) and not formed (small ones).
    assert_eq!(
        dumped_runs(&softmax("f32", 301, 257)),
        ["row runs: [(0, 3)]"]
    );
    assert_eq!(dumped_runs(&softmax("f32", 6, 10)), ["row runs: []"]);
    let broken = dumped_runs(&broken_by_columns(300, 260));
    assert_eq!(broken.len(), 1);
    assert_ne!(broken[0], "row runs: [(0, 4)]", "a column sum joined a run");

    // The softmax's `exp` (v4) is written into the result (v7), which the
    // division overwrites in place: the arena holds only the row maxima and
    // sums (two 301-row vectors, 64-byte aligned).
    let text = softmax("f32", 301, 257);
    assert_eq!(
        dumped_lines(&text, "in result buffers:"),
        ["in result buffers: [(4, 7)]"]
    );
    assert_eq!(
        dumped_lines(&text, "memory plan:"),
        ["memory plan: arena 2432 bytes for 2 values of 2408 bytes"]
    );
    // Not when the last reader is outside the run (layer norm's centred
    // rows, read by the scaling after the per-row `rsqrt` ended the run),
    // nor when it reads another element than it writes (a reversed row).
    for text in [layer_norm(301, 257), reversed_softmax(301, 257)] {
        assert_eq!(
            dumped_lines(&text, "in result buffers:"),
            ["in result buffers: []"]
        );
    }
    assert_eq!(
        dumped_runs(&reversed_softmax(301, 257)),
        ["row runs: [(0, 3)]"]
    );

    // Reductions sum in another order than the interpreter: relative.
    for (r, c) in [(301, 257), (1000, 67), (64, 2049)] {
        check(&softmax("f32", r, c), Dist::Uniform(8.0), Tol::Rel(2e-6));
        check(&softmax("f64", r, c), Dist::Uniform(8.0), Tol::Rel(1e-14));
        check(&layer_norm(r, c), Dist::Uniform(3.0), Tol::Rel(1e-5));
    }
    check(
        &normalised_softmax(1000, 300),
        Dist::Uniform(8.0),
        Tol::Rel(4e-6),
    );
    check(
        &reversed_softmax(301, 257),
        Dist::Uniform(8.0),
        Tol::Rel(2e-6),
    );
    check(
        &broken_by_columns(300, 260),
        Dist::Uniform(2.0),
        Tol::Rel(1e-6),
    );
}
