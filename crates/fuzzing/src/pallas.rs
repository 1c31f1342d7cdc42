//! The `pallas` target's generator and body: fuzz bytes choose a
//! `pallas_call` (grid, operand shapes, block shapes with `Blocked` sizes
//! from 0 to past the dimension and `Squeezed` dims, affine index maps
//! that may point outside the array, a small kernel, aliasing), printed as
//! jaxpr text. The text goes through the parser and checker, then the
//! interpreter and the CPU backend.
//!
//! Invariant: no panic; when both evaluators succeed they agree on every
//! output element that some grid point's block writes (JAX leaves the rest
//! uninitialised: the interpreter zeros it, the CPU backend does not), or
//! on every element of an output aliased to an input. Which elements are
//! written is computed here from the generated index maps, clamping block
//! starts into the padded array as `dynamic_slice` does (the interpreter's
//! documented rule).

use crate::{close, limit_memory};
use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::{check_jaxpr, parse_jaxpr, Backend, ClosedJaxpr, DType, HostArray};
use std::fmt::Write;
use std::sync::OnceLock;

/// Reads choices from the fuzz input (zeros past its end).
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// A choice in `0..n` (`n > 0`).
    fn pick(&mut self, n: usize) -> usize {
        self.byte() as usize % n
    }
}

/// One index-map output: an affine function of at most one grid index.
#[derive(Clone, Copy, Debug)]
enum IndexExpr {
    Const(i64),
    Grid(usize),
    Add(usize, i64),
    Mul(usize, i64),
    Sub(usize, i64),
}

impl IndexExpr {
    fn eval(self, point: &[i64]) -> i64 {
        match self {
            IndexExpr::Const(k) => k,
            IndexExpr::Grid(a) => point[a],
            IndexExpr::Add(a, k) => point[a] + k,
            IndexExpr::Mul(a, k) => point[a] * k,
            IndexExpr::Sub(a, k) => point[a] - k,
        }
    }
}

/// One operand's block spec: per dim `Some(block size)` or `None`
/// (squeezed), and its index map.
#[derive(Clone, Debug)]
struct Operand {
    shape: Vec<usize>,
    block: Vec<Option<usize>>,
    index: Vec<IndexExpr>,
}

impl Operand {
    /// The kernel's view of a block: squeezed dims removed.
    fn kernel_shape(&self) -> Vec<usize> {
        self.block.iter().filter_map(|b| *b).collect()
    }
}

/// A generated case: the program text, its inputs, and per output which
/// elements the interpreter and the CPU backend must agree on.
pub struct Case {
    /// The jaxpr text.
    pub text: String,
    /// The inputs.
    pub inputs: Vec<HostArray>,
    /// Per output, per element: written by some block (or aliased).
    pub compare: Vec<Vec<bool>>,
}

fn dtype_name(dt: DType) -> &'static str {
    if dt == DType::F32 {
        "float32"
    } else {
        "int32"
    }
}

/// `[2,3]`.
fn dims(shape: &[usize]) -> String {
    let s: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", s.join(","))
}

fn ty(dt: DType, shape: &[usize]) -> String {
    format!(
        "{}{}",
        if dt == DType::F32 { "f32" } else { "i32" },
        dims(shape)
    )
}

/// A Python tuple: `()`, `(a,)`, `(a, b)`.
fn tuple(items: &[String]) -> String {
    match items {
        [] => "()".into(),
        [one] => format!("({one},)"),
        _ => format!("({})", items.join(", ")),
    }
}

fn gen_operand(b: &mut Bytes, grid_rank: usize) -> Operand {
    let rank = 1 + b.pick(3);
    let shape: Vec<usize> = (0..rank).map(|_| 1 + b.pick(6)).collect();
    let block = shape
        .iter()
        .map(|&d| match b.pick(6) {
            0 => None,
            // 1 to one past the dim (a partial block); rarely 0 (an error).
            _ if b.pick(32) == 0 => Some(0),
            _ => Some(1 + b.pick(d + 1)),
        })
        .collect();
    let index = (0..rank)
        .map(|_| {
            let k = b.pick(4) as i64 - 1;
            if grid_rank == 0 {
                return IndexExpr::Const(k);
            }
            let a = b.pick(grid_rank);
            match b.pick(6) {
                0 => IndexExpr::Const(k),
                1 | 2 => IndexExpr::Grid(a),
                3 => IndexExpr::Add(a, k),
                4 => IndexExpr::Mul(a, k),
                _ => IndexExpr::Sub(a, k),
            }
        })
        .collect();
    Operand {
        shape,
        block,
        index,
    }
}

