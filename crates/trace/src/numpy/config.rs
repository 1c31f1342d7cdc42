//! JAX's promotion switches for the NumPy API: `jax.numpy_dtype_promotion`
//! (`standard` or `strict`) and `jax.numpy_rank_promotion` (`allow`,
//! `warn` or `raise`), as guards that hold a mode for the current thread.
//!
//! Invariant: like JAX's config contexts, a mode is per thread and nests:
//! a guard restores the mode it replaced when it drops. The starting mode
//! of every thread is `standard`/`allow`, or what `JAXON_NUMPY_DTYPE_PROMOTION`
//! and `JAXON_NUMPY_RANK_PROMOTION` say (JAX's `JAX_NUMPY_*` variables).

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::OnceLock;

/// `jax_numpy_dtype_promotion`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtypePromotion {
    /// JAX's lattice: `f32 + i32` is `f32`.
    Standard,
    /// No implicit promotion between different dtypes; a weakly typed
    /// scalar (a Rust literal) still joins an array of its kind or a wider
    /// kind (`f32 + 1` is `f32`, `i32 + 1.0` an error).
    Strict,
}

/// `jax_numpy_rank_promotion`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankPromotion {
    /// Operands of lower rank get leading size-1 axes (NumPy).
    Allow,
    /// As `Allow`, with a `tracing` warning naming the shapes.
    Warn,
    /// Operands of different nonzero ranks are an error (scalars still
    /// broadcast).
    Raise,
}

fn env_default<T: Copy>(var: &str, parse: fn(&str) -> Option<T>, default: T) -> T {
    match std::env::var(var) {
        Ok(v) => parse(&v).unwrap_or_else(|| {
            tracing::warn!("{var}={v:?} is not a known mode; using the default");
            default
        }),
        Err(_) => default,
    }
}

fn default_dtype() -> DtypePromotion {
    static D: OnceLock<DtypePromotion> = OnceLock::new();
    *D.get_or_init(|| {
        env_default(
            "JAXON_NUMPY_DTYPE_PROMOTION",
            |v| match v {
                "standard" => Some(DtypePromotion::Standard),
                "strict" => Some(DtypePromotion::Strict),
                _ => None,
            },
            DtypePromotion::Standard,
        )
    })
}

fn default_rank() -> RankPromotion {
    static R: OnceLock<RankPromotion> = OnceLock::new();
    *R.get_or_init(|| {
        env_default(
            "JAXON_NUMPY_RANK_PROMOTION",
            |v| match v {
                "allow" => Some(RankPromotion::Allow),
                "warn" => Some(RankPromotion::Warn),
                "raise" => Some(RankPromotion::Raise),
                _ => None,
            },
            RankPromotion::Allow,
        )
    })
}

thread_local! {
    static DTYPE: Cell<Option<DtypePromotion>> = const { Cell::new(None) };
    static RANK: Cell<Option<RankPromotion>> = const { Cell::new(None) };
}

/// The dtype promotion mode of this thread.
pub fn dtype_promotion() -> DtypePromotion {
    DTYPE.with(Cell::get).unwrap_or_else(default_dtype)
}

/// The rank promotion mode of this thread.
pub fn rank_promotion() -> RankPromotion {
    RANK.with(Cell::get).unwrap_or_else(default_rank)
}

/// Holds a promotion mode on this thread until dropped; see
/// [`numpy_dtype_promotion`] and [`numpy_rank_promotion`].
#[must_use = "the mode holds only while the guard lives"]
pub struct PromotionGuard {
    restore: Restore,
    _not_send: PhantomData<*const ()>,
}

enum Restore {
    Dtype(Option<DtypePromotion>),
    Rank(Option<RankPromotion>),
}

impl Drop for PromotionGuard {
    fn drop(&mut self) {
        match self.restore {
            Restore::Dtype(d) => DTYPE.with(|c| c.set(d)),
            Restore::Rank(r) => RANK.with(|c| c.set(r)),
        }
    }
}

/// `with jax.numpy_dtype_promotion(mode):` — the NumPy API promotes dtypes
/// by `mode` on this thread while the guard lives.
///
/// ```
/// use jaxon_trace::numpy::{self as jnp, numpy_dtype_promotion, DtypePromotion};
/// use jaxon_trace::Array;
///
/// let x = Array::from_vec(vec![1f32, 2.0], &[2]);
/// let i = Array::from_vec(vec![1i32, 2], &[2]);
/// let _strict = numpy_dtype_promotion(DtypePromotion::Strict);
/// assert!(jnp::add(&x, &i).is_err());
/// assert!(jnp::add(&x, &Array::weak(1.0)).is_ok());
/// ```
pub fn numpy_dtype_promotion(mode: DtypePromotion) -> PromotionGuard {
    let prev = DTYPE.with(|c| c.replace(Some(mode)));
    PromotionGuard {
        restore: Restore::Dtype(prev),
        _not_send: PhantomData,
    }
}

/// `with jax.numpy_rank_promotion(mode):` — implicit rank promotion is
/// allowed, warned about or an error on this thread while the guard lives.
pub fn numpy_rank_promotion(mode: RankPromotion) -> PromotionGuard {
    let prev = RANK.with(|c| c.replace(Some(mode)));
    PromotionGuard {
        restore: Restore::Rank(prev),
        _not_send: PhantomData,
    }
}
