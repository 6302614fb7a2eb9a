// tokenizer.json's models, a pre-token in and ids out: BPE (byte_bpe.cpp's merge loop), WordPiece
// (BERT's) and Unigram (T5's best-scoring segmentation). What attn does not run (BPE dropout, a
// subword prefix or suffix) is refused by its JSON path.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "attn/core/error.hpp"
#include "attn/model/tokenizers/tokenizer_json.hpp"

namespace attn::model::hf {

namespace {

// The number of characters (code points) of UTF-8 text.
std::size_t characters(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string byte_piece(unsigned char b) { return fmt::format("<0x{:02X}>", b); }

// ---- BPE ----------------------------------------------------------------------------------------

class BpeModel final : public Model {
 public:
  BpeModel(const Reader& r, const json& m) : model_(r.path()) {
    if (const auto it = m.find("dropout"); it != m.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0.0))
      r.fail("model.dropout", fmt::format("is {}; attn reads BPE without dropout (null)", kind_of(*it)));
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (const auto it = m.find(key); it != m.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
        r.fail(std::string("model.") + key, fmt::format("is {}; attn reads BPE models without one (null)", kind_of(*it)));
    }
    const json& vocab = r.field(m, "model", "vocab");
    const json& merges = r.array_field(m, "model", "merges");
    model_.reserve(vocab.size(), merges.size());
    read_vocab(vocab, model_, r.path() + ": model.vocab");
    read_merges(r, merges);
    model_.byte_fallback = r.bool_field(m, "model", "byte_fallback", false);
    model_.fuse_unk = r.bool_field(m, "model", "fuse_unk", false);
    model_.ignore_merges = r.bool_field(m, "model", "ignore_merges", false);
    if (const auto it = m.find("unk_token"); it != m.end() && !it->is_null()) {
      if (!it->is_string()) r.fail("model.unk_token", fmt::format("expected a string or null, got {}", kind_of(*it)));
      const auto id = model_.id_of(it->get<std::string>());
      if (!id) r.fail("model.unk_token", fmt::format("{} is not in model.vocab", quote_text(it->get<std::string>())));
      model_.unk_id = *id;
    }
  }

  void encode_word(std::string_view word, std::vector<std::int64_t>& out) const override { model_.encode_word(word, out); }
  std::optional<std::int64_t> id_of(std::string_view piece) const override { return model_.id_of(piece); }
  std::string piece(std::int64_t id) const override { return id >= 0 && id < model_.vocab_size() ? model_.piece(id) : std::string(); }
  std::int64_t vocab_size() const override { return model_.vocab_size(); }
  std::string kind(bool byte_level) const override {
    return byte_level ? "byte-level BPE" : model_.byte_fallback ? "SentencePiece-style BPE (byte fallback)" : "BPE";
  }

 private:
  // "left right" strings (older files) or ["left", "right"] pairs (tokenizers 0.20 on).
  void read_merges(const Reader& r, const json& merges) {
    for (std::size_t i = 0; i < merges.size(); ++i) {
      const json& e = merges[i];
      const std::string where = fmt::format("model.merges[{}]", i);
      std::string left, right;
      if (e.is_string()) {
        const std::string s = e.get<std::string>();
        const auto space = s.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == s.size() || s.find(' ', space + 1) != std::string::npos)
          r.fail(where, fmt::format("expected \"left right\" (two tokens separated by a space) or [\"left\", \"right\"], got {}", quote_text(s)));
        left = s.substr(0, space), right = s.substr(space + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        left = e[0].get<std::string>(), right = e[1].get<std::string>();
      } else {
        r.fail(where, fmt::format("expected \"left right\" or [\"left\", \"right\"], got {}", e.is_array() ? e.dump() : kind_of(e)));
      }
      const auto result = model_.add_merge(left, right);
      if (result != bpe::Model::MergeResult::ok) r.fail(where, merge_problem(result, left, right, "model.vocab"));
    }
  }

  bpe::Model model_;
};

// ---- a vocabulary of pieces by id, shared by WordPiece and Unigram --------------------------------

class Vocabulary {
 public:
  void add(const Reader& r, const std::string& where, const std::string& piece, std::int64_t id) {
    if (id < 0 || id >= (std::int64_t{1} << 31)) r.fail(where, fmt::format("token id {} of {} is outside [0, 2^31)", id, quote_text(piece)));
    if (static_cast<std::size_t>(id) >= pieces_.size()) pieces_.resize(static_cast<std::size_t>(id) + 1);
    if (pieces_[static_cast<std::size_t>(id)].empty()) pieces_[static_cast<std::size_t>(id)] = piece;
    ids_.try_emplace(piece, id);
  }
  std::optional<std::int64_t> id_of(std::string_view piece) const {
    const auto it = ids_.find(std::string(piece));
    return it == ids_.end() ? std::nullopt : std::optional<std::int64_t>(it->second);
  }
  std::string piece(std::int64_t id) const {
    return id >= 0 && static_cast<std::size_t>(id) < pieces_.size() ? pieces_[static_cast<std::size_t>(id)] : std::string();
  }
  std::int64_t size() const { return static_cast<std::int64_t>(pieces_.size()); }
  const std::unordered_map<std::string, std::int64_t>& ids() const { return ids_; }

