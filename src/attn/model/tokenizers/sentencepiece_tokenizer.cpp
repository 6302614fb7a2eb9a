// tokenizer.model (SentencePiece), through a dlopen'ed module: attn links libstdc++ statically,
// libsentencepiece links the shared one, so the two never share C++ objects.
#include <dlfcn.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "attn/core/error.hpp"
#include "attn/io/json_read.hpp"
#include "attn/model/tokenizers/byte_bpe.hpp"
#include "attn/model/tokenizers/tokenizer.hpp"
#include "attn/model/tokenizers/tokenizer_json.hpp"
#include "attn/io/module_path.hpp"

namespace attn::model {

namespace {

// ---- tokenizer.model, through attn_sentencepiece.so -------------------------------------------

// The module's C ABI (sentencepiece_module.cpp).
struct SentencePieceApi {
  void* library = nullptr;
  int (*abi_version)() = nullptr;
  void* (*load)(const char*, char*, std::size_t) = nullptr;
  std::int64_t (*encode)(void*, const char*, std::size_t, std::int64_t*, std::size_t, char*, std::size_t) = nullptr;
  std::int64_t (*encode_pieces)(void*, const char*, std::size_t, char*, std::size_t, char*, std::size_t) = nullptr;
  std::int64_t (*vocab_size)(void*) = nullptr;
  std::int64_t (*piece)(void*, std::int64_t, char*, std::size_t) = nullptr;
  void (*release)(void*) = nullptr;
};

constexpr int sentencepiece_abi = 2;

const SentencePieceApi* sentencepiece_api(std::string& tried) {
  static std::mutex mutex;
  static SentencePieceApi api;
  static std::string attempts;
  std::lock_guard lock(mutex);
  if (api.library != nullptr) return &api;
#ifdef ATTN_SENTENCEPIECE_MODULE
  const std::string_view build_path = ATTN_SENTENCEPIECE_MODULE;
#else
  const std::string_view build_path;
#endif
  SentencePieceApi a;
  void* lib = open_module("attn_sentencepiece.so", build_path, attempts, [&a](void* l) -> std::string {
    a = SentencePieceApi{};
    a.library = l;
    a.abi_version = reinterpret_cast<int (*)()>(dlsym(l, "attn_spm_abi_version"));
    a.load = reinterpret_cast<void* (*)(const char*, char*, std::size_t)>(dlsym(l, "attn_spm_load"));
    a.encode = reinterpret_cast<decltype(a.encode)>(dlsym(l, "attn_spm_encode"));
    a.encode_pieces = reinterpret_cast<decltype(a.encode_pieces)>(dlsym(l, "attn_spm_encode_pieces"));
    a.vocab_size = reinterpret_cast<decltype(a.vocab_size)>(dlsym(l, "attn_spm_vocab_size"));
    a.piece = reinterpret_cast<decltype(a.piece)>(dlsym(l, "attn_spm_piece"));
    a.release = reinterpret_cast<decltype(a.release)>(dlsym(l, "attn_spm_free"));
    if (!a.abi_version || !a.load || !a.encode || !a.encode_pieces || !a.vocab_size || !a.piece || !a.release || a.abi_version() != sentencepiece_abi) {
      return fmt::format("not attn's SentencePiece module (ABI {})", sentencepiece_abi);
    }
    return "";
  });
  if (lib != nullptr) {
    api = a;
    return &api;
  }
  tried = attempts;
  return nullptr;
}

class SentencePieceTokenizer final : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& path) : path_(path) {
    std::string tried;
    api_ = sentencepiece_api(tried);
    if (api_ == nullptr)
      throw InputError(fmt::format("{}: reading tokenizer.model needs attn's SentencePiece module (attn_sentencepiece.so, built with "
                                   "Debian's libsentencepiece-dev), which could not be loaded ({}); give \"token_ids\" instead of "
                                   "\"sentence\" to skip tokenizing",
                                   path, tried.empty() ? "no place to look" : tried));
    std::string error(512, '\0');
    handle_ = api_->load(path.c_str(), error.data(), error.size());
    if (handle_ == nullptr) throw InputError(fmt::format("{}: not a SentencePiece model: {}", path, error.c_str()));
    size_ = api_->vocab_size(handle_);
  }
  ~SentencePieceTokenizer() override {
    if (handle_ != nullptr) api_->release(handle_);
  }
  SentencePieceTokenizer(const SentencePieceTokenizer&) = delete;
  SentencePieceTokenizer& operator=(const SentencePieceTokenizer&) = delete;

