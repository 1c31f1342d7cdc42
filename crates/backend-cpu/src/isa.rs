//! The instruction sets the host kernels use: what the CPU has, detected
//! once per process, capped by `JAXON_CPU_ISA=scalar|avx2|avx512`.
//!
//! Three paths exist, each a superset of the one before:
//!
//! | [`Isa`] | needs | kernels |
//! |---|---|---|
//! | `Scalar` | nothing beyond the target | the `gemm` crate, inline Cranelift code |
//! | `Avx2` | AVX2 and FMA | 6×16 `ymm` GEMM tiles, 256-bit `wide` routines |
//! | `Avx512` | AVX-512 F, BW, DQ and VL (x86-64-v4) | 12×32 `zmm` GEMM tiles, 512-bit `wide` routines, `vdpbf16ps` where AVX-512 BF16 is present |
//!
//! The cap exists so that one machine tests every path it can run: CI on
//! an AVX-512 machine runs the differential and ulp suites again under
//! `JAXON_CPU_ISA=avx2` and `=scalar`. A cap above what the CPU has means
//! what the CPU has; an unknown value is ignored with a warning, so a typo
//! never turns a fast path off silently without a word.
//!
//! Invariant: [`isa`] never names an instruction set the CPU lacks. Every
//! `unsafe` intrinsic path in this crate is entered only after [`isa`] (or
//! [`has`]) said yes for it; that is what makes `#[target_feature]` calls
//! sound.

use std::sync::OnceLock;

/// An instruction-set level of the host kernels, ordered from the
/// narrowest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Portable code only.
    Scalar,
    /// 256-bit AVX2 with FMA.
    Avx2,
    /// 512-bit AVX-512 F/BW/DQ/VL.
    Avx512,
}

impl Isa {
    /// The name `JAXON_CPU_ISA` takes and benchmark records print.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// The level named `s` (`JAXON_CPU_ISA`'s spelling), if any.
    pub fn parse(s: &str) -> Option<Isa> {
        match s.trim().to_ascii_lowercase().as_str() {
            "scalar" | "none" => Some(Isa::Scalar),
            "avx2" => Some(Isa::Avx2),
            "avx512" | "avx-512" => Some(Isa::Avx512),
            _ => None,
        }
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The widest level this CPU supports, ignoring `JAXON_CPU_ISA`.
pub fn detected() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
            // Every AVX-512 CPU also has AVX2 and FMA.
            Isa::Avx512
        } else if has!("avx2") && has!("fma") {
            Isa::Avx2
        } else {
            Isa::Scalar
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Isa::Scalar
    }
}

/// The level the kernels use: [`detected`], capped by `JAXON_CPU_ISA`.
/// Read once per process.
pub fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| {
        let found = detected();
        let Some(raw) = std::env::var_os("JAXON_CPU_ISA") else {
            return found;
        };
        let raw = raw.to_string_lossy();
        match Isa::parse(&raw) {
            Some(cap) => {
                let chosen = cap.min(found);
                tracing::info!(cap = %cap, detected = %found, chosen = %chosen, "JAXON_CPU_ISA");
                chosen
            }
            None => {
                tracing::warn!(
                    value = %raw,
                    "JAXON_CPU_ISA is not one of scalar, avx2, avx512: ignored, using {found}"
                );
                found
            }
        }
    })
}

