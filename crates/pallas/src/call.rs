//! `pallas_call(kernel, out_shape)`: the builder (`grid`, `in_specs`,
//! `out_specs`, `input_output_aliases`, `interpret`, `name`, `debug`), the
//! tracing of the kernel to a jaxpr over `Ref`s, and the `pallas_call`
//! equation it binds.
//!
//! The kernel is traced on a fresh staging base (like `jit`), so anything it
//! closes over that is not a Rust scalar becomes a constant, which is an
//! error: kernels take all arrays as operands.

use crate::refs::Ref;
use crate::spec::{block_mapping, fmt_block_shape, kernel_shape, BlockSpec};
use jaxon_ir::primitive::BlockMapping;
use jaxon_ir::primitive::PallasCallParams;
use jaxon_ir::shape::fmt_aval;
use jaxon_ir::{AbstractRef, Aval, Jaxpr, MemorySpace, Primitive, ShapedArray};
use jaxon_trace::error::{catch_flat, Error, Result};
use jaxon_trace::stage::{trace_flat, StageMode};
use jaxon_trace::{bind, with_backend, Array};
use std::sync::Arc;

/// What a kernel returns: nothing. Other return types exist so that a
/// kernel returning a value is reported with JAX's message.
pub trait KernelOutput {
    /// `None` for `()`, else a description of what was returned.
    fn returned(&self) -> Option<String>;
}

impl KernelOutput for () {
    fn returned(&self) -> Option<String> {
        None
    }
}

/// A `store(..)` as the kernel's last expression: it writes when dropped,
/// still inside the kernel.
impl KernelOutput for crate::refs::Store {
    fn returned(&self) -> Option<String> {
        None
    }
}

impl KernelOutput for Array {
    fn returned(&self) -> Option<String> {
        Some(format!("an array of type {}", fmt_aval(self.aval())))
    }
}

impl KernelOutput for Vec<Array> {
    fn returned(&self) -> Option<String> {
        Some(format!("a list of {} arrays", self.len()))
    }
}

type KernelFn = dyn Fn(&[Ref]) -> Option<String> + Send + Sync;

/// The result types of a `pallas_call` (`out_shape`).
pub trait IntoOutShapes {
    /// The result types.
    fn into_out_shapes(self) -> Vec<ShapedArray>;
}

impl IntoOutShapes for ShapedArray {
    fn into_out_shapes(self) -> Vec<ShapedArray> {
        vec![self]
    }
}

impl IntoOutShapes for Vec<ShapedArray> {
    fn into_out_shapes(self) -> Vec<ShapedArray> {
        self
    }
}

impl<const N: usize> IntoOutShapes for [ShapedArray; N] {
    fn into_out_shapes(self) -> Vec<ShapedArray> {
        self.to_vec()
    }
}

impl IntoOutShapes for &Array {
    fn into_out_shapes(self) -> Vec<ShapedArray> {
        vec![self.ty().clone().with_weak(false)]
    }
}

/// `jax.ShapeDtypeStruct(shape, dtype)`.
pub fn shape_dtype(shape: &[usize], dtype: jaxon_ir::DType) -> ShapedArray {
    ShapedArray::of(dtype, shape)
}

/// A grid: `4`, `[4, 4]`, `vec![..]` or `()` (one program).
pub trait IntoGrid {
    /// The grid's sizes.
    fn into_grid(self) -> Vec<usize>;
}

impl IntoGrid for usize {
    fn into_grid(self) -> Vec<usize> {
        vec![self]
    }
}

impl IntoGrid for () {
    fn into_grid(self) -> Vec<usize> {
        Vec::new()
    }
}

impl<const N: usize> IntoGrid for [usize; N] {
    fn into_grid(self) -> Vec<usize> {
        self.to_vec()
    }
}

impl IntoGrid for Vec<usize> {
    fn into_grid(self) -> Vec<usize> {
        self
    }
}

impl IntoGrid for &[usize] {
    fn into_grid(self) -> Vec<usize> {
        self.to_vec()
    }
}

/// A configured `pallas_call`: call it with [`PallasCall::call`].
#[derive(Clone)]
pub struct PallasCall {
    kernel: Arc<KernelFn>,
    out_shapes: Vec<ShapedArray>,
    grid: Vec<usize>,
    in_specs: Option<Vec<BlockSpec>>,
    out_specs: Option<Vec<BlockSpec>>,
    aliases: Vec<(usize, usize)>,
    interpret: bool,
    name: String,
    debug: bool,
}

/// The name JAX would print for a kernel: the function's name, or for a
/// closure the function it is written in.
fn kernel_name<K>() -> String {
    let full = std::any::type_name::<K>();
    let parts: Vec<&str> = full
        .split("::")
        .filter(|p| !p.starts_with('{') && !p.contains('<'))
        .collect();
    parts.last().map_or("kernel", |s| s).to_string()
}

