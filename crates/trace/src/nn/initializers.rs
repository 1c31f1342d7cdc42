//! `jax.nn.initializers`: functions `(key, shape, dtype) -> Array` that
//! draw initial parameters, in the op sequences of JAX 0.10.2 so the
//! values agree with JAX's for the same key (bit for bit where only
//! `uniform` is involved; within the backend's `erf`/`erf_inv` rounding
//! for the normal ones).
//!
//! An [`Initializer`] is called with [`Initializer::init`], as JAX calls
//! `init(key, shape, dtype)`:
//!
//! ```
//! use jaxon_trace::{nn::initializers, random};
//! use jaxon_ir::DType;
//! let w = initializers::glorot_uniform().init(&random::key(0), &[3, 4], DType::F32)?;
//! assert_eq!(w.shape(), vec![3, 4]);
//! # Ok::<(), jaxon_trace::Error>(())
//! ```

use super::lit;
use crate::array::Array;
use crate::error::{Error, Result};
use crate::{lax, numpy as jnp, random};
use jaxon_ir::DType;
use std::fmt;
use std::sync::Arc;

type InitFn = dyn Fn(&Array, &[usize], DType) -> Result<Array> + Send + Sync;

/// An initializer: `init(key, shape, dtype)` draws an array.
#[derive(Clone)]
pub struct Initializer {
    name: &'static str,
    f: Arc<InitFn>,
}

impl fmt::Debug for Initializer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Initializer({})", self.name)
    }
}

impl Initializer {
    /// An initializer from a function of `(key, shape, dtype)`.
    pub fn new(
        name: &'static str,
        f: impl Fn(&Array, &[usize], DType) -> Result<Array> + Send + Sync + 'static,
    ) -> Initializer {
        Initializer {
            name,
            f: Arc::new(f),
        }
    }

    /// Draws an array of `shape` and `dtype` from `key`.
    pub fn init(&self, key: &Array, shape: &[usize], dtype: DType) -> Result<Array> {
        (self.f)(key, shape, dtype)
    }
}

fn float_only(name: &str, dtype: DType) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "nn.initializers.{name}: dtype must be a float dtype, got {}",
            dtype.short_name()
        )))
    }
}

/// `zeros`: an array of zeros.
pub fn zeros() -> Initializer {
    Initializer::new("zeros", |_, shape, dtype| jnp::zeros(shape, dtype))
}

/// `ones`: an array of ones.
pub fn ones() -> Initializer {
    Initializer::new("ones", |_, shape, dtype| jnp::ones(shape, dtype))
}

/// `constant(value)`: an array filled with `value`.
pub fn constant(value: f64) -> Initializer {
    Initializer::new("constant", move |_, shape, dtype| {
        jnp::full(shape, &Array::weak(value), Some(dtype))
    })
}

/// `normal(stddev)`: normal values with standard deviation `stddev` (JAX's
/// default is `1e-2`).
pub fn normal(stddev: f64) -> Initializer {
    Initializer::new("normal", move |key, shape, dtype| {
        float_only("normal", dtype)?;
        lax::mul(&random::normal(key, shape, dtype)?, &lit(stddev, dtype)?)
    })
}

/// `uniform(scale)`: uniform values in `[0, scale)` (JAX's default is
/// `1e-2`).
pub fn uniform(scale: f64) -> Initializer {
    Initializer::new("uniform", move |key, shape, dtype| {
        float_only("uniform", dtype)?;
        let u = random::uniform(key, shape, dtype, &Array::weak(0.0), &Array::weak(1.0))?;
        lax::mul(&u, &lit(scale, dtype)?)
    })
}

/// `truncated_normal(stddev, lower, upper)`: normal values truncated to
/// `(lower, upper)` standard deviations, times `stddev` (JAX's defaults
/// are `1e-2`, `-2`, `2`).
pub fn truncated_normal(stddev: f64, lower: f64, upper: f64) -> Initializer {
    Initializer::new("truncated_normal", move |key, shape, dtype| {
        float_only("truncated_normal", dtype)?;
        let x =
            random::truncated_normal(key, &Array::weak(lower), &Array::weak(upper), shape, dtype)?;
        lax::mul(&x, &lit(stddev, dtype)?)
    })
}

/// The fan a [`variance_scaling`] initializer divides `scale` by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    /// `"fan_in"`: the number of inputs.
    FanIn,
    /// `"fan_out"`: the number of outputs.
    FanOut,
    /// `"fan_avg"`: their mean.
    FanAvg,
    /// `"fan_geo_avg"`: their geometric mean.
    FanGeoAvg,
}

