//! Eager operations compile once per (backend, primitive with params, input
//! avals): a counting backend sees one compile per distinct signature.

use jaxon_ir::interp::InterpreterBackend;
use jaxon_ir::{Backend, Buffer, ClosedJaxpr, Executable, HostArray, IrError};
use jaxon_trace::{register_backend, with_backend, Array};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

struct Counting {
    inner: InterpreterBackend,
    compiles: Arc<AtomicUsize>,
}

impl Backend for Counting {
    fn name(&self) -> &str {
        "counting-eager"
    }
    fn compile(&self, jaxpr: &ClosedJaxpr) -> Result<Arc<dyn Executable>, IrError> {
        self.compiles.fetch_add(1, Ordering::SeqCst);
        self.inner.compile(jaxpr)
    }
    fn to_device(&self, array: &HostArray) -> Result<Arc<dyn Buffer>, IrError> {
        self.inner.to_device(array)
    }
}

#[test]
fn each_eager_signature_compiles_once() {
    let compiles = Arc::new(AtomicUsize::new(0));
    register_backend(Arc::new(Counting {
        inner: InterpreterBackend::new(),
        compiles: compiles.clone(),
    }));
    let x = Array::from_vec(vec![0.3f32, -1.7, 2.2], &[3]);
    let y = Array::from_vec(vec![1.5f32, 0.25], &[2]);
    let (first, again, other_shape, other_param) = with_backend("counting-eager", || {
        let a = x.sin() * 2.0;
        let n0 = compiles.load(Ordering::SeqCst);
        let b = x.sin() * 2.0;
        let n1 = compiles.load(Ordering::SeqCst);
        let _ = y.sin();
        let n2 = compiles.load(Ordering::SeqCst);
        // Same primitive, other params: a different executable.
        let _ = x.sum(0);
        let _ = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).sum(1);
        let n3 = compiles.load(Ordering::SeqCst);
        assert_eq!(a.to_vec::<f32>(), b.to_vec::<f32>());
        (n0, n1, n2, n3)
    })
    .expect("registered");
    assert_eq!(first, 2, "sin and mul compile once each");
    assert_eq!(again, first, "the repeated ops hit the cache");
    assert_eq!(other_shape, first + 1, "a new shape compiles sin again");
    assert_eq!(
        other_param,
        other_shape + 2,
        "two reductions, two executables"
    );
    let expect: Vec<f32> = [0.3f32, -1.7, 2.2].iter().map(|v| v.sin() * 2.0).collect();
    let got = with_backend("counting-eager", || (x.sin() * 2.0).to_vec::<f32>()).expect("runs");
    assert_eq!(got, expect);
}
