//! With `tracing` at debug level, every jit cache miss says why.
//!
//! This test is its own binary on purpose: `tracing` caches each callsite's
//! interest process-wide, and a callsite first reached by another test's
//! thread while this test's scoped subscriber is being registered can be
//! cached as "never", which silently drops the later misses (seen once in
//! CI). Alone in its process, the only thread that logs is this one.

use jaxon_trace::numpy::All;
use jaxon_trace::{jit, Array};
use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn cache_misses_are_explained_at_debug_level() {
    let out = Captured::default();
    let sink = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    let f = jit(|x: Array| (x.sin() * 2.0).sum(All)).name("f");
    tracing::subscriber::with_default(subscriber, || {
        f.call(Array::from_vec(vec![0.5f32, 1.5, -2.0], &[3]))
            .unwrap();
        f.call(Array::from_vec(vec![0.25f32, 1.0, -3.0], &[3]))
            .unwrap();
        f.call(Array::from_vec(vec![0.5f32, 1.5, -2.0, 4.0], &[4]))
            .unwrap();
        f.call(Array::weak(2.0)).unwrap();
    });
    let log = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let misses: Vec<&str> = log.lines().filter(|l| l.contains("cache miss")).collect();
    assert_eq!(misses.len(), 3, "{log}");
    assert!(misses[0].contains("jit(f): first call"), "{}", misses[0]);
    assert!(
        misses[1].contains("argument 0 changed from f32[3] to f32[4]"),
        "{}",
        misses[1]
    );
    assert!(
        misses[2].contains("argument 0 changed from f32[4] to f32[] (weak)"),
        "{}",
        misses[2]
    );
}
