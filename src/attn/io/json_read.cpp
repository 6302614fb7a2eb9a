// JSON values for the spec: parsing the text (duplicate keys, depth, line and column), paths and
// messages, scalars, the one nested-array walker and tensors. No key of the input format is known
// here but {"npy": ...}; which keys a block takes is its reader's business.
#include "attn/io/json_read.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <system_error>

#include "attn/core/error.hpp"
#include "attn/io/npy.hpp"
#include "attn/core/spec.hpp"

namespace attn {

// ---- paths and messages -------------------------------------------------------------------

std::string key_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string index_path(const std::string& base, const std::vector<std::size_t>& idx, std::size_t depth) {
  std::string p = base;
  for (std::size_t i = 0; i < depth; ++i) p += fmt::format("[{}]", idx[i]);
  return p;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw InputError(fmt::format("{}: {}", path.empty() ? "(root)" : path, what));
}

const char* non_finite_name(const json& j) {
  if (!j.is_string()) return nullptr;
  const auto& s = j.get_ref<const std::string&>();
  return s == "nan" ? "NaN" : s == "inf" ? "infinity" : s == "-inf" ? "-infinity" : nullptr;
}

std::string describe(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return j.get<bool>() ? "true" : "false";
    case json::value_t::string: return non_finite_name(j) != nullptr ? non_finite_name(j) : fmt::format("the string {}", j.dump());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return fmt::format("the number {}", j.dump());
    case json::value_t::array: return j.empty() ? "an empty array" : fmt::format("an array of {}", j.size());
    case json::value_t::object: return "an object";
    default: return "an unsupported value";
  }
}

void check_keys(const json& obj, const std::string& path, const std::vector<std::string_view>& allowed) {
  for (const auto& item : obj.items()) {
    const std::string& key = item.key();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    fail(key_path(path, key), fmt::format("unknown key{}; allowed here: {}", did_you_mean(key, allowed),
                                          fmt::join(allowed, ", ")));
  }
}

// ---- parsing the text ---------------------------------------------------------------------

namespace {

// Line and column (1-based) of a byte offset, for messages about the text itself.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return {line, col};
}

constexpr int kMaxDepth = 32;

// Decimals a number literal shows: "0.73" -> 2, "1.0" -> 1, "5e-3" -> 3, "2" -> 0; at most 1074, the
// decimals of the smallest double (more are zeros), whatever the exponent ("1e-99999999999").
int printed_decimals(std::string_view literal) {
  constexpr long long kMost = 1074;
  long long frac = 0, exp = 0;
  const auto e = literal.find_first_of("eE");
  const auto mantissa = literal.substr(0, e);
  if (const auto dot = mantissa.find('.'); dot != std::string_view::npos) frac = static_cast<long long>(mantissa.size() - dot - 1);
  if (e != std::string_view::npos) {
    auto digits = literal.substr(e + 1);
    if (digits.starts_with('+')) digits.remove_prefix(1);
    if (std::from_chars(digits.data(), digits.data() + digits.size(), exp).ec == std::errc::result_out_of_range) {
      exp = digits.starts_with('-') ? -kMost : kMost;
    }
  }
  return static_cast<int>(std::clamp(frac - std::clamp(exp, -kMost, kMost), 0LL, kMost));
}

// One pass over the text (nlohmann's SAX interface): builds the DOM; follows the object keys and
// array indices so that a duplicate key, or nesting deeper than kMaxDepth, is refused with its JSON
// path as soon as it is read; and notes the printed decimals of the numbers under the root's
// literal key, which the DOM (a double per number) loses.
class Reader final : public json::json_sax_t {
 public:
  Reader(const std::string& origin, std::string_view literal_key, ParsedJson& out)
      : origin_(origin), literal_key_(literal_key), out_(out) {}

