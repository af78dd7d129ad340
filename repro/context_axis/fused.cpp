// The context axis's `trimmed` semantics (004 §2.1–2.3, Fig 3) as one CPU op: for each slice c,
// each (batch, head), attention over the prefix 0 … c with no mask, written into res[b, h, c, :c+1].
// What eager PyTorch cannot do per slice, done here: the scores of one head stay in one reused
// (c+1)² buffer (1 MiB at S = 512, this core's L2); the softmax is one pass (row max, then
// exp and sum in place) with its normalisation applied to the (c+1) × d output rows instead of
// the (c+1)² probabilities; A·V is written straight into the output, no temporary, no copy.
// The two matmuls go straight to the BLAS torch links and exports (`sgemm_`: MKL in the x86 wheels),
// on raw pointers: through ATen (views, dispatch, at::mm_out) each of the 2·B·H·S matmuls cost
// ≈ 10 µs more — 6.1 against 2.7 ms a call at S = 64, 390 against 368 ms at S = 512 (a 2-core
// CPU). A torch built without an exported sgemm_ fails to load this (harness/native.py then
// says so). Built at first use by repro/ground/native.py; called by repro/context_axis/kernels.py
// `fused`, one call per worker thread, each on one intra-op thread.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

// glibc's vector expf (libmvec) for the `omp simd` loop below, without -ffast-math (which would
// let the compiler assume no infinities: padding keys are −inf here)
#pragma omp declare simd notinbranch
extern "C" float expf(float) noexcept;

// Fortran BLAS, column-major, 32-bit integers (LP64, as torch's MKL)
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc);

namespace {

// softmax(row) without its normalisation: row ← exp(row − max); returns 1 / Σ. A row whose keys
// are all padding (all −inf) gives NaN, as torch.softmax does.
float exp_row(float* row, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    const float e = expf(row[j] - mx);
    row[j] = e;
    sum += e;
  }
  return 1.f / sum;
}

// q, k, v: (B, H, S, S, d) float32, contiguous; res: (B, H, S, S, dv), rows ≤ c of each slice
// in `slices` overwritten; pad: (B, S) bool, true = padding key, or none.
void trimmed_slices(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& res,
                    const std::optional<at::Tensor>& pad, at::IntArrayRef slices, double scale) {
  TORCH_CHECK(q.dim() == 5 && q.sizes() == k.sizes() && q.size(2) == q.size(3) && v.dim() == 5 &&
                  v.sizes().slice(0, 4) == q.sizes().slice(0, 4) && res.sizes() == v.sizes(),
              "fused context-axis kernel: q, k of shape (B, H, S, S, d), v and res (B, H, S, S, dv)");
  TORCH_CHECK(q.scalar_type() == at::kFloat && k.scalar_type() == at::kFloat && v.scalar_type() == at::kFloat &&
                  res.scalar_type() == at::kFloat,
              "fused context-axis kernel: float32 only");
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && res.is_contiguous(),
              "fused context-axis kernel: contiguous q, k, v, res");
  const int64_t B = q.size(0), H = q.size(1), S = q.size(2), dv = v.size(4);
  const bool* padp = nullptr;
  at::Tensor padc;
  if (pad.has_value()) {
    padc = pad->to(at::kBool).contiguous();
    TORCH_CHECK(padc.dim() == 2 && padc.size(0) == B && padc.size(1) == S, "fused: pad of shape (B, S)");
    padp = padc.data_ptr<bool>();
  }
  if (B * H * S == 0 || dv == 0) return;  // nothing to write (and BLAS refuses a leading dimension 0)
  TORCH_CHECK(S * S <= std::numeric_limits<int>::max() && dv <= std::numeric_limits<int>::max(),
              "fused: sizes beyond 32-bit BLAS");
  const float alpha = static_cast<float>(scale), one = 1.f, zero = 0.f;
  const int d = static_cast<int>(q.size(4)), dvi = static_cast<int>(dv);
  const int ld = std::max(d, 1);  // BLAS wants leading dimensions ≥ 1, also for d = 0 (then QKᵀ = 0)
  const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
  float* rp = res.data_ptr<float>();
  std::vector<float> scores(S * S);  // one head's (c+1)² scores, reused
  std::vector<float> inv(S);
  float* P = scores.data();
  for (const int64_t c : slices) {
    TORCH_CHECK(c >= 0 && c < S, "fused: slice index out of range");
    const int n = static_cast<int>(c + 1);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < H; ++h) {
        const int64_t row0 = ((b * H + h) * S + c) * S;  // row 0 of slice c of (b, h)
        const float *Q = qp + row0 * d, *K = kp + row0 * d, *V = vp + row0 * dv;  // (n, d), (n, d), (n, dv)
        float* O = rp + row0 * dv;                                                 // (n, dv), rows of res
        // row-major P = scale · Q Kᵀ (n, n) is column-major Pᵀ = scale · K Qᵀ
        sgemm_("T", "N", &n, &n, &d, &alpha, K, &ld, Q, &ld, &zero, P, &n);
        if (padp != nullptr) {
          for (int64_t j = 0; j < n; ++j) {
            if (padp[b * S + j]) {
              for (int64_t r = 0; r < n; ++r) P[r * n + j] = -std::numeric_limits<float>::infinity();
            }
          }
        }
        for (int64_t r = 0; r < n; ++r) inv[r] = exp_row(P + r * n, n);
        // row-major O = P V (n, dv) is column-major Oᵀ = Vᵀ Pᵀ
        sgemm_("N", "N", &dvi, &n, &n, &one, V, &dvi, P, &n, &zero, O, &dvi);
        for (int64_t r = 0; r < n; ++r) {
          const float f = inv[r];
#pragma omp simd
          for (int64_t j = 0; j < dv; ++j) O[r * dv + j] *= f;
        }
      }
    }
  }
}

}  // namespace

TORCH_LIBRARY(repro_context_axis, m) {
  m.def("trimmed_slices(Tensor q, Tensor k, Tensor v, Tensor(a!) res, Tensor? pad, int[] slices, float scale) -> ()");
}

TORCH_LIBRARY_IMPL(repro_context_axis, CPU, m) { m.impl("trimmed_slices", &trimmed_slices); }
