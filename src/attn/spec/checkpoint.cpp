// {"checkpoint": {"path": DIR or FILE, "layer": L, "config": {...}}, "sentence" or "token_ids"}:
// a real model's layer as the input. The checkpoint computes the residual stream below the layer
// (model/tools/residual.cpp); what is traced is the layer's attention, as any other input.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "attn/core/bytes.hpp"
#include "attn/core/error.hpp"
#include "attn/io/json_text.hpp"
#include "attn/model/tools/residual.hpp"
#include "attn/spec/checkpoint_input.hpp"
#include "attn/model/formats/hub_cache.hpp"
#include "attn/spec/readers.hpp"

namespace attn {

namespace {

const std::vector<std::string_view> kCheckpointRootKeys = {"checkpoint", "sentence", "token_ids", "title", "comment", "expect", "sentence_b",
                                                           "token_type_ids", "source", "source_ids", "split_special_tokens"};

// "split_special_tokens": true cuts a special token written in the text ("<|im_start|>") as text,
// as the hub's tokenizers do with that flag; by default it is one token.
bool split_special_tokens(const json& root) {
  if (!root.contains("split_special_tokens")) return false;
  if (!root.contains("sentence") && !root.contains("source"))
    fail("split_special_tokens", "is about the text to tokenize; give it beside \"sentence\" (or an encoder-decoder's \"source\"), not token ids");
  return read_bool(root["split_special_tokens"], "split_special_tokens");
}

std::string resolve(const std::string& base_dir, const std::string& path) {
  if (base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).string();
}

// An encoder-decoder's decoder tokens: what was read so far (the "source") becomes the source, and
// "sentence" (after decoder_start_token_id and <s>, as BART's shifted labels begin) or "token_ids"
// (as given) the tokens.
void read_decoder_tokens(const json& root, const std::string& shown, model::CheckpointInput& in) {
  const auto& ckpt = in.ckpt;
  const auto& arch = ckpt.arch();
  in.source_ids = std::move(in.ids), in.source_pieces = std::move(in.pieces), in.source_raw = std::move(in.raw);
  in.ids.clear(), in.pieces.clear(), in.raw.clear();
  const bool has_ids = root.contains("token_ids");
  if (has_ids) {
    const json& ids = root["token_ids"];
    if (!ids.is_array()) fail("token_ids", fmt::format("expected an array of token ids, got {}", describe(ids)));
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!ids[i].is_number_integer()) fail(fmt::format("token_ids[{}]", i), fmt::format("expected a token id, an integer ≥ 0, got {}", describe(ids[i])));
      in.ids.push_back(ids[i].get<std::int64_t>());
    }
  } else {
    const model::Tokenizer* tok = ckpt.decoder_tokenizer();
    if (!tok) fail("sentence", fmt::format("{} has no tokenizer: give \"token_ids\" instead", shown));
    in.ids.push_back(arch.decoder_start);
    const auto first = ckpt.specials().first;  // BART's <s>; T5's and Marian's labels begin with the text
    in.ids.insert(in.ids.end(), first.begin(), first.end());
    const auto body = tok->encode(read_string(root["sentence"], "sentence"), split_special_tokens(root));
    in.ids.insert(in.ids.end(), body.begin(), body.end());
    in.notes.push_back(fmt::format("decoder tokens (the rows): decoder_start_token_id {} ({}){} first, as {}'s shifted labels begin{}; the "
                                   "tokens note above is the source's", arch.decoder_start,
                                   arch.decoder_start < tok->vocab_size() ? tok->piece(arch.decoder_start) : "#?",
                                   first.empty() ? "" : " and " + tok->piece(first.front()), arch.name(),
                                   tok != ckpt.tokenizer() ? "; cut by " + tok->describe() : ""));
  }
  if (in.ids.empty()) fail("token_ids", "no tokens: give at least one");
  for (std::size_t i = 0; i < in.ids.size(); ++i) {
    const auto id = in.ids[i];
    if (id < 0 || id >= arch.vocab) {
      fail(fmt::format("{}[{}]", has_ids ? "token_ids" : "sentence's tokens", i),
           fmt::format("token id {} is outside the vocabulary: vocab_size = {} (ids 0 .. {})", id, arch.vocab, arch.vocab - 1));
    }
    const model::Tokenizer* tok = ckpt.decoder_tokenizer();
    const bool known = tok && id < tok->vocab_size();
    in.pieces.push_back(known ? tok->label(id) : fmt::format("#{}", id));
    in.raw.push_back(known ? tok->piece(id) : fmt::format("#{}", id));
  }
}

