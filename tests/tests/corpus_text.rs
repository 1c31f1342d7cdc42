//! Parses every jaxpr of the JAX 0.10.2 conformance corpus (main and grad)
//! with its const values, and prints each back, comparing byte for byte.

use jaxon_ir::{parse_closed_jaxpr, parse_jaxpr, DType, HostArray, Storage};
use serde_json::Value;

fn corpus() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/jax-0.10.2-public.jsonl");
    let text = std::fs::read_to_string(path).expect("corpus file");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("corpus line is JSON"))
        .collect()
}

fn num(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "nan" => f64::NAN,
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        Value::Bool(b) => *b as u8 as f64,
        Value::Number(n) => n.as_f64().expect("number"),
        other => panic!("unexpected array element {other}"),
    }
}

fn flatten(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Array(items) => items.iter().for_each(|x| flatten(x, out)),
        x => out.push(x.clone()),
    }
}

/// Decodes a corpus ARRAY (`{dtype, shape, data}`) into a `HostArray`.
fn host_array(v: &Value) -> HostArray {
    let dtype = match v["dtype"].as_str().expect("dtype") {
        "f32" => DType::F32,
        "f64" => DType::F64,
        "i32" => DType::I32,
        "i64" => DType::I64,
        "u8" => DType::U8,
        "u32" => DType::U32,
        "bool" => DType::Bool,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        other => panic!("unknown dtype {other}"),
    };
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    let mut elems = Vec::new();
    flatten(&v["data"], &mut elems);
    // Integers exactly (i64 may not fit an f64), everything else via f64.
    let data = match dtype {
        DType::I64 => Storage::I64(elems.iter().map(|e| e.as_i64().expect("i64")).collect()),
        DType::I32 => Storage::I32(
            elems
                .iter()
                .map(|e| e.as_i64().expect("i32") as i32)
                .collect(),
        ),
        DType::U32 => Storage::U32(
            elems
                .iter()
                .map(|e| e.as_u64().expect("u32") as u32)
                .collect(),
        ),
        DType::U8 => Storage::U8(
            elems
                .iter()
                .map(|e| e.as_u64().expect("u8") as u8)
                .collect(),
        ),
        _ => Storage::from_f64(dtype, &elems.iter().map(num).collect::<Vec<_>>()),
    };
    HostArray::new(shape, data).expect("consistent array")
}

fn consts(v: &Value) -> Vec<HostArray> {
    v.as_array()
        .map(|a| a.iter().map(host_array).collect())
        .unwrap_or_default()
}

/// (case name, which, text, consts) for every jaxpr of the corpus.
fn texts() -> Vec<(String, &'static str, String, Vec<HostArray>)> {
    let mut out = Vec::new();
    for case in corpus() {
        let name = case["name"].as_str().expect("name").to_string();
        out.push((
            name.clone(),
            "jaxpr",
            case["jaxpr"].as_str().expect("jaxpr").to_string(),
            consts(&case["consts"]),
        ));
        if let Some(g) = case.get("grad").filter(|g| !g.is_null()) {
            out.push((
                name,
                "grad",
                g["jaxpr"].as_str().expect("grad jaxpr").to_string(),
                consts(&g["consts"]),
            ));
        }
    }
    out
}

