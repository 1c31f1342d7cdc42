//! GEMM epilogues: what a plan applies to each result after its whole
//! sum ([`Epilogue`]) and, with the bias values, what the GEMMs apply
//! ([`Epi`]): the register tiles of `microkernel` in their final store,
//! the other paths in a pass right after the product (`Epi::apply`).
//!
//! Invariant: `Epi::at` is the unfused program's `add` then the
//! interpreter's `max(x, 0)`, bit for bit (NaN payloads aside); the
//! vector relu of each tile family matches it (`microkernel`'s tests).

/// What a fused GEMM epilogue does to each result of a plan, after its
/// whole sum (and after the accumulation of `accumulate`): add the bias
/// value of its column (the last axis; the bias is one `[n]` operand),
/// then relu (`max(x, 0)` as the interpreter's NaN-propagating `max`:
/// NaN stays itself, `-0` and every non-positive value become `+0`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Epilogue {
    pub(crate) bias: bool,
    pub(crate) relu: bool,
}

impl Epilogue {
    /// Whether it does nothing.
    pub(crate) fn is_none(&self) -> bool {
        !self.bias && !self.relu
    }
}

/// An [`Epilogue`] with its bias values: `bias[j]` is column `j`'s.
#[derive(Clone, Copy)]
pub(super) struct Epi<'a, T> {
    pub(super) bias: Option<&'a [T]>,
    pub(super) relu: bool,
}

impl<T: Copy + PartialOrd + Default + std::ops::Add<Output = T>> Epi<'_, T> {
    /// Nothing to apply.
    pub(super) const NONE: Self = Epi {
        bias: None,
        relu: false,
    };

    /// The result `x` of column `j` after the epilogue: `x + bias[j]`
    /// (the unfused program's order), then relu (`x > 0` or NaN keeps
    /// `x`, else `+0`, the interpreter's `max(x, 0)`).
    #[inline(always)]
    pub(super) fn at(&self, j: usize, x: T) -> T {
        let x = match self.bias {
            Some(b) => x + b[j],
            None => x,
        };
        #[allow(clippy::eq_op)]
        let keep = !self.relu || x > T::default() || x != x;
        if keep {
            x
        } else {
            T::default()
        }
    }

    /// Applies the epilogue to the `m × n` results of `dst` (rows `drs`
    /// apart), in place.
    pub(super) fn apply(&self, m: usize, n: usize, dst: &mut [T], drs: usize) {
        if self.bias.is_none() && !self.relu {
            return;
        }
        for i in 0..m {
            for (j, v) in dst[i * drs..][..n].iter_mut().enumerate() {
                *v = self.at(j, *v);
            }
        }
    }

    /// The epilogue of the columns from `j0` on.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) fn at_col(&self, j0: usize) -> Self {
        Epi {
            bias: self.bias.map(|b| &b[j0..]),
            relu: self.relu,
        }
    }
}