// Beside "checkpoint", only the keys of a checkpoint's input: the rest is set by the checkpoint.
void check_root_keys(const json& root) {
  for (const auto& [key, value] : root.items()) {
    if (std::find(kCheckpointRootKeys.begin(), kCheckpointRootKeys.end(), key) != kCheckpointRootKeys.end()) continue;
    if (!known_root_key(key)) check_keys(root, "", kCheckpointRootKeys);  // a typo: the usual message, with a suggestion
    fail(key, "is set by the checkpoint (its config.json and weights); beside \"checkpoint\" give only \"sentence\" or \"token_ids\", "
              "\"split_special_tokens\", \"title\", \"comment\" and \"expect\" (for an encoder also \"sentence_b\" or \"token_type_ids\"; for "
              "an encoder-decoder \"source\" or \"source_ids\")");
  }
}

// "checkpoint": its path (or hub id and revision, found in the hub's cache), config and layer; the
// checkpoint opened. shown: the path or id as the user wrote it, for messages.
model::CheckpointInput open_checkpoint(const json& c, const std::string& base_dir, std::string& shown) {
  if (!c.is_object()) fail("checkpoint", fmt::format("expected {{\"path\": \"DIR\", \"layer\": 0}}, got {}", describe(c)));
  check_keys(c, "checkpoint", {"path", "model", "revision", "layer", "config", "stack", "attention"});
  if (c.contains("path") == c.contains("model")) {
    fail(c.contains("path") ? "checkpoint.model" : "checkpoint.path",
         "give \"path\" (a hub directory with config.json, model.safetensors and tokenizer files, or a .safetensors file) or \"model\" (an id "
         "such as \"meta-llama/Llama-3.2-1B\", found in the model hub's local cache), one of them");
  }
  if (c.contains("revision") && !c.contains("model")) fail("checkpoint.revision", "names a revision of \"model\" in the hub's cache; give \"model\" too");
  std::string path;
  if (c.contains("model")) {
    // by hub id: the cached snapshot's directory (nothing is downloaded)
    const std::string id = read_string(c["model"], "checkpoint.model");
    const std::string revision = c.contains("revision") ? read_string(c["revision"], "checkpoint.revision") : "main";
    path = model::find_in_hub_cache(id, revision, "checkpoint.model");
    shown = revision == "main" ? id : id + "@" + revision;
  } else {
    shown = read_string(c["path"], "checkpoint.path");
    if (shown.empty()) fail("checkpoint.path", "expected a directory or a .safetensors file, got an empty string");
    path = resolve(base_dir, shown);
  }
  const json* config = c.contains("config") ? &c["config"] : nullptr;
  std::int64_t layer = 0;
  if (c.contains("layer")) {
    const json& l = c["layer"];
    if (!l.is_number_integer()) fail("checkpoint.layer", fmt::format("expected a layer index, an integer ≥ 0, got {}", describe(l)));
    layer = l.get<std::int64_t>();
  }
  model::CheckpointInput in{model::Checkpoint::open(path, config, shown), {}, {}, {}, {}, layer, {}, {}, {}, {}, {}, {}};
  return in;
}

