//! `BlockSpec`: how an operand is cut into blocks. The `index_map` closure
//! maps grid indices to *block* indices; it is traced to a jaxpr (one `i32`
//! scalar input per grid axis, one integer scalar output per block
//! dimension) and stored in the `pallas_call` equation's `BlockMapping`.

use crate::index::IntoValue;
use jaxon_ir::primitive::{BlockDim, BlockMapping};
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{Aval, DType, ShapedArray};
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::stage::{close, trace_flat, StageMode};
use jaxon_trace::Array;
use std::fmt;
use std::sync::Arc;

type IndexMapFn = dyn Fn(&[Array]) -> Vec<Array> + Send + Sync;

/// `pl.BlockSpec(block_shape, index_map)`. A `None` block dimension is
/// squeezed out of the kernel's `Ref`; [`BlockSpec::whole`] (or a missing
/// spec) is the whole array.
#[derive(Clone)]
pub struct BlockSpec {
    block_shape: Option<Vec<Option<usize>>>,
    index_map: Option<Arc<IndexMapFn>>,
    /// The number of grid indices the closure takes, when it says.
    arity: Option<usize>,
}

impl fmt::Debug for BlockSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockSpec")
            .field("block_shape", &self.block_shape)
            .field("arity", &self.arity)
            .finish()
    }
}

/// What an `index_map` returns: one block index per block dimension.
pub trait IndexMapOutput {
    /// The block indices.
    fn into_indices(self) -> Vec<Array>;
}

impl IndexMapOutput for Array {
    fn into_indices(self) -> Vec<Array> {
        vec![self]
    }
}

impl IndexMapOutput for &Array {
    fn into_indices(self) -> Vec<Array> {
        vec![self.clone()]
    }
}

impl IndexMapOutput for i32 {
    fn into_indices(self) -> Vec<Array> {
        vec![Array::weak(self)]
    }
}

impl IndexMapOutput for Vec<Array> {
    fn into_indices(self) -> Vec<Array> {
        self
    }
}

impl IndexMapOutput for () {
    fn into_indices(self) -> Vec<Array> {
        Vec::new()
    }
}

macro_rules! tuple_output {
    ($($t:ident $v:ident),*) => {
        impl<$($t: IntoValue),*> IndexMapOutput for ($($t,)*) {
            fn into_indices(self) -> Vec<Array> {
                let ($($v,)*) = self;
                vec![$($v.into_value()),*]
            }
        }
    };
}

tuple_output!(A a);
tuple_output!(A a, B b);
tuple_output!(A a, B b, C c);
tuple_output!(A a, B b, C c, D d);
tuple_output!(A a, B b, C c, D d, E e);

/// A block shape: sizes, with `None` for a squeezed dimension.
pub trait IntoBlockShape {
    /// The block shape.
    fn into_block_shape(self) -> Vec<Option<usize>>;
}

impl IntoBlockShape for Vec<Option<usize>> {
    fn into_block_shape(self) -> Vec<Option<usize>> {
        self
    }
}

impl IntoBlockShape for &[Option<usize>] {
    fn into_block_shape(self) -> Vec<Option<usize>> {
        self.to_vec()
    }
}

impl<const N: usize> IntoBlockShape for [Option<usize>; N] {
    fn into_block_shape(self) -> Vec<Option<usize>> {
        self.to_vec()
    }
}

impl<const N: usize> IntoBlockShape for [usize; N] {
    fn into_block_shape(self) -> Vec<Option<usize>> {
        self.iter().map(|&n| Some(n)).collect()
    }
}

impl IntoBlockShape for &[usize] {
    fn into_block_shape(self) -> Vec<Option<usize>> {
        self.iter().map(|&n| Some(n)).collect()
    }
}

impl IntoBlockShape for Vec<usize> {
    fn into_block_shape(self) -> Vec<Option<usize>> {
        self.into_iter().map(Some).collect()
    }
}

impl BlockSpec {
    /// A block spec whose `index_map` gets all grid indices as a slice.
    pub fn new<R: IndexMapOutput>(
        block_shape: impl IntoBlockShape,
        index_map: impl Fn(&[Array]) -> R + Send + Sync + 'static,
    ) -> BlockSpec {
        BlockSpec {
            block_shape: Some(block_shape.into_block_shape()),
            index_map: Some(Arc::new(move |g: &[Array]| index_map(g).into_indices())),
            arity: None,
        }
    }

    /// A block spec whose `index_map` takes no grid index (a grid of rank 0).
    pub fn map0<R: IndexMapOutput>(
        block_shape: impl IntoBlockShape,
        index_map: impl Fn() -> R + Send + Sync + 'static,
    ) -> BlockSpec {
        BlockSpec {
            arity: Some(0),
            ..BlockSpec::new(block_shape, move |_| index_map())
        }
    }

    /// A block spec whose `index_map` takes one grid index: `|i| i`.
    pub fn map1<R: IndexMapOutput>(
        block_shape: impl IntoBlockShape,
        index_map: impl Fn(Array) -> R + Send + Sync + 'static,
    ) -> BlockSpec {
        BlockSpec {
            arity: Some(1),
            ..BlockSpec::new(block_shape, move |g| index_map(g[0].clone()))
        }
    }

