// Row and column labels: tokens (one list, or one per batch row) or a sentence split on whitespace,
// counted against T (or S for a cross source); t0 .. / s0 .. when absent. No tensor is read here.
#include <fmt/format.h>

#include <iterator>
#include <sstream>

#include "attn/spec/readers.hpp"

namespace attn {

namespace {

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  return {std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
}

std::vector<std::string> default_labels(char prefix, std::int64_t n) {
  std::vector<std::string> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(fmt::format("{}{}", prefix, i));
  return out;
}

// `tokens` (strings, or one list of strings per batch row) or `sentence`, counted against n.
Labels read_labels(const json& obj, const std::string& path, std::int64_t n, std::int64_t b, bool has_batch,
                   char default_prefix, std::string_view length_name) {
  const bool has_tokens = obj.contains("tokens"), has_sentence = obj.contains("sentence");
  if (has_tokens && has_sentence) fail(key_path(path, "sentence"), "give tokens or sentence, not both");
  auto check_count = [&](const std::vector<std::string>& row, const std::string& p) {
    if (static_cast<std::int64_t>(row.size()) != n) {
      fail(p, fmt::format("expected {} labels (one per position, {} = {}), got {}", n, length_name, n, row.size()));
    }
  };
  if (has_sentence) {
    const auto p = key_path(path, "sentence");
    auto words = split_words(read_string(obj["sentence"], p));
    check_count(words, p);
    return {words};
  }
  if (!has_tokens) return {default_labels(default_prefix, n)};
  const auto p = key_path(path, "tokens");
  const json& t = obj["tokens"];
  if (!t.is_array() || t.empty()) fail(p, fmt::format("expected an array of {} strings, got {}", n, describe(t)));
  if (t[0].is_array()) {
    if (!has_batch || static_cast<std::int64_t>(t.size()) != b) {
      fail(p, fmt::format("expected one list of labels per batch row (B = {}), got {} lists", has_batch ? b : 1, t.size()));
    }
    Labels out;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto rp = fmt::format("{}[{}]", p, i);
      if (!t[i].is_array()) fail(rp, fmt::format("expected an array of {} strings, got {}", n, describe(t[i])));
      std::vector<std::string> row;
      for (std::size_t j = 0; j < t[i].size(); ++j) row.push_back(read_string(t[i][j], fmt::format("{}[{}]", rp, j)));
      check_count(row, rp);
      out.push_back(std::move(row));
    }
    return out;
  }
  std::vector<std::string> row;
  for (std::size_t j = 0; j < t.size(); ++j) row.push_back(read_string(t[j], fmt::format("{}[{}]", p, j)));
  check_count(row, p);
  return {row};
}

}  // namespace

void read_tokens(const json& root, const json& src, Spec& s) {
  s.tokens = read_labels(root, "", s.T, s.B, s.batched, 't', "T");
  if (s.cross()) s.source_tokens = read_labels(src, "source", s.S, s.B, s.batched, 's', "S");
  else if (s.keys_are_queries()) s.source_tokens = s.tokens;
  else s.source_tokens = {default_labels('s', s.S)};  // given [T, S] scores with S != T
}

}  // namespace attn