// The layer in range; an encoder-decoder's "stack" and "attention", and the input keys its stack
// reads (a one-stack model refuses them).
void check_stack(const json& root, const json& c, model::CheckpointInput& in) {
  const std::int64_t layer = in.layer;
  // every command that reads the input checks the layer (attn heads draws them all, but a layer it
  // was given must still be one the model has)
  const auto& arch = in.ckpt.arch();
  if (!arch.encoder_decoder && (layer < 0 || layer >= arch.layers)) {
    fail("checkpoint.layer", fmt::format("expected 0 .. {} ({} has {} layers), got {}", arch.layers - 1, arch.name(), arch.layers, layer));
  }
  if (!arch.encoder_decoder) {
    for (const char* key : {"stack", "attention"})
      if (c.contains(key)) fail(std::string("checkpoint.") + key, fmt::format("is for the encoder-decoders (BART, Marian, T5): {} has one stack of layers", arch.name()));
    for (const char* key : {"source", "source_ids"})
      if (root.contains(key)) fail(key, fmt::format("is the encoder's input of an encoder-decoder (BART, Marian, T5); {} reads \"sentence\" or \"token_ids\"", arch.name()));
  } else {
    if (!c.contains("stack")) {
      fail("checkpoint.stack", fmt::format("{} has an encoder and a decoder: give \"stack\": \"encoder\" or \"decoder\"", arch.name()));
    }
    in.stack = read_string(c["stack"], "checkpoint.stack");
    in.attention = c.contains("attention") ? read_string(c["attention"], "checkpoint.attention") : "self";
    if (in.stack != "encoder" && in.stack != "decoder") fail("checkpoint.stack", fmt::format("expected \"encoder\" or \"decoder\", got {}", json_quote(in.stack)));
    if (in.attention != "self" && in.attention != "cross") {
      fail("checkpoint.attention", fmt::format("expected \"self\" or \"cross\", got {}", json_quote(in.attention)));
    }
    if (in.stack == "encoder" && in.attention == "cross") {
      fail("checkpoint.attention", fmt::format("{}'s encoder has self-attention only; cross-attention is the decoder's: \"stack\": \"decoder\"", arch.name()));
    }
    const std::int64_t count = in.stack == "encoder" ? arch.layers : arch.decoder_layers;
    if (layer < 0 || layer >= count) {
      fail("checkpoint.layer", fmt::format("expected 0 .. {} ({}'s {} has {} layers), got {}", count - 1, arch.name(), in.stack, count, layer));
    }
    if (in.stack == "encoder") {
      for (const char* key : {"sentence", "token_ids"})
        if (root.contains(key)) fail(key, fmt::format("{}'s encoder reads \"source\" (a sentence) or \"source_ids\"", arch.name()));
    } else if (root.contains("sentence") == root.contains("token_ids")) {
      fail(root.contains("token_ids") ? "token_ids" : "sentence",
           fmt::format("{}'s decoder reads \"sentence\" (its tokens after decoder_start_token_id {}) or \"token_ids\", one of them, beside the "
                       "encoder's \"source\"", arch.name(), arch.decoder_start));
    }
  }
}

// One of the text and the ids; an encoder's pair keys only for an encoder, "sentence_b" only beside
// "sentence".
void check_token_keys(const json& root, const model::Architecture& arch, const std::string& text_key, const std::string& ids_key) {
  const bool has_sentence = root.contains(text_key), has_ids = root.contains(ids_key);
  if (has_sentence == has_ids) {
    fail(has_ids ? ids_key : text_key, fmt::format("give \"{}\" (tokenised by the checkpoint's tokenizer) or \"{}\", one of them", text_key, ids_key));
  }
  for (const char* key : {"sentence_b", "token_type_ids"}) {
    if (root.contains(key) && arch.encoder_decoder) {
      fail(key, fmt::format("is for the encoders (BERT, RoBERTa, DistilBERT), whose tokens come in pairs; {}'s encoder reads one \"source\"",
                            arch.name()));
    }
    if (root.contains(key) && !arch.encoder()) {
      fail(key, fmt::format("is for the encoders (BERT, RoBERTa, DistilBERT), whose tokens come in pairs; {} reads one sequence", arch.name()));
    }
  }
  if (root.contains("sentence_b") && !has_sentence) {
    fail("sentence_b", "is the second sentence of a pair beside \"sentence\"; with \"token_ids\", give the pair's ids with its "
                       "\"token_type_ids\" instead");
  }
}

