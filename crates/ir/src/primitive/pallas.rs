//! The pallas family of primitives and their params.

use super::*;

/// Pallas kernel primitives: the grid queries, masked loads and stores, atomics over `Ref`s, and `pallas_call` itself, which holds the kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum Pallas {
    /// `program_id[axis]`: this program's index along a grid axis.
    ProgramId(ProgramIdParams),
    /// `num_programs[axis]`: the grid size along an axis.
    NumPrograms(NumProgramsParams),
    /// Masked `load`: `y <- ref[idx] mask=m other=o`.
    Load(LoadParams),
    /// Masked `store`: `ref[idx] <- v mask=m`.
    Store(StoreParams),
    /// `atomic_rmw[atomic_type]`: returns the old value.
    AtomicRmw(AtomicRmwParams),
    /// `atomic_cas`: compare-and-swap, returns the old value.
    AtomicCas(AtomicCasParams),
    /// `pallas_call`: runs `kernel` once per grid point on blocks.
    PallasCall(PallasCallParams),
}

impl Pallas {
    /// The name JAX prints.
    pub fn name(&self) -> &'static str {
        match self {
            Pallas::ProgramId(_) => "program_id",
            Pallas::NumPrograms(_) => "num_programs",
            Pallas::Load(_) => "load",
            Pallas::Store(_) => "store",
            Pallas::AtomicRmw(_) => "atomic_rmw",
            Pallas::AtomicCas(_) => "atomic_cas",
            Pallas::PallasCall(_) => "pallas_call",
        }
    }
}

/// The params of `program_id`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramIdParams {
    /// The grid axis.
    pub axis: usize,
}

/// The params of `num_programs`.
#[derive(Clone, Debug, PartialEq)]
pub struct NumProgramsParams {
    /// The grid axis.
    pub axis: usize,
}

/// The params of `load`.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadParams {
    /// Indexers.
    pub indexers: Vec<Indexer>,
    /// A mask operand follows the indices.
    pub has_mask: bool,
    /// An `other` operand follows the mask.
    pub has_other: bool,
}

/// The params of `store`.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreParams {
    /// Indexers.
    pub indexers: Vec<Indexer>,
    /// A mask operand follows the value.
    pub has_mask: bool,
}

/// The params of `atomic_rmw`.
#[derive(Clone, Debug, PartialEq)]
pub struct AtomicRmwParams {
    /// Indexers.
    pub indexers: Vec<Indexer>,
    /// The operation.
    pub op: AtomicOp,
}

/// The params of `atomic_cas`.
#[derive(Clone, Debug, PartialEq)]
pub struct AtomicCasParams {
    /// Indexers.
    pub indexers: Vec<Indexer>,
}

/// The params of `pallas_call`.
#[derive(Clone, Debug, PartialEq)]
pub struct PallasCallParams {
    /// The kernel over `Ref`s: inputs, then outputs.
    pub kernel: Arc<Jaxpr>,
    /// Grid sizes.
    pub grid: Vec<usize>,
    /// One mapping per input, then per output.
    pub block_mappings: Vec<BlockMapping>,
    /// Result types.
    pub out_avals: Vec<ShapedArray>,
    /// Kernel name, if any.
    pub name: Option<String>,
    /// Run on the reference interpreter.
    pub interpret: bool,
    /// Print debugging output.
    pub debug: bool,
    /// `(input, output)` pairs that share a buffer.
    pub input_output_aliases: Vec<(usize, usize)>,
}

impl Pallas {
    /// The jaxprs in this primitive's params: `pallas_call`'s kernel, then
    /// each block mapping's index map.
    pub fn param_jaxprs(&self) -> Vec<ParamJaxpr<'_>> {
        match self {
            Pallas::PallasCall(p) => {
                let mut v = vec![at("kernel", NestedJaxpr::Open(&p.kernel))];
                v.extend(
                    p.block_mappings
                        .iter()
                        .map(|b| at("index_map", NestedJaxpr::Closed(&b.index_map))),
                );
                v
            }
            Pallas::ProgramId(_)
            | Pallas::NumPrograms(_)
            | Pallas::Load(_)
            | Pallas::Store(_)
            | Pallas::AtomicRmw(_)
            | Pallas::AtomicCas(_) => Vec::new(),
        }
    }

    /// The slots of [`Pallas::param_jaxprs`], mutably, in the same order.
    pub fn param_jaxprs_mut(&mut self) -> Vec<NestedJaxprMut<'_>> {
        match self {
            Pallas::PallasCall(p) => {
                let mut v = vec![NestedJaxprMut::Open(&mut p.kernel)];
                v.extend(
                    p.block_mappings
                        .iter_mut()
                        .map(|b| NestedJaxprMut::Closed(&mut b.index_map)),
                );
                v
            }
            Pallas::ProgramId(_)
            | Pallas::NumPrograms(_)
            | Pallas::Load(_)
            | Pallas::Store(_)
            | Pallas::AtomicRmw(_)
            | Pallas::AtomicCas(_) => Vec::new(),
        }
    }

    /// Whether the primitive writes through its `Ref` operand.
    pub fn writes_refs(&self) -> bool {
        match self {
            Pallas::Store(_) | Pallas::AtomicRmw(_) | Pallas::AtomicCas(_) => true,
            Pallas::ProgramId(_) | Pallas::NumPrograms(_) | Pallas::Load(_) => false,
            Pallas::PallasCall(_) => false,
        }
    }
}
