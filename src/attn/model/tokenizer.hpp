// Tokenizers of the common model hub's checkpoint directories: text -> token ids, and each id's
// spelling in the vocabulary (the labels of a checkpoint's trace). No special tokens are added here
// (a BOS token is the checkpoint reader's business). Every refusal is an InputError naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // The ids of `text` (UTF-8; invalid UTF-8 is an InputError naming the byte offset).
  virtual std::vector<std::int64_t> encode(std::string_view text) const = 0;
  // id's spelling in the vocabulary, exactly as stored ("Ġcat", "▁cat", "<0x0A>"); id < vocab_size().
  virtual std::string piece(std::int64_t id) const = 0;
  virtual std::int64_t vocab_size() const = 0;
  // The id spelled exactly `piece` ("[CLS]", "</s>"), −1 when there is none.
  std::int64_t id_of(std::string_view piece) const;
  // Whether pieces spell bytes as GPT-2's bytes_to_unicode characters ("Ġ" a space); else they are
  // SentencePiece-style ("▁" a space, "<0x0A>" a byte).
  virtual bool byte_level() const = 0;
  // id as a learner reads it: the text it stands for, a space as "␣" whatever the tokenizer's own
  // marker, a newline "⏎", a tab "⇥", and bytes that are not whole UTF-8 characters as <0xE2>.
  std::string label(std::int64_t id) const;
  // What was read, for the trace's notes: "byte-level BPE from vocab.json + merges.txt (50,257 tokens)".
  virtual std::string describe() const = 0;
};

// The tokenizer of a hub-layout directory, the first of: source.spm with vocab.json (Marian's),
// spiece.model (T5's SentencePiece), vocab.txt without vocab.json (BERT's WordPiece), tokenizer.json (model type BPE: byte-level
// as GPT-2 and Llama 3, or SentencePiece-style with ▁ and byte fallback as Llama 2 and Mistral),
// vocab.json + merges.txt (GPT-2's byte-level BPE), tokenizer.model (SentencePiece, through Debian's
// libsentencepiece). nullptr when the directory has none of them.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);
// BERT's WordPiece from a directory's vocab.txt and tokenizer_config.json (wordpiece.cpp).
std::unique_ptr<Tokenizer> open_wordpiece(const std::string& dir);
// A tokenizer.model, through attn's SentencePiece module (sentencepiece_tokenizer.cpp).
std::unique_ptr<Tokenizer> open_sentencepiece(const std::string& path);
// Marian's: dir's SentencePiece model `spm` ("source.spm", "target.spm") cuts the text, and vocab.json
// gives each piece its id (<unk>'s when it has none), as MarianTokenizer does; a leading language
// code ">>fr<<" is kept whole (sentencepiece_tokenizer.cpp).
std::unique_ptr<Tokenizer> open_marian(const std::string& dir, const std::string& spm);

}  // namespace attn::model
