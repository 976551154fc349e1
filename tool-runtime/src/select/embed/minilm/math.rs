//! Vectorisable float kernels of the forward pass: sums, dot products and erf.

/// Lanes of the partial sums: independent accumulators the compiler keeps in one vector register
/// (a single running float sum cannot be vectorised, its order of additions being fixed).
pub(super) const LANES: usize = 8;

pub(super) fn sum(x: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
}

pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let mut ca = a.chunks_exact(LANES);
    let mut cb = b.chunks_exact(LANES);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for ((s, x), y) in acc.iter_mut().zip(x).zip(y) {
            *s += x * y;
        }
    }
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    acc.iter().sum::<f32>() + tail
}

/// erf, as a rational function of the argument (Eigen's single-precision approximation, within
/// 1e-7 of erf over the reals): unlike a libm call it compiles to straight vector arithmetic,
/// and the GELU of the intermediate layer evaluates it for 1,536 values of every token. Plain
/// multiply and add, not `mul_add`: without FMA enabled at compile time (the default target),
/// `mul_add` is a call to a software fused multiply-add, several times slower than the rest.
#[inline(always)]
pub(super) fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = -2.726_142_3e-10_f32;
    let p = p * x2 + 2.770_681_4e-8;
    let p = p * x2 + -2.101_024e-6;
    let p = p * x2 + -5.692_506_4e-5;
    let p = p * x2 + -7.349_906_3e-4;
    let p = p * x2 + -2.954_6e-3;
    let p = p * x2 + -1.609_603_3e-2;
    let q = -1.456_607_2e-5_f32;
    let q = q * x2 + -2.133_740_6e-4;
    let q = q * x2 + -1.682_827e-3;
    let q = q * x2 + -7.373_329e-3;
    let q = q * x2 + -1.426_474e-2;
    x * p / q
}