/// The level of the f32/f64 GEMM register tiles: [`isa`], except on a
/// CPU whose FMA datapath is 256 bits wide although it has AVX-512 (AMD
/// Zen 4, CPUID family 25: each 512-bit FMA issues as two halves), which
/// takes the AVX2 tiles: there the 6×16 `ymm` tile beat the 12×32 `zmm`
/// one in alternating runs (`matmul_1024` 201–202 GFLOP/s against 194–196,
/// `matmul_2048` 204–208 against 193–202; 2026-11-28). The other `zmm`
/// code (tile routines, bf16 products) stays. `JAXON_CPU_GEMM_TILE=avx2` or
/// `avx512` overrides the choice (capped by [`isa`]). Read once per process.
pub fn gemm_isa() -> Isa {
    static GEMM: OnceLock<Isa> = OnceLock::new();
    *GEMM.get_or_init(|| {
        let forced = std::env::var_os("JAXON_CPU_GEMM_TILE").and_then(|raw| {
            let raw = raw.to_string_lossy();
            let parsed = Isa::parse(&raw);
            if parsed.is_none() {
                tracing::warn!(
                    value = %raw,
                    "JAXON_CPU_GEMM_TILE is not one of scalar, avx2, avx512: ignored"
                );
            }
            parsed
        });
        let amd_family = is_amd().then(family_model).flatten().map(|(f, _)| f);
        gemm_level(isa(), amd_family, forced)
    })
}

/// [`gemm_isa`]'s rule: `forced` (capped by `level`), else `level` but
/// AVX2 for AVX-512 on AMD family 25 (Zen 4).
fn gemm_level(level: Isa, amd_family: Option<u32>, forced: Option<Isa>) -> Isa {
    match forced {
        Some(f) => f.min(level),
        None if level == Isa::Avx512 && amd_family == Some(25) => Isa::Avx2,
        None => level,
    }
}

/// Whether the CPU's vendor is AMD (CPUID leaf 0).
fn is_amd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let r = std::arch::x86_64::__cpuid(0);
        let vendor = [r.ebx, r.edx, r.ecx];
        let bytes: Vec<u8> = vendor.iter().flat_map(|w| w.to_le_bytes()).collect();
        bytes == b"AuthenticAMD"
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the kernels may use `level` (the cap included).
pub fn has(level: Isa) -> bool {
    isa() >= level
}

/// Whether `dot_general` on bf16 may use AVX-512 BF16's `vdpbf16ps`: the
/// level is [`Isa::Avx512`] and the CPU has the extension.
pub fn has_avx512_bf16() -> bool {
    static BF16: OnceLock<bool> = OnceLock::new();
    *BF16.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            has(Isa::Avx512) && std::arch::is_x86_feature_detected!("avx512bf16")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// The data-cache sizes the GEMM's blocking is sized from, in bytes, per
/// core (L3: per package).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caches {
    /// Level-1 data cache.
    pub l1d: usize,
    /// Level-2 cache.
    pub l2: usize,
    /// Level-3 cache (0 when there is none).
    pub l3: usize,
}

impl Caches {
    /// What a machine that reports nothing is assumed to have: the
    /// smallest of the x86 servers so far (Zen 2/3: 32 KiB, 512 KiB).
    pub const FALLBACK: Caches = Caches {
        l1d: 32 << 10,
        l2: 512 << 10,
        l3: 8 << 20,
    };
}

/// The cache sizes of CPU 0, from Linux's `sysfs` (`/sys/devices/system/
/// cpu/cpu0/cache/index*/`), read once; [`Caches::FALLBACK`] for any level
/// it does not report. `JAXON_CPU_L1D`, `JAXON_CPU_L2` (bytes) override
/// them, for tuning runs.
pub fn caches() -> Caches {
    static CACHES: OnceLock<Caches> = OnceLock::new();
    *CACHES.get_or_init(|| {
        let mut c = Caches::FALLBACK;
        let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
        for index in 0..8 {
            let at = dir.join(format!("index{index}"));
            let read = |f: &str| std::fs::read_to_string(at.join(f)).ok();
            let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
            else {
                continue;
            };
            let Some(bytes) = parse_size(&size) else {
                continue;
            };
            match (level.trim(), kind.trim()) {
                ("1", "Data" | "Unified") => c.l1d = bytes,
                ("2", _) => c.l2 = bytes,
                ("3", _) => c.l3 = bytes,
                _ => {}
            }
        }
        let env = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse().ok());
        if let Some(v) = env("JAXON_CPU_L1D") {
            c.l1d = v;
        }
        if let Some(v) = env("JAXON_CPU_L2") {
            c.l2 = v;
        }
        c
    })
}

