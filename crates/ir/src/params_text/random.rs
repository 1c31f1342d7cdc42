//! The codecs of the random family's `impl=` param (`impl=fry`) and of
//! `rng_bit_generator`'s `algorithm=` (`RNG_PHILOX`), and the
//! params text of its members without params (`random_unwrap`,
//! `random_fold_in`, `threefry2x32`); the other rows are in the table.

use super::{bad, Codec, ParamsText, ParseCx, PrintCx, Printed, Src};
use crate::parse::syntax::PResult;
use crate::primitive::{
    PrngImpl, RandomAlgorithm, RandomFoldInParams, RandomUnwrapParams, Threefry2x32Params,
};
use crate::print::PV;

/// A PRNG implementation's name: `fry`.
pub(crate) struct Impl;

impl Codec<PrngImpl> for Impl {
    fn print(v: &PrngImpl) -> PV<'_> {
        PV::Text(v.name().to_string())
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<PrngImpl> {
        let s = cx.p.src(v);
        PrngImpl::ALL
            .into_iter()
            .find(|i| i.name() == s)
            .ok_or_else(|| bad(cx, v, "a PRNG implementation (`fry`)"))
    }
}

/// An `rng_bit_generator` algorithm by its member name: `RNG_DEFAULT`,
/// `RNG_THREE_FRY`, `RNG_PHILOX`.
pub(crate) struct Alg;

impl Codec<RandomAlgorithm> for Alg {
    fn print(v: &RandomAlgorithm) -> PV<'_> {
        PV::Text(v.name().to_string())
    }
    fn parse(cx: &mut ParseCx<'_, '_, '_>, v: &Src) -> PResult<RandomAlgorithm> {
        let s = cx.p.src(v);
        RandomAlgorithm::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                bad(
                    cx,
                    v,
                    "a random algorithm (`RNG_DEFAULT`, `RNG_THREE_FRY`, `RNG_PHILOX`)",
                )
            })
    }
}

/// `ParamsText` for params structs that print nothing.
macro_rules! no_params {
    ($($ty:ident),*) => {$(
        impl ParamsText for $ty {
            fn print<'a>(&'a self, _: &PrintCx<'_>, _: &mut Printed<'a>) {}
            fn parse(_: &mut ParseCx<'_, '_, '_>) -> PResult<Self> {
                Ok($ty)
            }
        }
    )*};
}

no_params!(RandomUnwrapParams, RandomFoldInParams, Threefry2x32Params);