/// The index map's text: grid indices in, one block index per dim out.
fn index_map_text(op: &Operand, grid_rank: usize) -> String {
    let ins: Vec<String> = (0..grid_rank).map(|a| format!("g{a}:i32[]")).collect();
    let mut body = String::new();
    let mut outs = Vec::new();
    for (d, e) in op.index.iter().enumerate() {
        let lit = |k: i64| format!("{k}:i32[]");
        let (op_name, a, k) = match *e {
            IndexExpr::Const(k) => {
                outs.push(lit(k));
                continue;
            }
            IndexExpr::Grid(a) => {
                outs.push(format!("g{a}"));
                continue;
            }
            IndexExpr::Add(a, k) => ("add", a, k),
            IndexExpr::Mul(a, k) => ("mul", a, k),
            IndexExpr::Sub(a, k) => ("sub", a, k),
        };
        let _ = write!(body, " r{d}:i32[] = {op_name} g{a} {};", lit(k));
        outs.push(format!("r{d}"));
    }
    format!(
        "{{ lambda ; {}. let{} in ({}) }}",
        ins.join(" "),
        body.replace(';', ""),
        outs.iter().map(|o| format!("{o},")).collect::<String>()
    )
}

fn mapping_text(op: &Operand, dt: DType, grid_rank: usize) -> String {
    let block: Vec<String> = op
        .block
        .iter()
        .map(|b| match b {
            None => "Squeezed()".to_string(),
            Some(n) => format!("Blocked(block_size={n})"),
        })
        .collect();
    format!(
        "BlockMapping(block_shape={}, array_aval=ShapedArray({}{}), index_map={})",
        tuple(&block),
        dtype_name(dt),
        dims(&op.shape),
        index_map_text(op, grid_rank)
    )
}

/// Which elements of `op`'s array some grid point's block covers.
fn coverage(op: &Operand, grid: &[usize]) -> Vec<bool> {
    let n: usize = op.shape.iter().product();
    let mut covered = vec![false; n];
    let points: usize = grid.iter().product();
    for p in 0..points {
        let mut point = vec![0i64; grid.len()];
        let mut rest = p;
        for a in (0..grid.len()).rev() {
            point[a] = (rest % grid[a]) as i64;
            rest /= grid[a];
        }
        let mut ranges = Vec::new();
        for (d, (&dim, b)) in op.shape.iter().zip(&op.block).enumerate() {
            let b = b.unwrap_or(1);
            if b == 0 {
                return vec![false; n];
            }
            let padded = dim.div_ceil(b) * b;
            let max = padded as i64 - b as i64;
            let start = (op.index[d].eval(&point) * b as i64).clamp(0, max.max(0)) as usize;
            ranges.push(start..(start + b).min(dim));
        }
        mark(&mut covered, &op.shape, &ranges);
    }
    covered
}

fn mark(covered: &mut [bool], shape: &[usize], ranges: &[std::ops::Range<usize>]) {
    let n: usize = shape.iter().product();
    for (i, c) in covered.iter_mut().enumerate().take(n) {
        let mut rest = i;
        let mut inside = true;
        for d in (0..shape.len()).rev() {
            let x = rest % shape[d];
            rest /= shape[d];
            inside &= ranges[d].contains(&x);
        }
        *c |= inside;
    }
}

