//! GEMM epilogues (`lower/epilogue.rs`): `x @ w + b`, `relu(x @ w)` and
//! `relu(x @ w + b)` as JAX prints them lower to one GEMM with cuBLASLt's
//! `BIAS`, `RELU` or `RELU_BIAS` epilogue (asserted on the plan), and give
//! the interpreter's values on `cuda-sim` (or the GPU under
//! `JAXON_LOWERING_BACKEND=cuda`), for plain, batched and transposed
//! products in f32 and bf16. Programs that do not fit the rules (the
//! product read again, a bias along the rows, a nonzero clamp) keep their
//! separate kernel and the same values.

mod lowering_util;

use jaxon_backend_cuda::blas::Epilogue;
use jaxon_backend_cuda::lower::plan::Step;
use lowering_util::{args_for, check_with, parse, Dist, Tol};

/// The epilogues of the plan's GEMMs, and its number of kernel launches.
fn plan_of(text: &str) -> (Vec<Epilogue>, usize) {
    let prog = jaxon_backend_cuda::lower::lower(&parse(text)).expect("lowers");
    let steps = prog.all_steps();
    let epis = steps
        .iter()
        .filter_map(|s| match s {
            Step::Gemm { plan, .. } => Some(plan.epilogue),
            _ => None,
        })
        .collect();
    let launches = steps
        .iter()
        .filter(|s| matches!(s, Step::Launch { .. }))
        .count();
    (epis, launches)
}

fn run(text: &str, seed: u64, tol: Tol) {
    let args = args_for(text, seed, Dist::Uniform(2.0));
    check_with(text, &args, tol);
}

fn layer(dt: &str, m: usize, k: usize, n: usize, bias: bool, relu: bool, t: bool) -> String {
    let (wty, dims) = if t {
        (format!("{dt}[{n},{k}]"), "(([1], [1]), ([], []))")
    } else {
        (format!("{dt}[{k},{n}]"), "(([1], [0]), ([], []))")
    };
    let mut body = format!(
        "    d:{dt}[{m},{n}] = dot_general[
      dimension_numbers={dims}
      preferred_element_type={pet}
    ] a b\n",
        pet = if dt == "bf16" { "bfloat16" } else { "float32" },
    );
    let mut last = "d";
    if bias {
        body += &format!(
            "    e:{dt}[1,{n}] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, {n}) sharding=None] c
    f:{dt}[{m},{n}] = add d e\n"
        );
        last = "f";
    }
    if relu {
        body += &format!("    g:{dt}[{m},{n}] = max {last} 0.0:{dt}[]\n");
        last = "g";
    }
    format!("{{ lambda ; a:{dt}[{m},{k}] b:{wty} c:{dt}[{n}]. let\n{body}  in ({last},) }}")
}

#[test]
fn bias_and_relu_run_inside_the_gemm() {
    let cases = [
        ("f32", 8, 16, 12, true, true, false, Epilogue::BiasRelu),
        ("f32", 37, 300, 129, true, false, false, Epilogue::Bias),
        ("f32", 5, 64, 33, false, true, false, Epilogue::Relu),
        ("f32", 16, 40, 24, true, true, true, Epilogue::BiasRelu),
        ("bf16", 32, 64, 48, true, true, false, Epilogue::BiasRelu),
    ];
    for (i, (dt, m, k, n, bias, relu, t, want)) in cases.into_iter().enumerate() {
        let text = layer(dt, m, k, n, bias, relu, t);
        let (epis, launches) = plan_of(&text);
        assert_eq!(epis, [want], "{text}");
        assert_eq!(launches, 0, "a separate kernel is left:\n{text}");
        let tol = if dt == "bf16" {
            Tol::Rel(1e-2)
        } else {
            Tol::Rel(1e-5)
        };
        run(&text, i as u64, tol);
    }
}

#[test]
fn batched_products_take_the_bias_along_their_last_axis() {
    let text = "{ lambda ; a:f32[3,5,7] b:f32[3,7,9] c:f32[9]. let
    d:f32[3,5,9] = dot_general[
      dimension_numbers=(([2], [1]), ([0], [0]))
      preferred_element_type=float32
    ] a b
    e:f32[1,1,9] = broadcast_in_dim[broadcast_dimensions=(2,) shape=(1, 1, 9) sharding=None] c
    f:f32[3,5,9] = add e d
    g:f32[3,5,9] = max 0.0:f32[] f
  in (g,) }";
    assert_eq!(plan_of(text), (vec![Epilogue::BiasRelu], 0));
    run(text, 7, Tol::Rel(1e-5));
}

