// tokenizer.model (SentencePiece), through a dlopen'ed module: attn links libstdc++ statically,
// libsentencepiece links the shared one, so the two never share C++ objects.
#include <dlfcn.h>

#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <string>

#include "attn/error.hpp"
#include "attn/model/byte_bpe.hpp"
#include "attn/model/tokenizer.hpp"
#include "attn/module_path.hpp"

namespace attn::model {

namespace {

// ---- tokenizer.model, through attn_sentencepiece.so -------------------------------------------

// The module's C ABI (sentencepiece_module.cpp).
struct SentencePieceApi {
  void* library = nullptr;
  int (*abi_version)() = nullptr;
  void* (*load)(const char*, char*, std::size_t) = nullptr;
  std::int64_t (*encode)(void*, const char*, std::size_t, std::int64_t*, std::size_t, char*, std::size_t) = nullptr;
  std::int64_t (*vocab_size)(void*) = nullptr;
  std::int64_t (*piece)(void*, std::int64_t, char*, std::size_t) = nullptr;
  void (*release)(void*) = nullptr;
};

constexpr int sentencepiece_abi = 1;

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
    a.vocab_size = reinterpret_cast<decltype(a.vocab_size)>(dlsym(l, "attn_spm_vocab_size"));
    a.piece = reinterpret_cast<decltype(a.piece)>(dlsym(l, "attn_spm_piece"));
    a.release = reinterpret_cast<decltype(a.release)>(dlsym(l, "attn_spm_free"));
    if (!a.abi_version || !a.load || !a.encode || !a.vocab_size || !a.piece || !a.release || a.abi_version() != sentencepiece_abi) {
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

  std::vector<std::int64_t> encode(std::string_view text) const override {
    bpe::check_utf8(text, "the text to tokenize");
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
    return fmt::format("SentencePiece model from tokenizer.model ({} tokens)", bpe::with_commas(size_));
  }

 private:
  std::string path_;
  const SentencePieceApi* api_ = nullptr;
  void* handle_ = nullptr;
  std::int64_t size_ = 0;
};

}  // namespace

std::unique_ptr<Tokenizer> open_sentencepiece(const std::string& path) { return std::make_unique<SentencePieceTokenizer>(path); }

}  // namespace attn::model
