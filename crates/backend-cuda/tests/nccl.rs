//! NCCL collectives against their definitions computed on the host, on
//! random data of every dtype NCCL carries: a communicator of size 1 on
//! GPU 0 (`for_devices` and `from_unique_id`), and of size 2 over GPUs 0
//! and 1 when there are two. Without a GPU or without NCCL each test prints
//! a `skipped:` line and passes, unless `JAXON_REQUIRE_GPU=1` (no GPU is
//! then a failure) or `JAXON_REQUIRE_NCCL=1` (no NCCL is then a failure);
//! `cargo xtask gpu-check`'s script sets the second when it finds
//! `libnccl.so.2` on the GPU machine. The missing-library test runs
//! everywhere.

use jaxon_backend_cuda::nccl::{nccl_unique_id, nccl_version, NcclComm, NcclId, ReduceOp};
use jaxon_backend_cuda::runtime::{device_count, Device, DeviceBuffer};
use jaxon_backend_cuda::CudaError;
use jaxon_ir::DType;
use std::sync::Arc;

/// A communicator over GPUs `0..n`, or `None` (after a skip line) when
/// there are fewer GPUs or no NCCL and nothing requires them.
fn comm_or_skip(test: &str, n: usize) -> Option<NcclComm> {
    let gpus = match device_count() {
        Ok(c) => c,
        Err(e) => {
            assert!(
                std::env::var_os("JAXON_REQUIRE_GPU").is_none(),
                "JAXON_REQUIRE_GPU is set but there is no GPU: {e}"
            );
            println!("skipped {test}: {e}");
            return None;
        }
    };
    if gpus == 0 {
        assert!(
            std::env::var_os("JAXON_REQUIRE_GPU").is_none(),
            "JAXON_REQUIRE_GPU is set but the driver reports no GPU"
        );
        println!("skipped {test}: no GPU");
        return None;
    }
    if let Err(e) = nccl_version() {
        assert!(
            std::env::var_os("JAXON_REQUIRE_NCCL").is_none(),
            "JAXON_REQUIRE_NCCL is set but NCCL did not load: {e}"
        );
        println!("skipped {test}: {e}");
        println!("gpu-check: nccl {test}: skipped, no NCCL");
        return None;
    }
    if gpus < n {
        println!("skipped {test}: it needs {n} GPUs, the driver reports {gpus}");
        println!("gpu-check: nccl {test}: skipped, {gpus} GPU(s)");
        return None;
    }
    let ordinals: Vec<usize> = (0..n).collect();
    Some(NcclComm::for_devices(&ordinals).expect("an NCCL communicator over the GPUs"))
}

/// A small xorshift generator: the tests need no crate for randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// An integer in `lo..=hi`.
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
    /// A float in [-2, 2), a multiple of 1/64 (exact in every float type).
    fn float(&mut self) -> f64 {
        self.int(-128, 127) as f64 / 64.0
    }
}

/// `n` random elements of `dtype` as little-endian bytes: integers small
/// enough that a sum or product of two does not overflow, floats exact in
/// the type.
fn random(dtype: DType, n: usize, rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * dtype.size_bytes());
    for _ in 0..n {
        match dtype {
            DType::Bool => out.push(rng.int(0, 1) as u8),
            DType::I8 => out.push(rng.int(-9, 9) as i8 as u8),
            DType::U8 => out.push(rng.int(0, 15) as u8),
            DType::I16 => out.extend((rng.int(-99, 99) as i16).to_le_bytes()),
            DType::U16 => out.extend((rng.int(0, 99) as u16).to_le_bytes()),
            DType::I32 => out.extend((rng.int(-999, 999) as i32).to_le_bytes()),
            DType::U32 => out.extend((rng.int(0, 999) as u32).to_le_bytes()),
            DType::I64 => out.extend(rng.int(-99999, 99999).to_le_bytes()),
            DType::U64 => out.extend((rng.int(0, 99999) as u64).to_le_bytes()),
            DType::F16 => out.extend(half::f16::from_f64(rng.float()).to_le_bytes()),
            DType::BF16 => out.extend(half::bf16::from_f64(rng.float()).to_le_bytes()),
            DType::F32 => out.extend((rng.float() as f32).to_le_bytes()),
            DType::F64 => out.extend(rng.float().to_le_bytes()),
            DType::C64 => {
                out.extend((rng.float() as f32).to_le_bytes());
                out.extend((rng.float() as f32).to_le_bytes());
            }
            DType::C128 => {
                out.extend(rng.float().to_le_bytes());
                out.extend(rng.float().to_le_bytes());
            }
            DType::KeyFry => out.extend(rng.next().to_le_bytes()),
        }
    }
    out
}

