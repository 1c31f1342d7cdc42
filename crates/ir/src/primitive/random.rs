//! The random family: JAX's typed-key PRNG primitives (`random_seed`,
//! `random_wrap`, `random_unwrap`, `random_bits`, `random_split`,
//! `random_fold_in`), the `threefry2x32` hash, `random_gamma`, and XLA's
//! stateless `rng_bit_generator`.
//!
//! Keys are arrays of dtype `key<fry>` ([`crate::DType::KeyFry`]); one key
//! element holds the two `u32` words of a threefry2x32 key.
//! `rng_bit_generator` takes raw keys instead: a `u32[4]` (JAX's form) or a
//! `u64[2]`, holding XLA's 128-bit generator state.

/// A PRNG implementation, as JAX names it in `impl=` params.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrngImpl {
    /// threefry2x32 (JAX's default), printed `fry`.
    Fry,
}

impl PrngImpl {
    /// Every implementation.
    pub const ALL: [PrngImpl; 1] = [PrngImpl::Fry];

    /// The name JAX prints (`fry`).
    pub fn name(self) -> &'static str {
        match self {
            PrngImpl::Fry => "fry",
        }
    }

    /// The dtype of keys of this implementation.
    pub fn key_dtype(self) -> crate::DType {
        match self {
            PrngImpl::Fry => crate::DType::KeyFry,
        }
    }

    /// The number of `u32` words of one key.
    pub fn key_words(self) -> usize {
        match self {
            PrngImpl::Fry => 2,
        }
    }
}

/// The typed-key PRNG primitives.
///
/// Family invariant: no member holds a jaxpr or touches a `Ref`.
#[derive(Clone, Debug, PartialEq)]
pub enum Random {
    /// `random_seed[impl=fry] seeds`: integer seeds to keys of the same shape.
    Seed(RandomSeedParams),
    /// `random_wrap[impl=fry] data`: `u32[..., 2]` key data to keys `key<fry>[...]`.
    Wrap(RandomWrapParams),
    /// `random_unwrap keys`: keys `key<fry>[...]` to their data `u32[..., 2]`.
    Unwrap(RandomUnwrapParams),
    /// `random_bits[bit_width shape] key`: uniform bits from one key.
    Bits(RandomBitsParams),
    /// `random_split[shape] keys`: each key split into `shape` new keys.
    Split(RandomSplitParams),
    /// `random_fold_in keys msgs`: keys mixed with `u32` data.
    FoldIn(RandomFoldInParams),
    /// `threefry2x32 k0 k1 x0 x1`: the threefry2x32 block cipher on `u32`s.
    Threefry2x32(Threefry2x32Params),
    /// `random_gamma[log_space] keys a`: one Gamma(a, 1) sample per key.
    Gamma(RandomGammaParams),
    /// `rng_bit_generator[algorithm dtype out_sharding shape] key`: XLA's
    /// `RngBitGenerator`, the new key and unsigned bits of `shape`.
    RngBitGenerator(RngBitGeneratorParams),
}

impl Random {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Random::Seed(_) => "random_seed",
            Random::Wrap(_) => "random_wrap",
            Random::Unwrap(_) => "random_unwrap",
            Random::Bits(_) => "random_bits",
            Random::Split(_) => "random_split",
            Random::FoldIn(_) => "random_fold_in",
            Random::Threefry2x32(_) => "threefry2x32",
            Random::Gamma(_) => "random_gamma",
            Random::RngBitGenerator(_) => "rng_bit_generator",
        }
    }
}

/// The params of `random_seed`.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomSeedParams {
    /// The implementation of the keys made.
    pub impl_: PrngImpl,
}

/// The params of `random_wrap`.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomWrapParams {
    /// The implementation of the keys made.
    pub impl_: PrngImpl,
}

/// The params of `random_unwrap` (none).
#[derive(Clone, Debug, PartialEq)]
pub struct RandomUnwrapParams;

/// The params of `random_bits`.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomBitsParams {
    /// 8, 16, 32 or 64: the width of the unsigned result dtype.
    pub bit_width: u32,
    /// The shape of the bits drawn from each key.
    pub shape: Vec<usize>,
}

/// The params of `random_split`.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomSplitParams {
    /// The shape of the keys each key splits into.
    pub shape: Vec<usize>,
}

/// The params of `random_fold_in` (none).
#[derive(Clone, Debug, PartialEq)]
pub struct RandomFoldInParams;

/// The params of `threefry2x32` (none).
#[derive(Clone, Debug, PartialEq)]
pub struct Threefry2x32Params;

/// The params of `random_gamma`.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomGammaParams {
    /// Whether the sample is returned as its logarithm.
    pub log_space: bool,
}

/// The bit-generation algorithm of `rng_bit_generator` (JAX's
/// `lax.RandomAlgorithm`, printed by its member name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RandomAlgorithm {
    /// The platform's default; XLA's CPU (and so jaxon) uses Philox.
    Default,
    /// Threefry-2x32 with XLA's counter layout.
    ThreeFry,
    /// Philox-4x32 with 10 rounds.
    Philox,
}

impl RandomAlgorithm {
    /// Every algorithm.
    pub const ALL: [RandomAlgorithm; 3] = [
        RandomAlgorithm::Default,
        RandomAlgorithm::ThreeFry,
        RandomAlgorithm::Philox,
    ];

    /// The name JAX prints (`RNG_DEFAULT`, `RNG_THREE_FRY`, `RNG_PHILOX`).
    pub fn name(self) -> &'static str {
        match self {
            RandomAlgorithm::Default => "RNG_DEFAULT",
            RandomAlgorithm::ThreeFry => "RNG_THREE_FRY",
            RandomAlgorithm::Philox => "RNG_PHILOX",
        }
    }
}

/// The params of `rng_bit_generator` (`out_sharding` always prints `None`).
#[derive(Clone, Debug, PartialEq)]
pub struct RngBitGeneratorParams {
    /// The bit-generation algorithm.
    pub algorithm: RandomAlgorithm,
    /// The dtype of the bits: `u8`, `u16`, `u32` or `u64`.
    pub dtype: crate::DType,
    /// The shape of the bits.
    pub shape: Vec<usize>,
}
