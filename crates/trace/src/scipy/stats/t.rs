//! `jax.scipy.stats.t`: Student's t distribution with `df` degrees of
//! freedom (`logpdf`, `pdf`).

use super::{exp_of, k, loc_or_0, promote, scale_or_1, standardize};
use crate::array::Array;
use crate::error::Result;
use crate::lax;

/// `t.logpdf(x, df, loc=0, scale=1)`: `lgamma((df+1)/2) - lgamma(df/2) -
/// log(pi df scale^2)/2 - (df+1)/2 log1p(y^2 / df)`.
pub fn logpdf(x: &Array, df: &Array, loc: Option<&Array>, scale: Option<&Array>) -> Result<Array> {
    let v = promote("t.logpdf", &[x, df, &loc_or_0(loc), &scale_or_1(scale)])?;
    let (x, df, loc, scale) = (&v[0], &v[1], &v[2], &v[3]);
    let two = k(x, 2.0)?;
    let y = standardize(x, loc, scale)?;
    let half_df = lax::div(df, &two)?;
    let half_df1 = lax::add(&half_df, &k(x, 0.5)?)?;
    let nconst = lax::mul(&lax::mul(scale, scale)?, &k(x, std::f64::consts::PI)?)?;
    let ntmp = lax::div(&lax::log(&lax::mul(&nconst, df)?)?, &two)?;
    let normalize = lax::sub(
        &lax::add(&lax::lgamma(&half_df)?, &ntmp)?,
        &lax::lgamma(&half_df1)?,
    )?;
    let quadratic = lax::div(&lax::mul(&y, &y)?, df)?;
    lax::neg(&lax::add(
        &normalize,
        &lax::mul(&half_df1, &lax::log1p(&quadratic)?)?,
    )?)
}

exp_of! {
    /// `t.pdf(x, df, loc=0, scale=1)`: `exp(logpdf)`.
    pdf = logpdf(x: &Array, df: &Array, loc: Option<&Array>, scale: Option<&Array>)
}