/// The distribution a [`variance_scaling`] initializer draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// `"truncated_normal"`: a normal truncated to two standard deviations,
    /// rescaled to the variance.
    TruncatedNormal,
    /// `"normal"`.
    Normal,
    /// `"uniform"`: uniform in `±sqrt(3 · variance)`.
    Uniform,
}

/// The input, output and batch axes of a weight tensor: negative axes
/// count from the end, as in JAX.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FanAxes {
    /// Input axes (JAX's default: `-2`).
    pub in_axes: Vec<isize>,
    /// Output axes (default `-1`).
    pub out_axes: Vec<isize>,
    /// Batch axes (default none).
    pub batch_axes: Vec<isize>,
}

impl Default for FanAxes {
    fn default() -> FanAxes {
        FanAxes {
            in_axes: vec![-2],
            out_axes: vec![-1],
            batch_axes: Vec::new(),
        }
    }
}

/// `(fan_in, fan_out)` of a weight tensor of `shape` (JAX's
/// `_compute_fans`): the input and output sizes times the receptive field
/// (every other non-batch axis).
pub fn compute_fans(shape: &[usize], axes: &FanAxes) -> Result<(f64, f64)> {
    let rank = shape.len() as isize;
    if axes == &FanAxes::default() && rank <= 1 {
        return Err(Error::InvalidArgument(format!(
            "nn.initializers: can't compute input and output sizes of a \
             {rank}-dimensional weights tensor with the default in_axis; it must \
             be at least 2D, or give the axes explicitly"
        )));
    }
    let size = |ax: &[isize]| -> Result<f64> {
        ax.iter().try_fold(1.0, |acc, &a| {
            let d = if a < 0 { a + rank } else { a };
            usize::try_from(d)
                .ok()
                .and_then(|d| shape.get(d))
                .map(|&n| acc * n as f64)
                .ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "nn.initializers: axis {a} is out of range for shape {shape:?}"
                    ))
                })
        })
    };
    let (in_size, out_size) = (size(&axes.in_axes)?, size(&axes.out_axes)?);
    let batch_size = size(&axes.batch_axes)?;
    let total: f64 = shape.iter().map(|&n| n as f64).product();
    let receptive_field = total / in_size / out_size / batch_size;
    Ok((in_size * receptive_field, out_size * receptive_field))
}

/// `variance_scaling(scale, mode, distribution)` with JAX's default axes.
pub fn variance_scaling(scale: f64, mode: FanMode, distribution: Distribution) -> Initializer {
    variance_scaling_axes(scale, mode, distribution, FanAxes::default())
}

/// `variance_scaling(scale, mode, distribution, in_axis, out_axis,
/// batch_axis)`: values of variance `scale / fan`.
pub fn variance_scaling_axes(
    scale: f64,
    mode: FanMode,
    distribution: Distribution,
    axes: FanAxes,
) -> Initializer {
    Initializer::new("variance_scaling", move |key, shape, dtype| {
        float_only("variance_scaling", dtype)?;
        let (fan_in, fan_out) = compute_fans(shape, &axes)?;
        let denominator = match mode {
            FanMode::FanIn => fan_in,
            FanMode::FanOut => fan_out,
            FanMode::FanAvg => (fan_in + fan_out) / 2.0,
            FanMode::FanGeoAvg => (fan_in * fan_out).sqrt(),
        };
        // The variance is rounded to `dtype` first, as JAX's `jnp.array`.
        let variance = lit(scale / denominator, dtype)?;
        match distribution {
            Distribution::TruncatedNormal => {
                // The standard deviation of a standard normal truncated to
                // (-2, 2).
                let stddev = lax::div(
                    &lax::sqrt(&variance)?,
                    &lit(0.879_625_661_034_239_8, dtype)?,
                )?;
                let x = random::truncated_normal(
                    key,
                    &Array::weak(-2.0),
                    &Array::weak(2.0),
                    shape,
                    dtype,
                )?;
                lax::mul(&x, &stddev)
            }
            Distribution::Normal => {
                lax::mul(&random::normal(key, shape, dtype)?, &lax::sqrt(&variance)?)
            }
            Distribution::Uniform => {
                let u = random::uniform(key, shape, dtype, &Array::weak(-1.0), &Array::weak(1.0))?;
                let three = lax::mul(&Array::weak(3.0), &variance)?;
                lax::mul(&u, &lax::sqrt(&three)?)
            }
        }
    })
}

/// `glorot_uniform` (`xavier_uniform`): variance scaling 1, fan average,
/// uniform.
pub fn glorot_uniform() -> Initializer {
    variance_scaling(1.0, FanMode::FanAvg, Distribution::Uniform)
}