 private:
  std::vector<std::string> pieces_;
  std::unordered_map<std::string, std::int64_t> ids_;
};

// ---- WordPiece ----------------------------------------------------------------------------------

class WordPieceModel final : public Model {
 public:
  WordPieceModel(const Reader& r, const json& m) {
    const json& vocab = r.field(m, "model", "vocab");
    if (!vocab.is_object()) r.fail("model.vocab", fmt::format("expected a JSON object of token -> id, got {}", kind_of(vocab)));
    for (const auto& [piece, id] : vocab.items()) {
      if (!id.is_number_integer()) r.fail("model.vocab", fmt::format("{}: expected an integer id, got {}", quote_text(piece), kind_of(id)));
      vocab_.add(r, "model.vocab", piece, id.get<std::int64_t>());
    }
    const std::string unk = m.contains("unk_token") ? r.string_field(m, "model", "unk_token") : "[UNK]";
    const auto unk_id = vocab_.id_of(unk);
    if (!unk_id) r.fail("model.unk_token", fmt::format("{} is not in model.vocab; WordPiece gives it to a word it cannot spell", quote_text(unk)));
    unk_ = *unk_id;
    prefix_ = m.contains("continuing_subword_prefix") ? r.string_field(m, "model", "continuing_subword_prefix") : "##";
    if (const auto it = m.find("max_input_chars_per_word"); it != m.end()) {
      if (!it->is_number_unsigned()) r.fail("model.max_input_chars_per_word", fmt::format("expected a count ≥ 0, got {}", kind_of(*it)));
      max_chars_ = it->get<std::size_t>();
    }
  }

  void encode_word(std::string_view word, std::vector<std::int64_t>& out) const override {
    wordpiece_word(word, vocab_.ids(), prefix_, max_chars_, unk_, out);
  }
  std::optional<std::int64_t> id_of(std::string_view piece) const override { return vocab_.id_of(piece); }
  std::string piece(std::int64_t id) const override { return vocab_.piece(id); }
  std::int64_t vocab_size() const override { return vocab_.size(); }
  std::string kind(bool) const override { return "WordPiece"; }

 private:
  Vocabulary vocab_;
  std::string prefix_;
  std::size_t max_chars_ = 100;
  std::int64_t unk_ = 0;
};

// ---- Unigram ------------------------------------------------------------------------------------

class UnigramModel final : public Model {
 public:
  UnigramModel(const Reader& r, const json& m) : path_(r.path()) {
    const json& vocab = r.array_field(m, "model", "vocab");
    double min_score = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < vocab.size(); ++i) {
      const json& e = vocab[i];
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
        r.fail(fmt::format("model.vocab[{}]", i), fmt::format("expected [\"piece\", score], got {}", e.is_array() ? e.dump() : kind_of(e)));
      const std::string piece = e[0].get<std::string>();
      vocab_.add(r, fmt::format("model.vocab[{}]", i), piece, static_cast<std::int64_t>(i));
      scores_.push_back(e[1].get<double>());
      min_score = std::min(min_score, scores_.back());
      if (!piece.empty()) lengths_.insert(piece.size());
      max_length_ = std::max(max_length_, piece.size());
    }
    unk_score_ = min_score - 10.0;  // HF's and SentencePiece's kUnkPenalty
    if (const auto it = m.find("unk_id"); it != m.end() && !it->is_null()) {
      if (!it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::int64_t>() >= vocab_.size())
        r.fail("model.unk_id", fmt::format("expected an id of model.vocab (0 .. {}), got {}", vocab_.size() - 1, kind_of(*it)));
      unk_ = it->get<std::int64_t>();
    }
    byte_fallback_ = r.bool_field(m, "model", "byte_fallback", false);
  }

  void encode_word(std::string_view word, std::vector<std::int64_t>& out) const override {
    for (const auto& [begin, end] : best_path(word)) {
      const std::string_view s = word.substr(begin, end - begin);
      if (const auto id = vocab_.id_of(s)) {
        out.push_back(*id);
      } else if (!byte_fallback_or_unk(s, out)) {
        throw InputError(fmt::format("{}: the vocabulary has no piece for {}, and neither byte fallback nor an unk_id to use instead", path_,
                                     quote_text(s)));
      }
    }
  }
  std::optional<std::int64_t> id_of(std::string_view piece) const override { return vocab_.id_of(piece); }
  std::string piece(std::int64_t id) const override { return vocab_.piece(id); }
  std::int64_t vocab_size() const override { return vocab_.size(); }
  std::string kind(bool) const override { return byte_fallback_ ? "Unigram (byte fallback)" : "Unigram"; }