// The text under text_key cut by the checkpoint's tokenizer: BOS first where it adds one, an
// encoder's special tokens around it (and around a pair with "sentence_b", with its token types); noted.
void tokenize_text(const json& root, const std::string& text_key, const std::string& ids_key, bool split, const std::string& shown,
                   model::CheckpointInput& in) {
  const auto& ckpt = in.ckpt;
  const auto& arch = ckpt.arch();
  const std::string text = read_string(root[text_key], text_key);
  if (!ckpt.tokenizer()) {
    fail(text_key, fmt::format("{} has no tokenizer (tokenizer.json, vocab.json + merges.txt or tokenizer.model): give \"{}\" instead", shown, ids_key));
  }
  if (ckpt.adds_bos()) in.ids.push_back(*ckpt.arch().bos);
  const auto sp = ckpt.specials();  // an encoder's [CLS] a [SEP] (b [SEP])
  const auto ids = ckpt.tokenizer()->encode(text, split);
  in.ids.insert(in.ids.end(), sp.first.begin(), sp.first.end());
  in.ids.insert(in.ids.end(), ids.begin(), ids.end());
  in.ids.insert(in.ids.end(), sp.last.begin(), sp.last.end());
  if (root.contains("sentence_b")) {
    const auto b = ckpt.tokenizer()->encode(read_string(root["sentence_b"], "sentence_b"), split);
    const std::size_t a_len = in.ids.size();
    in.ids.resize(in.ids.size() - sp.last.size());  // RoBERTa: <s> a </s></s> b </s>; BERT: [CLS] a [SEP] b [SEP]
    in.ids.insert(in.ids.end(), sp.between.begin(), sp.between.end());
    in.ids.insert(in.ids.end(), b.begin(), b.end());
    in.ids.insert(in.ids.end(), sp.last.begin(), sp.last.end());
    // BERT's token types: 0 through the first [SEP], 1 after; RoBERTa has one type only
    in.types.assign(in.ids.size(), 0);
    if (arch.type_vocab > 1)
      for (std::size_t i = a_len; i < in.ids.size(); ++i) in.types[i] = 1;
  }
  std::string specials;
  if (sp.first.empty() && !sp.last.empty()) {
    specials = fmt::format("; {} last, as the tokenizer puts it", ckpt.tokenizer()->piece(sp.last[0]));
  } else if (!sp.first.empty()) {
    const auto spell = [&](std::int64_t id) { return ckpt.tokenizer()->piece(id); };
    specials = root.contains("sentence_b")
                   ? fmt::format("; {} a {} b {}, as the tokenizer puts them around a pair{}", spell(sp.first[0]),
                                 sp.between.size() == 2 ? spell(sp.between[0]) + spell(sp.between[1]) : spell(sp.between[0]), spell(sp.last[0]),
                                 arch.type_vocab > 1 ? ", token types 0 then 1" : "")
                   : fmt::format("; {} first and {} last, as the tokenizer puts them", spell(sp.first[0]), spell(sp.last[0]));
  }
  in.notes.push_back(fmt::format("tokens: {}{}{}", ckpt.tokenizer()->describe(),
                                 ckpt.adds_bos() ? fmt::format("; BOS (id {}) first, as the tokenizer adds it", *ckpt.arch().bos) : "", specials));
}

// The ids given under ids_key, as they are (checked against the vocabulary with the labels).
void read_given_ids(const json& root, const std::string& ids_key, model::CheckpointInput& in) {
  const json& ids = root[ids_key];
  if (!ids.is_array()) fail(ids_key, fmt::format("expected an array of token ids, got {}", describe(ids)));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].is_number_integer()) fail(fmt::format("{}[{}]", ids_key, i), fmt::format("expected a token id, an integer ≥ 0, got {}", describe(ids[i])));
    in.ids.push_back(ids[i].get<std::int64_t>());
  }
}

