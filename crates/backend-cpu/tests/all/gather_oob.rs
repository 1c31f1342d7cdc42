//! Out-of-bounds gather and scatter on the CPU backend agree with the
//! reference interpreter (itself checked against JAX's modes in
//! `jaxon-ir`'s `gather_scatter_oob.rs`), and never index outside the
//! operand. Includes the fuzzer's reproducer (`cargo xtask fuzz diff`): a
//! collapsed dim of slice size 0 read past the end (`the len is 20 but the
//! index is 24`, `native/gather.rs`).

use jaxon_backend_cpu::CpuBackend;
use jaxon_ir::{eval_closed_jaxpr, parse_closed_jaxpr, Backend, DType, HostArray, IrError};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

const MODES: [&str; 3] = ["CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"];

fn gather_text(a: usize, b: usize, n: usize, s0: usize, w: usize, mode: &str) -> String {
    format!(
        "{{ lambda ; x:f32[{a},{b}] i:i32[{n},2]. let
    y:f32[{n},{w}] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      slice_sizes=({s0}, {w})
      unique_indices=False
    ] x i
  in (y,) }}"
    )
}

fn scatter_text(a: usize, b: usize, n: usize, mode: &str) -> String {
    format!(
        "{{ lambda ; x:f32[{a},{b}] i:i32[{n},1] u:f32[{n},{b}]. let
    y:f32[{a},{b}] = scatter-add[
      dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
      indices_are_sorted=False
      mode=GatherScatterMode.{mode}
      unique_indices=False
      update_consts=()
      update_jaxpr={{ lambda ; p:f32[] q:f32[]. let r:f32[] = add p q in (r,) }}
    ] x i u
  in (y,) }}"
    )
}

/// Runs `text` on both evaluators; both must agree bit for bit (NaN with
/// NaN), or both fail.
fn same(text: &str, args: &[HostArray]) {
    let j = parse_closed_jaxpr(text, Vec::new()).unwrap();
    jaxon_ir::check_closed_jaxpr(&j).unwrap();
    let want = eval_closed_jaxpr(&j, args);
    let cpu = CpuBackend::with_threads(1);
    let got = (|| -> Result<Vec<HostArray>, IrError> {
        let exe = cpu.compile(&j)?;
        let bufs = args
            .iter()
            .map(|a| cpu.to_device(a))
            .collect::<Result<Vec<_>, _>>()?;
        exe.execute(&bufs)?.iter().map(|b| b.to_host()).collect()
    })();
    match (got, want) {
        (Ok(g), Ok(w)) => {
            let (g, w) = (g[0].to_f64_vec(), w[0].to_f64_vec());
            let eq = g.len() == w.len()
                && g.iter()
                    .zip(&w)
                    .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()));
            assert!(eq, "cpu {g:?}\ninterpreter {w:?}\n{text}");
        }
        (Err(_), Err(_)) => {}
        (g, w) => panic!("cpu {g:?}, interpreter {w:?}\n{text}"),
    }
}

fn ints(v: &[i64], shape: &[usize]) -> HostArray {
    let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    HostArray::from_f64(DType::I32, shape, &f).unwrap()
}

fn floats(n: usize, k: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| ((i * 37 + k * 11) % 97) as f64 / 8.0 - 6.0)
        .collect()
}

#[test]
fn fuzz_reproducer_size_zero_collapsed_dim() {
    // x:f32[4,5], indices (row, col) with collapsed dims (0, 1) and slice
    // sizes (0, 1): a start of 4 in dim 0 used to read element 24 of 20.
    let text = "{ lambda ; a:f32[4,5] l:i32[3,2]. let
    m:f32[3] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1), operand_batching_dims=(), start_indices_batching_dims=())
      fill_value=None
      indices_are_sorted=False
      mode=GatherScatterMode.PROMISE_IN_BOUNDS
      slice_sizes=(0, 1)
      unique_indices=False
    ] a l
  in (m,) }";
    let x = HostArray::from_f64(DType::F32, &[4, 5], &floats(20, 1)).unwrap();
    same(text, &[x, ints(&[4, 4, 0, 2, 3, 1], &[3, 2])]);
}

#[test]
fn random_out_of_range_gathers_and_scatters_match_the_interpreter() {
    let mut rng = Rng(0x6a7e_0003);
    for case in 0..150u64 {
        let mode = MODES[case as usize % 3];
        let (a, b) = (rng.below(5) as usize, 1 + rng.below(6) as usize);
        let n = 1 + rng.below(5) as usize;
        let w = rng.below(b as u64 + 1) as usize;
        // (An empty dim 0 only with a size-0 slice: sizes must fit.)
        let s0 = if a == 0 { 0 } else { rng.below(2) as usize };
        let idx: Vec<i64> = (0..2 * n).map(|_| rng.below(40) as i64 - 15).collect();
        let x = HostArray::from_f64(DType::F32, &[a, b], &floats(a * b, case)).unwrap();
        same(
            &gather_text(a, b, n, s0, w, mode),
            &[x.clone(), ints(&idx, &[n, 2])],
        );
        if a == 0 {
            continue;
        }
        let u = HostArray::from_f64(DType::F32, &[n, b], &floats(n * b, case + 7)).unwrap();
        same(
            &scatter_text(a, b, n, mode),
            &[x, ints(&idx[..n], &[n, 1]), u],
        );
    }
}
