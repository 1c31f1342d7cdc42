//! [`GemmPlan`]s on a GPU through cuBLASLt, with the descriptors and the
//! chosen algorithm cached per plan (cudarc's high-level wrapper re-plans
//! every call).
//!
//! The library is column-major; a row-major `out = a · b` is issued as the
//! column-major `outᵀ = bᵀ · aᵀ`, each operand's unit stride deciding
//! whether it is passed as stored (`N`) or transposed (`T`). A plan's
//! element offsets move the pointers; they are not part of the cache key.
//!
//! Invariant: every cuBLASLt call happens after [`Blas::new`] found the
//! library, with the device's context current, on the device's stream.

use super::{Compute, Epilogue, GemmPlan, Operand};
use crate::error::{CudaError, Result};
use crate::runtime::{Device, DeviceBuffer};
use cudarc::cublaslt::{result as lt, sys};
use hashbrown::HashMap;
use jaxon_ir::DType;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// Workspace handed to cuBLASLt (NVIDIA recommends 32 MiB on Hopper).
const WORKSPACE_BYTES: usize = 32 << 20;

/// cuBLASLt on one device.
pub struct Blas {
    device: Arc<Device>,
    handle: usize,
    workspace: DeviceBuffer,
    plans: Mutex<HashMap<GemmPlan, Arc<Prepared>>>,
}

/// Descriptors and algorithm of one plan.
struct Prepared {
    /// Held from setting the bias pointer until the call has read the
    /// descriptor, so concurrent callers of one plan do not swap biases.
    in_use: Mutex<()>,
    desc: sys::cublasLtMatmulDesc_t,
    layouts: [sys::cublasLtMatrixLayout_t; 3],
    algo: sys::cublasLtMatmulAlgo_t,
}

// SAFETY: the descriptors are plain host objects, read-only once built.
unsafe impl Send for Prepared {}
unsafe impl Sync for Prepared {}

impl Drop for Prepared {
    fn drop(&mut self) {
        // SAFETY: created in `prepare`, destroyed once.
        unsafe {
            let _ = lt::destroy_matmul_desc(self.desc);
            for l in self.layouts {
                let _ = lt::destroy_matrix_layout(l);
            }
        }
    }
}

fn blas_err(what: &str) -> impl Fn(lt::CublasError) -> CudaError + '_ {
    move |e| CudaError::Driver(format!("cuBLASLt: {what}: {e:?}"))
}

impl Blas {
    /// cuBLASLt on `device`, or an error saying it is missing.
    pub fn new(device: &Arc<Device>) -> Result<Blas> {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { sys::is_culib_present() } {
            return Err(CudaError::NoDevice(
                "cuBLASLt (libcublasLt.so.13) was not found: install the CUDA 13 toolkit or \
                 `pip install nvidia-cublas` and put its lib folder on LD_LIBRARY_PATH"
                    .into(),
            ));
        }
        device.bind()?;
        let handle = lt::create_handle().map_err(blas_err("creating a handle"))?;
        let workspace = device.alloc(DType::U8, WORKSPACE_BYTES)?;
        Ok(Blas {
            device: device.clone(),
            handle: handle as usize,
            workspace,
            plans: Mutex::new(HashMap::new()),
        })
    }

