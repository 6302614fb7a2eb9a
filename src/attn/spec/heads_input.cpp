// attn heads' input: a "checkpoint" block read (checkpoint_input.hpp), refused when the weights it
// keeps would pass the memory limit, then every layer run (heads_stream.hpp, residual.hpp) into views with the
// notes of what was read. The summaries are heads.cpp's; the drawing is render/'s.
#include <fmt/format.h>

#include <filesystem>
#include <tuple>
#include <string>
#include <vector>

#include "attn/spec/parse.hpp"
#include "attn/core/bytes.hpp"
#include "attn/core/error.hpp"
#include "attn/core/spec.hpp"
#include "attn/io/json_read.hpp"
#include "attn/model/tools/residual.hpp"
#include "attn/tools/cost.hpp"
#include "attn/spec/checkpoint_input.hpp"

namespace attn::model {

void require_model_fits(const CheckpointInput& in, const std::string& command, bool streamed, double kept, double rollout) {
  const auto& a = in.ckpt.arch();
  const auto T = static_cast<std::int64_t>(std::max(in.ids.size(), in.source_ids.size()));
  const RunEstimate e = model_run_bytes({a.C, a.H, a.Hkv, a.hd, a.inner, a.encoder(), mlp_block_rows(a.inner)}, T, streamed, kept + rollout);
  require_machine_fits(e.total, fmt::format("{} on {} tokens of {}", command, T, a.name()),
                       fmt::format("{}{} for one layer's attention{}, {} for the residual stream and one layer's MLP, beyond the mapped checkpoint",
                                   rollout > 0 ? fmt::format("{} for --rollout's maps (L × T² floats, and three T × T products), ", human_bytes(rollout))
                                               : std::string(),
                                   human_bytes(e.attention - rollout), streamed ? " streamed" : fmt::format(" trace with its [H, T, T] = [{}, {}, {}] steps", a.H, T, T),
                                   human_bytes(e.mlp)));
}

bool names_checkpoint(const std::string& path) {
  if (path == "-") return false;
  const json root = json::parse(read_input(path), nullptr, false);
  return root.is_object() && root.contains("checkpoint");
}

std::vector<HeadsView> load_heads(const std::string& path, std::int64_t max_bytes, const std::string& why, const HeadsKeep& keep, const LayerHooks& hooks) {
  return load_heads_text(read_input(path), path == "-" ? "<stdin>" : path, path == "-" ? "" : std::filesystem::path(path).parent_path().string(),
                         max_bytes, why, keep, hooks);
}

std::vector<HeadsView> load_heads_text(const std::string& text, const std::string& origin, const std::string& base_dir, std::int64_t max_bytes,
                                       const std::string& why, const HeadsKeep& keep, const LayerHooks& hooks) {
  const ParsedJson parsed = parse_json(text, origin);
  json root = parsed.root;
  if (!root.is_object() || !root.contains("checkpoint")) {
    fail("checkpoint", "attn heads draws a real model's heads: expected {\"checkpoint\": {\"path\": \"DIR\"}, \"sentence\": \"...\"}");
  }
  // an encoder-decoder's heads: every attention of both stacks when the decoder's tokens are given
  // (its "stack" need not be), else the encoder's
  const bool decoder_tokens = root.contains("sentence") || root.contains("token_ids");
  if (root["checkpoint"].is_object() && !root["checkpoint"].contains("stack") && (root.contains("source") || root.contains("source_ids"))) {
    root["checkpoint"]["stack"] = decoder_tokens ? "decoder" : "encoder";
  }
  // (like "layer", "attention" picks what attn run traces; attn heads draws every layer and attention)
  const CheckpointInput in = read_checkpoint_input(root, base_dir);
  const auto& a = in.ckpt.arch();
  const auto T = static_cast<std::int64_t>(in.ids.size()), S = static_cast<std::int64_t>(in.source_ids.size());
  // the weights kept whole (an encoder-decoder's always; one stack's up to T = 256 or with --weights;
  // beyond, pooled grids of a few MB)
  const bool whole = in.stack == "decoder" || keep.weights || T <= kKeepWeightsUpTo;
  const double bytes = !whole ? 0.0 : in.stack == "decoder" ? 4.0 * static_cast<double>(a.H) *
                                                   (static_cast<double>(a.layers * S * S) + static_cast<double>(a.decoder_layers) * static_cast<double>(T * T + T * S))
                                             : 4.0 * static_cast<double>(a.layers * a.H) * static_cast<double>(T) * static_cast<double>(T);
  if (bytes > static_cast<double>(max_bytes)) {
    throw InputError(fmt::format("{}: every head's weights{} take {}, more than --max-memory {} ({})", origin,
                                 in.stack == "decoder" ? fmt::format(" (the encoder's S² = {}², the decoder's T² = {}² and T × S per layer and head)", S, T)
                                                       : fmt::format(", {} layers × {} heads × T² = {}² floats,", a.layers, a.H, T),
                                 human_bytes(bytes), human_bytes(static_cast<double>(max_bytes)), why));
  }
  if (hooks.any() && in.stack == "decoder") {  // [#43] rollout and ablation follow one stack's layers
    throw InputError(fmt::format("{}: {} reads one stack of layers; this input gives {}'s encoder and decoder (leave out \"sentence\" and "
                                 "\"token_ids\" to draw the encoder alone)", hooks.option, origin, a.name()));
  }
  HeadsKeep kept = keep;
  if (!keep.head_name.empty()) {
    if (in.stack == "decoder") throw InputError(fmt::format("--head {}: goes with one stack's heads; this input has an encoder-decoder's three attentions", keep.head_name));
    std::tie(kept.head_layer, kept.head) = parse_head_name(keep.head_name, a.layers, a.H);
  }
  // --rollout keeps its own: the layer being combined, the product and the next one (T² doubles each),
  // and the rolled-out map after every layer (L × T² floats)
  const double rollout = hooks.rows ? (24.0 + 4.0 * static_cast<double>(a.layers)) * static_cast<double>(T) * static_cast<double>(T) : 0.0;
  require_model_fits(in, hooks.rows ? "attn heads --rollout" : "attn heads", !whole,
                     whole ? bytes : 4.0 * kGridSide * kGridSide * static_cast<double>(a.layers * a.H) + 4 * kBlockBytes, rollout);  // the grids, and a block's steps
  std::vector<HeadsView> views = in.stack == "decoder" ? checkpoint_seq2seq_heads(in.ckpt, in.source_ids, in.source_pieces, in.ids, in.pieces)
                                                       : std::vector<HeadsView>{checkpoint_heads(in.ckpt, in.ids, in.types, in.pieces, kept, hooks)};
  HeadsView& first = views.front();
  first.notes = in.notes;
  // the header names the model already: the first note says only what was read
  if (!first.notes.empty()) first.notes.front() = fmt::format("weights {}, converted to float32 and computed in float32", in.ckpt.weights_description());
  if (in.stack == "decoder") {
    views[0].pieces = in.source_raw;
    views[1].pieces = views[2].pieces = in.raw;
    views[2].key_pieces = in.source_raw;
    first.notes.push_back(fmt::format("{}: the encoder's self-attention over the source (every token sees every other), the decoder's causal "
                                      "self-attention, and its cross-attention (each decoder token over the source's tokens)", a.name()));
    return views;
  }
  if (a.encoder()) {
    first.notes.push_back(fmt::format("{}: every token sees every other, nothing is masked; the patterns name the start and end "
                                      "tokens and the next token too", a.encoder_decoder ? a.name() + "'s encoder" : a.name() + " is an encoder"));
  }
  first.pieces = in.raw;
  if (const std::string note = a.beyond_positions_note(T); !note.empty()) first.notes.push_back(note);
  if (a.window > 0 && std::any_of(first.windows.begin(), first.windows.end(), [](std::int64_t w) { return w > 0; })) {
    first.notes.push_back(fmt::format("window: {}'s sliding_window = {}{}", a.name(), a.window, a.sliding.empty() ? "" : ", on the sliding layers only"));
  }
  if (kept.head_layer >= 0) return {one_head_view(first, kept)};  // --head: that head alone
  return views;
}

}  // namespace attn::model
