//! Devices, meshes and sharded arrays through the facade: `devices()`,
//! `device_put_sharded` (each device's block against a slice of the
//! input, the whole read back equal to it), sharded arrays in ordinary
//! operations and in `shard_map`/`pmap`, and the errors a user meets.

use jaxon::collectives::psum;
use jaxon::prelude::*;
use jaxon::{
    addressable_shards, device_count, device_put_sharded, devices, local_devices, make_mesh,
    named_sharding, pmap, set_cpu_device_count, shard_map, sharding_of, with_sharding_constraint,
    P,
};

fn four_devices() {
    set_cpu_device_count(4).unwrap();
}

fn rand(shape: &[usize], seed: u64) -> Array {
    random::normal(&random::key(seed), shape, DType::F32).unwrap()
}

#[test]
fn devices_are_the_host_device_count() {
    four_devices();
    let d = devices().unwrap();
    assert_eq!(d.len(), 4);
    assert_eq!(device_count().unwrap(), 4);
    assert_eq!(local_devices().unwrap(), d);
    assert_eq!(d[2].to_string(), "CpuDevice(id=2)");
    assert!(d
        .iter()
        .enumerate()
        .all(|(i, d)| d.id == i && d.process_index == 0));
    let e = set_cpu_device_count(0).unwrap_err().to_string();
    assert!(e.contains("from 1 to 4096"), "{e}");
}

#[test]
fn a_sharded_array_holds_one_block_per_device_and_reads_back_whole() {
    four_devices();
    let mesh = make_mesh(&[2, 2], &["a", "b"]).unwrap();
    let x = rand(&[4, 6], 1);
    let s = named_sharding(&mesh, P!("a", None));
    let y = device_put_sharded(&x, &s).unwrap();
    assert_eq!(sharding_of(&y), Some(s));
    assert_eq!(y.to_vec::<f32>(), x.to_vec::<f32>());
    let shards = addressable_shards(&y).unwrap();
    assert_eq!(shards.len(), 4);
    let xv = x.to_vec::<f32>();
    for sh in &shards {
        // Rows split over `a` (device coordinate rank / 2), replicated over `b`.
        let r0 = (sh.device / 2) * 2;
        assert_eq!(sh.index, vec![r0..r0 + 2, 0..6]);
        assert_eq!(sh.data.to_vec::<f32>(), xv[r0 * 6..(r0 + 2) * 6].to_vec());
    }
    // An ordinary operation takes it as a whole array.
    let z = (&y * 2.0).to_vec::<f32>();
    assert!(z.iter().zip(&xv).all(|(a, b)| (a - 2.0 * b).abs() < 1e-6));
    // A 2-D split: device (i, j) holds block (i, j).
    let w = device_put_sharded(&x, &named_sharding(&mesh, P!("a", "b"))).unwrap();
    let shards = addressable_shards(&w).unwrap();
    assert_eq!(shards[3].index, vec![2..4, 3..6]);
    assert_eq!(w.to_vec::<f32>(), xv);
    // Unsharded: one shard, the whole array.
    assert_eq!(addressable_shards(&x).unwrap()[0].index, vec![0..4, 0..6]);
    assert_eq!(sharding_of(&x), None);
}

#[test]
fn sharded_arrays_feed_shard_map_and_pmap() {
    four_devices();
    let mesh = make_mesh(&[4], &["x"]).unwrap();
    let x = rand(&[8, 3], 2);
    let xs = device_put_sharded(&x, &named_sharding(&mesh, P!("x"))).unwrap();
    let f = shard_map(
        |s: Array| psum(&s.sum(0), "x").unwrap(),
        &mesh,
        P!("x"),
        P!(),
    );
    let got = f.call(xs).unwrap().to_vec::<f32>();
    let want = x.sum(0).to_vec::<f32>();
    assert!(
        got.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5),
        "{got:?} {want:?}"
    );
    let p = pmap(|v: Array| psum(&v, "i").unwrap() - &v).axis_name("i");
    let got = p.call(rand(&[4, 2], 3)).unwrap();
    assert_eq!(got.shape(), vec![4, 2]);
}

#[test]
fn sharding_errors_name_the_shapes_and_the_devices() {
    four_devices();
    let mesh = make_mesh(&[4], &["x"]).unwrap();
    let e = device_put_sharded(&rand(&[6], 4), &named_sharding(&mesh, P!("x")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("[6]") && e.contains("not divisible by 4"), "{e}");
    let e = make_mesh(&[3, 2], &["a", "b"]).unwrap_err().to_string();
    assert!(e.contains("needs 6 devices") && e.contains("has 4"), "{e}");
    let e = make_mesh(&[2], &["a", "b"]).unwrap_err().to_string();
    assert!(e.contains("2 names"), "{e}");
}

#[test]
fn with_sharding_constraint_places_or_stages() {
    four_devices();
    let mesh = make_mesh(&[2, 2], &["a", "b"]).unwrap();
    let x = rand(&[4, 6], 7);
    let s = named_sharding(&mesh, P!("a", "b"));
    // Concrete: the array is placed as asked.
    let y = with_sharding_constraint(&x, &s).unwrap();
    assert_eq!(sharding_of(&y), Some(s.clone()));
    assert_eq!(y.to_vec::<f32>(), x.to_vec::<f32>());
    // Traced: a `sharding_constraint` equation, as JAX prints it, and an
    // identity on values under jit and grad.
    let f = |x: Array| with_sharding_constraint(&(&x * 2.0), &s).unwrap().sin();
    let text = make_jaxpr(f)(x.clone()).unwrap().to_string();
    assert!(text.contains("sharding_constraint["), "{text}");
    assert!(
        text.contains("sharding=NamedSharding(mesh=Mesh('a': 2, 'b': 2, axis_types=(Auto, Auto)), spec=P('a', 'b'), memory_kind=device)"),
        "{text}"
    );
    let want: Vec<f32> = x.to_vec::<f32>().iter().map(|v| (2.0 * v).sin()).collect();
    let got = jit(f).call(x.clone()).unwrap().to_vec::<f32>();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-6, "{g} vs {w}");
    }
    let g = grad(|x: Array| f(x).sum(jnp::All))(x.clone()).unwrap();
    for (g, v) in g.to_vec::<f32>().iter().zip(x.to_vec::<f32>()) {
        assert!((g - 2.0 * (2.0 * v).cos()).abs() < 1e-5);
    }
    // A sharding that does not fit: 6 columns over a 4-way axis product.
    let bad = named_sharding(&mesh, P!(None, ("a", "b")));
    let e = with_sharding_constraint(&x, &bad).unwrap_err().to_string();
    assert!(e.contains("with_sharding_constraint"), "{e}");
}
