//! Deep and long input never overflows the stack (issue 23): a jaxpr
//! nested 10,000 deep and one with 100,000 equations are parsed, checked,
//! printed and evaluated to a result, or refused with an error naming the
//! nesting limit.

use jaxon_ir::check::MAX_NESTING;
use jaxon_ir::{check_jaxpr, eval_closed_jaxpr, parse_jaxpr, ClosedJaxpr, DType, HostArray, Jaxpr};

/// `depth` nested `jit`s around `sin`, one per level: level k's body calls
/// level k+1 (innermost: `sin a`).
fn nested(depth: usize) -> String {
    let mut body = "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }".to_string();
    for _ in 0..depth {
        body =
            format!("{{ lambda ; a:f32[3]. let b:f32[3] = jit[name=f jaxpr={body}] a in (b,) }}");
    }
    body
}

/// Runs `f` on a thread with a 2 MiB stack (Rust's default for spawned
/// threads, a quarter of a main thread's), so the test does not depend on
/// the harness's thread stack size.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn nested_10000_deep_is_an_error_naming_the_limit_or_a_result() {
    let text = nested(10_000);
    let r = on_small_stack(move || parse_jaxpr(&text).map_err(|e| e.to_string()));
    let e = r.expect_err("10,000 levels exceed the nesting limit");
    assert!(e.contains("nesting") && e.contains("limit"), "{e}");
}

#[test]
fn nested_within_the_limit_parses_checks_and_runs() {
    let text = nested(50);
    let out = on_small_stack(move || {
        let j = parse_jaxpr(&text).unwrap();
        check_jaxpr(&j).unwrap();
        let x = HostArray::from_f64(DType::F32, &[3], &[0.5, -1.25, 2.0]).unwrap();
        eval_closed_jaxpr(&ClosedJaxpr::without_consts(j), &[x]).unwrap()
    });
    let want: Vec<f64> = [0.5f32, -1.25, 2.0]
        .iter()
        .map(|x| x.sin() as f64)
        .collect();
    let got = out[0].to_f64_vec();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6, "{got:?} vs {want:?}");
    }
}

/// `depth` nested `jit`s built in memory (no parser limit applies), by
/// rewriting a one-level jit's body with `map_sub_jaxprs`.
fn built(depth: usize) -> Jaxpr {
    let one = parse_jaxpr(&nested(1)).unwrap();
    let mut j = parse_jaxpr(&nested(0)).unwrap();
    for _ in 0..depth {
        let mut outer = one.clone();
        let inner = j;
        outer.eqns[0].primitive = outer.eqns[0]
            .primitive
            .map_sub_jaxprs(&mut |_| inner.clone());
        j = outer;
    }
    j
}

fn sin3() -> (HostArray, Vec<f64>) {
    let x = HostArray::from_f64(DType::F32, &[3], &[0.5, -1.25, 2.0]).unwrap();
    let want = [0.5f32, -1.25, 2.0]
        .iter()
        .map(|x| x.sin() as f64)
        .collect();
    (x, want)
}

/// At the limit, the checker and the interpreter work on a 2 MiB stack.
#[test]
fn built_at_the_nesting_limit_checks_and_runs() {
    let (got, want) = on_small_stack(|| {
        let j = built(MAX_NESTING - 1);
        check_jaxpr(&j).unwrap();
        let (x, want) = sin3();
        let out = eval_closed_jaxpr(&ClosedJaxpr::without_consts(j), &[x]).unwrap();
        (out[0].to_f64_vec(), want)
    });
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6, "{got:?} vs {want:?}");
    }
}

/// 10,000 deep in memory: the checker and the interpreter name the limit.
/// (The jaxpr is leaked: dropping a 10,000-deep `Arc` chain recurses.)
#[test]
fn built_10000_deep_is_an_error_naming_the_limit() {
    let (c, e) = on_small_stack(|| {
        let j = built(10_000);
        let c = check_jaxpr(&j).unwrap_err().to_string();
        let (x, _) = sin3();
        let closed = ClosedJaxpr::without_consts(j);
        let e = eval_closed_jaxpr(&closed, &[x]).unwrap_err().to_string();
        std::mem::forget(closed);
        (c, e)
    });
    let limit = format!("nesting limit of {MAX_NESTING}");
    assert!(c.contains(&limit), "{}", &c[c.len().saturating_sub(300)..]);
    assert!(e.contains(&limit), "{e}");
}

#[test]
fn one_hundred_thousand_equations_parse_check_and_run() {
    // a0 = x; a_{k+1} = a_k * 1.0001 + 0.5 ... alternating mul and add.
    let n = 100_000;
    let mut text = String::from("{ lambda ; v0:f32[]. let\n");
    for k in 0..n {
        let op = if k % 2 == 0 { "mul" } else { "add" };
        let c = if k % 2 == 0 { "0.5:f32[]" } else { "1.0:f32[]" };
        text.push_str(&format!("    v{}:f32[] = {op} v{k} {c}\n", k + 1));
    }
    text.push_str(&format!("  in (v{n},) }}"));
    let out = on_small_stack(move || {
        let j = parse_jaxpr(&text).unwrap();
        assert_eq!(j.eqns.len(), n);
        check_jaxpr(&j).unwrap();
        let x = HostArray::from_f64(DType::F32, &[], &[3.0]).unwrap();
        eval_closed_jaxpr(&ClosedJaxpr::without_consts(j), &[x]).unwrap()
    });
    // x -> x/2 + 1 has fixed point 2; from 3 it converges to 2 in f32.
    let mut want = 3.0f32;
    for _ in 0..n / 2 {
        want = want * 0.5 + 1.0;
    }
    assert_eq!(out[0].to_f64_vec(), vec![want as f64]);
}
