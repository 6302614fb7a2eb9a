// attn's SentencePiece module (attn_sentencepiece.so): Debian's libsentencepiece behind a plain C ABI.
// attn links libstdc++ statically and libsentencepiece links the shared one, so attn dlopens this
// module (tokenizer.cpp) instead of linking the library: no C++ object or exception crosses the
// boundary, only C strings, integers and caller-owned buffers. Bump attn_spm_abi_version with any
// change here, and sentencepiece_abi in tokenizer.cpp with it.
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace {

void copy_message(const std::string& message, char* out, std::size_t capacity) {
  if (out == nullptr || capacity == 0) return;
  const std::size_t n = std::min(message.size(), capacity - 1);
  std::memcpy(out, message.data(), n);
  out[n] = '\0';
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int attn_spm_abi_version() { return 2; }

// A processor for the model file at `path`, or null with the reason in `error`.
__attribute__((visibility("default"))) void* attn_spm_load(const char* path, char* error, std::size_t error_capacity) {
  try {
    auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = processor->Load(std::string(path));
    if (!status.ok()) {
      copy_message(status.ToString(), error, error_capacity);
      return nullptr;
    }
    return processor.release();
  } catch (const std::exception& e) {
    copy_message(e.what(), error, error_capacity);
  } catch (...) {
    copy_message("unknown failure in libsentencepiece", error, error_capacity);
  }
  return nullptr;
}

// EncodeAsIds of `text` (the model's own normalisation): the number of ids, of which the first
// min(count, capacity) are written to `ids`; -1 with the reason in `error`.
__attribute__((visibility("default"))) std::int64_t attn_spm_encode(void* handle, const char* text, std::size_t length, std::int64_t* ids,
                                                                   std::size_t capacity, char* error, std::size_t error_capacity) {
  try {
    const auto* processor = static_cast<const sentencepiece::SentencePieceProcessor*>(handle);
    std::vector<int> out;
    const auto status = processor->Encode(std::string(text, length), &out);
    if (!status.ok()) {
      copy_message(status.ToString(), error, error_capacity);
      return -1;
    }
    for (std::size_t i = 0; i < out.size() && i < capacity; ++i) ids[i] = out[i];
    return static_cast<std::int64_t>(out.size());
  } catch (const std::exception& e) {
    copy_message(e.what(), error, error_capacity);
  } catch (...) {
    copy_message("unknown failure in libsentencepiece", error, error_capacity);
  }
  return -1;
}

// EncodeAsPieces of `text`: the pieces as the model spells them, an unknown one as the text it covers
// (what MarianTokenizer looks up in vocab.json), each followed by a '\0'. Returns the bytes that takes,
// of which min(bytes, capacity) are written to `out`; -1 with the reason in `error`.
__attribute__((visibility("default"))) std::int64_t attn_spm_encode_pieces(void* handle, const char* text, std::size_t length, char* out,
                                                                          std::size_t capacity, char* error, std::size_t error_capacity) {
  try {
    const auto* processor = static_cast<const sentencepiece::SentencePieceProcessor*>(handle);
    std::vector<std::string> pieces;
    const auto status = processor->Encode(std::string(text, length), &pieces);
    if (!status.ok()) {
      copy_message(status.ToString(), error, error_capacity);
      return -1;
    }
    std::string joined;
    for (const auto& p : pieces) joined.append(p).push_back('\0');
    std::memcpy(out, joined.data(), std::min(joined.size(), capacity));
    return static_cast<std::int64_t>(joined.size());
  } catch (const std::exception& e) {
    copy_message(e.what(), error, error_capacity);
  } catch (...) {
    copy_message("unknown failure in libsentencepiece", error, error_capacity);
  }
  return -1;
}

__attribute__((visibility("default"))) std::int64_t attn_spm_vocab_size(void* handle) {
  return static_cast<const sentencepiece::SentencePieceProcessor*>(handle)->GetPieceSize();
}

// The piece of `id`: its length in bytes, of which min(length, capacity) are copied to `out`
// (no terminator); -1 for an id outside the vocabulary.
__attribute__((visibility("default"))) std::int64_t attn_spm_piece(void* handle, std::int64_t id, char* out, std::size_t capacity) {
  try {
    const auto* processor = static_cast<const sentencepiece::SentencePieceProcessor*>(handle);
    if (id < 0 || id >= processor->GetPieceSize()) return -1;
    const std::string& piece = processor->IdToPiece(static_cast<int>(id));
    std::memcpy(out, piece.data(), std::min(piece.size(), capacity));
    return static_cast<std::int64_t>(piece.size());
  } catch (...) {
    return -1;
  }
}

__attribute__((visibility("default"))) void attn_spm_free(void* handle) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(handle);
}

}  // extern "C"
