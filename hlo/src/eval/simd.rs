//! The vector instruction set the kernels are compiled for, chosen once per process.
//!
//! Every vectorised loop (elementwise, fused groups, reductions, conversions) runs through a
//! `pulp::Arch`, which picks the best instruction set the CPU has: AVX-512 (`V4`), AVX2 with FMA
//! (`V3`), or scalar code. The environment variable `NRTSIM_SIMD` caps that choice (`avx2` or
//! `scalar`), so that a machine with AVX-512 runs the code an AVX2-only machine runs, as the
//! benches do to measure the CPUs people have; the GEMM kernel follows the cap unless
//! `NRTSIM_GEMM` names one. A value the CPU cannot run, or does not name a level, is ignored, so
//! [`level`] is what really runs.

use std::sync::OnceLock;

/// What `pulp::Arch::new()` gives, capped by `NRTSIM_SIMD`.
pub(crate) fn arch() -> pulp::Arch {
    chosen().0
}

/// The instruction set the kernels run: `"avx512"`, `"avx2"`, `"neon"` or `"scalar"`.
pub fn level() -> &'static str {
    chosen().1
}

fn chosen() -> (pulp::Arch, &'static str) {
    static CHOSEN: OnceLock<(pulp::Arch, &'static str)> = OnceLock::new();
    *CHOSEN.get_or_init(|| choose(std::env::var("NRTSIM_SIMD").ok().as_deref()))
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn choose(cap: Option<&str>) -> (pulp::Arch, &'static str) {
    use pulp::x86::V3;
    let best = pulp::Arch::new();
    match (cap, best) {
        (Some("scalar"), _) => (pulp::Arch::Scalar, "scalar"),
        (Some("avx2"), pulp::Arch::V4(_)) => match V3::try_new() {
            Some(v3) => (pulp::Arch::V3(v3), "avx2"),
            None => (best, "avx512"),
        },
        (_, pulp::Arch::V4(_)) => (best, "avx512"),
        (_, pulp::Arch::V3(_)) => (best, "avx2"),
        _ => (best, "scalar"),
    }
}

#[cfg(target_arch = "aarch64")]
fn choose(cap: Option<&str>) -> (pulp::Arch, &'static str) {
    match cap {
        Some("scalar") => (pulp::Arch::Scalar, "scalar"),
        _ => (pulp::Arch::new(), "neon"),
    }
}

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
fn choose(_cap: Option<&str>) -> (pulp::Arch, &'static str) {
    (pulp::Arch::new(), "scalar")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_lowers_the_level_and_an_unknown_one_is_ignored() {
        let (_, best) = choose(None);
        assert_eq!(choose(Some("fastest")).1, best);
        assert_eq!(choose(Some("scalar")).1, "scalar");
        assert!(matches!(choose(Some("scalar")).0, pulp::Arch::Scalar));
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        if best == "avx512" {
            let (arch, name) = choose(Some("avx2"));
            assert_eq!(name, "avx2");
            assert!(matches!(arch, pulp::Arch::V3(_)), "{arch:?}");
        }
    }
}