  // Noted under the literal key: null and strings as -1 (no number printed), integer literals as
  // kExactInteger (they claim an exact value), other numbers by their printed decimals.
  bool null() override { return value(nullptr, -1, ""); }
  bool boolean(bool b) override { return value(b, kNotNoted); }
  // an integer literal ("2") claims an exact value
  bool number_integer(number_integer_t n) override { return value(n, kExactInteger, std::to_string(n)); }
  bool number_unsigned(number_unsigned_t n) override { return value(n, kExactInteger, std::to_string(n)); }
  bool number_float(number_float_t x, const string_t& literal) override {
    return value(x, in_literal_key() ? printed_decimals(literal) : kNotNoted, literal);
  }
  bool string(string_t& str) override {
    std::string text = in_literal_key() ? str : std::string();
    return value(std::move(str), -1, std::move(text));
  }
  bool binary(binary_t&) override { return true; }  // JSON text has none
  bool start_object(std::size_t) override { return open(json::object(), true); }
  bool start_array(std::size_t) override { return open(json::array(), false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second) {  // nlohmann would keep the last value silently; a duplicate is almost always a mistake
      f.key = k;
      throw InputError(fmt::format("{}: duplicate key \"{}\" in {}", key_path(parent_path(), k), k, origin_));
    }
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_path_ = path();
    error_in_literal_key_ = in_literal_key();
    if (const auto* pe = dynamic_cast<const json::parse_error*>(&e)) throw *pe;
    if (const auto* oor = dynamic_cast<const json::out_of_range*>(&e)) throw *oor;
    throw InternalError(std::string("JSON reader: ") + e.what());
  }

  // Where the text stopped being JSON: the JSON path of the value being read, and whether it is under
  // the literal key.
  const std::string& error_path() const { return error_path_; }
  bool error_in_literal_key() const { return error_in_literal_key_; }

 private:
  struct Frame {
    bool object;
    json* node;
    std::string key;
    std::size_t index = 0;
    std::set<std::string> keys;
  };

  // Where the next value goes: the root, the open object's key, or the end of the open array.
  json& place(json&& v) {
    if (frames_.empty()) return out_.root = std::move(v);
    Frame& f = frames_.back();
    if (f.object) return (*f.node)[f.key] = std::move(v);
    f.node->push_back(std::move(v));
    return f.node->back();
  }
  static constexpr int kNotNoted = std::numeric_limits<int>::min();
  template <class V>
  bool value(V&& v, int decimals, std::string literal = {}) {
    if (decimals != kNotNoted && in_literal_key()) {
      out_.decimals[frames_[1].key].push_back(decimals);
      out_.literals[frames_[1].key].push_back(std::move(literal));
    }
    place(json(std::forward<V>(v)));
    element_done();
    return true;
  }
  bool open(json&& empty, bool object) {
    // attn's inputs nest at most 5 deep; far deeper text is hostile or broken, and refused at once.
    if (frames_.size() >= kMaxDepth) {
      throw InputError(fmt::format("{}: JSON nested deeper than {} levels (at {}); attn's inputs nest at most 5 deep", origin_,
                                   kMaxDepth, path().empty() ? "(root)" : path()));
    }
    json& node = place(std::move(empty));
    frames_.push_back({object, &node, {}, 0, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    element_done();
    return true;
  }
  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }
  // root object -> the literal key's object -> a key -> its values, however nested
  bool in_literal_key() const {
    return !literal_key_.empty() && frames_.size() >= 3 && frames_[0].object && frames_[0].key == literal_key_ && frames_[1].object;
  }
  std::string path_of(std::size_t frames) const {
    std::string p;
    for (std::size_t i = 0; i < frames; ++i) p = frames_[i].object ? key_path(p, frames_[i].key) : fmt::format("{}[{}]", p, frames_[i].index);
    return p;
  }
  std::string path() const { return path_of(frames_.size()); }
  std::string parent_path() const { return path_of(frames_.size() - 1); }

  const std::string& origin_;
  std::string_view literal_key_;
  ParsedJson& out_;
  std::vector<Frame> frames_;
  std::string error_path_;
  bool error_in_literal_key_ = false;
};

// NaN, Infinity or -Infinity (any case; inf, nan) where a value starts, around the byte `at` the
// parser stopped at: what JavaScript and Python's json write for non-finite numbers, which JSON lacks.
// The literal's first byte and its name, or nullopt.
std::optional<std::pair<std::size_t, const char*>> non_finite_literal(std::string_view text, std::size_t at) {
  const auto part = [&](std::size_t i) { return std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '-' || text[i] == '+'; };
  if (at >= text.size() || !part(at)) return std::nullopt;
  std::size_t start = at, end = at;
  while (start > 0 && part(start - 1)) --start;
  while (end < text.size() && part(end)) ++end;
  std::string word;
  for (std::size_t i = start; i < end; ++i) word += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  const bool minus = word.starts_with('-');
  if (minus || word.starts_with('+')) word.erase(0, 1);
  if (word != "nan" && word != "inf" && word != "infinity") return std::nullopt;
  std::size_t before = start;  // a value's place: the text's start, or after '[', ',' or ':'
  while (before > 0 && std::isspace(static_cast<unsigned char>(text[before - 1]))) --before;
  if (before > 0 && std::string_view("[,:").find(text[before - 1]) == std::string_view::npos) return std::nullopt;
  return std::pair{start, word == "nan" ? "NaN" : minus ? "-Infinity" : "Infinity"};
}

// The refusal of a non-finite literal, naming its JSON path and how attn takes the value instead.
[[noreturn]] void refuse_non_finite(std::string_view text, const std::string& origin, const Reader& reader, std::string_view literal_key,
                                    std::size_t start, std::string_view name) {
  auto [line, col] = line_column(text, start);
  const std::string as_string = name == "NaN" ? "nan" : name == "Infinity" ? "inf" : "-inf";
  const std::string instead =
      reader.error_in_literal_key()
          ? fmt::format("write it as the string \"{}\", which {} takes", as_string, literal_key)
          : fmt::format("write a finite number{}", name == "-Infinity" ? " (or the string \"-inf\" where attn takes -inf: an additive attn_mask, mask_fill)" : "");
  throw InputError(fmt::format("{}:{}:{}: {}: {} is not a JSON number (JSON has no NaN or Infinity); {}", origin, line, col,
                               reader.error_path().empty() ? "(root)" : reader.error_path(), name, instead));
}

}  // namespace