    /// Queues `plan` on the device's stream.
    pub fn gemm(
        &self,
        plan: &GemmPlan,
        a: &DeviceBuffer,
        b: &DeviceBuffer,
        out: &DeviceBuffer,
        bias: Option<&DeviceBuffer>,
    ) -> Result<()> {
        let bad = |message: String| CudaError::Launch {
            kernel: "gemm".into(),
            message,
        };
        for (name, buf, want) in [
            ("a", a, plan.operand_dtype),
            ("b", b, plan.operand_dtype),
            ("out", out, plan.out_dtype),
        ] {
            if buf.dtype() != want {
                return Err(bad(format!(
                    "{name} is {}, the plan wants {want}",
                    buf.dtype()
                )));
            }
        }
        let bias_len = match (plan.epilogue.has_bias(), bias) {
            (true, Some(bb)) if bb.dtype() == plan.out_dtype => bb.len() as u64,
            (true, Some(bb)) => {
                return Err(bad(format!(
                    "the bias is {}, the plan wants {}",
                    bb.dtype(),
                    plan.out_dtype
                )))
            }
            (true, None) => return Err(bad("the epilogue needs a bias".into())),
            (false, _) => 0,
        };
        plan.validate(a.len() as u64, b.len() as u64, out.len() as u64, bias_len)?;
        self.device.bind()?;
        let key = GemmPlan {
            a: Operand {
                offset: 0,
                ..plan.a
            },
            b: Operand {
                offset: 0,
                ..plan.b
            },
            out: Operand {
                offset: 0,
                ..plan.out
            },
            ..*plan
        };
        let prepared = {
            let mut plans = self
                .plans
                .lock()
                .map_err(|_| CudaError::Driver("a thread panicked while planning a GEMM".into()))?;
            match plans.get(&key) {
                Some(p) => p.clone(),
                None => {
                    let p = Arc::new(self.prepare(&key)?);
                    plans.insert(key, p.clone());
                    p
                }
            }
        };
        let _in_use = prepared.in_use.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(bb) = bias.filter(|_| plan.epilogue.has_bias()) {
            let ptr = bb.ptr();
            // SAFETY: the descriptor is ours; the attribute is a device pointer.
            unsafe {
                lt::set_matmul_desc_attribute(
                    prepared.desc,
                    sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                    (&ptr as *const u64).cast(),
                    8,
                )
            }
            .map_err(blas_err("setting the bias"))?;
        }
        let at = |buf: &DeviceBuffer, op: &Operand| {
            buf.ptr() + op.offset * buf.dtype().size_bytes() as u64
        };
        let (pa, pb, pd) = (at(a, &plan.a), at(b, &plan.b), at(out, &plan.out));
        let beta = if plan.accumulate { 1.0 } else { 0.0 };
        let (alpha32, beta32, alpha64, beta64) = (1.0f32, beta as f32, 1.0f64, beta);
        let (alpha, beta): (*const c_void, *const c_void) = if plan.compute == Compute::F64 {
            (
                (&alpha64 as *const f64).cast(),
                (&beta64 as *const f64).cast(),
            )
        } else {
            (
                (&alpha32 as *const f32).cast(),
                (&beta32 as *const f32).cast(),
            )
        };
        let [la, lb, ld] = prepared.layouts;
        // SAFETY: the plan was validated against the buffers' lengths, the
        // descriptors match it, and the stream is the device's; library
        // `A` is our `b` and library `B` our `a` (see the module docs).
        unsafe {
            lt::matmul(
                self.handle as sys::cublasLtHandle_t,
                prepared.desc,
                alpha,
                beta,
                pb as *const c_void,
                la,
                pa as *const c_void,
                lb,
                pd as *const c_void,
                ld,
                pd as *mut c_void,
                ld,
                &prepared.algo,
                self.workspace.ptr() as *mut c_void,
                WORKSPACE_BYTES,
                self.device.cu_stream() as sys::cudaStream_t,
            )
        }
        .map_err(blas_err("running the product"))
    }