/// `sysfs`'s size spelling: `32K`, `1024K`, `32M`, or plain bytes.
fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, scale) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(scale)
}

/// The CPU's model name (`/proc/cpuinfo`'s, else the CPUID brand string)
/// with its CPUID family and model, for benchmark records and logs:
/// virtual machines often report only a vendor line ("AMD EPYC"), and the
/// family and model tell Zen 3 (25/1), Zen 4 (25/17) and Zen 5 (26/..)
/// apart.
pub fn cpu_model() -> String {
    let name = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .and_then(|rest| rest.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .or_else(brand_string)
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    match family_model() {
        Some((family, model)) => format!("{name} (family {family}, model {model})"),
        None => name,
    }
}

/// The CPUID display family and model (leaf 1), on x86-64.
fn family_model() -> Option<(u32, u32)> {
    #[cfg(target_arch = "x86_64")]
    {
        let eax = std::arch::x86_64::__cpuid(1).eax;
        let (base_family, base_model) = ((eax >> 8) & 0xF, (eax >> 4) & 0xF);
        let family = if base_family == 0xF {
            base_family + ((eax >> 20) & 0xFF)
        } else {
            base_family
        };
        let model = if base_family == 0x6 || base_family == 0xF {
            base_model + (((eax >> 16) & 0xF) << 4)
        } else {
            base_model
        };
        Some((family, model))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// The CPUID brand string (leaves 0x8000_0002..=0x8000_0004).
fn brand_string() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // Leaf 0x8000_0000 reports the highest extended leaf, checked
        // before reading more.
        let max = __cpuid(0x8000_0000).eax;
        if max < 0x8000_0004 {
            return None;
        }
        let mut bytes = Vec::with_capacity(48);
        for leaf in 0x8000_0002u32..=0x8000_0004 {
            let r = __cpuid(leaf);
            for word in [r.eax, r.ebx, r.ecx, r.edx] {
                bytes.extend_from_slice(&word.to_le_bytes());
            }
        }
        let s = String::from_utf8_lossy(&bytes);
        Some(s.trim_matches(char::from(0)).trim().to_string())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order() {
        for level in [Isa::Scalar, Isa::Avx2, Isa::Avx512] {
            assert_eq!(Isa::parse(level.name()), Some(level));
        }
        assert_eq!(Isa::parse("AVX-512"), Some(Isa::Avx512));
        assert_eq!(Isa::parse("sse9"), None);
        assert!(Isa::Scalar < Isa::Avx2 && Isa::Avx2 < Isa::Avx512);
        assert!(isa() <= detected());
    }

    #[test]
    fn cache_sizes_parse_and_are_plausible() {
        assert_eq!(parse_size("32K\n"), Some(32 << 10));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("K"), None);
        let c = caches();
        assert!(c.l1d >= 4 << 10 && c.l2 >= c.l1d, "{c:?}");
    }

    #[test]
    fn gemm_tiles_are_ymm_on_zen_4_only() {
        use Isa::*;
        assert_eq!(gemm_level(Avx512, Some(25), None), Avx2);
        assert_eq!(gemm_level(Avx512, Some(26), None), Avx512);
        assert_eq!(gemm_level(Avx512, None, None), Avx512);
        assert_eq!(gemm_level(Avx2, Some(25), None), Avx2);
        assert_eq!(gemm_level(Avx512, Some(25), Some(Avx512)), Avx512);
        assert_eq!(gemm_level(Avx2, None, Some(Avx512)), Avx2);
        assert_eq!(gemm_level(Avx512, None, Some(Scalar)), Scalar);
        assert!(gemm_isa() <= isa());
    }

    #[test]
    fn the_model_name_is_not_empty() {
        assert!(!cpu_model().is_empty());
    }
}
