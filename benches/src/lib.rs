//! Shared helpers for jaxon benchmarks: generators of large jaxpr texts in
//! JAX's exact layout, and the WORKLOADS.md harness.

pub mod measure;
pub mod workloads;

/// JAX's variable name for the `n`-th variable of a printout: `a`..`z`,
/// `ba`..`bz`, ..., `zz`, `baa` (base 26 with `a` as the zero digit).
pub fn var_name(mut n: usize) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(b'a' + (n % 26) as u8);
        n /= 26;
        if n == 0 {
            break;
        }
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

/// A jaxpr of at least `min_eqns` equations, exactly as JAX 0.10 prints
/// `make_jaxpr` of a loop over six steps on `a:f32[8]`, `b:f32[]`:
/// `x + a`, `x * 2.0`, `sin x`, `max(x, broadcast_in_dim b)`,
/// `concatenate(reversed(split(x, (3, 5))))`, `1.5 - x`.
/// It has literals, a multi-output equation and a broadcast every six
/// steps (eight equations).
pub fn chain_jaxpr_text(min_eqns: usize) -> String {
    let mut next = 2; // a and b are the invars
    let mut fresh = || {
        let v = var_name(next);
        next += 1;
        v
    };
    let mut body = String::new();
    let mut x = "a".to_string();
    let mut eqns = 0;
    let mut step = 0;
    while eqns < min_eqns {
        match step % 6 {
            0 => {
                let y = fresh();
                body.push_str(&format!("    {y}:f32[8] = add {x} a\n"));
                x = y;
                eqns += 1;
            }
            1 => {
                let y = fresh();
                body.push_str(&format!("    {y}:f32[8] = mul {x} 2.0:f32[]\n"));
                x = y;
                eqns += 1;
            }
            2 => {
                let y = fresh();
                body.push_str(&format!("    {y}:f32[8] = sin {x}\n"));
                x = y;
                eqns += 1;
            }
            3 => {
                let (bb, y) = (fresh(), fresh());
                body.push_str(&format!("    {bb}:f32[8] = broadcast_in_dim b\n"));
                body.push_str(&format!("    {y}:f32[8] = max {x} {bb}\n"));
                x = y;
                eqns += 2;
            }
            4 => {
                let (lo, hi, y) = (fresh(), fresh(), fresh());
                body.push_str(&format!(
                    "    {lo}:f32[3] {hi}:f32[5] = split[axis=0 sizes=(3, 5)] {x}\n"
                ));
                body.push_str(&format!(
                    "    {y}:f32[8] = concatenate[dimension=0] {hi} {lo}\n"
                ));
                x = y;
                eqns += 2;
            }
            _ => {
                let y = fresh();
                body.push_str(&format!("    {y}:f32[8] = sub 1.5:f32[] {x}\n"));
                x = y;
                eqns += 1;
            }
        }
        step += 1;
    }
    format!("{{ lambda ; a:f32[8] b:f32[]. let\n{body}  in ({x},) }}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `str(jax.make_jaxpr(f)(zeros(8), float32(0)))` for 14 loop steps.
    const JAX_14_STEPS: &str = "{ lambda ; a:f32[8] b:f32[]. let
    c:f32[8] = add a a
    d:f32[8] = mul c 2.0:f32[]
    e:f32[8] = sin d
    f:f32[8] = broadcast_in_dim b
    g:f32[8] = max e f
    h:f32[3] i:f32[5] = split[axis=0 sizes=(3, 5)] g
    j:f32[8] = concatenate[dimension=0] i h
    k:f32[8] = sub 1.5:f32[] j
    l:f32[8] = add k a
    m:f32[8] = mul l 2.0:f32[]
    n:f32[8] = sin m
    o:f32[8] = broadcast_in_dim b
    p:f32[8] = max n o
    q:f32[3] r:f32[5] = split[axis=0 sizes=(3, 5)] p
    s:f32[8] = concatenate[dimension=0] r q
    t:f32[8] = sub 1.5:f32[] s
    u:f32[8] = add t a
    v:f32[8] = mul u 2.0:f32[]
  in (v,) }";

    #[test]
    fn matches_jax_layout() {
        // 14 steps = 18 equations.
        assert_eq!(chain_jaxpr_text(18), JAX_14_STEPS);
    }

    #[test]
    fn names_follow_jax() {
        // From jax._src.core._encode_digits_alphabetic.
        let want = [
            (0, "a"),
            (25, "z"),
            (26, "ba"),
            (221, "in"),
            (675, "zz"),
            (676, "baa"),
            (702, "bba"),
            (17575, "zzz"),
            (17576, "baaa"),
        ];
        for (n, name) in want {
            assert_eq!(var_name(n), name, "{n}");
        }
    }

    #[test]
    fn large_text_has_the_requested_equations() {
        let text = chain_jaxpr_text(10_000);
        let eqns = text.lines().filter(|l| l.contains(" = ")).count();
        assert!((10_000..10_002).contains(&eqns), "{eqns}");
        assert!(
            text.contains("\n    in:f32[8] = "),
            "variable #221 is named `in`"
        );
    }
}
