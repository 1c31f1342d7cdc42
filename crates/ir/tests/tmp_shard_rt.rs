#[test]
fn tmp_roundtrip() {
    let mut names: Vec<_> = std::fs::read_dir("/tmp/shard")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut bad = 0;
    for p in names {
        let t = std::fs::read_to_string(&p).unwrap();
        match jaxon_ir::parse_jaxpr(&t) {
            Err(e) => {
                bad += 1;
                println!("PARSE {}: {e}", p.display());
            }
            Ok(j) => {
                if let Err(e) = jaxon_ir::check_jaxpr(&j) {
                    bad += 1;
                    println!("CHECK {}: {e}", p.display());
                }
                let s = j.to_string();
                if s != t {
                    bad += 1;
                    println!("PRINT {}:", p.display());
                    for (a, b) in s.lines().zip(t.lines()) {
                        if a != b {
                            println!("  got  {a}\n  want {b}");
                            break;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(bad, 0);
}
