//! Prints every catalogue kernel as KIR and as CUDA C (`cargo run -p
//! jaxon-backend-cuda --example print_catalogue [NAME]`).

fn main() -> Result<(), jaxon_backend_cuda::CudaError> {
    let only = std::env::args().nth(1);
    for case in jaxon_backend_cuda::catalog::cases(jaxon_backend_cuda::catalog::Size::Small, 1)? {
        if only.as_deref().is_some_and(|n| n != case.kernel.name) {
            continue;
        }
        println!(
            "// ---- {} : {:?}\n{}",
            case.kernel.name, case.dims, case.kernel
        );
        println!("{}", jaxon_backend_cuda::cuda_c::print_kernel(&case.kernel));
    }
    Ok(())
}