  // Llama's tokenizer.model as transformers' slow LlamaTokenizer reads it (with tokenizer_config.json
  // beside it): its unk, bos and eos tokens written in the text are one token each (SentencePiece
  // itself would cut them as text), and bos goes first unless add_bos_token is false, eos last when
  // add_eos_token is true.
  void read_llama_specials(const std::string& config_path) {
    hf::json c = hf::json::object();
    if (std::filesystem::exists(config_path)) c = hf::parse_json_file(config_path);
    auto flag = [&](const char* key, bool fallback) {
      if (!c.is_object() || !c.contains(key) || c[key].is_null()) return fallback;
      if (!c[key].is_boolean()) throw InputError(fmt::format("{}: \"{}\": expected true or false, got {}", config_path, key, c[key].dump()));
      return c[key].get<bool>();
    };
    const std::string bos = hf::config_token(c, "bos_token", "<s>"), eos = hf::config_token(c, "eos_token", "</s>");
    for (const auto& token : {hf::config_token(c, "unk_token", "<unk>"), bos, eos})
      if (const auto id = id_of(token); id >= 0) specials_.add({.content = token, .id = id, .special = true});
    if (const auto id = id_of(bos); id >= 0 && flag("add_bos_token", true)) first_.push_back(id);
    if (const auto id = id_of(eos); id >= 0 && flag("add_eos_token", false)) last_.push_back(id);
  }
  std::vector<std::int64_t> special_first() const override { return first_; }
  std::vector<std::int64_t> special_last() const override { return last_; }

  // The text between the special tokens is encoded piece by piece, as LlamaTokenizer's legacy mode
  // (its default) does; with split_special_tokens (or no special tokens read) the whole text at once.
  std::vector<std::int64_t> encode(std::string_view text, bool split_special_tokens) const override {
    bpe::check_utf8(text, "the text to tokenize");
    if (specials_.empty() || split_special_tokens) return encode_chunk(text);
    std::vector<std::int64_t> ids;
    for (const auto& part : specials_.split(text, false, false)) {
      if (part.id >= 0) ids.push_back(part.id);
      else if (part.end > part.begin) for (const auto id : encode_chunk(text.substr(part.begin, part.end - part.begin))) ids.push_back(id);
    }
    return ids;
  }
  // SentencePiece's own encoding of text, which cuts a control token ("</s>") as text.
  std::vector<std::int64_t> encode_chunk(std::string_view text) const {
    std::vector<std::int64_t> ids(text.size() + 16);
    std::string error(512, '\0');
    for (int attempt = 0; attempt < 2; ++attempt) {
      const std::int64_t n = api_->encode(handle_, text.data(), text.size(), ids.data(), ids.size(), error.data(), error.size());
      if (n < 0) throw InputError(fmt::format("{}: SentencePiece could not encode the text: {}", path_, error.c_str()));
      if (static_cast<std::size_t>(n) <= ids.size()) {
        ids.resize(static_cast<std::size_t>(n));
        return ids;
      }
      ids.resize(static_cast<std::size_t>(n));
    }
    throw InternalError("SentencePiece module: the id count changed between two encodings of the same text");
  }
  // The pieces of `text`, an unknown one spelled as the text it covers.
  std::vector<std::string> encode_pieces(std::string_view text) const {
    bpe::check_utf8(text, "the text to tokenize");
    std::string buffer(text.size() * 2 + 64, '\0');
    std::string error(512, '\0');
    for (int attempt = 0; attempt < 2; ++attempt) {
      const std::int64_t n = api_->encode_pieces(handle_, text.data(), text.size(), buffer.data(), buffer.size(), error.data(), error.size());
      if (n < 0) throw InputError(fmt::format("{}: SentencePiece could not encode the text: {}", path_, error.c_str()));
      if (static_cast<std::size_t>(n) <= buffer.size()) {
        buffer.resize(static_cast<std::size_t>(n));
        std::vector<std::string> pieces;
        for (std::size_t at = 0; at < buffer.size();) {
          const std::size_t end = buffer.find('\0', at);
          pieces.push_back(buffer.substr(at, end - at));
          at = end + 1;
        }
        return pieces;
      }
      buffer.resize(static_cast<std::size_t>(n));
    }
    throw InternalError("SentencePiece module: the pieces changed between two encodings of the same text");
  }
  bool byte_level() const override { return false; }
  std::string piece(std::int64_t id) const override {
    if (id < 0 || id >= size_)
      throw InputError(fmt::format("{}: token id {} is outside the vocabulary ({} tokens)", path_, id, bpe::with_commas(size_)));
    std::string out(64, '\0');
    std::int64_t n = api_->piece(handle_, id, out.data(), out.size());
    if (n > static_cast<std::int64_t>(out.size())) {
      out.resize(static_cast<std::size_t>(n));
      n = api_->piece(handle_, id, out.data(), out.size());
    }
    out.resize(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
    return out;
  }
  std::int64_t vocab_size() const override { return size_; }
  std::string describe() const override {
    return fmt::format("SentencePiece model from {} ({} tokens)", std::filesystem::path(path_).filename().string(), bpe::with_commas(size_));
  }

 private:
  std::string path_;
  const SentencePieceApi* api_ = nullptr;
  void* handle_ = nullptr;
  std::int64_t size_ = 0;
  hf::AddedTokens specials_;
  std::vector<std::int64_t> first_, last_;
};

// Marian's: the SentencePiece model's pieces, each looked up in vocab.json.
class MarianTokenizer final : public Tokenizer {
 public:
  MarianTokenizer(const std::string& dir, const std::string& spm) : spm_(std::make_unique<SentencePieceTokenizer>((std::filesystem::path(dir) / spm).string())), spm_name_(spm) {
    const std::string path = (std::filesystem::path(dir) / "vocab.json").string();
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot open the file", path));
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const nlohmann::json v = parse_json(text, path).root;
    if (!v.is_object()) throw InputError(fmt::format("{}: expected an object of pieces and their ids, got {}", path, v.type_name()));
    for (const auto& [piece, id] : v.items()) {
      if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > (std::int64_t{1} << 24)) {
        throw InputError(fmt::format("{}: \"{}\": expected a token id, an integer ≥ 0, got {}", path, piece, id.dump()));
      }
      const auto i = id.get<std::int64_t>();
      if (static_cast<std::int64_t>(pieces_.size()) <= i) pieces_.resize(static_cast<std::size_t>(i + 1));
      if (!pieces_[static_cast<std::size_t>(i)].empty()) {
        throw InputError(fmt::format("{}: id {} is given twice (\"{}\" and \"{}\")", path, i, pieces_[static_cast<std::size_t>(i)], piece));
      }
      pieces_[static_cast<std::size_t>(i)] = piece;
      ids_[piece] = i;
    }
    const auto unk = ids_.find("<unk>");
    if (unk == ids_.end()) throw InputError(fmt::format("{}: has no \"<unk>\", which Marian's tokenizer gives a piece it does not know", path));
    unk_ = unk->second;
  }

