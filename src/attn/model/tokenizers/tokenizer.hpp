// Tokenizers of the common model hub's checkpoint directories: text -> token ids, and each id's
// spelling in the vocabulary (the labels of a checkpoint's trace). No special tokens are added here
// (a BOS token is the checkpoint reader's business; special_first / special_last say what the
// tokenizer's own post-processor would put around a text). Every refusal is an InputError naming the file.
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
  // The ids of `text` (UTF-8; invalid UTF-8 is an InputError naming the byte offset). A special token
  // written in the text ("<|im_start|>", "</s>") is that one token, as the hub's tokenizers match it,
  // unless split_special_tokens (then it is cut as text).
  virtual std::vector<std::int64_t> encode(std::string_view text, bool split_special_tokens) const = 0;
  std::vector<std::int64_t> encode(std::string_view text) const { return encode(text, false); }
  // The ids the tokenizer's post-processor puts before and after one text when it adds special
  // tokens (the hub's default): tokenizer.json's TemplateProcessing, BertProcessing or
  // RobertaProcessing; vocab.txt's [CLS] ... [SEP] (BertTokenizer); tokenizer.model's BOS
  // (LlamaTokenizer); none for the other files.
  virtual std::vector<std::int64_t> special_first() const { return {}; }
  virtual std::vector<std::int64_t> special_last() const { return {}; }
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
// tokenizer.json (read as the hub's tokenizers library reads it, tokenizer_json.cpp: BPE byte-level as
// GPT-2, Llama 3 and Qwen, or SentencePiece-style as Llama 2, Mistral and Gemma; WordPiece as BERT;
// Unigram as T5), spiece.model (T5's SentencePiece), vocab.txt without vocab.json (BERT's
// WordPiece), vocab.json + merges.txt (GPT-2's byte-level BPE), tokenizer.model (SentencePiece,
// through Debian's libsentencepiece). nullptr when the directory has none of them.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);
// The tokenizer of one file, by its name: tokenizer.json, tokenizer.model or spiece.model, or vocab.txt
// (with the tokenizer_config.json beside it); any other name is an InputError naming the file.
std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path);
// BERT's WordPiece from a directory's vocab.txt and tokenizer_config.json (wordpiece.cpp).
std::unique_ptr<Tokenizer> open_wordpiece(const std::string& dir);
// A tokenizer.json (tokenizer_json.cpp).
std::unique_ptr<Tokenizer> open_tokenizer_json(const std::string& path);
// A tokenizer.model, through attn's SentencePiece module (sentencepiece_tokenizer.cpp).
std::unique_ptr<Tokenizer> open_sentencepiece(const std::string& path);
// Llama's tokenizer.model, as transformers' slow LlamaTokenizer reads it with the tokenizer_config.json
// beside it: its <unk>, <s>, </s> written in the text are one token each, BOS first (sentencepiece_tokenizer.cpp).
std::unique_ptr<Tokenizer> open_llama_sentencepiece(const std::string& path);
// Marian's: dir's SentencePiece model `spm` ("source.spm", "target.spm") cuts the text, and vocab.json
// gives each piece its id (<unk>'s when it has none), as MarianTokenizer does; a leading language
// code ">>fr<<" is kept whole (sentencepiece_tokenizer.cpp).
std::unique_ptr<Tokenizer> open_marian(const std::string& dir, const std::string& spm);

}  // namespace attn::model