ParsedJson parse_json(std::string_view text, const std::string& origin, std::string_view literal_key) {
  ParsedJson out;
  Reader reader(origin, literal_key, out);
  try {
    json::sax_parse(text.begin(), text.end(), &reader, json::input_format_t::json, /*strict=*/true, /*ignore_comments=*/false);
    return out;
  } catch (const json::parse_error& e) {
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    // a trailing comma ("[1, 2,]", {"a": 1,}): named at the comma, which is where the mistake is
    if (at < text.size() && (text[at] == '}' || text[at] == ']')) {
      std::size_t k = at;
      while (k > 0 && std::string_view(" \t\r\n").find(text[k - 1]) != std::string_view::npos) --k;
      if (k > 0 && text[k - 1] == ',') {
        auto [line, col] = line_column(text, k - 1);
        throw InputError(fmt::format("{}:{}:{}: invalid JSON: a comma before '{}' with nothing after it (JSON allows no trailing comma)",
                                     origin, line, col, text[at]));
      }
    }
    if (const auto literal = non_finite_literal(text, at)) refuse_non_finite(text, origin, reader, literal_key, literal->first, literal->second);
    auto [line, col] = line_column(text, at);
    std::string what = e.what();
    // Keep nlohmann's description after the "parse error at line L, column C: " prefix.
    if (auto p = what.find(": ", what.find("parse error")); p != std::string::npos) what = what.substr(p + 2);
    throw InputError(fmt::format("{}:{}:{}: invalid JSON: {}", origin, line, col, what));
  } catch (const json::out_of_range& e) {
    // A number too large for a double ("1e400"): find it in the text for the position.
    std::string what = e.what();
    std::string literal;
    if (auto a = what.find('\''), b = what.rfind('\''); a != std::string::npos && b > a)
      literal = what.substr(a + 1, b - a - 1);
    auto at = literal.empty() ? std::string_view::npos : text.find(literal);
    auto [line, col] = line_column(text, at == std::string_view::npos ? 0 : at);
    throw InputError(fmt::format("{}:{}:{}: invalid JSON: number {} is out of range", origin, line, col, literal));
  }
}

// ---- scalars ------------------------------------------------------------------------------

std::int64_t read_positive(const json& j, const std::string& path) {
  if (!j.is_number_integer() || j.get<std::int64_t>() <= 0) {
    fail(path, fmt::format("expected a positive integer, got {}", describe(j)));
  }
  return j.get<std::int64_t>();
}

