// The context axis's `trimmed` semantics (004 §2.1–2.3, Fig 3) as one CPU op: for each slice c,
// each (batch, head), attention over the prefix 0 … c with no mask, written into res[b, h, c, :c+1].
// What eager PyTorch cannot do per slice, done here: the scores of one head stay in one reused
// (c+1)² buffer (1 MiB at S = 512, this core's L2); the softmax is one pass (row max, then
// exp and sum in place) with its normalisation applied to the (c+1) × d output rows instead of
// the (c+1)² probabilities; A·V is written straight into the output, no temporary, no copy.
// The two matmuls are ATen's (MKL here). Built at first use by repro/harness/native.py; called by
// repro/context_axis/kernels.py `fused`, one call per worker thread, each on one intra-op thread.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <vector>

// glibc's vector expf (libmvec) for the `omp simd` loop below, without -ffast-math (which would
// let the compiler assume no infinities: padding keys are −inf here)
#pragma omp declare simd notinbranch
extern "C" float expf(float) noexcept;

namespace {

// softmax(scale · row) without its normalisation: row ← exp(scale · (row − max)); returns 1 / Σ.
// A row whose keys are all padding (all −inf) gives NaN, as torch.softmax does.
float exp_row(float* row, int64_t n, float scale) {
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < n; ++j) mx = row[j] > mx ? row[j] : mx;
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    const float e = expf((row[j] - mx) * scale);
    row[j] = e;
    sum += e;
  }
  return 1.f / sum;
}

// q, k, v: (B, H, S, S, d) float32, contiguous; res: (B, H, S, S, dv), rows ≤ c of each slice
// in `slices` overwritten; pad: (B, S) bool, true = padding key, or none.
void trimmed_slices(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& res,
                    const std::optional<at::Tensor>& pad, at::IntArrayRef slices, double scale) {
  TORCH_CHECK(q.dim() == 5 && q.sizes() == k.sizes() && v.dim() == 5 && res.dim() == 5,
              "fused context-axis kernel: q, k, v, res of shape (B, H, S, S, d)");
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
  const float sc = static_cast<float>(scale);
  at::Tensor ws = at::empty({S * S}, q.options());  // one head's scores, reused
  std::vector<float> inv(S);
  for (const int64_t c : slices) {
    TORCH_CHECK(c >= 0 && c < S, "fused: slice index out of range");
    const int64_t n = c + 1;
    at::Tensor scores = ws.narrow(0, 0, n * n).view({n, n});  // (n, n)
    float* P = scores.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < H; ++h) {
        const at::Tensor Q = q[b][h][c].narrow(0, 0, n);  // (n, d)
        const at::Tensor K = k[b][h][c].narrow(0, 0, n);  // (n, d)
        const at::Tensor V = v[b][h][c].narrow(0, 0, n);  // (n, dv)
        at::Tensor O = res[b][h][c].narrow(0, 0, n);      // (n, dv), contiguous rows of res
        at::mm_out(scores, Q, K.t());                     // Q Kᵀ, unscaled
        if (padp != nullptr) {
          for (int64_t j = 0; j < n; ++j) {
            if (padp[b * S + j]) {
              for (int64_t r = 0; r < n; ++r) P[r * n + j] = -std::numeric_limits<float>::infinity();
            }
          }
        }
        for (int64_t r = 0; r < n; ++r) inv[r] = exp_row(P + r * n, n, sc);
        at::mm_out(O, scores, V);  // exp(…) · V, into the output
        float* o = O.data_ptr<float>();
        for (int64_t r = 0; r < n; ++r) {
          const float f = inv[r];
#pragma omp simd
          for (int64_t j = 0; j < dv; ++j) o[r * dv + j] *= f;
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
