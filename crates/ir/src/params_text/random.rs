//! The codec of the random family's `impl=` param (`impl=fry`), and the
//! params text of its members without params (`random_unwrap`,
//! `random_fold_in`, `threefry2x32`); the other rows are in the table.

use super::{bad, Codec, ParamsText, ParseCx, PrintCx, Printed, Src};
use crate::parse::syntax::PResult;
use crate::primitive::{PrngImpl, RandomFoldInParams, RandomUnwrapParams, Threefry2x32Params};
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