bool read_bool(const json& j, const std::string& path) {
  if (!j.is_boolean()) fail(path, fmt::format("expected true or false, got {}", describe(j)));
  return j.get<bool>();
}

std::string read_string(const json& j, const std::string& path) {
  if (!j.is_string()) fail(path, fmt::format("expected a string, got {}", describe(j)));
  return j.get<std::string>();
}

// ---- nested arrays ------------------------------------------------------------------------

NestedArray::NestedArray(const json& j, std::string path, NestedWording wording)
    : j_(j), path_(std::move(path)), wording_(std::move(wording)) {
  std::vector<std::size_t> idx;
  for (const json* cur = &j; cur->is_array(); cur = &(*cur)[0]) {
    if (cur->empty()) fail(wording_.empty_names_row ? index_path(path_, idx, idx.size()) : path_, wording_.empty);
    shape_.push_back(static_cast<std::int64_t>(cur->size()));
    idx.push_back(0);
  }
}

void NestedArray::for_each_leaf(const LeafReader& leaf) const {
  std::vector<std::size_t> idx(shape_.size(), 0);
  walk(j_, 0, idx, leaf);
}

void NestedArray::walk(const json& j, std::size_t axis, std::vector<std::size_t>& idx, const LeafReader& leaf) const {
  if (axis == shape_.size()) {
    leaf(j, LeafPath{path_, idx});
    return;
  }
  const auto want = static_cast<std::size_t>(shape_[axis]);
  if (!j.is_array() || j.size() != want) fail(index_path(path_, idx, axis), bad_row(j, want));
  for (std::size_t i = 0; i < want; ++i) {
    idx[axis] = i;
    walk(j[i], axis + 1, idx, leaf);
  }
}

std::string NestedArray::bad_row(const json& j, std::size_t want) const {
  if (wording_.rows_as_siblings) return fmt::format("expected an array of {} like its siblings, got {}", want, describe(j));
  if (!j.is_array()) return fmt::format("expected an array of {} (every row must have the same length), got {}", want, describe(j));
  return fmt::format("expected {} {} like the first row at this depth, got {} (ragged array)", want, want == 1 ? "entry" : "entries",
                     j.size());
}

// ---- tensors ------------------------------------------------------------------------------

Tensor read_tensor(const ReadContext& ctx, const json& j, const std::string& path, std::string_view expected) {
  if (j.is_object() && j.contains("npy")) {
    check_keys(j, path, {"npy"});
    const auto file = read_string(j["npy"], key_path(path, "npy"));
    const auto full = ctx.base_dir.empty() ? std::filesystem::path(file) : std::filesystem::path(ctx.base_dir) / file;
    return read_npy(full.string(), path);
  }
  if (!j.is_array()) fail(path, fmt::format("expected {} (or {{\"npy\": \"file.npy\"}}), got {}", expected, describe(j)));
  const NestedArray a(j, path, {fmt::format("expected {}, got an empty array", expected), true, false});
  std::vector<Scalar> values;
  Tensor::Wide wide;  // each number as the text wrote it, for attn check's float64 judge
  values.reserve(static_cast<std::size_t>(element_count(a.shape())));
  wide.reserve(values.capacity());
  a.for_each_leaf([&values, &wide](const json& e, const LeafPath& at) {
    if (const char* name = non_finite_name(e)) fail(at.str(), fmt::format("{} is not allowed here (expected a finite number)", name));
    if (!e.is_number()) fail(at.str(), fmt::format("expected a number, got {}", describe(e)));
    const double d = e.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<Scalar>::max()) {
      fail(at.str(), fmt::format("{} does not fit in float32 (largest finite is about 3.4028e+38)", e.dump()));
    }
    values.push_back(static_cast<Scalar>(d));
    wide.push_back(d);
  });
  return Tensor(a.shape(), values).with_wide(std::move(wide));
}

void expect_shape(const Tensor& t, const std::string& path, const Shape& want, std::string_view why) {
  if (t.shape() != want) {
    fail(path, fmt::format("expected {}, got {}{}", shape_string(want), shape_string(t.shape()), why));
  }
}

}  // namespace attn
