//! `JAXON_CUDA_SIM_DEVICES`: the simulator's device count comes from the
//! environment (1 when unset); a bad value is an error quoting it from
//! `sim_devices_from_env`, and the backend then has 1 device (reported on
//! stderr once). A binary of its own: the test changes the process's
//! environment.

use jaxon_backend_cuda::lower::{sim_devices_from_env, CudaSimBackend, SIM_DEVICES_ENV};
use jaxon_ir::{parse_closed_jaxpr, Backend, DType, HostArray};

/// `shard_map` of `neg` over a mesh of `n` devices.
fn neg_on(n: usize) -> jaxon_ir::ClosedJaxpr {
    parse_closed_jaxpr(
        &format!(
            "{{ lambda ; a:f32[{n}]. let
    b:f32[{n}] = shard_map[
      check_vma=False
      in_specs=(P('x',),)
      jaxpr={{ lambda ; c:f32[1]. let d:f32[1] = neg c in (d,) }}
      mesh=Mesh('x': {n}, axis_types=(Auto,))
      newly_manual_axes=frozenset({{'x'}})
      out_specs=(P('x',),)
    ] a
  in (b,) }}"
        ),
        Vec::new(),
    )
    .expect("parses")
}

#[test]
fn the_device_count_comes_from_the_environment() {
    // Only this test touches the variable in this binary.
    std::env::set_var(SIM_DEVICES_ENV, "3");
    assert_eq!(sim_devices_from_env().unwrap(), 3);
    let b = CudaSimBackend::new();
    assert_eq!(b.device_count(), 3);
    // A mesh of 3 runs; a mesh of 4 is an error naming both numbers.
    let x = HostArray::from_f64(DType::F32, &[3], &[1.0, -2.0, 3.5]).unwrap();
    let exe = b.compile(&neg_on(3)).expect("a mesh of 3 compiles");
    let out = exe.execute(&[b.to_device(&x).unwrap()]).unwrap();
    assert_eq!(
        out[0].to_host().unwrap().to_f64_vec(),
        vec![-1.0, 2.0, -3.5]
    );
    let e = b
        .compile(&neg_on(4))
        .err()
        .expect("a mesh of 4")
        .to_string();
    assert!(e.contains("4 devices") && e.contains("has 3"), "{e}");
    // `with_devices` overrides the variable.
    assert_eq!(CudaSimBackend::new().with_devices(5).device_count(), 5);
    for bad in ["0", "two", "-1", "5000"] {
        std::env::set_var(SIM_DEVICES_ENV, bad);
        let e = sim_devices_from_env().unwrap_err().to_string();
        assert!(e.contains(SIM_DEVICES_ENV) && e.contains(bad), "{e}");
        assert_eq!(CudaSimBackend::new().device_count(), 1);
    }
    std::env::remove_var(SIM_DEVICES_ENV);
    assert_eq!(CudaSimBackend::new().device_count(), 1);
    let e = CudaSimBackend::new()
        .compile(&neg_on(2))
        .err()
        .expect("a mesh of 2 on one device")
        .to_string();
    assert!(e.contains("2 devices") && e.contains("has 1"), "{e}");
}
