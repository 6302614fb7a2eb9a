// Logit soft-capping (see soft_cap.hpp). Built with -ffp-contract=off, as fixed_math.hpp asks.
#include "attn/numerics/soft_cap.hpp"

#include "attn/numerics/fixed_math.hpp"

namespace attn {

void soft_cap_values(const Scalar* in, Scalar* out, std::int64_t n, Scalar cap) {
  for (std::int64_t i = 0; i < n; ++i) {
    const Scalar x = in[i] / cap;  // float32, as Gemma 2's attn_weights / softcap
    out[i] = static_cast<Scalar>(fixed::tanh(x)) * cap;
  }
}

}  // namespace attn