    /// A block spec whose `index_map` takes two grid indices: `|i, j| (i, j)`.
    pub fn map2<R: IndexMapOutput>(
        block_shape: impl IntoBlockShape,
        index_map: impl Fn(Array, Array) -> R + Send + Sync + 'static,
    ) -> BlockSpec {
        BlockSpec {
            arity: Some(2),
            ..BlockSpec::new(block_shape, move |g| index_map(g[0].clone(), g[1].clone()))
        }
    }

    /// A block spec whose `index_map` takes three grid indices.
    pub fn map3<R: IndexMapOutput>(
        block_shape: impl IntoBlockShape,
        index_map: impl Fn(Array, Array, Array) -> R + Send + Sync + 'static,
    ) -> BlockSpec {
        BlockSpec {
            arity: Some(3),
            ..BlockSpec::new(block_shape, move |g| {
                index_map(g[0].clone(), g[1].clone(), g[2].clone())
            })
        }
    }

    /// `pl.BlockSpec()`: the whole array, at block index zero.
    pub fn whole() -> BlockSpec {
        BlockSpec {
            block_shape: None,
            index_map: None,
            arity: None,
        }
    }
}

/// `(2,)`, `(None, 128)`: a block shape as Python prints the tuple.
pub(crate) fn fmt_block_shape(b: &[Option<usize>]) -> String {
    let parts: Vec<String> = b
        .iter()
        .map(|d| d.map_or("None".to_string(), |n| n.to_string()))
        .collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

/// The block mapping of one operand (`origin` is `args[k]` or
/// `outputs[k]`) on a grid of rank `grid_rank`.
pub(crate) fn block_mapping(
    spec: &BlockSpec,
    origin: &str,
    array: &ShapedArray,
    grid_rank: usize,
) -> Result<BlockMapping> {
    let shape = jaxon_ir::aval::static_sizes(&array.shape).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "pallas_call: {origin} has a dynamic shape {}",
            jaxon_ir::shape::fmt_ty(array)
        ))
    })?;
    let block_shape = match &spec.block_shape {
        Some(b) => b.clone(),
        None => shape.iter().map(|&n| Some(n)).collect(),
    };
    if block_shape.len() != shape.len() {
        return Err(Error::InvalidArgument(format!(
            "Block shape for {origin} (= {}) must have the same number of dimensions as the \
             array shape {}.",
            fmt_block_shape(&block_shape),
            py_tuple(&shape)
        )));
    }
    if let Some(d) = block_shape.iter().position(|b| *b == Some(0)) {
        return Err(Error::InvalidArgument(format!(
            "Block shape for {origin} (= {}) has a zero-sized dimension {d}.",
            fmt_block_shape(&block_shape)
        )));
    }
    if let Some(a) = spec.arity.filter(|a| *a != grid_rank) {
        return Err(Error::InvalidArgument(format!(
            "Index map function for {origin} takes {a} argument(s) but the grid has rank \
             {grid_rank}; an index map takes one index per grid axis."
        )));
    }
    let rank = shape.len();
    let grid_avals = vec![Aval::Array(ShapedArray::scalar(DType::I32)); grid_rank];
    let f = spec.index_map.clone();
    let staged = catch_flat(|| {
        trace_flat(StageMode::Base, &grid_avals, |g| {
            Ok(match &f {
                Some(f) => f(&g),
                None => (0..rank).map(|_| Array::scalar(0i32)).collect(),
            })
        })
    })?;
    let j = &staged.jaxpr;
    if j.outvars.len() != rank {
        return Err(Error::InvalidArgument(format!(
            "Index map function for {origin} must return {rank} values to match \
             block_shape={}. Currently returning {} values.",
            fmt_block_shape(&block_shape),
            j.outvars.len()
        )));
    }
    for (i, o) in j.outvars.iter().enumerate() {
        let aval = j
            .atom_aval(o)
            .ok_or_else(|| Error::InvalidArgument("index map outvar not bound".into()))?;
        let ok = matches!(&aval, Aval::Array(a) if a.shape.is_empty() && a.dtype.is_int());
        if !ok {
            return Err(Error::InvalidArgument(format!(
                "Index map function for {origin} must return integer scalars. Output[{i}] has \
                 type {}.",
                fmt_aval(&aval)
            )));
        }
    }
    if !staged.consts.is_empty() {
        let avals: Vec<String> = staged.consts.iter().map(|c| fmt_aval(c.aval())).collect();
        return Err(Error::InvalidArgument(format!(
            "BlockMapping for {origin} has captured constants: [{}]; pass them as inputs",
            avals.join(", ")
        )));
    }
    let index_map = close(staged)?;
    Ok(BlockMapping {
        block_shape: block_shape
            .iter()
            .map(|b| b.map_or(BlockDim::Squeezed, BlockDim::Blocked))
            .collect(),
        index_map,
        array_aval: ShapedArray::of(array.dtype, &shape),
    })
}

/// `(8,)`, `(4, 4)`: a shape as Python prints a tuple.
pub(crate) fn py_tuple(v: &[usize]) -> String {
    if v.len() == 1 {
        format!("({},)", v[0])
    } else {
        let parts: Vec<String> = v.iter().map(|n| n.to_string()).collect();
        format!("({})", parts.join(", "))
    }
}

/// The kernel's view of a block: the block shape without squeezed dims.
pub(crate) fn kernel_shape(bm: &BlockMapping) -> Vec<usize> {
    bm.block_shape
        .iter()
        .filter_map(|b| match b {
            BlockDim::Blocked(n) => Some(*n),
            BlockDim::Squeezed => None,
        })
        .collect()
}