#[test]
fn every_corpus_jaxpr_parses_with_its_consts() {
    let all = texts();
    assert!(all.len() >= 141, "corpus has {} jaxprs", all.len());
    let mut failures = Vec::new();
    for (name, which, text, consts) in &all {
        let n = consts.len();
        match parse_closed_jaxpr(text, consts.clone()) {
            Ok(c) => {
                assert_eq!(
                    c.consts.len(),
                    c.jaxpr.constvars.len(),
                    "{name} {which}: top-level consts"
                );
                assert!(c.consts.len() <= n);
            }
            Err(e) => failures.push(format!("{name} {which}: {e}")),
        }
        // Without values, the jaxpr still parses.
        if let Err(e) = parse_jaxpr(text) {
            failures.push(format!("{name} {which} (no consts): {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn wrong_consts_are_rejected() {
    let all = texts();
    let mut checked = 0;
    for (name, which, text, consts) in all.iter().filter(|t| !t.3.is_empty()) {
        let mut fewer = consts.clone();
        fewer.pop();
        assert!(
            parse_closed_jaxpr(text, fewer).is_err(),
            "{name} {which}: too few consts"
        );
        let mut more = consts.clone();
        more.push(HostArray::zeros(DType::F32, &[7, 7, 7]));
        assert!(
            parse_closed_jaxpr(text, more).is_err(),
            "{name} {which}: too many consts"
        );
        let mut wrong = consts.clone();
        wrong[0] = HostArray::zeros(DType::U8, &[7, 7, 7]);
        assert!(
            parse_closed_jaxpr(text, wrong).is_err(),
            "{name} {which}: wrong type"
        );
        checked += 1;
    }
    assert!(checked > 0, "the corpus has cases with consts");
}

#[test]
fn every_corpus_jaxpr_prints_back_byte_for_byte() {
    let all = texts();
    // Documented failures (tests/data/known-failures.txt) are left out.
    let known_path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/known-failures.txt");
    let known_text = std::fs::read_to_string(known_path).expect("known-failures.txt");
    let known: Vec<(&str, &str)> = known_text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| l.split_once(char::is_whitespace))
        .map(|(c, k)| (c, k.trim()))
        .collect();
    let mut failures = Vec::new();
    let mut excused = 0;
    for (name, which, text, consts) in &all {
        let check = if *which == "grad" {
            "grad_print"
        } else {
            "print"
        };
        if known.contains(&(name.as_str(), check)) {
            excused += 1;
            continue;
        }
        let Ok(c) = parse_closed_jaxpr(text, consts.clone()) else {
            failures.push(format!("{name} {which}: does not parse"));
            continue;
        };
        let printed = jaxon_ir::print::print_jaxpr(&c.jaxpr);
        if &printed != text {
            let line = printed
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            failures.push(format!(
                "{name} {which}: first difference at line {}:\n  want: {:?}\n  got:  {:?}",
                line + 1,
                text.lines().nth(line).unwrap_or(""),
                printed.lines().nth(line).unwrap_or("")
            ));
        }
    }
    let ok = all.len() - failures.len() - excused;
    assert!(
        failures.is_empty(),
        "{ok}/{} jaxprs print back exactly; failures:\n{}",
        all.len(),
        failures.join("\n")
    );
}

/// Truncations and byte edits of every corpus text: the parser returns
/// (an error, usually) and never panics; errors carry a valid position.
#[test]
fn damaged_corpus_texts_never_panic() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    const ASCII: &[u8] = b"{}()[],;:.=<>-+*_ \n0123456789abfinlmet";
    let mut errors = 0;
    let mut total = 0;
    for (_, _, text, _) in texts() {
        let n = text.len();
        for k in 0..24 {
            let mut bytes = text.as_bytes().to_vec();
            if k % 2 == 0 {
                bytes.truncate((rand() as usize) % n.max(1));
            } else {
                for _ in 0..1 + k % 4 {
                    if bytes.is_empty() {
                        break;
                    }
                    let p = rand() as usize % bytes.len();
                    bytes[p] = ASCII[rand() as usize % ASCII.len()];
                }
            }
            let Ok(t) = String::from_utf8(bytes) else {
                continue;
            };
            total += 1;
            if let Err(e) = parse_jaxpr(&t) {
                errors += 1;
                assert!(e.line >= 1 && e.column >= 1 && !e.message.is_empty());
                assert!(
                    e.line <= t.lines().count().max(1) + 1,
                    "{e} beyond the text"
                );
            }
        }
    }
    // Most damage is detected.
    assert!(
        errors * 2 > total,
        "{errors}/{total} damaged texts rejected"
    );
}
