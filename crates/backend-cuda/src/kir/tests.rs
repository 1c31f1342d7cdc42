//! KIR's own tests: the verifier's rejections name the problem, and the text
//! form is stable.

use super::*;
use jaxon_ir::DType::*;

fn rejects(build: impl FnOnce(&mut KernelBuilder), needle: &str) {
    let mut k = KernelBuilder::new("bad", 128);
    build(&mut k);
    let err = k
        .finish()
        .expect_err("the verifier should reject this kernel");
    let msg = err.to_string();
    assert!(msg.contains("kernel `bad`"), "{msg}");
    assert!(msg.contains(needle), "`{needle}` not in: {msg}");
}

#[test]
fn verifier_rejects_ill_typed_kernels() {
    rejects(
        |k| {
            let v = k.var("v", F32);
            k.assign(v, Expr::f32(1.0) + Expr::u32(1));
        },
        "operands differ in dtype",
    );
    rejects(
        |k| {
            let v = k.var("v", BF16);
            k.assign(v, Expr::var(v) + Expr::var(v));
        },
        "does not apply to bf16",
    );
    rejects(
        |k| {
            let x = k.global("x", F32, false);
            k.store(x.into(), Expr::u32(0), vec![Expr::f32(1.0)], None);
        },
        "read-only",
    );
    rejects(
        |k| {
            let x = k.global("x", F64, false);
            let v: Vec<Var> = (0..4).map(|_| k.var("v", F64)).collect();
            k.load(&v, x.into(), Expr::u32(0), None);
        },
        "at most 16 bytes",
    );
    rejects(
        |k| k.if_(Expr::thread_x().lt(Expr::u32(3)), |k| k.barrier()),
        "barrier inside thread-dependent control flow",
    );
    rejects(
        |k| {
            let v = k.var("v", F32);
            k.shuffle(v, ShuffleKind::Xor, Expr::var(v), Expr::u32(1), 12);
        },
        "not a power of two",
    );
    rejects(
        |k| {
            let v = k.var("v", I32);
            k.assign(v, Expr::Math(MathFn::Exp, vec![Expr::i32(1)]));
        },
        "needs f32 or f64",
    );
    let err = KernelBuilder::new("not an identifier", 32)
        .finish()
        .unwrap_err();
    assert!(err.to_string().contains("not a C identifier"));
}

#[test]
fn text_form() {
    let mut k = KernelBuilder::new("axpy", 256);
    let x = k.global("x", F32, false);
    let y = k.global("y", F32, true);
    let n = k.scalar("n", U32);
    let i = k.let_("i", U32, Expr::global_thread_id_x());
    k.if_(Expr::var(i).lt(Expr::param(n)), |k| {
        let a = k.var("a", F32);
        k.load(&[a], x.into(), Expr::var(i), None);
        k.store(
            y.into(),
            Expr::var(i),
            vec![Expr::f32(2.5) * Expr::var(a)],
            None,
        );
    });
    let text = k.finish().unwrap().to_string();
    let want = "\
kernel axpy(x: &[f32], y: &mut [f32], n: u32) max_threads=256 {
  var %i.0: u32
  var %a.1: f32
  %i.0 = add(mul(blockIdx.x, blockDim.x), threadIdx.x)
  if lt(%i.0, n) {
    %a.1 = load.x1 x[%i.0]
    store.x1 y[%i.0] = mul(2.5f32, %a.1)
  }
}
";
    assert_eq!(text, want);
}

#[test]
fn constants_round_like_casts() {
    assert_eq!(Const::from_f64(BF16, 1.00390625).to_f64(), 1.0);
    assert_eq!(Const::from_f64(F16, 65520.0).to_f64(), f64::INFINITY);
    assert_eq!(Const::int(I8, 200).to_f64(), -56.0);
    assert_eq!(Const::int(U16, -1).to_f64(), 65535.0);
    assert!(Const::from_f64(F32, f64::NAN).to_f64().is_nan());
}
