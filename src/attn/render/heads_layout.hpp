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

#include "attn/core/error.hpp"
#include "attn/core/trace.hpp"
#include "attn/render/model_views.hpp"
#include "attn/render/layout.hpp"

namespace attn::model {

namespace heads_detail {

// Refuses a view whose vectors do not match its sizes (a bug in whoever filled it).
inline void check_view(const HeadsView& v) {
  const auto cells = v.layers * v.heads * v.T * v.keys();
  if (v.layers < 0 || v.heads < 0 || v.T < 0 || v.keys() < 0 || v.weights.size() != static_cast<std::size_t>(cells) ||
      v.summaries.size() != static_cast<std::size_t>(v.layers * v.heads) || v.tokens.size() != static_cast<std::size_t>(v.T) ||
      v.key_labels().size() != static_cast<std::size_t>(v.keys())) {
    throw InternalError(fmt::format("attn heads: a view of {} layers × {} heads × T = {} needs {} weights, {} summaries and {} tokens; it has {}, {} and {}",
                                    v.layers, v.heads, v.T, cells, v.layers * v.heads, v.T, v.weights.size(), v.summaries.size(),
                                    v.tokens.size()));
  }
}

// A long input's view as the renderers draw it (HeadsView::pool > 1): each grid cell a position, the
// positions labelled by the tokens they cover ("512–527"), so both axes carry positions; the windows
// pooled to whole cells (a cell is drawn when any of its positions is visible); the largest weights'
// positions as their cells. A view that kept its weights is drawn as it is (this returns a copy).
inline HeadsView pooled_view(const HeadsView& v) {
  if (v.kept()) return v;
  HeadsView d;
  d.model = v.model, d.part = v.part, d.cross = v.cross, d.bidirectional = v.bidirectional, d.layers = v.layers, d.heads = v.heads;
  d.T = v.grid_rows(), d.S = v.cross ? v.grid_cols() : 0;
  d.drawn_pool = v.pool, d.drawn_from = v.T;
  auto ranges = [&](std::int64_t cells, std::int64_t n) {
    std::vector<std::string> out;
    for (std::int64_t c = 0; c < cells; ++c) out.push_back(fmt::format("{}–{}", c * v.pool, std::min(n, (c + 1) * v.pool) - 1));
    return out;
  };
  d.tokens = ranges(d.T, v.T);
  if (v.cross) d.key_tokens = ranges(v.grid_cols(), v.keys());
  for (const auto w : v.windows) d.windows.push_back(w == 0 ? 0 : (w + 2 * v.pool - 2) / v.pool);
  d.weights = v.grid;
  for (auto& w : d.weights)
    if (w != w) w = 0;  // NaN: a block wholly masked (drawn as masked by visible())
  d.summaries = v.summaries;  // (max_query and max_key stay positions: off_diagonal_text names them so)
  d.notes = v.notes;
  d.notes.push_back(fmt::format("long input: T = {} tokens drawn as {} × {} cells, each the largest weight of {} × {} positions; both axes are "
                                "labelled by position; the summaries are over every weight",
                                v.T, v.grid_rows(), v.grid_cols(), v.pool, v.pool));
  if (!v.weights_note.empty()) d.notes.push_back(v.weights_note);
  return d;
}

// "1 layer", "16 layers"
inline std::string counted(std::int64_t n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); }
// The input's tokens: a long input's, not its cells'.
inline std::int64_t tokens_of(const HeadsView& v) { return v.drawn_from > 0 ? v.drawn_from : v.T; }

// For SVG and HTML text and attribute values.
inline std::string esc(std::string_view s) { return markup_escape(s); }

// The tokens as labels: surrounding whitespace trimmed (GPT-2's " cat" is "cat"), an all-blank piece
// shown as ␣ (or ⏎ for a newline), other control characters as ·, and a token that occurs more than
// once numbered by occurrence with subscripts (the₁, the₂), so "sat → the₂" names one position.
inline std::vector<std::string> token_labels(const std::vector<std::string>& tokens) {
  std::vector<std::string> base;
  for (const auto& t : tokens) {
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
  for (auto& s : base)
    if (count[s] >= 2) s += subscript(++seen[s]);  // as the trace's tables number them (core/trace.hpp)
  return base;
}
inline std::vector<std::string> token_labels(const HeadsView& v) { return token_labels(v.tokens); }

inline std::string head_name(std::int64_t layer, std::int64_t head) { return fmt::format("L{} h{}", layer, head); }
inline std::string head_name(const HeadsView& v, std::int64_t l, std::int64_t h) { return head_name(v.first_layer + l, v.first_head + h); }

// "previous token 0.82"
inline std::string pattern_text(const HeadSummary& s) {
  return fmt::format("{} {:.2f}", s.label.empty() ? std::string(pattern_name(s.pattern)) : s.label, s.pattern_share);
}

// "first 0.31, previous 0.12, self 0.20, distance 4.1, local 0.55": the shares behind a causal or an
// encoder's head's label (heads.hpp); "" for a cross-attention's, which has none
inline std::string shares_text(const HeadsView& v, double first, double previous, double same, double distance, double local) {
  if (v.cross) return "";
  return fmt::format("first {:.2f}, previous {:.2f}, self {:.2f}, distance {:.1f}{}", first, previous, same, distance,
                     local < 0 ? std::string() : fmt::format(", local {:.2f}", local));
}
inline std::string shares_text(const HeadsView& v, const HeadSummary& s) { return shares_text(v, s.first, s.previous, s.same, s.distance, s.local); }

// "entropy 0.41 of 2.90 bits"
inline std::string entropy_text(const HeadSummary& s) { return fmt::format("entropy {:.2f} of {:.2f} bits", s.entropy, s.max_entropy); }

// "max off-diagonal 0.97 (sat → cat)"; one token has no off-diagonal weight. A cross-attention's
// keys are other tokens: "max weight 0.97 (Katze → cat)", keys labelled by key_labels.
inline std::string off_diagonal_text(const HeadsView& v, const HeadSummary& s, const std::vector<std::string>& labels,
                                     const std::vector<std::string>& key_labels) {
  if (!v.cross && v.T < 2) return "no off-diagonal weight (one token)";
  if (v.T < 1 || v.keys() < 1) return "no weight";
  if (v.drawn_from > 0)  // a long input's cells: the positions themselves
    return fmt::format("max {} {:.2f} (query {} → key {})", v.cross ? "weight" : "off-diagonal", s.max_off_diagonal, s.max_query, s.max_key);
  const auto q = static_cast<std::size_t>(std::clamp<std::int64_t>(s.max_query, 0, v.T - 1));
  const auto k = static_cast<std::size_t>(std::clamp<std::int64_t>(s.max_key, 0, v.keys() - 1));
  return fmt::format("max {} {:.2f} ({} → {})", v.cross ? "weight" : "off-diagonal", s.max_off_diagonal, labels[q], key_labels[k]);
}

// The per-head lines of the text and HTML renderers, aligned as columns:
// "L3 h7  previous token 0.82   entropy 0.41 of 2.90 bits   max off-diagonal 0.97 (sat → cat)"
inline std::vector<std::string> summary_lines(const HeadsView& v, const std::vector<std::string>& labels, const std::vector<std::string>& key_labels) {
  std::size_t name_w = 0, pattern_w = 0, entropy_w = 0;
  for (std::int64_t l = 0; l < v.layers; ++l)
    for (std::int64_t h = 0; h < v.heads; ++h) {
      name_w = std::max(name_w, cells(head_name(v, l, h)));
      pattern_w = std::max(pattern_w, cells(pattern_text(v.summary(l, h))));
      entropy_w = std::max(entropy_w, cells(entropy_text(v.summary(l, h))));
    }
  std::vector<std::string> out;
  for (std::int64_t l = 0; l < v.layers; ++l)
    for (std::int64_t h = 0; h < v.heads; ++h) {
      const auto& s = v.summary(l, h);
      out.push_back(pad_right(head_name(v, l, h), name_w) + "  " + pad_right(pattern_text(s), pattern_w) + "   " +
                    pad_right(entropy_text(s), entropy_w) + "   " + off_diagonal_text(v, s, labels, key_labels));
    }
  return out;
}

// The text grid's fit to a width: each head's T × S weights (S = T but in cross-attention) drawn as
// n × m cells of `cell_w` characters (n rows, m columns), a cell the largest weight of a block × block
// square of tokens (block 1: one token), heads `gap` columns apart, `per_band` heads side by side (the
// rest wrap onto further bands).
struct TextFit {
  std::int64_t block = 1, n = 0;
  int cell_w = 2, gap = 2;
  std::int64_t per_band = 1;
  std::int64_t m = 0;
};

inline TextFit fit_text_grid(std::int64_t T, std::int64_t S, std::int64_t heads, std::size_t label_w, int width) {
  const auto avail = static_cast<std::int64_t>(width) - static_cast<std::int64_t>(label_w);
  auto fits = [&](std::int64_t m, int cw, int gap) { return heads * (m * cw + gap) - gap <= avail; };
  const std::int64_t t = std::max<std::int64_t>(T, 1), s = std::max<std::int64_t>(S, 1), side = std::max(t, s);
  auto rows = [&](std::int64_t b) { return (t + b - 1) / b; };
  auto cols = [&](std::int64_t b) { return (s + b - 1) / b; };
  // whole tokens, two characters a key (about square in a terminal), then one
  if (fits(s, 2, 2)) return {1, t, 2, 2, heads, s};
  if (fits(s, 1, 2)) return {1, t, 1, 2, heads, s};
  // blocks of tokens: the smallest block that fits, keeping at least 4 cells a side (or the side)
  const std::int64_t min_n = std::min<std::int64_t>(std::min(t, s), 4);
  for (std::int64_t b = 2; b <= side; ++b) {
    if (std::min(rows(b), cols(b)) < min_n) break;
    if (fits(cols(b), 1, 1)) return {b, rows(b), 1, 1, heads, cols(b)};
  }
  // still too wide: min_n cells on the shorter side, and the heads wrapped onto several bands
  const std::int64_t b = (std::min(t, s) + min_n - 1) / min_n;
  const std::int64_t per = std::max<std::int64_t>(1, (avail + 1) / (cols(b) + 1));
  return {b, rows(b), 1, 1, std::min(per, std::max<std::int64_t>(heads, 1)), cols(b)};
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
  const std::int64_t j0 = c * block, j1 = std::min(v.keys(), j0 + block);
  for (std::int64_t i = i0; i < i1; ++i)
    for (std::int64_t j = j0; j < (v.bidirectional || v.cross ? j1 : std::min(j1, i + 1)); ++j) {
      if (!v.visible(l, i, j)) continue;
      const float w = v.weight(l, h, i, j);
      if (out.masked || w > out.value) out.value = w;
      out.masked = false;
    }
  return out;
}

}  // namespace heads_detail
}  // namespace attn::model
