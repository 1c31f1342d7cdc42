//! Differential tests: every supported primitive and fused chains on the
//! cpu backend versus the reference interpreter, on seeded random inputs
//! of random shapes (including sizes that leave vector tails).

mod common;
use common::{check, Dist, Tol};

#[test]
fn smoke_fused_chain() {
    check(
        "{ lambda ; a:f32[37]. let
    b:f32[37] = mul a 2.0:f32[]
    c:f32[37] = add b 1.0:f32[]
    d:f32[37] = mul c a
    e:f32[37] = neg a
    f:f32[37] = sub d e
  in (f,) }",
        Dist::Uniform(3.0),
        Tol::Exact,
    );
}
