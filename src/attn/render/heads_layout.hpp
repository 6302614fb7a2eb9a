// Shared by the attn heads renderers (heads_text.cpp, heads_svg.cpp, heads_html.cpp): the checks of
// a HeadsView's sizes, the token labels, the one-line head summary, markup escaping and the text
// grid's fitting. Layout and wording only; the numbers come from summarise_head (heads.cpp).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "attn/error.hpp"
#include "attn/model/heads.hpp"
#include "attn/render/layout.hpp"

namespace attn::model {

namespace heads_detail {

// Refuses a view whose vectors do not match its sizes (a bug in whoever filled it).
inline void check_view(const HeadsView& v) {
  const auto cells = v.layers * v.heads * v.T * v.T;
  if (v.layers < 0 || v.heads < 0 || v.T < 0 || v.weights.size() != static_cast<std::size_t>(cells) ||
      v.summaries.size() != static_cast<std::size_t>(v.layers * v.heads) || v.tokens.size() != static_cast<std::size_t>(v.T)) {
    throw InternalError(fmt::format("attn heads: a view of {} layers × {} heads × T = {} needs {} weights, {} summaries and {} tokens; it has {}, {} and {}",
                                    v.layers, v.heads, v.T, cells, v.layers * v.heads, v.T, v.weights.size(), v.summaries.size(),
                                    v.tokens.size()));
  }
}

// For SVG and HTML text and attribute values.
inline std::string esc(std::string_view s) { return markup_escape(s); }

// The tokens as labels: surrounding whitespace trimmed (GPT-2's " cat" is "cat"), an all-blank piece
// shown as ␣ (or ⏎ for a newline), other control characters as ·, and a token that occurs more than
// once numbered by occurrence with subscripts (the₁, the₂), so "sat → the₂" names one position.
inline std::vector<std::string> token_labels(const HeadsView& v) {
  std::vector<std::string> base;
  for (const auto& t : v.tokens) {
    std::size_t a = 0, b = t.size();
    while (a < b && (t[a] == ' ' || t[a] == '\t' || t[a] == '\n' || t[a] == '\r')) ++a;
    while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\t' || t[b - 1] == '\n' || t[b - 1] == '\r')) --b;
    std::string s;
    for (std::size_t i = a; i < b; ++i) {
      const auto c = static_cast<unsigned char>(t[i]);
      if (c < 0x20 || c == 0x7f) s += "·";
      else s += t[i];
    }
    if (s.empty()) s = t.find('\n') != std::string::npos ? "⏎" : "␣";
    base.push_back(s);
  }
  std::map<std::string, int> count, seen;
  for (const auto& s : base) ++count[s];
  static const char* kSub[10] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
  for (auto& s : base) {
    if (count[s] < 2) continue;
    const int k = ++seen[s];
    std::string digits;
    for (char d : std::to_string(k)) digits += kSub[d - '0'];
    s += digits;
  }
  return base;
}

inline std::string head_name(std::int64_t l, std::int64_t h) { return fmt::format("L{} h{}", l, h); }

// "previous token 0.82"
inline std::string pattern_text(const HeadSummary& s) {
  return fmt::format("{} {:.2f}", s.label.empty() ? std::string(pattern_name(s.pattern)) : s.label, s.pattern_share);
}

// "entropy 0.41 of 2.90 bits"
inline std::string entropy_text(const HeadSummary& s) { return fmt::format("entropy {:.2f} of {:.2f} bits", s.entropy, s.max_entropy); }

// "max off-diagonal 0.97 (sat → cat)"; one token has no off-diagonal weight.
inline std::string off_diagonal_text(const HeadsView& v, const HeadSummary& s, const std::vector<std::string>& labels) {
  if (v.T < 2) return "no off-diagonal weight (one token)";
  const auto q = static_cast<std::size_t>(std::clamp<std::int64_t>(s.max_query, 0, v.T - 1));
  const auto k = static_cast<std::size_t>(std::clamp<std::int64_t>(s.max_key, 0, v.T - 1));
  return fmt::format("max off-diagonal {:.2f} ({} → {})", s.max_off_diagonal, labels[q], labels[k]);
}

// The per-head lines of the text and HTML renderers, aligned as columns:
// "L3 h7  previous token 0.82   entropy 0.41 of 2.90 bits   max off-diagonal 0.97 (sat → cat)"
inline std::vector<std::string> summary_lines(const HeadsView& v, const std::vector<std::string>& labels) {
  std::size_t name_w = 0, pattern_w = 0, entropy_w = 0;
  for (std::int64_t l = 0; l < v.layers; ++l)
    for (std::int64_t h = 0; h < v.heads; ++h) {
      name_w = std::max(name_w, cells(head_name(l, h)));
      pattern_w = std::max(pattern_w, cells(pattern_text(v.summary(l, h))));
      entropy_w = std::max(entropy_w, cells(entropy_text(v.summary(l, h))));
    }
  std::vector<std::string> out;
  for (std::int64_t l = 0; l < v.layers; ++l)
    for (std::int64_t h = 0; h < v.heads; ++h) {
      const auto& s = v.summary(l, h);
      out.push_back(pad_right(head_name(l, h), name_w) + "  " + pad_right(pattern_text(s), pattern_w) + "   " +
                    pad_right(entropy_text(s), entropy_w) + "   " + off_diagonal_text(v, s, labels));
    }
  return out;
}

// The text grid's fit to a width: each head's T × T weights drawn as n × n cells of `cell_w`
// characters, a cell the largest weight of a block × block square of tokens (block 1: one token),
// heads `gap` columns apart, `per_band` heads side by side (the rest wrap onto further bands).
struct TextFit {
  std::int64_t block = 1, n = 0;
  int cell_w = 2, gap = 2;
  std::int64_t per_band = 1;
};

inline TextFit fit_text_grid(std::int64_t T, std::int64_t heads, std::size_t label_w, int width) {
  const auto avail = static_cast<std::int64_t>(width) - static_cast<std::int64_t>(label_w);
  auto fits = [&](std::int64_t n, int cw, int gap) { return heads * (n * cw + gap) - gap <= avail; };
  const std::int64_t t = std::max<std::int64_t>(T, 1);
  // whole tokens, two characters a key (about square in a terminal), then one
  if (fits(t, 2, 2)) return {1, t, 2, 2, heads};
  if (fits(t, 1, 2)) return {1, t, 1, 2, heads};
  // blocks of tokens: the smallest block that fits, keeping at least 4 cells a side (or T)
  const std::int64_t min_n = std::min<std::int64_t>(t, 4);
  for (std::int64_t b = 2; b <= t; ++b) {
    const std::int64_t n = (t + b - 1) / b;
    if (n < min_n) break;
    if (fits(n, 1, 1)) return {b, n, 1, 1, heads};
  }
  // still too wide: min_n cells a side, and the heads wrapped onto several bands
  const std::int64_t b = (t + min_n - 1) / min_n;
  const std::int64_t n = (t + b - 1) / b;
  const std::int64_t per = std::max<std::int64_t>(1, (avail + 1) / (n + 1));
  return {b, n, 1, 1, std::min(per, std::max<std::int64_t>(heads, 1))};
}

// The largest weight of cell (r, c)'s block of tokens, and whether the whole block lies above the
// diagonal (masked by causality: nothing to draw).
struct BlockCell {
  float value = 0;
  bool masked = true;
};

inline BlockCell block_cell(const HeadsView& v, std::int64_t l, std::int64_t h, std::int64_t r, std::int64_t c, std::int64_t block) {
  BlockCell out;
  const std::int64_t i0 = r * block, i1 = std::min(v.T, i0 + block);
  const std::int64_t j0 = c * block, j1 = std::min(v.T, j0 + block);
  for (std::int64_t i = i0; i < i1; ++i)
    for (std::int64_t j = j0; j < (v.bidirectional ? j1 : std::min(j1, i + 1)); ++j) {
      if (!v.visible(l, i, j)) continue;
      const float w = v.weight(l, h, i, j);
      if (out.masked || w > out.value) out.value = w;
      out.masked = false;
    }
  return out;
}

}  // namespace heads_detail
}  // namespace attn::model