#[test]
fn products_outside_the_rules_keep_their_kernel() {
    let texts = [
        // The product is a result too.
        "{ lambda ; a:f32[6,10] b:f32[10,4] c:f32[4]. let
    d:f32[6,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
    e:f32[1,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 4) sharding=None] c
    f:f32[6,4] = add d e
  in (f, d) }",
        // A bias along the rows.
        "{ lambda ; a:f32[6,10] b:f32[10,4] c:f32[6]. let
    d:f32[6,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
    e:f32[6,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 1) sharding=None] c
    f:f32[6,4] = add d e
  in (f,) }",
        // A clamp at 1, not a ReLU.
        "{ lambda ; a:f32[6,10] b:f32[10,4]. let
    d:f32[6,4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
    g:f32[6,4] = max d 1.0:f32[]
  in (g,) }",
    ];
    for (i, text) in texts.iter().enumerate() {
        let (epis, launches) = plan_of(text);
        assert_eq!(epis, [Epilogue::None], "{text}");
        assert!(launches >= 1, "{text}");
        run(text, 20 + i as u64, Tol::Rel(1e-5));
    }
}

/// Review: a right operand with two free dimensions makes the GEMM's `n`
/// their product (15), while the bias runs along the last one only (5).
#[test]
fn review_bias_on_a_product_with_two_right_free_dims() {
    let text = "{ lambda ; a:f32[4,8] b:f32[8,3,5] c:f32[5]. let
    d:f32[4,3,5] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] a b
    e:f32[1,1,5] = broadcast_in_dim[broadcast_dimensions=(2,) shape=(1, 1, 5) sharding=None] c
    f:f32[4,3,5] = add d e
  in (f,) }";
    run(text, 31, Tol::Rel(1e-5));
}

/// Review: a right operand with no free dimension makes the product's last
/// axis a left free one (the GEMM's `n` is 1); the bias along it must not
/// be the GEMM's per-column bias (which would add `c[0]` everywhere).
#[test]
fn review_bias_along_a_left_free_dim() {
    let text = "{ lambda ; a:f32[3,6,8] b:f32[8] c:f32[6]. let
    d:f32[3,6] = dot_general[dimension_numbers=(([2], [0]), ([], [])) preferred_element_type=float32] a b
    e:f32[1,6] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 6) sharding=None] c
    f:f32[3,6] = add d e
  in (f,) }";
    run(text, 32, Tol::Rel(1e-5));
}

/// Review: a GEMM with a fused epilogue and a row run (softmax) writing a
/// `while` body's results, which the loop then exchanges with its carries
/// instead of copying; three iterations, two carries, one passed through
/// into the other.
#[test]
fn review_fused_results_exchanged_as_loop_carries() {
    let text = "{ lambda ; w:f32[64,64] c:f32[64] a:f32[4,64]. let
    _:i32[] r:f32[4,64] s:f32[4,64] = while[
      body_jaxpr={ lambda ; w2:f32[64,64] c2:f32[64] i:i32[] x:f32[4,64] y:f32[4,64]. let
          d:f32[4,64] = dot_general[dimension_numbers=(([1], [0]), ([], [])) preferred_element_type=float32] x w2
          e:f32[1,64] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 64) sharding=None] c2
          f:f32[4,64] = add d e
          g:f32[4,64] = max f 0.0:f32[]
          b1:f32[4] = reduce_max[axes=(1,) out_sharding=None] g
          b2:f32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 1) sharding=None] b1
          b3:f32[4,64] = sub g b2
          b4:f32[4,64] = exp b3
          b5:f32[4] = reduce_sum[axes=(1,) out_sharding=None] b4
          b6:f32[4,1] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 1) sharding=None] b5
          b7:f32[4,64] = div b4 b6
          j:i32[] = add i 1:i32[]
        in (j, b7, x) }
      body_nconsts=2
      cond_jaxpr={ lambda ; t:i32[] u:f32[4,64] v:f32[4,64]. let
          z:bool[] = lt t 3:i32[]
        in (z,) }
      cond_nconsts=0
    ] w c 0:i32[] a a
  in (r, s) }";
    run(text, 41, Tol::Rel(1e-5));
    let prog = jaxon_backend_cuda::lower::lower(&parse(text)).expect("lowers");
    let args = args_for(text, 42, Dist::Uniform(2.0));
    let once = jaxon_backend_cuda::lower::run::run_simulated(&prog, &args).expect("runs");
    let twice = jaxon_backend_cuda::lower::run::run_simulated(&prog, &args).expect("runs");
    assert_eq!(once, twice);
    // The fusions happened inside the body and its results are exchanged.
    let steps = prog.all_steps();
    assert!(steps
        .iter()
        .any(|s| matches!(s, Step::Gemm { plan, .. } if plan.epilogue == Epilogue::BiasRelu)));
    let exchanged = steps.iter().any(|s| match s {
        Step::While { carry, .. } => carry.iter().any(|u| u.temp.is_none()),
        _ => false,
    });
    assert!(exchanged, "no carry is exchanged");
}