// "token_type_ids": one per token, each below type_vocab_size (an encoder's with token types).
void read_token_types(const json& root, model::CheckpointInput& in) {
  const auto& arch = in.ckpt.arch();
  if (root.contains("token_type_ids")) {
    if (root.contains("sentence_b")) fail("token_type_ids", "a pair's token types follow from \"sentence_b\": give one of them");
    if (arch.type_vocab == 0) fail("token_type_ids", fmt::format("{} has no token types (no token_type_embeddings): leave them out", arch.name()));
    const json& t = root["token_type_ids"];
    if (!t.is_array() || t.size() != in.ids.size()) {
      fail("token_type_ids", fmt::format("expected {} token types, one per token, got {}", in.ids.size(), describe(t)));
    }
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!t[i].is_number_integer() || t[i].get<std::int64_t>() < 0 || t[i].get<std::int64_t>() >= arch.type_vocab) {
        fail(fmt::format("token_type_ids[{}]", i),
             fmt::format("expected a token type 0 .. {} (type_vocab_size = {}), got {}", arch.type_vocab - 1, arch.type_vocab, describe(t[i])));
      }
      in.types.push_back(t[i].get<std::int64_t>());
    }
  }
}

// Every token checked against the vocabulary, with its label and spelling (#id without a tokenizer);
// where: the key the ids came from, for the message.
void label_tokens(const std::string& where, const std::string& shown, model::CheckpointInput& in) {
  const auto& ckpt = in.ckpt;
  for (std::size_t i = 0; i < in.ids.size(); ++i) {
    const auto id = in.ids[i];
    if (id < 0 || id >= ckpt.arch().vocab) {
      fail(fmt::format("{}[{}]", where, i),
           fmt::format("token id {} is outside the vocabulary: vocab_size = {} in {}'s config (ids 0 .. {})", id, ckpt.arch().vocab, shown,
                       ckpt.arch().vocab - 1));
    }
    const bool known = ckpt.tokenizer() && id < ckpt.tokenizer()->vocab_size();
    in.pieces.push_back(known ? ckpt.tokenizer()->label(id) : fmt::format("#{}", id));
    in.raw.push_back(known ? ckpt.tokenizer()->piece(id) : fmt::format("#{}", id));
  }
}

}  // namespace

namespace model {

CheckpointInput read_checkpoint_input(const json& root, const std::string& base_dir) {
  check_root_keys(root);
  const bool split = split_special_tokens(root);  // checked before the checkpoint is read
  const json& c = root["checkpoint"];
  std::string shown;
  model::CheckpointInput in = open_checkpoint(c, base_dir, shown);
  check_stack(root, c, in);
  const auto& ckpt = in.ckpt;
  const auto& arch = ckpt.arch();
  // an encoder-decoder's input names the stack and the attention; its encoder reads "source"
  const std::string text_key = arch.encoder_decoder ? "source" : "sentence", ids_key = arch.encoder_decoder ? "source_ids" : "token_ids";
  check_token_keys(root, arch, text_key, ids_key);
  const bool has_ids = root.contains(ids_key);
  if (has_ids) read_given_ids(root, ids_key, in);
  else tokenize_text(root, text_key, ids_key, split, shown, in);
  if (ckpt.arch().family == model::Family::Gpt2 && static_cast<std::int64_t>(in.ids.size()) > ckpt.arch().positions) {
    fail(has_ids ? "token_ids" : "sentence", fmt::format("{} tokens, but GPT-2 has learned positions for n_positions = {} of them", in.ids.size(), ckpt.arch().positions));
  }
  if (in.ids.empty()) fail(has_ids ? ids_key : text_key, "no tokens: give at least one");
  read_token_types(root, in);
  label_tokens(has_ids ? ids_key : text_key + "'s tokens", shown, in);
  if (in.stack == "decoder") read_decoder_tokens(root, shown, in);
  if (!ckpt.tokenizer()) in.notes.push_back("tokens: the checkpoint has no tokenizer: labels are #id");
  if (!in.types.empty()) in.notes.push_back(fmt::format("token types: {}", fmt::join(in.types, " ")));
  in.notes.insert(in.notes.begin(), fmt::format("checkpoint: {}; weights {}, converted to float32 and computed in float32", ckpt.describe(),
                                                ckpt.weights_description()));
  return in;
}

}  // namespace model

