// Reading JSON values for the spec: the text into a DOM (duplicate keys and deep nesting refused,
// syntax errors with line and column), scalars, nested arrays and tensors, every refusal naming its
// JSON path. It knows no key of the input format but {"npy": ...}: what a block holds is its reader's.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/io/read_context.hpp"
#include "attn/core/suggest.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

using json = nlohmann::json;

// ---- paths and messages -------------------------------------------------------------------

std::string key_path(const std::string& parent, std::string_view key);  // "weights" + "W_q" -> "weights.W_q"
// base followed by the first `depth` indices: "embeddings[1][0]".
std::string index_path(const std::string& base, const std::vector<std::size_t>& idx, std::size_t depth);
// Throws the InputError "path: what" ("(root)" for the empty path).
[[noreturn]] void fail(const std::string& path, const std::string& what);
std::string describe(const json& j);  // "the string \"1\"", "an array of 2", "NaN", ... for "got ..."
// "NaN", "infinity" or "-infinity" for the strings "nan", "inf" and "-inf" (how attn writes non-finite
// numbers, and a NumPy NaN from Python reaches the reader); nullptr for any other value.
const char* non_finite_name(const json& j);
// Refuses a key of obj not in allowed, with a did-you-mean hint.
void check_keys(const json& obj, const std::string& path, const std::vector<std::string_view>& allowed);

// The text as a DOM, and what the DOM loses of the numbers under one key of the root object.
struct ParsedJson {
  json root;
  // For each key under the root's literal key, its values' printed decimals in document order:
  // "0.73" -> 2, an integer literal -> kExactInteger (it claims the exact value), null or a string
  // -> -1 (nothing printed). A DOM number is a double: 0.73 alone cannot say it meant ±0.005.
  std::map<std::string, std::vector<int>> decimals;
  // The same numbers as the text wrote them ("0.28733302", "-inf"; "" for null), to quote them exactly.
  std::map<std::string, std::vector<std::string>> literals;
};
// One pass over the text; origin names it in messages ("examples/cat_sat.json:3:1: invalid JSON:
// ..."). A duplicate key, or nesting deeper than 32 levels, is refused with its JSON path.
ParsedJson parse_json(std::string_view text, const std::string& origin, std::string_view literal_key = {});

// ---- scalars ------------------------------------------------------------------------------

std::int64_t read_positive(const json& j, const std::string& path);
bool read_bool(const json& j, const std::string& path);
std::string read_string(const json& j, const std::string& path);

// One of the named choices, e.g. {{"x@W", Layout::XW}, {"torch", Layout::Torch}}.
template <typename E>
E read_choice(const json& j, const std::string& path, const std::vector<std::pair<std::string_view, E>>& choices) {
  std::vector<std::string_view> names;
  for (const auto& c : choices) names.push_back(c.first);
  std::string quoted;
  for (std::size_t i = 0; i < names.size(); ++i) quoted += fmt::format("{}\"{}\"", i ? ", " : "", names[i]);
  if (!j.is_string()) fail(path, fmt::format("expected one of {}, got {}", quoted, describe(j)));
  const auto s = j.get<std::string>();
  for (const auto& c : choices)
    if (c.first == s) return c.second;
  fail(path, fmt::format("expected one of {}, got {}{}", quoted, j.dump(), did_you_mean(s, names)));
}

// ---- nested arrays ------------------------------------------------------------------------

// How one reader words the faults of its nested arrays. The walk is the same for tensors, attn_mask
// and expect; their messages differ, and are kept as they are (tests/bad/catalogue.tsv).
struct NestedWording {
  std::string empty;              // an array, along the first entries, with nothing in it
  bool empty_names_row = false;   // name that array ("embeddings[0]") rather than the whole entry
  bool rows_as_siblings = false;  // a bad row: "an array of N like its siblings", one message for a row
                                  // that is not an array and one of the wrong length
};

// A leaf's place in its nested array, spelled out ("embeddings[1][0]") only when a message needs it.
struct LeafPath {
  const std::string& base;
  const std::vector<std::size_t>& idx;
  std::string str() const { return index_path(base, idx, idx.size()); }
};
using LeafReader = std::function<void(const json& leaf, const LeafPath& at)>;

// A nested array whose shape is set by its first entries ([[1, 2], [3, 4]] -> [2, 2]); every other
// row must match it. The caller refuses a value that is not an array at all, in its own words.
class NestedArray {
 public:
  NestedArray(const json& j, std::string path, NestedWording wording);
  const Shape& shape() const { return shape_; }
  // Every leaf in row-major order; a ragged row, or one that is not an array, is refused on the way.
  void for_each_leaf(const LeafReader& leaf) const;

 private:
  void walk(const json& j, std::size_t axis, std::vector<std::size_t>& idx, const LeafReader& leaf) const;
  std::string bad_row(const json& j, std::size_t want) const;

  const json& j_;
  std::string path_;
  NestedWording wording_;
  Shape shape_;
};

// ---- tensors ------------------------------------------------------------------------------

// Any rectangular nested array of finite float32 numbers, or {"npy": "path"} (looked up in
// ctx.base_dir); `expected` says what the caller wants, for messages. The caller checks the shape.
Tensor read_tensor(const ReadContext& ctx, const json& j, const std::string& path, std::string_view expected);
// Refuses t unless its shape is want; why is appended to the message.
void expect_shape(const Tensor& t, const std::string& path, const Shape& want, std::string_view why = "");

}  // namespace attn