/// The values of little-endian bytes of `dtype` (complex: re, im, ...).
fn values(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    let w = match dtype {
        DType::C64 => 4,
        DType::C128 => 8,
        _ => dtype.size_bytes(),
    };
    bytes
        .chunks_exact(w)
        .map(|c| match dtype {
            DType::Bool | DType::U8 => c[0] as f64,
            DType::I8 => c[0] as i8 as f64,
            DType::I16 => i16::from_le_bytes([c[0], c[1]]) as f64,
            DType::U16 => u16::from_le_bytes([c[0], c[1]]) as f64,
            DType::I32 => i32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::U32 => u32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::I64 => i64::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::U64 | DType::KeyFry => u64::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::F16 => half::f16::from_le_bytes([c[0], c[1]]).to_f64(),
            DType::BF16 => half::bf16::from_le_bytes([c[0], c[1]]).to_f64(),
            DType::F32 | DType::C64 => f32::from_le_bytes(c.try_into().unwrap()) as f64,
            DType::F64 | DType::C128 => f64::from_le_bytes(c.try_into().unwrap()),
        })
        .collect()
}

/// Asserts `got` (bytes of `dtype`) equals `want` within the type's
/// rounding of one operation.
fn assert_close(what: &str, dtype: DType, got: &[u8], want: &[f64]) {
    let got = values(dtype, got);
    assert_eq!(got.len(), want.len(), "{what} ({dtype}): length");
    let tol = match dtype {
        DType::F16 => 1e-3,
        DType::BF16 => 8e-3,
        DType::F32 | DType::C64 => 1e-6,
        DType::F64 | DType::C128 => 1e-14,
        _ => 0.0,
    };
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "{what} ({dtype}): element {i} is {g}, expected {w}"
        );
    }
}

/// The elementwise reduction of the ranks' values.
fn reduce(op: ReduceOp, ranks: &[Vec<f64>]) -> Vec<f64> {
    (0..ranks[0].len())
        .map(|i| {
            let xs = ranks.iter().map(|r| r[i]);
            match op {
                ReduceOp::Sum => xs.sum(),
                ReduceOp::Prod => xs.product(),
                ReduceOp::Max => xs.fold(f64::NEG_INFINITY, f64::max),
                ReduceOp::Min => xs.fold(f64::INFINITY, f64::min),
                ReduceOp::Mean => xs.sum::<f64>() / ranks.len() as f64,
            }
        })
        .collect()
}

/// Dtypes and the reductions each is tested with.
fn cases() -> Vec<(DType, Vec<ReduceOp>)> {
    use ReduceOp::*;
    let all = vec![Sum, Prod, Max, Min];
    let floats = vec![Sum, Prod, Max, Min, Mean];
    vec![
        (DType::F32, floats.clone()),
        (DType::F64, floats.clone()),
        (DType::F16, floats.clone()),
        (DType::BF16, floats),
        (DType::I32, all.clone()),
        (DType::I64, all.clone()),
        (DType::U8, all.clone()),
        (DType::I8, all.clone()),
        (DType::U32, all.clone()),
        (DType::U64, all),
        (DType::C64, vec![Sum, Mean]),
        (DType::C128, vec![Sum]),
        (DType::Bool, vec![Max, Min]),
        (DType::I16, vec![]),
        (DType::KeyFry, vec![]),
    ]
}

/// Uploads one buffer per rank.
fn upload(devices: &[Arc<Device>], dtype: DType, data: &[Vec<u8>]) -> Vec<DeviceBuffer> {
    devices
        .iter()
        .zip(data)
        .map(|(d, b)| d.upload(dtype, b).expect("upload"))
        .collect()
}