namespace {

// Whether every value of t is 0 (an absent bias: empty), read in order and stopped at the first that is
// not, so a trained model's weights cost a few reads; a weight read lazily from the file is never held.
bool all_zero(const Tensor& t) {
  const auto zero = [](Scalar x) { return x == 0; };
  const Tensor::OpenAt* open = t.reader();
  if (open == nullptr) {
    const auto v = t.values();
    return std::all_of(v.begin(), v.end(), zero);
  }
  constexpr std::int64_t kChunk = 4096;
  std::vector<Scalar> buffer(kChunk);
  const Tensor::Reader read = (*open)(0);
  for (std::int64_t at = 0; at < t.size(); at += kChunk) {
    const std::int64_t n = std::min(kChunk, t.size() - at);
    read(buffer.data(), n);
    if (!std::all_of(buffer.begin(), buffer.begin() + n, zero)) return false;
  }
  return true;
}

// An MLP whose weights and biases are all 0 (up, gate, down) outputs 0 for every input: it adds nothing
// to the residual stream (the attention-only induction example's checkpoint stores its MLPs so).
bool mlp_is_zero(const model::LayerWeights& w) {
  return all_zero(w.W_down) && all_zero(w.b_down) && all_zero(w.W_up) && all_zero(w.b_up) && (!w.W_gate || all_zero(*w.W_gate));
}

// "layer 0", "layers 0 .. 2": the layers below layer n (n ≥ 1).
std::string layer_range(std::int64_t n) { return n == 1 ? std::string("layer 0") : fmt::format("layers 0 .. {}", n - 1); }

// What the n layers below the traced one are made of, as this checkpoint's tensors say: "(attention and
// MLP)", with an MLP whose weights are all 0 said to add nothing. parts: the attention blocks of a layer
// ("attention"; a decoder's "self-attention", "cross-attention"); weights(i): layer i's, its MLP among them.
std::string layer_parts(std::int64_t n, const std::vector<std::string>& parts, const std::function<model::LayerWeights(std::int64_t)>& weights) {
  std::vector<std::int64_t> zero;
  for (std::int64_t i = 0; i < n; ++i)
    if (mlp_is_zero(weights(i))) zero.push_back(i);
  const std::string attention = fmt::format("{}", fmt::join(parts, ", "));
  if (zero.empty()) return fmt::format("({}{}MLP)", attention, parts.size() == 1 ? " and " : ", ");
  if (static_cast<std::int64_t>(zero.size()) == n) {
    return n == 1 ? fmt::format("({}; its MLP's weights are all 0, so the MLP adds nothing)", attention)
                  : fmt::format("({}; every layer's MLP has weights all 0, so the MLPs add nothing)", attention);
  }
  const std::string which = zero.size() == 1 ? fmt::format("the MLP of layer {} has", zero[0])
                                             : fmt::format("the MLPs of layers {} and {} have", fmt::join(zero.begin(), zero.end() - 1, ", "), zero.back());
  return fmt::format("({}{}MLP; {} weights all 0 and add{} nothing)", attention, parts.size() == 1 ? " and " : ", ", which, zero.size() == 1 ? "s" : "");
}

// The layers below the traced one, as the x note names them: " and layer 0 (attention and MLP)" in the
// encoder's (or the only) stack, ", after decoder layer 0 (self-attention, cross-attention, MLP)" in the decoder's.
std::string layers_below(const model::CheckpointInput& in) {
  if (in.layer == 0) return "";
  if (in.stack != "decoder") {
    return fmt::format(" and {} {}", layer_range(in.layer), layer_parts(in.layer, {"attention"}, [&](std::int64_t i) { return in.ckpt.layer(i); }));
  }
  return fmt::format(", after decoder {} {}", layer_range(in.layer),
                     layer_parts(in.layer, {"self-attention", "cross-attention"}, [&](std::int64_t i) { return in.ckpt.decoder_cross(i); }));
}

}  // namespace