/// `pl.pallas_call(kernel, out_shape)`: `kernel` takes one `Ref` per input,
/// then one per output, and writes its outputs through them.
pub fn pallas_call<K, R>(kernel: K, out_shape: impl IntoOutShapes) -> PallasCall
where
    K: Fn(&[Ref]) -> R + Send + Sync + 'static,
    R: KernelOutput,
{
    PallasCall {
        name: kernel_name::<K>(),
        kernel: Arc::new(move |refs: &[Ref]| kernel(refs).returned()),
        out_shapes: out_shape.into_out_shapes(),
        grid: Vec::new(),
        in_specs: None,
        out_specs: None,
        aliases: Vec::new(),
        interpret: false,
        debug: false,
    }
}

impl PallasCall {
    /// The grid the kernel runs over (row-major, last axis fastest).
    pub fn grid(mut self, grid: impl IntoGrid) -> Self {
        self.grid = grid.into_grid();
        self
    }

    /// One spec per input.
    pub fn in_specs(mut self, specs: Vec<BlockSpec>) -> Self {
        self.in_specs = Some(specs);
        self
    }

    /// One spec per output.
    pub fn out_specs(mut self, specs: Vec<BlockSpec>) -> Self {
        self.out_specs = Some(specs);
        self
    }

    /// The spec of the only output.
    pub fn out_spec(self, spec: BlockSpec) -> Self {
        self.out_specs(vec![spec])
    }

    /// `(input, output)` pairs sharing a buffer: the output starts as the
    /// input's value.
    pub fn input_output_aliases(mut self, pairs: &[(usize, usize)]) -> Self {
        self.aliases = pairs.to_vec();
        self
    }

    /// Run on the reference interpreter (JAX's interpret mode).
    pub fn interpret(mut self, on: bool) -> Self {
        self.interpret = on;
        self
    }

    /// The printed `name=`.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Print the kernel jaxpr and the grid mapping when tracing.
    pub fn debug(mut self, on: bool) -> Self {
        self.debug = on;
        self
    }

    fn specs(
        &self,
        specs: &Option<Vec<BlockSpec>>,
        what: &str,
        operands: &str,
        n: usize,
    ) -> Result<Vec<BlockSpec>> {
        match specs {
            None => Ok(vec![BlockSpec::whole(); n]),
            Some(s) if s.len() == n => Ok(s.clone()),
            Some(s) => Err(Error::InvalidArgument(format!(
                "Pytree for `{what}` and `{operands}` do not match. There are 1 mismatches, \
                 including:\n    * `{what}` is a tuple of length {} but `{operands}` is a tuple \
                 of length {n}, so the lengths do not match",
                s.len()
            ))),
        }
    }

    /// The `pallas_call` primitive for inputs of types `in_avals`: the
    /// traced kernel, grid and block mappings.
    pub fn primitive(&self, in_avals: &[ShapedArray]) -> Result<Primitive> {
        self.params(in_avals).map(Primitive::from)
    }

    /// The `pallas_call` params for inputs of types `in_avals`.
    pub fn params(&self, in_avals: &[ShapedArray]) -> Result<PallasCallParams> {
        let in_specs = self.specs(&self.in_specs, "in_specs", "inputs", in_avals.len())?;
        let out_specs = self.specs(
            &self.out_specs,
            "out_specs",
            "out_shape",
            self.out_shapes.len(),
        )?;
        let g = self.grid.len();
        let mut mappings: Vec<BlockMapping> = Vec::new();
        for (k, (s, a)) in in_specs.iter().zip(in_avals).enumerate() {
            mappings.push(block_mapping(s, &format!("args[{k}]"), a, g)?);
        }
        for (k, (s, a)) in out_specs.iter().zip(&self.out_shapes).enumerate() {
            mappings.push(block_mapping(s, &format!("outputs[{k}]"), a, g)?);
        }
        self.check_aliases(in_avals)?;
        let kernel = self.trace_kernel(&mappings)?;
        if self.debug {
            println!("{}", self.debug_text(&kernel, &mappings));
        }
        Ok(PallasCallParams {
            kernel: Arc::new(kernel),
            grid: self.grid.clone(),
            block_mappings: mappings,
            out_avals: self.out_shapes.clone(),
            name: Some(self.name.clone()),
            interpret: self.interpret,
            debug: self.debug,
            input_output_aliases: self.aliases.clone(),
        })
    }