/// Every collective on `comm` (all of its ranks in this process) against
/// the host, over every dtype of [`cases`], on `len` elements per rank.
fn check_all(comm: &NcclComm, len: usize, seed: u64) {
    let n = comm.size();
    let devices = comm.devices();
    let mut rng = Rng(seed);
    for (dtype, ops) in cases() {
        let data: Vec<Vec<u8>> = (0..n).map(|_| random(dtype, len, &mut rng)).collect();
        let vals: Vec<Vec<f64>> = data.iter().map(|b| values(dtype, b)).collect();
        let bufs = upload(&devices, dtype, &data);
        let ins: Vec<&DeviceBuffer> = bufs.iter().collect();
        let read = |b: &DeviceBuffer| b.device().download(b).expect("download");
        for &op in &ops {
            let out = comm.all_reduce(&ins, op).expect("all_reduce");
            let want = reduce(op, &vals);
            for (r, o) in out.iter().enumerate() {
                assert_close(
                    &format!("all_reduce {op:?} rank {r}"),
                    dtype,
                    &read(o),
                    &want,
                );
            }
            let out = comm.reduce_scatter(&ins, op).expect("reduce_scatter");
            let block = want.len() / n;
            for (r, o) in out.iter().enumerate() {
                let part = &want[r * block..(r + 1) * block];
                assert_close(
                    &format!("reduce_scatter {op:?} rank {r}"),
                    dtype,
                    &read(o),
                    part,
                );
            }
        }
        // Data movement is exact for every dtype: compare bytes.
        let concat: Vec<u8> = data.concat();
        for (r, o) in comm
            .all_gather(&ins)
            .expect("all_gather")
            .iter()
            .enumerate()
        {
            assert_eq!(read(o), concat, "all_gather {dtype} rank {r}");
        }
        let root = n - 1;
        for (r, o) in comm
            .broadcast(&ins, root)
            .expect("broadcast")
            .iter()
            .enumerate()
        {
            assert_eq!(read(o), data[root], "broadcast {dtype} rank {r}");
        }
        // A cyclic shift (the identity on one rank), and a partial one.
        let shift: Vec<(usize, usize)> = (0..n).map(|s| (s, (s + 1) % n)).collect();
        for (r, o) in comm
            .ppermute(&ins, &shift)
            .expect("ppermute")
            .iter()
            .enumerate()
        {
            assert_eq!(read(o), data[(r + n - 1) % n], "ppermute {dtype} rank {r}");
        }
        let zeros = vec![0u8; data[0].len()];
        let partial = &shift[1..];
        for (r, o) in comm
            .ppermute(&ins, partial)
            .expect("ppermute")
            .iter()
            .enumerate()
        {
            let want = match partial.iter().find(|&&(_, d)| d == r) {
                Some(&(s, _)) => &data[s],
                None => &zeros,
            };
            assert_eq!(&read(o), want, "partial ppermute {dtype} rank {r}");
        }
        let bytes = data[0].len() / n;
        for (r, o) in comm
            .all_to_all(&ins)
            .expect("all_to_all")
            .iter()
            .enumerate()
        {
            let want: Vec<u8> = (0..n)
                .flat_map(|s| data[s][r * bytes..(r + 1) * bytes].to_vec())
                .collect();
            assert_eq!(read(o), want, "all_to_all {dtype} rank {r}");
        }
        if ops.is_empty() {
            let e = comm
                .all_reduce(&ins, ReduceOp::Sum)
                .expect_err("no NCCL type to reduce");
            assert!(matches!(e, CudaError::Collective { .. }), "{e}");
        }
    }
    comm.synchronize().expect("no asynchronous NCCL error");
}

#[test]
fn without_nccl_or_gpu_the_calls_are_errors_not_panics() {
    match NcclComm::for_devices(&[0]) {
        Ok(comm) => println!("NCCL and a GPU are here: {comm:?}"),
        Err(CudaError::NcclMissing(m)) => {
            assert!(m.contains("libnccl.so.2"), "{m}");
            println!("as expected without NCCL: {m}");
        }
        Err(CudaError::NoDevice(m)) => println!("as expected without a GPU: {m}"),
        Err(e) => panic!("an unexpected error: {e}"),
    }
    match nccl_unique_id() {
        Ok(id) => {
            println!("NCCL made the id {id:?}");
            assert_eq!(NcclId::from_bytes(id.as_bytes()), Ok(id));
        }
        Err(e) => assert!(
            matches!(e, CudaError::NcclMissing(_) | CudaError::Nccl(_)),
            "{e}"
        ),
    }
    match nccl_version() {
        Ok(v) => {
            println!("NCCL {}.{}.{} loaded", v.0, v.1, v.2);
            assert!(v >= jaxon_backend_cuda::nccl::MIN_VERSION, "{v:?}");
        }
        Err(e) => assert!(matches!(e, CudaError::NcclMissing(_)), "{e}"),
    }
    // Asked twice: the outcome is cached, and still an error, not a panic.
    if let Err(e) = NcclComm::for_devices(&[0, 1]) {
        assert!(
            matches!(
                e,
                CudaError::NcclMissing(_) | CudaError::NoDevice(_) | CudaError::Nccl(_)
            ),
            "{e}"
        );
    }
    let e = NcclId::from_bytes(&[0; 5]).expect_err("5 bytes are no id");
    assert!(matches!(e, CudaError::Collective { .. }), "{e}");
}

