//! `jaxon::distributed` in a group of one process (no session): every
//! collective keeps its definition (`psum` of one value is the value,
//! `all_gather` stacks one part), and bad calls are errors.

use jaxon::distributed;
use jaxon::prelude::*;

#[test]
fn a_group_of_one_keeps_every_definition() {
    assert_eq!(distributed::process_index(), 0);
    assert_eq!(distributed::process_count(), 1);
    let x = Array::from_vec(vec![1.5f32, -2.0, 0.25], &[3]);
    let i = Array::from_vec(vec![3i32, -4], &[2]);
    let (s, si) = distributed::psum(&(x.clone(), i.clone())).unwrap();
    assert_eq!(s.to_vec::<f32>(), x.to_vec::<f32>());
    assert_eq!(si.to_vec::<i32>(), i.to_vec::<i32>());
    assert_eq!(
        distributed::pmean(&x).unwrap().to_vec::<f32>(),
        x.to_vec::<f32>()
    );
    assert_eq!(distributed::pmax(&i).unwrap().to_vec::<i32>(), vec![3, -4]);
    assert_eq!(
        distributed::pmin(&x).unwrap().to_vec::<f32>(),
        x.to_vec::<f32>()
    );
    let g = distributed::all_gather(&vec![x.clone(), i.clone()]).unwrap();
    assert_eq!(g[0].shape(), vec![1, 3]);
    assert_eq!(g[0].to_vec::<f32>(), x.to_vec::<f32>());
    assert_eq!(g[1].shape(), vec![1, 2]);
    let b = distributed::broadcast(&x, 0).unwrap();
    assert_eq!(b.to_vec::<f32>(), x.to_vec::<f32>());
}

#[test]
fn bad_calls_are_errors() {
    let i = Array::from_vec(vec![3i32, -4], &[2]);
    let err = distributed::pmean(&i).unwrap_err().to_string();
    assert!(err.contains("pmean") && err.contains("i32"), "{err}");
    let flags = Array::from_vec(vec![true], &[1]);
    let err = distributed::psum(&flags).unwrap_err().to_string();
    assert!(err.contains("bool"), "{err}");
    let err = distributed::broadcast(&i, 1).unwrap_err().to_string();
    assert!(err.contains("root process 1"), "{err}");
    // Inside a trace the values are not known yet: a concretization error
    // naming the collective.
    let traced = make_jaxpr(|x: Array| jaxon::ok_or_raise(distributed::psum(&x)))(i.clone());
    let msg = traced.unwrap_err().to_string();
    assert!(
        msg.contains("concretization") && msg.contains("distributed::psum"),
        "{msg}"
    );
}

#[cfg(not(feature = "mpi"))]
#[test]
fn initialize_without_the_feature_names_it() {
    let err = distributed::initialize().unwrap_err().to_string();
    assert!(err.contains("`mpi` feature"), "{err}");
}

#[test]
fn the_timeout_can_be_set() {
    distributed::set_timeout(std::time::Duration::from_millis(1500));
    assert_eq!(
        distributed::timeout(),
        std::time::Duration::from_millis(1500)
    );
}

/// A group of one: the NCCL communicator has one rank on the GPU named; a
/// machine without a GPU or NCCL gets an error saying which, not a panic.
#[test]
fn an_nccl_communicator_of_one_or_a_clear_error() {
    let gpus = jaxon::backend_cuda::runtime::device_count().unwrap_or(0);
    match distributed::nccl_communicator(0) {
        Ok(comm) => {
            assert!(gpus > 0, "a communicator without a GPU");
            assert_eq!(comm.size(), 1);
        }
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.contains("nccl_communicator on process 0 of 1")
                    && (text.contains("opening the GPU") || text.contains("loading NCCL")),
                "{text}"
            );
            println!("skipped: no GPU or NCCL here ({text})");
        }
    }
}