/// The kernel's text: loads, one value per output, stores.
fn kernel_text(
    b: &mut Bytes,
    ins: &[Operand],
    outs: &[Operand],
    dt: DType,
    grid_rank: usize,
) -> String {
    let refs: Vec<String> = ins
        .iter()
        .enumerate()
        .map(|(k, op)| format!("e{k}:Ref<default>{{{}}}", ty(dt, &op.kernel_shape())))
        .chain(
            outs.iter()
                .enumerate()
                .map(|(k, op)| format!("o{k}:Ref<default>{{{}}}", ty(dt, &op.kernel_shape()))),
        )
        .collect();
    let mut body = String::new();
    for (k, op) in ins.iter().enumerate() {
        let _ = writeln!(body, "    x{k}:{} <- e{k}[...]", ty(dt, &op.kernel_shape()));
    }
    let pid = grid_rank > 0 && b.pick(2) == 0;
    if pid {
        let _ = writeln!(body, "    p:i32[] = program_id[axis={}]", b.pick(grid_rank));
        if dt == DType::F32 {
            let _ = writeln!(
                body,
                "    pf:f32[] = convert_element_type[new_dtype=float32 weak_type=False] p"
            );
        }
    }
    let pid_var = if dt == DType::F32 { "pf" } else { "p" };
    let mut n = 0;
    let mut fresh = |body: &mut String, t: &str, rhs: String| {
        n += 1;
        let _ = writeln!(body, "    v{n}:{t} = {rhs}");
        format!("v{n}")
    };
    for (k, op) in outs.iter().enumerate() {
        let ks = op.kernel_shape();
        let t = ty(dt, &ks);
        let x0 = ins[0].kernel_shape();
        let src = b.pick(ins.len());
        let xs = ins[src].kernel_shape();
        let mut v = if xs == ks && b.pick(3) != 0 {
            let x = format!("x{src}");
            let same: Vec<usize> = (0..ins.len())
                .filter(|&j| ins[j].kernel_shape() == ks)
                .collect();
            let other = format!("x{}", same[b.pick(same.len())]);
            match b.pick(4) {
                0 if dt == DType::F32 => fresh(&mut body, &t, format!("sin {x}")),
                0 | 1 => fresh(&mut body, &t, format!("neg {x}")),
                2 => fresh(&mut body, &t, format!("add {x} {other}")),
                _ => fresh(&mut body, &t, format!("mul {x} {other}")),
            }
        } else {
            // A full reduction of the first input, broadcast to the block.
            let s = if x0.is_empty() {
                "x0".to_string()
            } else {
                let axes: Vec<String> = (0..x0.len()).map(|a| a.to_string()).collect();
                fresh(
                    &mut body,
                    &ty(dt, &[]),
                    format!("reduce_sum[axes={} out_sharding=None] x0", tuple(&axes)),
                )
            };
            broadcast(&mut body, &mut fresh, dt, &ks, &s)
        };
        if pid && b.pick(2) == 0 {
            let p = broadcast(&mut body, &mut fresh, dt, &ks, pid_var);
            v = fresh(&mut body, &t, format!("add {v} {p}"));
        }
        let _ = writeln!(body, "    _:{t}, o{k}[...] <- o{k}[...], {v}");
    }
    format!("{{ lambda ; {}. let\n{body}  in () }}", refs.join(" "))
}

/// `s` (a scalar) broadcast to `shape` (a copy when `shape` is scalar).
fn broadcast(
    body: &mut String,
    fresh: &mut impl FnMut(&mut String, &str, String) -> String,
    dt: DType,
    shape: &[usize],
    s: &str,
) -> String {
    if shape.is_empty() {
        return fresh(body, &ty(dt, &[]), format!("neg {s}"));
    }
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    fresh(
        body,
        &ty(dt, shape),
        format!(
            "broadcast_in_dim[broadcast_dimensions=() shape={} sharding=None] {s}",
            tuple(&dims)
        ),
    )
}