 private:
  // An unknown stretch as its bytes' <0xNN> pieces when byte_fallback has them all, else unk_id.
  bool byte_fallback_or_unk(std::string_view s, std::vector<std::int64_t>& out) const {
    if (byte_fallback_) {
      std::vector<std::int64_t> bytes;
      for (const char c : s) {
        const auto b = vocab_.id_of(byte_piece(static_cast<unsigned char>(c)));
        if (!b) break;
        bytes.push_back(*b);
      }
      if (bytes.size() == s.size()) {
        out.insert(out.end(), bytes.begin(), bytes.end());
        return true;
      }
    }
    if (!unk_) return false;
    out.push_back(*unk_);
    return true;
  }

  // Viterbi over byte positions: at each character, every piece that starts there, plus an unknown
  // piece of that one character when no piece of it alone exists; the best-scoring path, read back
  // from the end with adjacent unknown pieces fused into one (HF's Unigram::encode_optimized).
  std::vector<std::pair<std::size_t, std::size_t>> best_path(std::string_view word) const {
    struct Node {
      double score = 0;
      std::size_t from = std::string_view::npos;  // npos: not reached
      bool unknown = false;
    };
    std::vector<Node> best(word.size() + 1);
    best[0].from = 0;
    for (std::size_t at = 0; at < word.size();) {
      const std::size_t char_len = std::min(bpe::utf8_length(static_cast<unsigned char>(word[at])), word.size() - at);
      bool single = false;
      const auto offer = [&](std::size_t end, double score, bool unknown) {
        Node& n = best[end];
        const double total = best[at].score + score;
        if (n.from == std::string_view::npos || total > n.score) n = Node{total, at, unknown};
      };
      for (std::size_t len = 1; len <= std::min(max_length_, word.size() - at); ++len) {
        if (!lengths_.contains(len)) continue;
        if (const auto id = vocab_.id_of(word.substr(at, len))) {
          offer(at + len, scores_[static_cast<std::size_t>(*id)], false);
          single = single || len == char_len;
        }
      }
      if (!single) offer(at + char_len, unk_score_, true);
      at += char_len;
    }
    std::vector<std::pair<std::size_t, std::size_t>> path;
    for (std::size_t end = word.size(); end > 0;) {
      const Node& n = best[end];
      if (n.unknown && !path.empty() && best[path.back().second].unknown && path.back().first == end) path.back().first = n.from;
      else path.emplace_back(n.from, end);
      end = n.from;
    }
    std::reverse(path.begin(), path.end());
    return path;
  }

  std::string path_;
  Vocabulary vocab_;
  std::vector<double> scores_;
  std::unordered_set<std::size_t> lengths_;  // the pieces' byte lengths
  std::size_t max_length_ = 0;
  double unk_score_ = 0;
  std::optional<std::int64_t> unk_;
  bool byte_fallback_ = false;
};

}  // namespace

void wordpiece_word(std::string_view word, const std::unordered_map<std::string, std::int64_t>& vocab, std::string_view prefix,
                    std::size_t max_chars, std::int64_t unk, std::vector<std::int64_t>& out) {
  if (characters(word) > max_chars) {
    out.push_back(unk);
    return;
  }
  std::vector<std::int64_t> found;
  for (std::size_t start = 0; start < word.size();) {
    std::size_t end = word.size();
    std::int64_t id = -1;
    while (end > start) {
      const std::string piece = (start > 0 ? std::string(prefix) : "") + std::string(word.substr(start, end - start));
      if (const auto it = vocab.find(piece); it != vocab.end()) {
        id = it->second;
        break;
      }
      do --end;  // back one whole character
      while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (id < 0) {
      out.push_back(unk);
      return;
    }
    found.push_back(id);
    start = end;
  }
  out.insert(out.end(), found.begin(), found.end());
}

std::unique_ptr<Model> read_model(const Reader& r, const json& m) {
  const std::string type = r.type_of(m, "model");
  if (type == "BPE") return std::make_unique<BpeModel>(r, m);
  if (type == "WordPiece") return std::make_unique<WordPieceModel>(r, m);
  if (type == "Unigram") return std::make_unique<UnigramModel>(r, m);
  r.unsupported("model", type, "models", {"BPE", "WordPiece", "Unigram"});
}

}  // namespace attn::model::hf