void read_checkpoint(const json& root, const std::string& base_dir, Spec& s) {
  model::CheckpointInput in = model::read_checkpoint_input(root, base_dir);
  const auto& a = in.ckpt.arch();
  const bool t5 = a.features->tensors == model::family::Tensors::T5;  // its RMS norms, relative bias and final_layer_norm
  Spec layer = in.stack == "decoder" ? model::checkpoint_decoder_spec(in.ckpt, in.source_ids, {in.source_pieces}, in.ids, {in.pieces}, in.layer,
                                                                      in.attention == "cross")
                                     : model::checkpoint_layer_spec(in.ckpt, in.ids, in.types, {in.pieces}, in.layer);
  const json& c = root["checkpoint"];
  const std::string name = c.contains("path") ? c["path"].get<std::string>()
                           : c.contains("revision") && c["revision"] != "main" ? c["model"].get<std::string>() + "@" + c["revision"].get<std::string>()
                                                                               : c["model"].get<std::string>();
  layer.title = s.title.empty() ? fmt::format("{}{} layer {} of {}{} ({})", a.name(), a.encoder_decoder ? " " + in.stack : "", in.layer,
                                               in.stack == "decoder" ? a.decoder_layers : a.layers,
                                               in.stack == "decoder" ? fmt::format(", {}-attention", in.attention) : "", name)
                                 : s.title;
  layer.notes = std::move(in.notes);
  if (in.stack == "decoder" && in.attention == "cross") {
    layer.source_note = fmt::format("the encoder's output over the source's {} tokens, after all {} encoder layers{}: the keys and values of every "
                                    "decoder layer's cross-attention (each query, a decoder token, weighs the source's tokens)",
                                    in.source_ids.size(), a.layers, t5 ? " and encoder.final_layer_norm" : "");
  }
  layer.token_pieces = in.raw;
  const bool gpt2 = a.family == model::Family::Gpt2;
  const std::string below = layers_below(in);  // the decoder's layers for the decoder, else the encoder's (or the only stack's)
  const std::string embeddings = gpt2 ? " (wte + wpe)"
                                 : a.embed_scale ? fmt::format(" (× √C = {}, rounded to the embeddings' dtype as {} does)", in.ckpt.embedding_scale(), a.name())
                                                 : "";
  // the encoder-decoders' embeddings: BART's learned positions, Marian's sinusoidal ones, T5's none
  const std::string seq2seq_embeddings = t5 ? "shared; no positions: the relative bias stands for them"
                                         : a.sinusoidal       ? fmt::format("shared{} + sinusoidal positions", a.embedding_multiplier != 1 ? " × √C" : "")
                                                              : "shared + positions from row 2, then layernorm_embedding";
  layer.x_note = t5 && in.stack == "decoder"
                     ? fmt::format("decoder layer {}'s layer.{}.layer_norm output (T5's RMS norm: no mean, no bias), of the decoder's stream{} ({}){}",
                                   in.layer, in.attention == "self" ? 0 : 1, in.attention == "self" ? "" : " after the layer's self-attention",
                                   seq2seq_embeddings, below) +
                           (in.attention == "cross" ? ": the queries come from it; the keys and values from the source, the encoder's output" : "")
                 : t5 ? fmt::format("layer {}'s layer.0.layer_norm output (T5's RMS norm: no mean, no bias), of the token embeddings ({}){}", in.layer,
                                    seq2seq_embeddings, below)
                 : in.stack == "decoder" && in.attention == "self"
                     ? fmt::format("decoder layer {}'s input, the decoder's residual stream ({} normalises after each block), of its embeddings "
                                   "({}){}", in.layer, a.name(), seq2seq_embeddings, below)
                 : a.encoder_decoder && in.stack == "encoder"
                     ? fmt::format("layer {}'s input, the residual stream itself ({} normalises after each block), of the embeddings ({}){}",
                                   in.layer, a.name(), seq2seq_embeddings, below)
                 : in.stack == "decoder"
                     ? fmt::format("the decoder's stream after layer {}'s self-attention and self_attn_layer_norm{}: the queries come from it; "
                                   "the keys and values from the source, the encoder's output", in.layer, below)
                 : a.encoder()
                     ? fmt::format("layer {}'s input, the residual stream itself ({} normalises after each block), of the embeddings (word + "
                                   "position{}, then LayerNorm){}",
                                   in.layer, a.name(), a.type_vocab > 0 ? " + token type" : "", below)
                 : a.block == model::Architecture::Block::PostNorm
                     ? fmt::format("layer {}'s input, the residual stream itself ({} normalises after attention, not before), of the embeddings{}{}",
                                   in.layer, a.name(), embeddings, below)
                     : fmt::format("layer {}'s {} output, of the embeddings{}{}", in.layer, gpt2 ? "ln_1" : "input_layernorm", embeddings, below);
  if (const std::string note = a.beyond_positions_note(static_cast<std::int64_t>(in.ids.size())); !note.empty()) layer.notes.push_back(note);
  if (!a.sliding.empty() && a.window > 0) {
    std::vector<std::int64_t> sliding;
    for (std::int64_t l = 0; l < a.layers; ++l)
      if (a.window_of(l) > 0) sliding.push_back(l);
    const std::string which = fmt::format("{}'s sliding layers: {}, {}", a.name(), fmt::join(sliding, ", "), a.sliding_rule);
    layer.notes.push_back(a.window_of(in.layer) > 0 ? fmt::format("window: sliding_window = {} on layer {} ({}){}", a.window, in.layer, which,
                                                                  layer.window == 0 ? "; it covers every token of this input" : "")
                                                    : fmt::format("window: none, layer {} attends to every earlier token ({})", in.layer, which));
  } else if (layer.window > 0) {
    layer.notes.push_back(fmt::format("window: {}'s sliding_window = {}", a.name(), a.window));
  }
  if (a.family == model::Family::Llama) {
    const bool local = a.local_rope(in.layer);
    layer.notes.push_back(fmt::format("rope: θ = {}{}{}", local ? a.local_rope_theta : a.rope_theta,
                                      local || a.rope_scaling.kind == RopeScaling::Kind::None ? std::string(", no scaling")
                                                                                              : ", scaling " + a.rope_scaling.describe(),
                                      a.local_rope_theta > 0 ? fmt::format(" ({}: rope_local_base_freq {} on the sliding layers, rope_theta {} on the full ones)",
                                                                           a.name(), a.local_rope_theta, a.rope_theta)
                                                             : ""));
  }
  if (t5) {
    layer.notes.push_back("output: the o projection's result, before dropout; T5 then adds it to the residual stream (it normalises before "
                          "each block, not after)");
  } else if (a.encoder()) {
    layer.notes.push_back(fmt::format("output: the attention output projection's result, before dropout; {} then adds it to the layer's input "
                                      "and applies LayerNorm", a.name()));
  } else if (a.block != model::Architecture::Block::PreNorm) {
    layer.notes.push_back(fmt::format("output: o_proj's result, as attention computes it; {} then applies post_attention_layernorm to it before "
                                      "adding it to the residual stream", a.name()));
  }
  if (!a.unread.empty()) {
    layer.notes.push_back(fmt::format("config.json: not read, and not known to attn: {} (keys that change attention are refused; these are "
                                      "taken to change nothing)", fmt::join(a.unread, ", ")));
  }
  s = std::move(layer);
}

namespace model {

CheckpointInput load_checkpoint_input(const std::string& path, const std::string& command) {
  return load_checkpoint_input_text(read_input(path), path == "-" ? "<stdin>" : path,
                                    path == "-" ? "" : std::filesystem::path(path).parent_path().string(), command);
}

CheckpointInput load_checkpoint_input_text(const std::string& text, const std::string& origin, const std::string& base_dir,
                                           const std::string& command) {
  const ParsedJson parsed = parse_json(text, origin);
  const json& root = parsed.root;
  if (!root.is_object() || !root.contains("checkpoint")) {
    fail("checkpoint", fmt::format("{} runs a real model: expected {{\"checkpoint\": {{\"path\": \"DIR\"}}, \"sentence\": \"...\"}}", command));
  }
  return read_checkpoint_input(root, base_dir);
}

}  // namespace model

}  // namespace attn
