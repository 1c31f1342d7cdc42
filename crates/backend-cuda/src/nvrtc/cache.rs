//! The compile caches' keys and the on-disk cache: a stable 128-bit FNV-1a
//! hash over everything that decides a CUBIN, and one file per key holding
//! the CUBIN, the PTX and NVRTC's log.
//!
//! Invariants: the hash is stable across runs, builds and machines (no
//! random keys); a disk entry is written to a temporary file and renamed
//! into place, so readers never see a partial entry; an entry that is
//! missing, unreadable, truncated, for another key or fails its checksum
//! is a miss, never an error; a failing write is a warning.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bumped whenever the printed C, the options or the entry format change
/// in a way the other inputs do not capture.
const FORMAT: &[u8] = b"jaxon-kernel-cache-v1";
const MAGIC: &[u8; 8] = b"JAXONKC1";

/// 128-bit FNV-1a over length-prefixed parts.
pub fn fnv1a128(parts: &[&[u8]]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h = OFFSET;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u128::from(b);
            h = h.wrapping_mul(PRIME);
        }
    };
    for p in parts {
        eat(&(p.len() as u64).to_le_bytes());
        eat(p);
    }
    h
}

/// The key of one compile.
pub fn key(source: &str, options: &[String], arch: &str, nvrtc: (i32, i32)) -> u128 {
    let opts = options.join("\u{1f}");
    let version = format!("{}.{}", nvrtc.0, nvrtc.1);
    fnv1a128(&[
        FORMAT,
        source.as_bytes(),
        opts.as_bytes(),
        arch.as_bytes(),
        version.as_bytes(),
    ])
}

/// The default cache folder: `$JAXON_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/jaxon/kernels`, else `~/.cache/jaxon/kernels`; `None`
/// when `JAXON_CACHE_DIR` is set empty (caching off) or no home is known.
pub fn default_dir() -> Option<PathBuf> {
    let non_empty = |v: &str| std::env::var_os(v).filter(|s| !s.is_empty());
    if let Some(d) = std::env::var_os("JAXON_CACHE_DIR") {
        return (!d.is_empty()).then(|| PathBuf::from(d));
    }
    if let Some(x) = non_empty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(x).join("jaxon").join("kernels"));
    }
    non_empty("HOME").map(|h| {
        PathBuf::from(h)
            .join(".cache")
            .join("jaxon")
            .join("kernels")
    })
}

/// The file of one key.
pub fn entry_path(dir: &Path, key: u128) -> PathBuf {
    dir.join(format!("{key:032x}.jxk"))
}

/// What an entry holds.
pub struct Entry {
    pub cubin: Vec<u8>,
    pub ptx: String,
    pub log: String,
}

fn encode(key: u128, e: &Entry) -> Vec<u8> {
    let mut body = Vec::new();
    for part in [e.cubin.as_slice(), e.ptx.as_bytes(), e.log.as_bytes()] {
        body.extend_from_slice(&(part.len() as u64).to_le_bytes());
        body.extend_from_slice(part);
    }
    let mut out = Vec::with_capacity(body.len() + 40);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&fnv1a128(&[&body]).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

fn decode(key: u128, bytes: &[u8]) -> Option<Entry> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (k, rest) = rest.split_at_checked(16)?;
    if u128::from_le_bytes(k.try_into().ok()?) != key {
        return None;
    }
    let (sum, body) = rest.split_at_checked(16)?;
    if u128::from_le_bytes(sum.try_into().ok()?) != fnv1a128(&[body]) {
        return None;
    }
    let mut parts = Vec::with_capacity(3);
    let mut rest = body;
    for _ in 0..3 {
        let (len, tail) = rest.split_at_checked(8)?;
        let len = usize::try_from(u64::from_le_bytes(len.try_into().ok()?)).ok()?;
        let (part, tail) = tail.split_at_checked(len)?;
        parts.push(part);
        rest = tail;
    }
    if !rest.is_empty() {
        return None;
    }
    Some(Entry {
        cubin: parts[0].to_vec(),
        ptx: String::from_utf8(parts[1].to_vec()).ok()?,
        log: String::from_utf8(parts[2].to_vec()).ok()?,
    })
}

/// Reads an entry; any problem is a miss.
pub fn read(dir: &Path, key: u128) -> Option<Entry> {
    let path = entry_path(dir, key);
    let bytes = std::fs::read(&path).ok()?;
    let e = decode(key, &bytes);
    if e.is_none() {
        tracing::debug!("kernel cache: ignoring corrupt entry {}", path.display());
    }
    e
}

/// Writes an entry atomically; a failure is logged, not returned.
pub fn write(dir: &Path, key: u128, e: &Entry) {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let path = entry_path(dir, key);
    let tmp = dir.join(format!(
        ".tmp-{key:032x}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = std::fs::create_dir_all(dir)
        .and_then(|()| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&encode(key, e))?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(err) = result {
        let _ = std::fs::remove_file(&tmp);
        tracing::warn!("kernel cache: could not write {}: {err}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_stable_and_separates_parts() {
        // FNV-1a 128 of nothing is the offset basis.
        assert_eq!(fnv1a128(&[]), 0x6c62272e07bb014262b821756295c58d);
        assert_ne!(fnv1a128(&[b"ab", b"c"]), fnv1a128(&[b"a", b"bc"]));
        let k = key("src", &["-a".into()], "sm_80", (13, 0));
        assert_eq!(k, key("src", &["-a".into()], "sm_80", (13, 0)));
        assert_ne!(k, key("src", &["-a".into()], "sm_90", (13, 0)));
        assert_ne!(k, key("src", &["-a".into()], "sm_80", (13, 1)));
    }

    #[test]
    fn entries_round_trip_and_corruption_is_a_miss() {
        let e = Entry {
            cubin: vec![1, 2, 3, 0, 255],
            ptx: "ptx".into(),
            log: "log".into(),
        };
        let bytes = encode(7, &e);
        let d = decode(7, &bytes).map(|d| (d.cubin, d.ptx, d.log));
        assert_eq!(d, Some((e.cubin.clone(), e.ptx.clone(), e.log.clone())));
        assert!(decode(8, &bytes).is_none());
        for cut in 0..bytes.len() {
            assert!(decode(7, &bytes[..cut]).is_none());
        }
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(decode(7, &flipped).is_none());
    }
}