#[test]
fn one_gpu_collectives_match_the_host() {
    let Some(comm) = comm_or_skip("one_gpu", 1) else {
        return;
    };
    assert_eq!(comm.size(), 1);
    for (len, seed) in [(1, 1), (37, 2), (4096, 3), (0, 4)] {
        check_all(&comm, len, seed);
    }
    println!(
        "gpu-check: nccl one_gpu: passed (NCCL {:?})",
        nccl_version().ok()
    );
}

#[test]
fn one_rank_from_a_unique_id() {
    if comm_or_skip("unique_id", 1).is_none() {
        return;
    }
    let id = nccl_unique_id().expect("an id");
    let again = NcclId::from_bytes(&Vec::from(&id)).expect("128 bytes");
    let device = Device::open(0).expect("GPU 0");
    let comm = NcclComm::from_unique_id(&device, &again, 0, 1).expect("a communicator of one");
    assert_eq!(comm.local_ranks(), vec![0]);
    check_all(&comm, 64, 5);
    let e = NcclComm::from_unique_id(&device, &again, 1, 1).expect_err("rank 1 of 1");
    assert!(matches!(e, CudaError::Collective { .. }), "{e}");
}

#[test]
fn two_gpu_collectives_match_the_host() {
    let Some(comm) = comm_or_skip("two_gpus", 2) else {
        return;
    };
    assert_eq!(comm.local_ranks(), vec![0, 1]);
    for (len, seed) in [(2, 6), (38, 7), (1 << 16, 8)] {
        check_all(&comm, len, seed);
    }
    println!("gpu-check: nccl two_gpus: passed");
}

#[test]
fn bad_arguments_are_errors() {
    let Some(comm) = comm_or_skip("bad_arguments", 1) else {
        return;
    };
    let dev = comm.devices()[0].clone();
    let f32s = dev.upload(DType::F32, &[0u8; 12]).expect("upload");
    let is_arg =
        |r: Result<Vec<DeviceBuffer>, CudaError>| matches!(r, Err(CudaError::Collective { .. }));
    assert!(is_arg(comm.all_reduce(&[], ReduceOp::Sum)), "no buffer");
    assert!(
        is_arg(comm.all_reduce(&[&f32s, &f32s], ReduceOp::Sum)),
        "two buffers for one rank"
    );
    assert!(is_arg(comm.broadcast(&[&f32s], 1)), "root out of range");
    assert!(
        is_arg(comm.ppermute(&[&f32s], &[(0, 1)])),
        "destination out of range"
    );
    assert!(
        is_arg(comm.ppermute(&[&f32s], &[(0, 0), (0, 0)])),
        "a source twice"
    );
    let i16s = dev.upload(DType::I16, &[0u8; 8]).expect("upload");
    assert!(is_arg(comm.all_reduce(&[&i16s], ReduceOp::Sum)), "i16 sum");
    let i32s = dev.upload(DType::I32, &[0u8; 8]).expect("upload");
    assert!(
        is_arg(comm.all_reduce(&[&i32s], ReduceOp::Mean)),
        "i32 mean"
    );
    assert!(
        is_arg(NcclComm::for_devices(&[0, 0]).map(|_| Vec::new())),
        "GPU 0 twice"
    );
    assert!(
        is_arg(NcclComm::for_devices(&[]).map(|_| Vec::new())),
        "no device"
    );
    // Still usable afterwards.
    let out = comm
        .all_reduce(&[&f32s], ReduceOp::Max)
        .expect("all_reduce");
    assert_eq!(dev.download(&out[0]).expect("download"), vec![0u8; 12]);
}
