// attn heads --format json: a view's (or an encoder-decoder's three views') weights and summaries at
// full float precision, for scripts and tests. Writes what model/tools/heads.cpp summarised; computes
// nothing.
#include <fmt/format.h>

#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "attn/io/json_text.hpp"
#include "attn/render/heads_layout.hpp"
#include "attn/render/model_views.hpp"

namespace attn::model {

namespace {

// float32's shortest round-trip text; non-finite values as the strings "nan", "inf", "-inf"
// (the trace JSON's convention), which JSON numbers cannot hold.
std::string number(double v, bool single) {
  if (const auto name = nonfinite_name(v)) return json_quote(*name);
  if (v == 0) return "0";
  return single ? fmt::format("{}", static_cast<float>(v)) : fmt::format("{}", v);
}

}  // namespace

namespace {

// One view's JSON object, its lines indented by `indent` more spaces; `top` adds the format and model.
void view_json(const HeadsView& view, std::ostream& out, const std::string& indent, bool top) {
  if (view.kept()) heads_detail::check_view(view);
  auto strings = [](const std::vector<std::string>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + json_quote(v[i]);
    return s + "]";
  };
  const std::string n = "\n" + indent;
  out << "{";
  if (top) out << n << "  \"format\": \"attn-heads\"," << n << "  \"model\": " << json_quote(view.model) << ",";
  if (!view.part.empty()) out << n << "  \"part\": " << json_quote(view.part) << ",";
  out << n << "  \"tokens\": " << strings(view.tokens) << "," << n << "  \"pieces\": " << strings(view.pieces) << ",";
  if (view.cross) {
    out << n << "  \"source_tokens\": " << strings(view.key_tokens) << "," << n << "  \"source_pieces\": " << strings(view.key_pieces) << "," << n
        << "  \"S\": " << view.S << ",";
  }
  out << n << "  \"layers\": " << view.layers << "," << n << "  \"heads\": " << view.heads << "," << n << "  \"windows\": ["
      << fmt::format("{}", fmt::join(view.windows, ", ")) << "],";
  if (view.bidirectional) out << n << "  \"bidirectional\": true,";
  out << n << "  \"notes\": " << strings(view.notes) << ",";
  if (!view.kept()) {
    // a long input's weights are not kept: each head's pooled map instead (HeadsView::grid)
    out << n << "  \"weights_omitted\": " << json_quote(view.weights_note) << "," << n << "  \"pool\": " << view.pool << ",";
  }
  out << n << "  \"" << (view.kept() ? "weights" : "grid") << "\": [";
  // [L][H][T][keys], one query's row a line; pooled: [L][H][rows][cols], a wholly masked cell 0 (as
  // a masked weight is)
  const std::int64_t rows = view.kept() ? view.T : view.grid_rows(), cols = view.kept() ? view.keys() : view.grid_cols();
  auto cell = [&](std::int64_t l, std::int64_t h, std::int64_t i, std::int64_t j) {
    if (view.kept()) return static_cast<double>(view.weight(l, h, i, j));
    const float c = view.grid[static_cast<std::size_t>(((l * view.heads + h) * rows + i) * cols + j)];
    return c == c ? static_cast<double>(c) : 0.0;
  };
  for (std::int64_t l = 0; l < view.layers; ++l) {
    out << (l ? "," : "") << n << "    [";
    for (std::int64_t h = 0; h < view.heads; ++h) {
      out << (h ? "," : "") << n << "      [";
      for (std::int64_t i = 0; i < rows; ++i) {
        out << (i ? "," : "") << n << "        [";
        for (std::int64_t j = 0; j < cols; ++j) out << (j ? ", " : "") << number(cell(l, h, i, j), true);
        out << "]";
      }
      out << (rows ? n + "      ]" : "]");
    }
    out << (view.heads ? n + "    ]" : "]");
  }
  out << (view.layers ? n + "  ]" : "]") << "," << n << "  \"summaries\": [";
  for (std::int64_t l = 0; l < view.layers; ++l) {
    out << (l ? "," : "") << n << "    [";
    for (std::int64_t h = 0; h < view.heads; ++h) {
      const auto& s = view.summary(l, h);
      out << (h ? "," : "") << n << "      "
          << fmt::format(R"({{"layer": {}, "head": {}, "entropy": {}, "max_entropy": {}, "max_off_diagonal": {}, "max_query": {}, "max_key": {}, "pattern": {}, "pattern_share": {}, "first": {}, "previous": {}, "same": {}, "distance": {}, "local": {}{}}})",
                         view.first_layer + l, view.first_head + h, number(s.entropy, false), number(s.max_entropy, false), number(s.max_off_diagonal, false), s.max_query, s.max_key,
                         json_quote(pattern_name(s.pattern)), number(s.pattern_share, false), number(s.first, false), number(s.previous, false),
                         number(s.same, false), number(s.distance, false), s.local < 0 ? std::string("null") : number(s.local, false),
                         s.label.empty() ? std::string() : ", \"label\": " + json_quote(s.label));
    }
    out << (view.heads ? n + "    ]" : "]");
  }
  out << (view.layers ? n + "  ]" : "]") << "," << n << "  \"layer_means\": [";
  // each layer's heads averaged (model/tools/heads.hpp's layer_means)
  for (std::int64_t l = 0; l < view.layers; ++l) {
    const LayerMeans m = layer_means(&view.summary(l, 0), view.heads);
    out << (l ? "," : "") << n << "    "
        << fmt::format(R"({{"layer": {}, "entropy": {}, "max_entropy": {}, "first": {}, "previous": {}, "same": {}, "distance": {}, "local": {}}})", view.first_layer + l,
                       number(m.entropy, false), number(m.max_entropy, false), number(m.first, false), number(m.previous, false), number(m.same, false),
                       number(m.distance, false), m.local < 0 ? std::string("null") : number(m.local, false));
  }
  out << (view.layers ? n + "  ]" : "]") << n << "}";
}

}  // namespace

void render_heads_json(const std::vector<HeadsView>& views, std::ostream& out, const std::string& more) {
  if (views.size() == 1) {
    std::ostringstream one;
    view_json(views[0], one, "", true);
    std::string text = one.str();
    if (!more.empty()) text.insert(text.size() - 2, ",\n" + more);  // [#43 rollout] before the closing "\n}"
    out << text << "\n";
    return;
  }
  out << "{\n  \"format\": \"attn-heads\",\n  \"model\": " << json_quote(views.empty() ? std::string() : views[0].model) << ",\n  \"parts\": [";
  for (std::size_t k = 0; k < views.size(); ++k) {
    out << (k ? ",\n    " : "\n    ");
    view_json(views[k], out, "    ", false);
  }
  out << "\n  ]\n}\n";
}

}  // namespace attn::model
