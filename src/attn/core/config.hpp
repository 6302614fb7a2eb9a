// The typed vocabulary every layer shares: modes, layouts, entry points, masked-row policies and
// the axis letters of the shape legend, each with the one name it is written as. No parsing of
// input files and no arithmetic here.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

enum class Mode { Self, Causal, Cross, MultiHead };
enum class Layout { XW, Torch };  // x@W: W is [in, out]; torch: W is [out, in] as nn.Linear
enum class ScaleKind { SqrtDk, None, Number };
enum class Entry { Embeddings, QKV, Scores };  // where the walkthrough starts
// What a query row whose keys are all masked gets: each policy is one framework's convention.
enum class MaskedRow {
  Error,    // refuse the input, naming the row (default)
  Zeros,    // weights 0: PyTorch's scaled_dot_product_attention (safe softmax, 2.5+)
  Nan,      // weights NaN: nn.MultiheadAttention with need_weights, softmax of all -inf
  Uniform,  // weights 1/S: what a -1e9 fill gives
};
// Which keys a causal query i sees when T != S: top-left j <= i (SDPA is_causal), bottom-right
// j <= i + (S - T) (GPT-2 with cached keys: the last query sees every key).
enum class CausalAlign { TopLeft, BottomRight };
// attn_mask as the input gave it: block (true = may not attend), keep (true = may attend), add.
enum class UserMask { None, Block, Keep, Add };

// The shape legend: B batch, H heads, T query length, S key/value length, C model width, Cs source
// width (cross), dk = H·hs query/key width, dv = H·hv value width, Co output width; C3 the fused
// projection's width 3C, and Dqkv its general width 2·dk + dv.
// Absolute positions added to x before the projections: none, the original Transformer's sinusoids,
// or a learned table (GPT-2's wpe).
enum class Positions : std::uint8_t { None, Sinusoidal, Learned };

// RoPE's pairs: (i, i + R/2) as GPT-NeoX and Llama (rotate_half), or (2i, 2i + 1) as RoFormer and GPT-J.
enum class RopeStyle : std::uint8_t { Half, Interleaved };

// P: positions (a rotary table's rows), R2: rotary pairs (R/2 columns). Grouped-query attention:
// Hkv key/value heads, k Hkv·hs wide and v Hkv·hv (dkv, dvkv), the fused projection dk + Hkv·(hs + hv)
// wide (C + 2·Hkv·hs with the classic widths).
enum class Dim : std::uint8_t { B, H, T, S, C, hs, C3, Cs, dk, dv, Co, hv, Dqkv, P, R2, Hkv, dkv, dvkv, DqkvG, C3G, One };  // One: a length-1 axis (a loss)
using Dims = std::vector<Dim>;

std::string_view mode_name(Mode m);          // "self", "causal", "cross", "multi-head"
std::string_view layout_name(Layout l);      // "x@W", "torch"
std::string_view entry_name(Entry e);        // "embeddings", "q, k, v", "scores"
std::string_view dim_name(Dim d);            // "B", "hs", "3C", ...
std::optional<Mode> mode_from_name(std::string_view name);
std::optional<Layout> layout_from_name(std::string_view name);
std::optional<Entry> entry_from_name(std::string_view name);
std::optional<Dim> dim_from_name(std::string_view name);

inline bool is_token_axis(Dim d) { return d == Dim::T || d == Dim::S; }

// RoPE's frequency scaling, as the model hub's rope_type names it. None: θ_i = theta^(−2i/R).
// Linear: θ_i / factor (positions squeezed by the factor). Llama3 (Llama 3.1's
// _compute_llama3_parameters): a pair whose wavelength 2π/θ_i is shorter than original /
// high_freq_factor keeps θ_i (high band), one longer than original / low_freq_factor gets
// θ_i / factor (low band), and one between gets (1 − s)·θ_i/factor + s·θ_i with
// s = (original / wavelength − low_freq_factor) / (high_freq_factor − low_freq_factor) (middle band).
struct RopeScaling {
  enum class Kind { None, Linear, Llama3 } kind = Kind::None;
  double factor = 1, low_freq_factor = 1, high_freq_factor = 4, original = 8192;
  // "llama3 (factor 32, low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 8192)"
  std::string describe() const;
};

}  // namespace attn

// Dims print as their legend letters: fmt::join(step.dims, ", ") gives "B, H, T, hs".
template <>
struct fmt::formatter<attn::Dim> : fmt::formatter<std::string_view> {
  template <typename Context>
  auto format(attn::Dim d, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(attn::dim_name(d), ctx);
  }
};