/// `glorot_normal` (`xavier_normal`): variance scaling 1, fan average,
/// truncated normal.
pub fn glorot_normal() -> Initializer {
    variance_scaling(1.0, FanMode::FanAvg, Distribution::TruncatedNormal)
}

/// `lecun_uniform`: variance scaling 1, fan in, uniform.
pub fn lecun_uniform() -> Initializer {
    variance_scaling(1.0, FanMode::FanIn, Distribution::Uniform)
}

/// `lecun_normal`: variance scaling 1, fan in, truncated normal.
pub fn lecun_normal() -> Initializer {
    variance_scaling(1.0, FanMode::FanIn, Distribution::TruncatedNormal)
}

/// `he_uniform` (`kaiming_uniform`): variance scaling 2, fan in, uniform.
pub fn he_uniform() -> Initializer {
    variance_scaling(2.0, FanMode::FanIn, Distribution::Uniform)
}

/// `he_normal` (`kaiming_normal`): variance scaling 2, fan in, truncated
/// normal.
pub fn he_normal() -> Initializer {
    variance_scaling(2.0, FanMode::FanIn, Distribution::TruncatedNormal)
}

pub use glorot_normal as xavier_normal;
pub use glorot_uniform as xavier_uniform;
pub use he_normal as kaiming_normal;
pub use he_uniform as kaiming_uniform;

/// `orthogonal(scale, column_axis)`: a draw whose columns along
/// `column_axis` are orthonormal (or whose rows are, when there are fewer
/// of them), uniform under the Haar measure, times `scale`. The shape has
/// at least 2 axes; `column_axis` counts from the end when negative.
pub fn orthogonal(scale: f64, column_axis: isize) -> Initializer {
    Initializer::new("orthogonal", move |key, shape, dtype| {
        float_only("orthogonal", dtype)?;
        if shape.len() < 2 {
            return Err(Error::InvalidArgument(format!(
                "nn.initializers.orthogonal: the shape needs at least 2 axes, got {shape:?}"
            )));
        }
        let axis = normalize_axis(column_axis, shape.len())?;
        if shape.contains(&0) {
            return jnp::zeros(shape, dtype);
        }
        let n_cols = shape[axis];
        let n_rows = shape.iter().product::<usize>() / n_cols;
        let q = random::orthogonal(key, n_rows, &[], dtype, Some(n_cols))?;
        let mut rows_then_cols: Vec<isize> = shape
            .iter()
            .enumerate()
            .filter(|&(d, _)| d != axis)
            .map(|(_, &s)| s as isize)
            .collect();
        rows_then_cols.push(n_cols as isize);
        let q = jnp::reshape(&q, &rows_then_cols)?;
        let q = jnp::moveaxis(&q, &[-1], &[axis as isize])?;
        lax::mul(&lit(scale, dtype)?, &q)
    })
}

/// `delta_orthogonal(scale, column_axis)`: a convolution kernel of rank 3,
/// 4 or 5 (spatial axes, then in and out features, in ≤ out) that is zero
/// except at the spatial centre, where it holds an [`orthogonal`] matrix.
pub fn delta_orthogonal(scale: f64, column_axis: isize) -> Initializer {
    Initializer::new("delta_orthogonal", move |key, shape, dtype| {
        float_only("delta_orthogonal", dtype)?;
        let r = shape.len();
        if !(3..=5).contains(&r) {
            return Err(Error::InvalidArgument(format!(
                "nn.initializers.delta_orthogonal: the shape needs 3, 4 or 5 axes, got {shape:?}"
            )));
        }
        let (fan_in, fan_out) = (shape[r - 2], shape[r - 1]);
        if fan_out < fan_in {
            return Err(Error::InvalidArgument(format!(
                "nn.initializers.delta_orthogonal: fan_in ({fan_in}) must be at most fan_out ({fan_out})"
            )));
        }
        let ortho = orthogonal(scale, column_axis).init(key, &[fan_in, fan_out], dtype)?;
        let mut one_site = vec![1usize; r - 2];
        one_site.extend([fan_in, fan_out]);
        let ortho = lax::reshape(&ortho, &one_site)?;
        let starts = shape[..r - 2]
            .iter()
            .map(|&k| (k.saturating_sub(1) / 2) as i32)
            .chain([0, 0])
            .map(Array::scalar)
            .collect::<Vec<_>>();
        lax::dynamic_update_slice(&jnp::zeros(shape, dtype)?, &ortho, &starts)
    })
}

fn normalize_axis(axis: isize, rank: usize) -> Result<usize> {
    let a = if axis < 0 { axis + rank as isize } else { axis };
    usize::try_from(a)
        .ok()
        .filter(|&a| a < rank)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "nn.initializers: axis {axis} is out of bounds for rank {rank}"
            ))
        })
}