  std::vector<std::int64_t> encode(std::string_view text, bool) const override {
    std::vector<std::int64_t> out;
    // MarianTokenizer's language code: a leading ">>xx<<" (up to the line's last "<<") is one token
    if (text.starts_with(">>")) {
      const auto line = text.substr(0, text.find('\n'));
      const auto end = line.rfind("<<");
      if (end != std::string_view::npos && end > 2) {
        out.push_back(id_of_piece(std::string(text.substr(0, end + 2))));
        text.remove_prefix(end + 2);
      }
    }
    for (const auto& p : spm_->encode_pieces(text)) out.push_back(id_of_piece(p));
    return out;
  }
  bool byte_level() const override { return false; }
  std::string piece(std::int64_t id) const override {
    if (id < 0 || id >= vocab_size()) throw InputError(fmt::format("vocab.json: token id {} is outside the vocabulary ({} tokens)", id, bpe::with_commas(vocab_size())));
    return pieces_[static_cast<std::size_t>(id)];
  }
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(pieces_.size()); }
  std::string describe() const override {
    return fmt::format("Marian's SentencePiece model {} ({} pieces), each piece's id from vocab.json ({} tokens)", spm_name_,
                       bpe::with_commas(spm_->vocab_size()), bpe::with_commas(vocab_size()));
  }

 private:
  std::int64_t id_of_piece(const std::string& p) const {
    const auto it = ids_.find(p);
    return it == ids_.end() ? unk_ : it->second;
  }
  std::unique_ptr<SentencePieceTokenizer> spm_;
  std::string spm_name_;
  std::vector<std::string> pieces_;
  std::map<std::string, std::int64_t, std::less<>> ids_;
  std::int64_t unk_ = 0;
};

}  // namespace

std::unique_ptr<Tokenizer> open_marian(const std::string& dir, const std::string& spm) { return std::make_unique<MarianTokenizer>(dir, spm); }

std::unique_ptr<Tokenizer> open_sentencepiece(const std::string& path) { return std::make_unique<SentencePieceTokenizer>(path); }

std::unique_ptr<Tokenizer> open_llama_sentencepiece(const std::string& path) {
  auto t = std::make_unique<SentencePieceTokenizer>(path);
  t->read_llama_specials((std::filesystem::path(path).parent_path() / "tokenizer_config.json").string());
  return t;
}

}  // namespace attn::model