/// Generates a case from fuzz bytes.
pub fn generate(data: &[u8]) -> Option<Case> {
    let mut b = Bytes { data, at: 0 };
    let dt = if b.pick(3) == 0 {
        DType::I32
    } else {
        DType::F32
    };
    let grid_rank = b.pick(3);
    let grid: Vec<usize> = (0..grid_rank)
        .map(|_| if b.pick(16) == 0 { 0 } else { 1 + b.pick(3) })
        .collect();
    let ins: Vec<Operand> = (0..1 + b.pick(2))
        .map(|_| gen_operand(&mut b, grid_rank))
        .collect();
    let outs: Vec<Operand> = (0..1 + b.pick(2))
        .map(|_| gen_operand(&mut b, grid_rank))
        .collect();
    // Alias output 0 to an input of its type, sometimes.
    let alias = (0..ins.len())
        .find(|&i| ins[i].shape == outs[0].shape)
        .filter(|_| b.pick(3) == 0);
    let kernel = kernel_text(&mut b, &ins, &outs, dt, grid_rank);
    let mappings: Vec<String> = ins
        .iter()
        .chain(&outs)
        .map(|op| mapping_text(op, dt, grid_rank))
        .collect();
    let grid_s: Vec<String> = grid.iter().map(|g| g.to_string()).collect();
    let in_vars: Vec<String> = (0..ins.len()).map(|k| format!("a{k}")).collect();
    let in_decls: Vec<String> = ins
        .iter()
        .enumerate()
        .map(|(k, op)| format!("a{k}:{}", ty(dt, &op.shape)))
        .collect();
    let out_decls: Vec<String> = outs
        .iter()
        .enumerate()
        .map(|(k, op)| format!("b{k}:{}", ty(dt, &op.shape)))
        .collect();
    let out_avals: Vec<String> = outs
        .iter()
        .map(|op| format!("ShapedArray({}{})", dtype_name(dt), dims(&op.shape)))
        .collect();
    let aliases = alias.map_or("()".to_string(), |i| format!("(({i}, 0),)"));
    let text = format!(
        "{{ lambda ; {}. let\n    {} = pallas_call[\n      compiler_params=None\n      \
         cost_estimate=None\n      debug=False\n      grid_mapping=GridMapping(grid={}, \
         block_mappings={})\n      input_output_aliases={aliases}\n      interpret=True\n      \
         jaxpr={kernel}\n      mesh=None\n      metadata=None\n      name=None\n      \
         out_avals={}\n    ] {}\n  in ({}) }}",
        in_decls.join(" "),
        out_decls.join(" "),
        tuple(&grid_s),
        tuple(&mappings),
        tuple(&out_avals),
        in_vars.join(" "),
        (0..outs.len())
            .map(|k| format!("b{k},"))
            .collect::<String>(),
    );
    let mut seed = crate::seed(data);
    let inputs = ins
        .iter()
        .map(|op| {
            let n: usize = op.shape.iter().product();
            let vals: Vec<f64> = (0..n)
                .map(|_| {
                    let r = crate::next(&mut seed);
                    if dt == DType::F32 {
                        ((r >> 11) as f64 / (1u64 << 53) as f64) * 6.0 - 3.0
                    } else {
                        (r % 200) as f64 - 100.0
                    }
                })
                .collect();
            HostArray::from_f64(dt, &op.shape, &vals).ok()
        })
        .collect::<Option<Vec<_>>>()?;
    let compare = outs
        .iter()
        .enumerate()
        .map(|(k, op)| {
            if k == 0 && alias.is_some() {
                vec![true; op.shape.iter().product()]
            } else {
                coverage(op, &grid)
            }
        })
        .collect();
    Some(Case {
        text,
        inputs,
        compare,
    })
}

/// What the target found for one input (for the smoke test's statistics).
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The generated text did not parse or check.
    Rejected,
    /// One evaluator (or both) returned an error.
    Error,
    /// Both succeeded and agree.
    Agree,
}

/// The `pallas` target: runs a generated `pallas_call` on the interpreter
/// and the CPU backend; panics only on a disagreement (or on a panic
/// inside either).
pub fn pallas_blocks(data: &[u8]) -> Outcome {
    limit_memory();
    let Some(case) = generate(data) else {
        return Outcome::Rejected;
    };
    let Ok(j) = parse_jaxpr(&case.text) else {
        return Outcome::Rejected;
    };
    if check_jaxpr(&j).is_err() {
        return Outcome::Rejected;
    }
    let j = ClosedJaxpr::without_consts(j);
    let want = jaxon_ir::eval_closed_jaxpr(&j, &case.inputs);
    static CPU: OnceLock<CpuBackend> = OnceLock::new();
    let cpu = CPU.get_or_init(|| CpuBackend::with_threads(2).with_program_cache_limit(64));
    let got = (|| {
        let exe = cpu.compile(&j)?;
        let bufs = case
            .inputs
            .iter()
            .map(|a| cpu.to_device(a))
            .collect::<Result<Vec<_>, _>>()?;
        exe.execute(&bufs)?
            .iter()
            .map(|b| b.to_host())
            .collect::<Result<Vec<_>, _>>()
    })();
    let (Ok(want), Ok(got)) = (want, got) else {
        return Outcome::Error;
    };
    assert_eq!(got.len(), want.len(), "number of results\n{}", case.text);
    for (k, ((g, w), mask)) in got.iter().zip(&want).zip(&case.compare).enumerate() {
        assert!(
            g.dtype() == w.dtype() && g.shape() == w.shape(),
            "result {k}: cpu {}{:?}, interpreter {}{:?}\n{}",
            g.dtype(),
            g.shape(),
            w.dtype(),
            w.shape(),
            case.text
        );
        for (i, ((gv, wv), &m)) in g
            .to_f64_vec()
            .iter()
            .zip(w.to_f64_vec())
            .zip(mask)
            .enumerate()
        {
            let ok = !m
                || if w.dtype().is_float() {
                    close(*gv, wv)
                } else {
                    *gv == wv
                };
            assert!(
                ok,
                "result {k} element {i}: cpu {gv}, interpreter {wv}\n{}",
                case.text
            );
        }
    }
    Outcome::Agree
}
