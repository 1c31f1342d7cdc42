//! `jaxon::device_put`: the values on the current backend's device, equal
//! to the input, usable by `jit`; under `cuda` (with a GPU) the array and
//! a jitted function's results stay on the GPU.

use jaxon::prelude::*;

fn values() -> Array {
    Array::from_vec(vec![1.5f32, -2.0, 0.25, 8.0, -0.5, 3.0], &[2, 3])
}

#[test]
fn device_put_keeps_values_on_every_host_backend() {
    for backend in ["cpu", "interpreter", "cuda-sim"] {
        jaxon::with_backend(backend, || {
            let x = jaxon::device_put(&values()).expect("device_put");
            assert_eq!(x.shape(), vec![2, 3]);
            assert_eq!(x.to_vec::<f32>(), values().to_vec::<f32>(), "{backend}");
            let y = jit(|x: Array| (x * 2.0).sum(All)).call(x).expect("jit");
            assert_eq!(y.item::<f32>(), 20.5, "{backend}");
        })
        .expect("backend");
    }
}

#[test]
fn device_put_of_a_tracer_is_a_concretization_error() {
    let r = make_jaxpr(|x: Array| jaxon::ok_or_raise(jaxon::device_put(&x)))(values());
    let msg = r.unwrap_err().to_string();
    assert!(
        msg.contains("concretization") && msg.contains("device_put"),
        "{msg}"
    );
}

#[test]
fn under_cuda_arrays_stay_on_the_gpu() {
    if jaxon::backend_cuda::runtime::Device::open(0).is_err() {
        println!("skipped: no GPU");
        return;
    }
    jaxon::with_backend("cuda", || {
        let x = jaxon::device_put(&values()).expect("device_put");
        let on_gpu = |a: &Array| {
            a.buffer().is_some_and(|b| {
                b.as_any()
                    .is::<jaxon::backend_cuda::lower::backend::CudaArray>()
            })
        };
        assert!(on_gpu(&x), "device_put under cuda gives a GPU array");
        let f = jit(|x: Array| x.sin() * 3.0 + 1.0);
        let y = f.call(x).expect("jit on the GPU");
        assert!(on_gpu(&y), "a jitted result stays on the GPU");
        let z = f.call(y.clone()).expect("chained");
        let want: Vec<f32> = values()
            .to_vec::<f32>()
            .iter()
            .map(|v| (v.sin() * 3.0 + 1.0).sin() * 3.0 + 1.0)
            .collect();
        for (g, w) in z.to_vec::<f32>().iter().zip(&want) {
            assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} against {w}");
        }
        println!("gpu-check: device_put and jit keep arrays on the GPU");
    })
    .expect("cuda backend");
}

#[test]
fn the_default_backend_is_the_gpu_where_one_is_present() {
    if std::env::var_os("JAXON_BACKEND").is_some() {
        println!("skipped: JAXON_BACKEND chooses the backend");
        return;
    }
    let gpu = jaxon::backend_cuda::runtime::device_count().is_ok_and(|n| n > 0)
        && jaxon::backend_cuda::nvrtc::nvrtc_version().is_ok();
    let want = if gpu { "gpu" } else { "cpu" };
    assert_eq!(jaxon::default_backend().expect("backend"), want);
    assert_eq!(
        jaxon::eval_backend().expect("backend").name(),
        if gpu { "cuda" } else { "cpu" }
    );
}

#[test]
fn arrays_know_their_devices_and_move_between_them() {
    use jaxon::ArrayDevices;
    let x = values();
    assert_eq!(x.device().expect("device").to_string(), "CpuDevice(id=0)");
    assert_eq!(x.devices().expect("devices").len(), 1);
    // To the host device: same values, still on the CPU.
    let cpu0 = jaxon::Device {
        id: 0,
        process_index: 0,
        platform: "cpu",
    };
    let y = jaxon::device_put_on(&x, &cpu0).expect("device_put");
    assert_eq!(y.to_vec::<f32>(), x.to_vec::<f32>());
    assert_eq!(y.device().expect("device"), cpu0);
    // A traced array has no device yet.
    let r = make_jaxpr(|x: Array| {
        let e = x.devices().unwrap_err();
        assert!(e.to_string().contains("concretization"), "{e}");
        x
    })(values());
    assert!(r.is_ok());
    // GPU 1 is not driven; GPU 0 works where there is a GPU and is an
    // error naming what is missing where there is none.
    let gpu = |id| jaxon::Device {
        id,
        process_index: 0,
        platform: "gpu",
    };
    let e = jaxon::device_put_on(&x, &gpu(1)).unwrap_err().to_string();
    assert!(e.contains("GPU 0 only"), "{e}");
    match jaxon::device_put_on(&x, &gpu(0)) {
        Ok(g) => {
            assert_eq!(g.device().expect("device").to_string(), "CudaDevice(id=0)");
            assert_eq!(g.to_vec::<f32>(), x.to_vec::<f32>());
            let back = jaxon::device_put_on(&g, &cpu0).expect("back");
            assert_eq!(back.device().expect("device"), cpu0);
        }
        Err(e) => {
            assert!(
                jaxon::backend_cuda::runtime::Device::open(0).is_err(),
                "{e}"
            );
            println!("no GPU: {e}");
        }
    }
}

#[test]
fn a_sharded_array_is_on_its_mesh_devices() {
    use jaxon::ArrayDevices;
    jaxon::set_cpu_device_count(2).expect("2 devices");
    // On the CPU backend: a GPU machine's default backend has one device.
    jaxon::with_backend("cpu", || {
        let mesh = jaxon::make_mesh(&[2], &["x"]).expect("mesh");
        let s = jaxon::named_sharding(&mesh, jaxon::P!("x"));
        let x = jaxon::device_put_sharded(&values(), &s).expect("sharded");
        let ds = x.devices().expect("devices");
        assert_eq!(ds.len(), 2);
        let e = x.device().unwrap_err().to_string();
        assert!(
            e.contains("sharded over CpuDevice(id=0), CpuDevice(id=1)"),
            "{e}"
        );
    })
    .expect("backend");
}
