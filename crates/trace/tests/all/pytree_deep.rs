//! Deeply nested pytrees never overflow the stack (issue 23): recursive
//! `#[derive(Pytree)]` types 100,000 levels deep flatten, unflatten, clone,
//! compare, hash, print and drop on a test thread's default stack (key
//! paths 3,000 deep, as they grow with the square of the depth),
//! and a jitted function takes and returns a 2,000-deep
//! tree with the values of a loop over its leaves.

use jaxon_macros::Pytree;
use jaxon_trace::pytree::{Pytree, TreeDef};
use jaxon_trace::tree_util::leaf_key_paths;
use jaxon_trace::{jit, Array};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// A linked list: recursion through `Option<Box<_>>`.
#[derive(Pytree)]
struct Chain {
    x: Array,
    next: Option<Box<Chain>>,
}

impl Chain {
    fn new(depth: usize) -> Chain {
        let mut c = Chain {
            x: Array::scalar(0f32),
            next: None,
        };
        for i in 1..depth {
            c = Chain {
                x: Array::scalar(i as f32),
                next: Some(Box::new(c)),
            };
        }
        c
    }

    /// The leaves from the head, iteratively.
    fn values(&self) -> Vec<f32> {
        let mut out = vec![self.x.item::<f32>()];
        let mut cur = &self.next;
        while let Some(c) = cur {
            out.push(c.x.item::<f32>());
            cur = &c.next;
        }
        out
    }
}

impl Drop for Chain {
    // Rust's own drop of a long `Box` chain recurses; a user type this deep
    // needs an iterative drop like this one (the library's `TreeDef` has one).
    fn drop(&mut self) {
        let mut next = self.next.take();
        while let Some(mut c) = next {
            next = c.next.take();
        }
    }
}

/// A rose tree: recursion through `Vec<_>`.
#[derive(Pytree)]
struct Rose {
    x: Array,
    kids: Vec<Rose>,
}

impl Drop for Rose {
    fn drop(&mut self) {
        let mut work = std::mem::take(&mut self.kids);
        while let Some(mut r) = work.pop() {
            work.append(&mut r.kids);
        }
    }
}

fn hash_of(d: &TreeDef) -> u64 {
    let mut h = DefaultHasher::new();
    d.hash(&mut h);
    h.finish()
}

#[test]
fn a_chain_100000_deep_round_trips_without_overflow() {
    let n = 100_000;
    let chain = Chain::new(n);
    let (leaves, def) = chain.flatten();
    assert_eq!(leaves.len(), n);
    assert_eq!(def.num_leaves(), n);
    let copy = def.clone();
    assert!(copy == def);
    assert_eq!(hash_of(&copy), hash_of(&def));
    assert!(format!("{def:?}").starts_with("Node(Struct"));
    // Key paths hold the whole path per leaf (quadratic, as in JAX): walk a
    // shallower chain, still far past the thread's stack.
    let paths = leaf_key_paths(&Chain::new(3_000).flatten().1);
    assert_eq!(paths.len(), 3_000);
    assert_eq!(paths[2_999].len(), 3_000); // `next` 2,999 times, then `x`
    let back = Chain::unflatten(&def, leaves).expect("unflatten");
    assert_eq!(back.values(), chain.values());
    assert_eq!(
        back.values()[..3],
        [(n - 1) as f32, (n - 2) as f32, (n - 3) as f32]
    );
    // A structure mismatch deep down is an error with a bounded message.
    let other = Chain::new(n - 1).flatten().1;
    assert!(other != def);
    let e = Chain::unflatten(&other, Chain::new(n).flatten().0)
        .err()
        .expect("mismatch")
        .to_string();
    assert!(e.len() < 1000, "{} bytes", e.len());
    drop((def, copy, other));
}

#[test]
fn a_rose_tree_100000_deep_round_trips_without_overflow() {
    let n = 100_000;
    let mut t = Rose {
        x: Array::scalar(0f32),
        kids: Vec::new(),
    };
    for i in 1..n {
        t = Rose {
            x: Array::scalar(i as f32),
            kids: vec![
                t,
                Rose {
                    x: Array::scalar(-1f32),
                    kids: Vec::new(),
                },
            ],
        };
    }
    let (leaves, def) = t.flatten();
    assert_eq!(leaves.len(), 2 * n - 1);
    let back = Rose::unflatten(&def, leaves).expect("unflatten");
    let (l2, d2) = back.flatten();
    assert!(d2 == def);
    assert_eq!(l2.len(), 2 * n - 1);
    assert_eq!(l2[0].item::<f32>(), (n - 1) as f32);
}

#[test]
fn jit_takes_and_returns_a_deep_tree() {
    let n = 2_000;
    let f = jit(|mut c: Chain| {
        c.x = &c.x * 2.0;
        c
    });
    let got = f.call(Chain::new(n)).expect("jit");
    let want: Vec<f32> = Chain::new(n)
        .values()
        .iter()
        .enumerate()
        .map(|(i, v)| if i == 0 { v * 2.0 } else { *v })
        .collect();
    assert_eq!(got.values(), want);
}
