//! The public conformance corpora (`tests/data/jax-0.10.2-public.jsonl`
//! and the api2 corpus `jax-0.10.2-api2-public.jsonl`) on `cuda-sim`: each case's `eval`
//! jaxpr (and its `grad` jaxpr, when recorded) runs on the simulator and
//! must match JAX's recorded outputs within the case's tolerances. Cases
//! that use a primitive that does not lower yet are counted, not failed;
//! a lowered case that gives wrong values fails. The counts are a ratchet:
//! fewer passing cases than recorded here fails the test.

mod lowering_util;
use jaxon_ir::{parse_closed_jaxpr, DType, HostArray, IrError};
use serde_json::Value as Json;

/// Cases that passed when this was last updated (of the public corpus).
const MIN_PASSING: usize = 254;
/// Cases of the api2 corpus that passed when this was last updated.
const MIN_PASSING_API2: usize = 168;

fn array(v: &Json) -> Option<HostArray> {
    let dtype = DType::from_name(v.get("dtype")?.as_str()?)?;
    let shape: Vec<usize> = v
        .get("shape")?
        .as_array()?
        .iter()
        .map(|d| d.as_u64().map(|d| d as usize))
        .collect::<Option<_>>()?;
    let data: Vec<f64> = v
        .get("data")?
        .as_array()?
        .iter()
        .map(|x| match x {
            Json::Bool(b) => Some(f64::from(u8::from(*b))),
            Json::String(s) => match s.as_str() {
                "nan" | "NaN" => Some(f64::NAN),
                "inf" | "Infinity" => Some(f64::INFINITY),
                "-inf" | "-Infinity" => Some(f64::NEG_INFINITY),
                _ => s.parse().ok(),
            },
            _ => x.as_f64(),
        })
        .collect::<Option<_>>()?;
    HostArray::from_f64(dtype, &shape, &data).ok()
}

fn arrays(v: Option<&Json>) -> Option<Vec<HostArray>> {
    v?.as_array()?.iter().map(array).collect()
}

enum Outcome {
    Pass,
    NotYet(String),
    Fail(String),
}

fn run(
    text: &str,
    consts: Vec<HostArray>,
    inputs: &[HostArray],
    want: &[HostArray],
    rtol: f64,
    atol: f64,
) -> Outcome {
    let closed = match parse_closed_jaxpr(text, consts) {
        Ok(c) => c,
        Err(e) => return Outcome::Fail(format!("parse: {e}")),
    };
    let got = match lowering_util::run_lowered(&closed, inputs) {
        Ok(g) => g,
        Err(IrError::Unsupported { primitive, .. }) => return Outcome::NotYet(primitive),
        Err(e) => return Outcome::Fail(e.to_string()),
    };
    if got.len() != want.len() {
        return Outcome::Fail(format!("{} results, {} expected", got.len(), want.len()));
    }
    for (g, w) in got.iter().zip(want) {
        if g.shape() != w.shape() {
            return Outcome::Fail(format!("shape {:?} vs {:?}", g.shape(), w.shape()));
        }
        for (a, b) in g.to_f64_vec().iter().zip(w.to_f64_vec()) {
            let ok =
                (a.is_nan() && b.is_nan()) || *a == b || (a - b).abs() <= atol + rtol * b.abs();
            if !ok {
                return Outcome::Fail(format!("got {a}, expected {b}"));
            }
        }
    }
    Outcome::Pass
}

#[test]
fn public_corpus_sample_on_cuda_sim() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/jax-0.10.2-public.jsonl"
    );
    corpus_on_cuda_sim(path, MIN_PASSING);
}

/// The api2 corpus (special functions, windows, the random family, complex
/// numbers, FFTs, decompositions): every case lowers (complex dtypes
/// through `lower/complex.rs`).
#[test]
fn api2_corpus_on_cuda_sim() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/jax-0.10.2-api2-public.jsonl"
    );
    corpus_on_cuda_sim(path, MIN_PASSING_API2);
}

fn corpus_on_cuda_sim(path: &str, min_passing: usize) {
    let Ok(text) = std::fs::read_to_string(path) else {
        println!("corpus sample: skipped: {path} not found");
        return;
    };
    let (mut pass, mut not_yet, mut fails) = (0usize, Vec::new(), Vec::new());
    let mut total = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(case) = serde_json::from_str::<Json>(line) else {
            continue;
        };
        let name = case
            .get("name")
            .and_then(|n| n.as_str())
            .unwrap_or("?")
            .to_string();
        let rtol = case
            .get("rtol")
            .and_then(|x| x.as_f64())
            .unwrap_or(1e-5)
            .max(1e-5);
        let atol = case
            .get("atol")
            .and_then(|x| x.as_f64())
            .unwrap_or(1e-6)
            .max(1e-6);
        let mut runs = Vec::new();
        if let (Some(j), Some(c), Some(i), Some(o)) = (
            case.get("jaxpr").and_then(|j| j.as_str()),
            arrays(case.get("consts")),
            arrays(case.get("inputs")),
            arrays(case.get("outputs")),
        ) {
            runs.push((format!("{name}/eval"), j.to_string(), c, i.clone(), o));
            if let Some(g) = case.get("grad") {
                if let (Some(gj), Some(gc), Some(go)) = (
                    g.get("jaxpr").and_then(|j| j.as_str()),
                    arrays(g.get("consts")),
                    arrays(g.get("outputs")),
                ) {
                    runs.push((format!("{name}/grad"), gj.to_string(), gc, i, go));
                }
            }
        }
        for (what, j, c, i, o) in runs {
            total += 1;
            match run(&j, c, &i, &o, rtol, atol) {
                Outcome::Pass => pass += 1,
                Outcome::NotYet(p) => not_yet.push(format!("{what} ({p})")),
                Outcome::Fail(e) => fails.push(format!("{what}: {e}")),
            }
        }
    }
    println!(
        "corpus sample on cuda-sim: {pass} of {total} pass, {} not lowered yet, {} fail",
        not_yet.len(),
        fails.len()
    );
    println!("not yet: {not_yet:?}");
    println!("fail: {fails:#?}");
    assert!(
        fails.is_empty(),
        "lowered cases with wrong values: {fails:#?}"
    );
    assert!(
        pass >= min_passing,
        "{pass} cases pass, fewer than {min_passing}"
    );
}
