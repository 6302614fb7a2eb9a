// The renderers of the model-level tools' results (model/tools/): attn heads' views (heads_text.cpp,
// heads_svg.cpp, heads_html.cpp, heads_json.cpp) and attn generate's tokens (generation.cpp).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "attn/model/tools/generate.hpp"
#include "attn/model/tools/heads.hpp"
#include "attn/render/render.hpp"

namespace attn::model {

// Each renderer takes the views of one input: one, or an encoder-decoder's three, drawn one after the
// other under a heading each.
// Terminal: a grid of layers (rows) × heads (columns) of small heatmaps drawn with shade or colour
// blocks, fitted to `width` columns (heads drawn smaller, or wrapped, and the text says so), then one
// summary line per head. The same bytes for the same width.
void render_heads_text(const std::vector<HeadsView>& views, std::ostream& out, ColorMode color, int width);
// One SVG document: the same grid, token labels on the axes of the first column and last row.
void render_heads_svg(const std::vector<HeadsView>& views, std::ostream& out);
// attn heads --head LlHh: one head's whole map (a view of 1 layer × 1 head) as text, its keys in column
// blocks as wide as `width` allows, a row a query; every weight drawn, none pooled.
void render_head_text(const HeadsView& one, std::ostream& out, ColorMode color, int width);
// One view: {"format": "attn-heads", "model", "tokens", "layers", "heads", "windows" ([L], 0: none), "notes", "weights": [L][H][T][T],
// "summaries": [L][H] of {"layer", "head", "entropy", "max_entropy", "max_off_diagonal", "max_query", "max_key",
// "pattern", "pattern_share"}}: the numbers at full float precision, for scripts and tests. Several:
// {"format": "attn-heads", "model", "parts": [one view's object, with "part" (and for cross "source_tokens",
// "source_pieces", "S"; weights [L][H][T][S]), ...]}.
// more: further members of one view's object (attn heads --rollout's), each line indented two spaces.
void render_heads_json(const std::vector<HeadsView>& views, std::ostream& out, const std::string& more = "");
// One self-contained HTML page: the grid, a click on a head enlarges it with token labels and its summary.
void render_heads_html(const std::vector<HeadsView>& views, std::ostream& out);
// One view alone.
inline void render_heads_text(const HeadsView& v, std::ostream& out, ColorMode color, int width) { render_heads_text(std::vector<HeadsView>{v}, out, color, width); }
inline void render_heads_svg(const HeadsView& v, std::ostream& out) { render_heads_svg(std::vector<HeadsView>{v}, out); }
inline void render_heads_json(const HeadsView& v, std::ostream& out) { render_heads_json(std::vector<HeadsView>{v}, out); }
inline void render_heads_html(const HeadsView& v, std::ostream& out) { render_heads_html(std::vector<HeadsView>{v}, out); }

// head: the head shown (−1: every head, its three largest weights each)
void render_generation_text(const Generation& g, std::ostream& out, const TextOptions& o, std::int64_t head);
// {"model", "layer", "prompt_ids", "prompt", "generated", "steps": [{"position", "query", "top": [{"id", "token", "p"}],
//  "attention": [[...] per head], "logits_difference", "weights_difference"}], "agrees"}
void render_generation_json(const Generation& g, std::ostream& out);

}  // namespace attn::model
