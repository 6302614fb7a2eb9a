// The names of config.hpp's enums, in one table per enum, read both ways.
#include "attn/core/config.hpp"

#include <array>
#include <utility>

namespace attn {
namespace {

template <typename E, std::size_t N>
using Names = std::array<std::pair<E, std::string_view>, N>;

constexpr Names<Mode, 4> kModes{{{Mode::Self, "self"}, {Mode::Causal, "causal"}, {Mode::Cross, "cross"}, {Mode::MultiHead, "multi-head"}}};
constexpr Names<Layout, 2> kLayouts{{{Layout::XW, "x@W"}, {Layout::Torch, "torch"}}};
constexpr Names<Entry, 3> kEntries{{{Entry::Embeddings, "embeddings"}, {Entry::QKV, "q, k, v"}, {Entry::Scores, "scores"}}};
constexpr Names<Dim, 21> kDims{{{Dim::B, "B"}, {Dim::H, "H"}, {Dim::T, "T"}, {Dim::S, "S"}, {Dim::C, "C"}, {Dim::hs, "hs"}, {Dim::C3, "3C"},
                                 {Dim::Cs, "Cs"}, {Dim::dk, "dk"}, {Dim::dv, "dv"}, {Dim::Co, "Co"}, {Dim::hv, "hv"}, {Dim::Dqkv, "2dk+dv"},
                                 {Dim::P, "P"}, {Dim::R2, "R/2"}, {Dim::Hkv, "Hkv"}, {Dim::dkv, "Hkv·hs"},
                                 {Dim::dvkv, "Hkv·hv"}, {Dim::DqkvG, "dk+Hkv·(hs+hv)"}, {Dim::C3G, "C+2·Hkv·hs"}, {Dim::One, "1"}}};

template <typename E, std::size_t N>
std::string_view name_of(const Names<E, N>& names, E e) {
  for (const auto& [value, name] : names)
    if (value == e) return name;
  return "?";
}

template <typename E, std::size_t N>
std::optional<E> value_of(const Names<E, N>& names, std::string_view s) {
  for (const auto& [value, name] : names)
    if (name == s) return value;
  return std::nullopt;
}

}  // namespace

std::string_view mode_name(Mode m) { return name_of(kModes, m); }
std::string_view layout_name(Layout l) { return name_of(kLayouts, l); }
std::string_view entry_name(Entry e) { return name_of(kEntries, e); }
std::string_view dim_name(Dim d) { return name_of(kDims, d); }
std::optional<Mode> mode_from_name(std::string_view s) { return value_of(kModes, s); }
std::optional<Layout> layout_from_name(std::string_view s) { return value_of(kLayouts, s); }
std::optional<Entry> entry_from_name(std::string_view s) { return value_of(kEntries, s); }
std::optional<Dim> dim_from_name(std::string_view s) { return value_of(kDims, s); }

std::string RopeScaling::describe() const {
  switch (kind) {
    case Kind::None: return "none";
    case Kind::Linear: return fmt::format("linear (factor {})", factor);
    case Kind::Llama3:
      return fmt::format("llama3 (factor {}, low_freq_factor {}, high_freq_factor {}, original_max_position_embeddings {})", factor, low_freq_factor,
                         high_freq_factor, original);
  }
  return "none";
}

}  // namespace attn