    /// Builds descriptors for `plan` and asks the heuristic for an algorithm.
    fn prepare(&self, plan: &GemmPlan) -> Result<Prepared> {
        use sys::cublasComputeType_t as C;
        use sys::cublasLtMatmulDescAttributes_t as D;
        let (compute, scale) = match plan.compute {
            Compute::F32 => (C::CUBLAS_COMPUTE_32F, sys::cudaDataType::CUDA_R_32F),
            Compute::Tf32 => (
                C::CUBLAS_COMPUTE_32F_FAST_TF32,
                sys::cudaDataType::CUDA_R_32F,
            ),
            Compute::F64 => (C::CUBLAS_COMPUTE_64F, sys::cudaDataType::CUDA_R_64F),
        };
        let desc =
            lt::create_matmul_desc(compute, scale).map_err(blas_err("creating a descriptor"))?;
        let mut prepared = Prepared {
            in_use: Mutex::new(()),
            desc,
            layouts: [std::ptr::null_mut(); 3],
            algo: sys::cublasLtMatmulAlgo_t { data: [0; 8] },
        };
        // Library A = bᵀ (n × k), library B = aᵀ (k × m), D = outᵀ (n × m).
        let (ta, la) = layout(&plan.b, plan.n, plan.k, plan, plan.operand_dtype)?;
        let (tb, lb) = layout(&plan.a, plan.k, plan.m, plan, plan.operand_dtype)?;
        prepared.layouts[0] = la;
        prepared.layouts[1] = lb;
        let (_, ld) = layout(&plan.out, plan.n, plan.m, plan, plan.out_dtype)?;
        prepared.layouts[2] = ld;
        let epilogue = match plan.epilogue {
            Epilogue::None => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DEFAULT,
            Epilogue::Relu => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU,
            Epilogue::Bias => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
            Epilogue::BiasRelu => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_BIAS,
            Epilogue::Gelu => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU,
            Epilogue::BiasGelu => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS,
        };
        // SAFETY: the descriptor was just created; each value has the
        // attribute's type (i32 operations, u32 epilogue enum).
        unsafe {
            let set = |attr: D, v: &i32| {
                lt::set_matmul_desc_attribute(desc, attr, (v as *const i32).cast(), 4)
            };
            set(D::CUBLASLT_MATMUL_DESC_TRANSA, &ta).map_err(blas_err("transa"))?;
            set(D::CUBLASLT_MATMUL_DESC_TRANSB, &tb).map_err(blas_err("transb"))?;
            let e = epilogue as u32;
            lt::set_matmul_desc_attribute(
                desc,
                D::CUBLASLT_MATMUL_DESC_EPILOGUE,
                (&e as *const u32).cast(),
                4,
            )
            .map_err(blas_err("epilogue"))?;
        }
        let pref = lt::create_matmul_pref().map_err(blas_err("creating preferences"))?;
        let ws = WORKSPACE_BYTES as u64;
        // SAFETY: `pref` is live until destroyed below; the layouts and
        // descriptor are complete.
        let heuristic = unsafe {
            let r = lt::set_matmul_pref_attribute(
                pref,
                sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&ws as *const u64).cast(),
                8,
            )
            .and_then(|()| {
                lt::get_matmul_algo_heuristic(
                    self.handle as sys::cublasLtHandle_t,
                    desc,
                    la,
                    lb,
                    ld,
                    ld,
                    pref,
                )
            });
            let _ = lt::destroy_matmul_pref(pref);
            r
        }
        .map_err(|e| CudaError::Driver(format!("cuBLASLt has no algorithm for {plan:?}: {e:?}")))?;
        prepared.algo = heuristic.algo;
        Ok(prepared)
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        if let Ok(mut plans) = self.plans.lock() {
            plans.clear();
        }
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { lt::destroy_handle(self.handle as sys::cublasLtHandle_t) };
    }
}

/// The column-major layout of a library operand that is the transpose of
/// our row-major `op` (library shape `rows × cols`), and whether the library
/// must transpose it (`CUBLAS_OP_T` = 1) or not (`CUBLAS_OP_N` = 0).
fn layout(
    op: &Operand,
    rows: u64,
    cols: u64,
    plan: &GemmPlan,
    dtype: DType,
) -> Result<(i32, sys::cublasLtMatrixLayout_t)> {
    use sys::cublasLtMatrixLayoutAttribute_t as L;
    let ty = match dtype {
        DType::F16 => sys::cudaDataType::CUDA_R_16F,
        DType::BF16 => sys::cudaDataType::CUDA_R_16BF,
        DType::F32 => sys::cudaDataType::CUDA_R_32F,
        DType::F64 => sys::cudaDataType::CUDA_R_64F,
        other => {
            return Err(CudaError::Launch {
                kernel: "gemm".into(),
                message: format!("cuBLASLt does not multiply {other}"),
            })
        }
    };
    // Library element (r, c) is our element (c, r): at c*row + r*col.
    let (trans, lrows, lcols, ld) = if op.col_stride == 1 {
        (0, rows, cols, op.row_stride)
    } else {
        (1, cols, rows, op.col_stride)
    };
    let ld = ld.max(lrows as i64);
    let l =
        lt::create_matrix_layout(ty, lrows, lcols, ld).map_err(blas_err("creating a layout"))?;
    if plan.batch > 1 {
        let count = plan.batch as i32;
        let stride = op.batch_stride;
        // SAFETY: `l` was just created; values have the attributes' types.
        unsafe {
            lt::set_matrix_layout_attribute(
                l,
                L::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                (&count as *const i32).cast(),
                4,
            )
            .and_then(|()| {
                lt::set_matrix_layout_attribute(
                    l,
                    L::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                    (&stride as *const i64).cast(),
                    8,
                )
            })
        }
        .map_err(blas_err("batching a layout"))?;
    }
    Ok((trans, l))
}
