//! `jnp.gcd` and `jnp.lcm` on integer dtypes: Euclid's algorithm as one
//! `while` loop over the broadcast arrays, as JAX writes it.

use super::wrap::lit;
use super::*;
use crate::control::while_loop;
use crate::error::ok_or_raise;

fn integer_args(op: &str, x1: &Array, x2: &Array) -> Result<(Array, Array)> {
    let v = promote::promote_args(op, &[x1, x2])?;
    let d = v[0].dtype();
    if !d.is_int() || d.is_bool() {
        return Err(Error::InvalidArgument(format!(
            "{op}: arguments must be integers, got {} and {}",
            fmt_aval(x1.aval()),
            fmt_aval(x2.aval())
        )));
    }
    let b = broadcast_arrays(&v)?;
    Ok((b[0].clone(), b[1].clone()))
}

fn magnitude(x: &Array) -> Result<Array> {
    if x.dtype().is_unsigned_int() {
        Ok(x.clone())
    } else {
        abs(x)
    }
}

/// One Euclid step on `(a, b)` with `a >= b >= 0`, kept ordered.
fn gcd_step(a: &Array, b: &Array) -> Result<(Array, Array)> {
    let d = a.dtype();
    let zero = lit(0.0, d)?;
    let nz = lax::ne(b, &zero)?;
    let safe = where_(&nz, b, &lit(1.0, d)?)?;
    let a1 = where_(&nz, b, a)?;
    let b1 = where_(&nz, &lax::rem(a, &safe)?, &zero)?;
    let swap = lax::lt(&a1, &b1)?;
    Ok((where_(&swap, &b1, &a1)?, where_(&swap, &a1, &b1)?))
}

/// `jnp.gcd(x1, x2)`: the greatest common divisor of the magnitudes,
/// elementwise with broadcasting (`gcd(0, 0) = 0`).
pub fn gcd(x1: &Array, x2: &Array) -> Result<Array> {
    let (a, b) = integer_args("gcd", x1, x2)?;
    let init = (magnitude(&a)?, magnitude(&b)?);
    let zero = lit(0.0, a.dtype())?;
    let cond = move |(_, b): (Array, Array)| {
        ok_or_raise(lax::ne(&b, &zero).and_then(|nz| any(&nz, All, false)))
    };
    let body = |(a, b): (Array, Array)| ok_or_raise(gcd_step(&a, &b));
    Ok(while_loop(cond, body, init)?.0)
}

/// `jnp.lcm(x1, x2)`: the least common multiple of the magnitudes
/// (0 when either is 0).
pub fn lcm(x1: &Array, x2: &Array) -> Result<Array> {
    let (a, b) = integer_args("lcm", x1, x2)?;
    let d = gcd(&a, &b)?;
    let zero = lit(0.0, a.dtype())?;
    let is_zero = lax::eq(&d, &zero)?;
    let safe = where_(&is_zero, &lit(1.0, a.dtype())?, &d)?;
    let m = magnitude(&multiply(&a, &floor_divide(&b, &safe)?)?)?;
    where_(&is_zero, &zero, &m)
}