    fn check_aliases(&self, in_avals: &[ShapedArray]) -> Result<()> {
        let (ni, no) = (in_avals.len(), self.out_shapes.len());
        for &(i, o) in &self.aliases {
            if i >= ni {
                return Err(Error::InvalidArgument(format!(
                    "input_output_aliases contains the mapping '{i}:{o}' with input index {i} \
                     outside the range [0, {ni})"
                )));
            }
            if o >= no {
                return Err(Error::InvalidArgument(format!(
                    "input_output_aliases contains the mapping '{i}:{o}' with output index {o} \
                     outside the range [0, {no})"
                )));
            }
            let (a, b) = (&in_avals[i], &self.out_shapes[o]);
            if a.shape != b.shape || a.dtype != b.dtype {
                return Err(Error::InvalidArgument(format!(
                    "input_output_aliases contains the mapping '{i}:{o}' referring to \
                     input[{i}] with abstract value {} and to output[{o}] with a different \
                     abstract value {}.",
                    jaxon_ir::shape::fmt_ty(a),
                    jaxon_ir::shape::fmt_ty(b)
                )));
            }
        }
        Ok(())
    }

    fn trace_kernel(&self, mappings: &[BlockMapping]) -> Result<Jaxpr> {
        let avals: Vec<Aval> = mappings
            .iter()
            .map(|bm| {
                Aval::Ref(AbstractRef {
                    inner: ShapedArray::of(bm.array_aval.dtype, &kernel_shape(bm)),
                    memory_space: MemorySpace::Default,
                })
            })
            .collect();
        let kernel = self.kernel.clone();
        let mut returned = None;
        let staged = catch_flat(|| {
            trace_flat(StageMode::Base, &avals, |args| {
                let refs = args.into_iter().map(Ref::new).collect::<Result<Vec<_>>>()?;
                returned = kernel(&refs);
                Ok(Vec::new())
            })
        })?;
        if let Some(what) = returned {
            return Err(Error::InvalidArgument(format!(
                "The kernel function in the pallas_call {} should return None. It returns {what}.",
                self.name
            )));
        }
        if !staged.consts.is_empty() {
            let avals: Vec<String> = staged.consts.iter().map(|c| fmt_aval(c.aval())).collect();
            return Err(Error::InvalidArgument(format!(
                "The kernel function in the pallas_call {} captures constants [{}]. You should \
                 pass them as inputs.",
                self.name,
                avals.join(", ")
            )));
        }
        Ok(staged.jaxpr)
    }

    /// What `debug(true)` prints for inputs of types `in_avals`: the kernel
    /// jaxpr and the grid mapping.
    pub fn debug_info(&self, in_avals: &[ShapedArray]) -> Result<String> {
        let p = self.clone().debug(false).params(in_avals)?;
        Ok(self.debug_text(&p.kernel, &p.block_mappings))
    }

    fn debug_text(&self, kernel: &Jaxpr, mappings: &[BlockMapping]) -> String {
        let mut s = format!(
            "\nThe kernel jaxpr for pallas_call {}:\n{}\n",
            self.name,
            jaxon_ir::print::print_jaxpr(kernel)
        );
        s.push_str(&format!(
            "The grid mapping for pallas_call {}:\nGridMapping(grid={}, block_mappings=[\n",
            self.name,
            crate::spec::py_tuple(&self.grid)
        ));
        for bm in mappings {
            let b: Vec<Option<usize>> = bm
                .block_shape
                .iter()
                .map(|d| match d {
                    jaxon_ir::primitive::BlockDim::Blocked(n) => Some(*n),
                    jaxon_ir::primitive::BlockDim::Squeezed => None,
                })
                .collect();
            s.push_str(&format!(
                "  BlockMapping(block_shape={}, array_aval={}, index_map={}),\n",
                fmt_block_shape(&b),
                jaxon_ir::shape::fmt_ty(&bm.array_aval),
                jaxon_ir::print::print_jaxpr(&bm.index_map.jaxpr).trim_end()
            ));
        }
        s.push_str("])");
        s
    }

    /// Runs the kernel over the grid on `args`; returns one array per
    /// output. Eagerly this evaluates now; under a trace it stages one
    /// `pallas_call` equation.
    pub fn call(&self, args: &[Array]) -> Result<Vec<Array>> {
        let in_avals: Vec<ShapedArray> = args.iter().map(|a| a.ty().clone()).collect();
        let p = self.primitive(&in_avals)?;
        // Interpret mode means the reference interpreter whatever the
        // default backend is; under a trace the equation carries the flag.
        if self.interpret && !args.iter().any(Array::is_tracer) {
            if let Ok(out) = with_backend("interpreter", || bind(&p, args)) {
                return out;
            }
        }
        bind(&p, args)
    }

    /// [`PallasCall::call`] for a kernel with one output.
    pub fn call1(&self, args: &[Array]) -> Result<Array> {
        let mut outs = self.call(args)?;
        if outs.len() != 1 {
            return Err(Error::InvalidArgument(format!(
                "call1: the pallas_call has {} outputs",
                outs.len()
            )));
        }
        Ok(outs.remove(0))
    }
}
