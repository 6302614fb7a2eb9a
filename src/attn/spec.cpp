// JSON input -> validated Spec. Every rule of input format v1 (README "Input format") lives here,
// and every refusal names the JSON path and what was expected. No attention arithmetic here.
#include "attn/spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "attn/bytes.hpp"
#include "attn/error.hpp"
#include "attn/npy.hpp"
#include "attn/numpy_random.hpp"
#include "attn/random.hpp"
#include "attn/suggest.hpp"

namespace attn {

std::string_view mode_name(Mode m) {
  switch (m) {
    case Mode::Self: return "self";
    case Mode::Causal: return "causal";
    case Mode::Cross: return "cross";
    case Mode::MultiHead: return "multi-head";
  }
  return "?";
}

namespace {

using json = nlohmann::json;

// ---- paths and messages -------------------------------------------------------------------

std::string key_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw InputError(fmt::format("{}: {}", path.empty() ? "(root)" : path, what));
}

std::string describe(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return j.get<bool>() ? "true" : "false";
    case json::value_t::string: return fmt::format("the string {}", j.dump());
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
constexpr std::uintmax_t kMaxInputBytes = std::uintmax_t{512} << 20;  // larger tensors belong in .npy files

json parse_json(std::string_view text, const std::string& origin) {
  // Tracks where the parser is, so a duplicate key can be reported with its JSON path.
  struct Frame {
    bool object;
    std::string key;
    std::size_t index = 0;
    std::set<std::string> keys;
  };
  std::vector<Frame> frames;
  auto parent_path = [&frames]() {
    std::string p;
    for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
      p = frames[i].object ? key_path(p, frames[i].key) : fmt::format("{}[{}]", p, frames[i].index);
    }
    return p;
  };
  auto element_done = [&frames]() {
    if (!frames.empty() && !frames.back().object) ++frames.back().index;
  };
  json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    // attn's inputs nest at most 5 deep; far deeper text is hostile or broken, and refused at once.
    if (depth > kMaxDepth) {
      throw InputError(fmt::format("{}: JSON nested deeper than {} levels (at {}); attn's inputs nest at most 5 deep", origin,
                                   kMaxDepth, parent_path().empty() ? "(root)" : parent_path()));
    }
    switch (event) {
      case json::parse_event_t::object_start: frames.push_back({true, {}, 0, {}}); break;
      case json::parse_event_t::array_start: frames.push_back({false, {}, 0, {}}); break;
      case json::parse_event_t::key: {
        auto key = parsed.get<std::string>();
        if (!frames.back().keys.insert(key).second) {
          // nlohmann keeps the last value silently; a duplicate is almost always a mistake.
          frames.back().key = key;
          throw InputError(fmt::format("{}: duplicate key \"{}\" in {}", key_path(parent_path(), key), key, origin));
        }
        frames.back().key = std::move(key);
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames.pop_back();
        element_done();
        break;
      case json::parse_event_t::value: element_done(); break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::parse_error& e) {
    auto [line, col] = line_column(text, e.byte > 0 ? e.byte - 1 : 0);
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

// ---- tensors ------------------------------------------------------------------------------

std::string read_string(const json& j, const std::string& path);

std::string index_path(const std::string& base, const std::vector<std::size_t>& idx, std::size_t depth) {
  std::string p = base;
  for (std::size_t i = 0; i < depth; ++i) p += fmt::format("[{}]", idx[i]);
  return p;
}

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
  NestedArray(const json& j, std::string path, NestedWording wording) : j_(j), path_(std::move(path)), wording_(std::move(wording)) {
    std::vector<std::size_t> idx;
    for (const json* cur = &j; cur->is_array(); cur = &(*cur)[0]) {
      if (cur->empty()) fail(wording_.empty_names_row ? index_path(path_, idx, idx.size()) : path_, wording_.empty);
      shape_.push_back(static_cast<std::int64_t>(cur->size()));
      idx.push_back(0);
    }
  }

  const Shape& shape() const { return shape_; }

  // Every leaf in row-major order; a ragged row or one that is not an array is refused on the way.
  void for_each_leaf(const LeafReader& leaf) const {
    std::vector<std::size_t> idx(shape_.size(), 0);
    walk(j_, 0, idx, leaf);
  }

 private:
  void walk(const json& j, std::size_t axis, std::vector<std::size_t>& idx, const LeafReader& leaf) const {
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

  std::string bad_row(const json& j, std::size_t want) const {
    if (wording_.rows_as_siblings) return fmt::format("expected an array of {} like its siblings, got {}", want, describe(j));
    if (!j.is_array()) return fmt::format("expected an array of {} (every row must have the same length), got {}", want, describe(j));
    return fmt::format("expected {} {} like the first row at this depth, got {} (ragged array)", want, want == 1 ? "entry" : "entries",
                       j.size());
  }

  const json& j_;
  std::string path_;
  NestedWording wording_;
  Shape shape_;
};

// What every reader of one input shares, passed explicitly (parse_spec makes one per call).
struct ReadContext {
  std::string base_dir;              // where {"npy": "path"} tensors are looked up ("" = the working directory)
  std::int64_t max_bytes = 0;        // the most bytes one generated tensor may take
  std::vector<std::string>& notes;   // Spec::notes: where values came from
};

// Refuses a tensor the random block would generate when it cannot fit, before allocating it.
void require_generatable(const ReadContext& ctx, const std::string& path, const Shape& shape) {
  double n = 1;
  for (auto d : shape) n *= static_cast<double>(d);
  const double bytes = n * sizeof(Scalar);
  if (bytes > static_cast<double>(ctx.max_bytes)) {
    fail(path, fmt::format("generating {} floats would take {}, more than --max-memory {}", shape_string(shape), human_bytes(bytes),
                           human_bytes(static_cast<double>(ctx.max_bytes))));
  }
}

// Any rectangular nested array of numbers, or {"npy": "path"}; the caller checks the shape it needs.
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
  values.reserve(static_cast<std::size_t>(element_count(a.shape())));
  a.for_each_leaf([&values](const json& e, const LeafPath& at) {
    if (!e.is_number()) fail(at.str(), fmt::format("expected a number, got {}", describe(e)));
    const double d = e.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<Scalar>::max()) {
      fail(at.str(), fmt::format("{} does not fit in float32 (largest finite is about 3.4028e+38)", e.dump()));
    }
    values.push_back(static_cast<Scalar>(d));
  });
  return Tensor(a.shape(), std::move(values));
}

void expect_shape(const Tensor& t, const std::string& path, const Shape& want, std::string_view why = "") {
  if (t.shape() != want) {
    fail(path, fmt::format("expected {}, got {}{}", shape_string(want), shape_string(t.shape()), why));
  }
}

Tensor identity(std::int64_t c) {
  Tensor t({c, c});
  for (std::int64_t i = 0; i < c; ++i) t.mutable_data()[i * c + i] = 1;
  return t;
}

Tensor transpose2(const Tensor& t) {
  const auto r = t.dim(0), c = t.dim(1);
  Tensor out({c, r});
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j) out.mutable_data()[j * r + i] = t.data()[i * c + j];
  return out;
}

// Columns [offset, offset + width) of a [rows, n] matrix, or entries of a vector.
Tensor columns(const Tensor& t, std::int64_t offset, std::int64_t width) {
  if (t.rank() == 1) {
    return Tensor({width}, std::vector<Scalar>(t.data() + offset, t.data() + offset + width));
  }
  const auto rows = t.dim(0), n = t.dim(1);
  Tensor out({rows, width});
  for (std::int64_t i = 0; i < rows; ++i)
    std::copy(t.data() + i * n + offset, t.data() + i * n + offset + width, out.mutable_data() + i * width);
  return out;
}

// Adds a leading batch dimension of 1 to an unbatched tensor.
Tensor batched(const Tensor& t, bool has_batch) {
  if (has_batch) return t;
  Shape s = t.shape();
  s.insert(s.begin(), 1);
  return t.reshaped(std::move(s));
}

// ---- small scalar fields ------------------------------------------------------------------

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

// ---- labels -------------------------------------------------------------------------------

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

// ---- the random block ---------------------------------------------------------------------

struct RandomFill {
  bool present = false;
  std::uint64_t seed = 0;
  std::optional<std::int64_t> B, T, S, C;
  bool fused = false, output_projection = false;
  // generator "numpy": one RandomState stream, drawn in the documented order; every tensor is
  // rs.rand(*shape) (or rs.randn) exactly, unscaled, so Python regenerates it.
  std::shared_ptr<NumpyRandomState> numpy;
  bool numpy_normal = false;

  std::shared_ptr<int> draws = std::make_shared<int>(0);

  // Draws the next tensor of the stream and says which draw it was, for the notes.
  Tensor draw_numpy(const Shape& shape, const std::string& path, std::vector<std::string>& notes) const {
    notes.push_back(fmt::format("{}: draw {} of rs = np.random.RandomState({}): rs.{}({})", path, ++*draws, seed,
                                numpy_normal ? "randn" : "rand", fmt::join(shape, ", ")));
    Tensor t(shape);
    for (std::int64_t i = 0; i < t.size(); ++i) t.mutable_data()[i] = static_cast<Scalar>(numpy_normal ? numpy->randn() : numpy->rand());
    return t;
  }
};

RandomFill read_random(const json& root) {
  RandomFill r;
  if (!root.contains("random")) return r;
  const json& j = root["random"];
  if (!j.is_object()) fail("random", fmt::format("expected an object like {{\"seed\": 0, \"T\": 4, \"C\": 8}}, got {}", describe(j)));
  check_keys(j, "random", {"seed", "B", "T", "S", "C", "fused", "output_projection", "generator", "distribution"});
  r.present = true;
  if (!j.contains("seed")) fail("random.seed", "required: a non-negative integer");
  if (!j["seed"].is_number_unsigned()) {  // nlohmann stores every non-negative integer literal as unsigned
    fail("random.seed", fmt::format("expected a non-negative integer, got {}", describe(j["seed"])));
  }
  r.seed = j["seed"].get<std::uint64_t>();
  for (auto [key, slot] : {std::pair{"B", &r.B}, std::pair{"T", &r.T}, std::pair{"S", &r.S}, std::pair{"C", &r.C}}) {
    if (j.contains(key)) *slot = read_positive(j[key], key_path("random", key));
  }
  if (j.contains("fused")) r.fused = read_bool(j["fused"], "random.fused");
  if (j.contains("output_projection")) r.output_projection = read_bool(j["output_projection"], "random.output_projection");
  bool numpy = false;
  if (j.contains("generator")) numpy = read_choice<bool>(j["generator"], "random.generator", {{"mt19937_64", false}, {"numpy", true}});
  if (j.contains("distribution")) {
    if (!numpy) fail("random.distribution", "only the \"numpy\" generator takes a distribution (\"rand\" or \"randn\")");
    r.numpy_normal = read_choice<bool>(j["distribution"], "random.distribution", {{"rand", false}, {"randn", true}});
  }
  if (numpy) {
    if (r.seed > 0xFFFFFFFFULL) fail("random.seed", fmt::format("NumPy's RandomState takes seeds 0 .. 2**32 - 1, got {}", r.seed));
    r.numpy = std::make_shared<NumpyRandomState>(static_cast<std::uint32_t>(r.seed));
  }
  return r;
}

// ---- sequences ----------------------------------------------------------------------------

// Embeddings [T, C] or [B, T, C] as (B, T, C), from JSON or from the random block.
struct Sequence {
  Tensor x;  // (B, L, C)
  bool has_batch = false;
};

Sequence read_sequence(ReadContext& ctx, const json& parent, const std::string& parent_path, const char* key, std::string_view len,
                       const RandomFill& rnd, std::optional<std::int64_t> random_len, std::string_view random_name) {
  const auto path = key_path(parent_path, key);
  const auto expected = fmt::format("a [{0}, C] or [B, {0}, C] array of numbers", len);
  if (parent.contains(key)) {
    Tensor t = read_tensor(ctx, parent[key], path, expected);
    if (t.rank() != 2 && t.rank() != 3) fail(path, fmt::format("expected {}, got shape {}", expected, shape_string(t.shape())));
    Sequence s{batched(t, t.rank() == 3), t.rank() == 3};
    // A random block next to given embeddings must agree with them.
    auto agree = [&](std::optional<std::int64_t> v, std::int64_t actual, const char* name) {
      if (v && *v != actual) fail(fmt::format("random.{}", name), fmt::format("{} disagrees with {} ({} = {})", *v, path, name, actual));
    };
    if (rnd.present) {
      agree(rnd.C, s.x.dim(2), "C");
      if (s.has_batch) agree(rnd.B, s.x.dim(0), "B");
      if (std::string_view(key) == "embeddings" && parent_path.empty()) agree(rnd.T, s.x.dim(1), "T");
    }
    return s;
  }
  if (!rnd.present || !rnd.C || !random_len) {
    fail(path, fmt::format("required: {} (or a \"random\" block with {} and C to generate it)", expected, random_name));
  }
  const bool has_batch = rnd.B.has_value();
  Shape shape{rnd.B.value_or(1), *random_len, *rnd.C};
  require_generatable(ctx, path, shape);
  if (rnd.numpy) {
    const Shape drawn = has_batch ? shape : Shape{shape[1], shape[2]};
    return {rnd.draw_numpy(drawn, path, ctx.notes).reshaped(shape), has_batch};
  }
  ctx.notes.push_back(fmt::format("{}: random N(0, 1), seed {}", path, rnd.seed));
  return {random_normal(rnd.seed, path, shape), has_batch};
}

// ---- weights ------------------------------------------------------------------------------

struct WeightReader {
  ReadContext& ctx;
  const json& obj;
  Layout layout;
  std::int64_t C;
  std::int64_t H;

  bool has(const char* key) const { return obj.contains(key); }

  // A square [C, C] projection, "identity", or per-head [H, C, hs] (torch: [H, hs, C]) stacked.
  Tensor projection(const char* key, bool per_head_allowed) const {
    const auto path = key_path("weights", key);
    const auto hs = C / H;
    const json& j = obj[key];
    if (j.is_string()) {
      if (j.get<std::string>() != "identity") {
        fail(path, fmt::format("expected a [C, C] = [{0}, {0}] matrix or \"identity\", got {1}", C, describe(j)));
      }
      ctx.notes.push_back(fmt::format("{}: identity", path));
      return identity(C);
    }
    Tensor t = read_tensor(ctx, j, path, fmt::format("a [C, C] = [{0}, {0}] matrix or \"identity\"", C));
    if (t.rank() == 3 && per_head_allowed) {
      const Shape want = layout == Layout::XW ? Shape{H, C, hs} : Shape{H, hs, C};
      expect_shape(t, path,  want,
                   layout == Layout::XW ? fmt::format(" (per-head weights are [H, C, hs] with H = {}, C = {}, hs = {})", H, C, hs)
                                        : fmt::format(" (per-head torch weights are [H, hs, C] with H = {}, hs = {}, C = {})", H, hs, C));
      // Head h owns output columns h*hs .. (h+1)*hs of the stacked [C, C] (x@W) matrix.
      Tensor out({C, C});
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < C; ++i)
          for (std::int64_t c = 0; c < hs; ++c) {
            const Scalar v = layout == Layout::XW ? t.data()[(h * C + i) * hs + c] : t.data()[(h * hs + c) * C + i];
            out.mutable_data()[i * C + h * hs + c] = v;
          }
      ctx.notes.push_back(fmt::format("{}: {} per-head matrices stacked into [C, C] = [{}, {}]", path, H, C, C));
      return out;
    }
    expect_shape(t, path, {C, C},
                 per_head_allowed ? fmt::format(" (or per-head [H, C, hs] = [{}, {}, {}])", H, C, C / H) : "");
    return layout == Layout::XW ? t : transpose2(t);
  }

  Tensor fused() const {
    const auto path = std::string("weights.W_qkv");
    const Shape want = layout == Layout::XW ? Shape{C, 3 * C} : Shape{3 * C, C};
    Tensor t = read_tensor(ctx, obj["W_qkv"], path, fmt::format("a {} matrix", shape_string(want)));
    expect_shape(t, path, want,
                 layout == Layout::XW ? " (x@W layout: [C, 3C], columns q | k | v)" : " (torch layout: [3C, C], rows q | k | v)");
    return layout == Layout::XW ? t : transpose2(t);
  }

  Tensor bias(const char* key, std::int64_t n) const {
    const auto path = key_path("weights", key);
    Tensor t = read_tensor(ctx, obj[key], path, fmt::format("a vector of {} numbers", n));
    expect_shape(t, path, {n});
    return t;
  }
};

// H as the input sets it: `heads`, else the per-head weights' first dimension, else the mode's default.
std::int64_t resolve_heads(const json& root, Mode mode, std::optional<std::int64_t> from_data, const std::string& data_path) {
  if (root.contains("heads")) {
    const auto h = read_positive(root["heads"], "heads");
    if (from_data && *from_data != h) {
      fail(data_path, fmt::format("has {} heads, but heads = {}", *from_data, h));
    }
    return h;
  }
  if (from_data) return *from_data;
  return mode == Mode::MultiHead ? 2 : 1;
}

void read_weights(ReadContext& ctx, const json& root, Spec& s, const RandomFill& rnd) {
  static const std::vector<std::string_view> kWeightKeys = {"W_q", "W_k", "W_v", "W_qkv", "W_o",
                                                            "b_q", "b_k", "b_v", "b_qkv", "b_o"};
  static const json kEmpty = json::object();
  const json* wj = &kEmpty;
  if (root.contains("weights")) {
    wj = &root["weights"];
    if (!wj->is_object()) fail("weights", fmt::format("expected an object with W_q, W_k, W_v (or W_qkv), got {}", describe(*wj)));
    check_keys(*wj, "weights", kWeightKeys);
  } else if (!rnd.present) {
    fail("weights", "required: an object with W_q, W_k, W_v (or W_qkv), or a \"random\" block to generate them");
  }
  WeightReader r{ctx, *wj, s.layout, s.C, s.H};
  const bool any_separate = r.has("W_q") || r.has("W_k") || r.has("W_v");
  if (r.has("W_qkv") && any_separate) {
    fail("weights.W_qkv", "give either W_qkv (fused) or W_q, W_k, W_v (separate), not both");
  }
  if (rnd.fused && any_separate) {
    fail("random.fused", "is true, but weights.W_q/W_k/W_v are given; fused generation makes W_qkv");
  }
  const bool fused = r.has("W_qkv") || rnd.fused;
  for (const char* b : {"b_q", "b_k", "b_v"}) {
    if (fused && r.has(b)) fail(key_path("weights", b), "the projection is fused (W_qkv): give b_qkv, a vector of 3C numbers");
  }
  if (!fused && r.has("b_qkv")) fail("weights.b_qkv", "needs weights.W_qkv (b_qkv is the fused projection's bias)");

  const double bound = 1.0 / std::sqrt(static_cast<double>(s.C));  // nn.Linear's default init range
  auto generated = [&](const char* key, Shape shape) {
    const auto path = key_path("weights", key);
    require_generatable(ctx, path, shape);
    if (rnd.numpy) return rnd.draw_numpy(shape, path, ctx.notes);
    ctx.notes.push_back(fmt::format("{}: random U(-1/√C, 1/√C), seed {}", path, rnd.seed));
    return random_uniform(rnd.seed, path, std::move(shape), bound);
  };

  if (fused) {
    Tensor w = r.has("W_qkv") ? r.fused() : generated("W_qkv", {s.C, 3 * s.C});
    std::optional<Tensor> b;
    if (r.has("b_qkv")) b = r.bias("b_qkv", 3 * s.C);
    if (s.cross()) {
      // Cross-attention projects x (queries) and source (keys, values) separately, so the fused
      // weight is split here, as nn.MultiheadAttention splits in_proj_weight.
      s.w.W_q = columns(w, 0, s.C), s.w.W_k = columns(w, s.C, s.C), s.w.W_v = columns(w, 2 * s.C, s.C);
      if (b) s.w.b_q = columns(*b, 0, s.C), s.w.b_k = columns(*b, s.C, s.C), s.w.b_v = columns(*b, 2 * s.C, s.C);
      ctx.notes.push_back("weights.W_qkv: split into W_q, W_k, W_v (cross-attention projects x and source separately)");
    } else {
      s.w.W_qkv = std::move(w);
      s.w.b_qkv = std::move(b);
    }
  } else {
    auto one = [&](const char* key, std::optional<Tensor>& slot) {
      if (r.has(key)) slot = r.projection(key, true);
      else if (rnd.present) slot = generated(key, {s.C, s.C});
      else fail(key_path("weights", key),
                fmt::format("required: a [C, C] = [{0}, {0}] matrix, per-head [H, C, hs], or \"identity\" (or give W_qkv)", s.C));
    };
    one("W_q", s.w.W_q);
    one("W_k", s.w.W_k);
    one("W_v", s.w.W_v);
    if (r.has("b_q")) s.w.b_q = r.bias("b_q", s.C);
    if (r.has("b_k")) s.w.b_k = r.bias("b_k", s.C);
    if (r.has("b_v")) s.w.b_v = r.bias("b_v", s.C);
  }
  if (r.has("W_o")) s.w.W_o = r.projection("W_o", false);
  else if (rnd.output_projection) s.w.W_o = generated("W_o", {s.C, s.C});
  if (r.has("b_o")) {
    if (!s.w.W_o) fail("weights.b_o", "needs weights.W_o (b_o is the output projection's bias)");
    s.w.b_o = r.bias("b_o", s.C);
  }
}

// Per-head weights tell H when `heads` is absent.
std::optional<std::int64_t> heads_in_weights(const json& root, std::string& where) {
  if (!root.contains("weights") || !root["weights"].is_object()) return std::nullopt;
  for (const char* key : {"W_q", "W_k", "W_v"}) {
    const json& w = root["weights"].value(key, json());
    if (w.is_array() && !w.empty() && w[0].is_array() && !w[0].empty() && w[0][0].is_array()) {
      where = key_path("weights", key);
      return static_cast<std::int64_t>(w.size());
    }
  }
  return std::nullopt;
}

void check_heads_divide(const Spec& s) {
  if (s.mode == Mode::MultiHead && s.H < 2) fail("heads", fmt::format("mode \"multi-head\" needs H > 1, got {}", s.H));
  if (s.C > 0 && s.C % s.H != 0) {
    fail("heads", fmt::format("H = {} does not divide C = {} (each head gets hs = C / H features)", s.H, s.C));
  }
}

// ---- expect: printed numbers and their printed precision -----------------------------------

// Decimals a number literal shows: "0.73" -> 2, "1.0" -> 1, "5e-3" -> 3, "2" -> 0.
int printed_decimals(std::string_view literal) {
  int frac = 0, exp = 0;
  const auto e = literal.find_first_of("eE");
  const auto mantissa = literal.substr(0, e);
  if (const auto dot = mantissa.find('.'); dot != std::string_view::npos) frac = static_cast<int>(mantissa.size() - dot - 1);
  if (e != std::string_view::npos) exp = std::stoi(std::string(literal.substr(e + 1)));
  return std::max(0, frac - exp);
}

// A SAX pass over the text that records, for each step under "expect", the printed decimals of its
// numbers in document order: the DOM keeps only the double, and 0.73 must mean ±0.005.
class ExpectDecimals final : public json::json_sax_t {
 public:
  std::map<std::string, std::vector<int>> decimals;

  bool null() override { return add(-1); }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return add(0); }
  bool number_unsigned(number_unsigned_t) override { return add(0); }
  bool number_float(number_float_t, const string_t& s) override { return add(printed_decimals(s)); }
  bool string(string_t&) override { return add(-1); }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return push(true); }
  bool end_object() override { return pop(); }
  bool start_array(std::size_t) override { return push(false); }
  bool end_array() override { return pop(); }
  bool key(string_t& k) override {
    frames_.back().key = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct Frame {
    bool object;
    std::string key;
  };
  bool push(bool object) {
    frames_.push_back({object, {}});
    return true;
  }
  bool pop() {
    frames_.pop_back();
    return true;
  }
  bool add(int d) {
    // root object -> "expect" object -> step id -> the nested arrays
    if (frames_.size() >= 3 && frames_[0].object && frames_[0].key == "expect" && frames_[1].object) {
      decimals[frames_[1].key].push_back(d);
    }
    return true;
  }
  std::vector<Frame> frames_;
};

void read_expect(const json& root, std::string_view text, Spec& s) {
  const json& e = root["expect"];
  if (!e.is_object()) fail("expect", fmt::format("expected an object of step ids, like {{\"weights\": [[1, 0], [0.4, 0.6]]}}, got {}", describe(e)));
  ExpectDecimals sax;
  json::sax_parse(text.begin(), text.end(), &sax);
  for (const auto& item : e.items()) {
    const std::string path = key_path("expect", item.key());
    if (item.key() == "tolerance") {
      if (!item.value().is_number() || item.value().get<double>() < 0) {
        fail(path, fmt::format("expected a non-negative number, got {}", describe(item.value())));
      }
      s.expect_tolerance = item.value().get<double>();
      continue;
    }
    Expectation x;
    x.id = item.key();
    // Shape from the first entries, as for tensors; entries may be numbers, null (not printed)
    // or the strings "-inf", "inf", "nan".
    if (!item.value().is_array()) fail(path, fmt::format("expected the printed values as nested arrays, got {}", describe(item.value())));
    const NestedArray a(item.value(), path, {"expected the printed values as nested arrays, got an empty array", false, true});
    x.shape = a.shape();
    a.for_each_leaf([&x](const json& j, const LeafPath& at) {
      if (j.is_null()) {
        x.values.push_back(std::numeric_limits<double>::quiet_NaN());
        x.present.push_back(false);
      } else if (j.is_number()) {
        x.values.push_back(j.get<double>());
        x.present.push_back(true);
      } else if (j.is_string() && (j == "-inf" || j == "inf" || j == "nan")) {
        const auto str = j.get<std::string>();
        x.values.push_back(str == "nan" ? std::numeric_limits<double>::quiet_NaN()
                                        : (str == "inf" ? 1 : -1) * std::numeric_limits<double>::infinity());
        x.present.push_back(true);
      } else {
        fail(at.str(), fmt::format("expected a number, null (not printed), \"-inf\", \"inf\" or \"nan\", got {}", describe(j)));
      }
    });
    x.decimals = sax.decimals[x.id];
    if (x.decimals.size() != x.values.size()) throw InternalError("expect: printed-precision pass disagrees with the values");
    s.expect.push_back(std::move(x));
  }
}

const std::vector<std::string_view> kRootKeys = {"title", "comment", "mode", "heads", "tokens", "sentence",
                                                 "embeddings", "source", "weights", "layout", "scale",
                                                 "padding", "q", "k", "v", "scores", "random", "expect",
                                                 "attn_mask", "causal_align", "masked_row", "mask_fill"};

// attn_mask: {"block": ...} (true = not allowed, nn.MultiheadAttention), {"keep": ...} (true = may
// attend, scaled_dot_product_attention), or {"add": ...} (added to the scores); [T, S] or [B, T, S].
void read_attn_mask(const json& root, Spec& s) {
  const json& m = root["attn_mask"];
  if (!m.is_object() || m.size() != 1) {
    fail("attn_mask", fmt::format("expected an object with one of \"block\", \"keep\" or \"add\" (e.g. {{\"block\": [[false, true], "
                                  "[false, false]]}}), got {}", describe(m)));
  }
  check_keys(m, "attn_mask", {"block", "keep", "add"});
  const std::string kind = m.begin().key();
  const std::string path = key_path("attn_mask", kind);
  const json& j = m.begin().value();
  const Shape ts{s.T, s.S}, bts{s.B, s.T, s.S};
  // Shape from the nesting, then the entries: booleans or 0/1 for block and keep; numbers (or
  // "-inf") for add.
  if (!j.is_array()) fail(path, fmt::format("expected a [T, S] = {} or [B, T, S] = {} array, got {}", shape_string(ts), shape_string(bts), describe(j)));
  const NestedArray a(j, path, {"expected a non-empty array", false, true});
  const Shape& shape = a.shape();
  if (shape != ts && shape != bts) {
    fail(path, fmt::format("expected [T, S] = {} or [B, T, S] = {}, got {}", shape_string(ts), shape_string(bts), shape_string(shape)));
  }
  std::vector<Scalar> values;
  a.for_each_leaf([&](const json& e, const LeafPath& at) {
    if (kind == "add") {
      if (e.is_number()) {
        const double d = e.get<double>();
        if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<Scalar>::max()) fail(at.str(), fmt::format("{} does not fit in float32", e.dump()));
        values.push_back(static_cast<Scalar>(d));
      } else if (e == "-inf") {
        values.push_back(-std::numeric_limits<Scalar>::infinity());
      } else {
        fail(at.str(), fmt::format("expected a number or \"-inf\", got {}", describe(e)));
      }
      return;
    }
    bool flag;
    if (e.is_boolean()) flag = e.get<bool>();
    else if (e.is_number_integer() && (e.get<std::int64_t>() == 0 || e.get<std::int64_t>() == 1)) flag = e.get<std::int64_t>() == 1;
    else fail(at.str(), fmt::format("expected true/false (or 1/0), got {}", describe(e)));
    const bool keep = kind == "keep" ? flag : !flag;  // block: true means not allowed
    values.push_back(keep ? 1 : 0);
  });
  Tensor t(shape.size() == 2 ? Shape{1, s.T, s.S} : bts, values);
  s.user_mask_kind = kind;
  if (kind == "add") s.user_add = t;
  else s.user_keep = t;
}

}  // namespace

Spec parse_spec(std::string_view text, const std::string& origin, const std::string& base_dir, std::int64_t max_bytes) {
  const json root = parse_json(text, origin);
  if (!root.is_object()) fail("", fmt::format("expected a JSON object (see README, \"Input format\"), got {}", describe(root)));
  check_keys(root, "", kRootKeys);

  Spec s;
  ReadContext ctx{base_dir, max_bytes > 0 ? max_bytes : default_max_memory(), s.notes};
  if (root.contains("title")) s.title = read_string(root["title"], "title");
  if (root.contains("comment")) read_string(root["comment"], "comment");
  if (root.contains("mode")) {
    s.mode = read_choice<Mode>(root["mode"], "mode",
                               {{"self", Mode::Self}, {"causal", Mode::Causal}, {"cross", Mode::Cross}, {"multi-head", Mode::MultiHead}});
  }
  s.causal = s.mode == Mode::Causal;
  if (root.contains("layout")) s.layout = read_choice<Layout>(root["layout"], "layout", {{"x@W", Layout::XW}, {"torch", Layout::Torch}});
  if (root.contains("scale")) {
    const json& j = root["scale"];
    s.scale_given = true;
    if (j.is_number()) {
      const double d = j.get<double>();
      if (!std::isfinite(d) || d == 0.0 || std::fabs(d) > std::numeric_limits<Scalar>::max()) {
        fail("scale", fmt::format("expected a finite, non-zero number, got {}", j.dump()));
      }
      s.scale_kind = ScaleKind::Number;
      s.scale_number = static_cast<Scalar>(d);
    } else {
      s.scale_kind = read_choice<ScaleKind>(j, "scale", {{"sqrt_dk", ScaleKind::SqrtDk}, {"none", ScaleKind::None}});
    }
  }
  const RandomFill rnd = read_random(root);

  const bool has_scores = root.contains("scores");
  const bool has_qk = root.contains("q") || root.contains("k");
  const bool has_v = root.contains("v");
  s.entry = has_scores ? Entry::Scores : (has_qk || has_v) ? Entry::QKV : Entry::Embeddings;

  // What each entry point excludes.
  auto exclude = [&](std::initializer_list<const char*> keys, std::string_view because) {
    for (const char* k : keys)
      if (root.contains(k)) fail(k, fmt::format("cannot be combined with {}", because));
  };
  const json empty_source = json::object();
  const json& src = root.contains("source") ? root["source"] : empty_source;
  if (root.contains("source")) {
    if (!s.cross()) fail("source", fmt::format("only mode \"cross\" reads a source sequence (mode is \"{}\")", mode_name(s.mode)));
    if (!src.is_object()) fail("source", fmt::format("expected an object with tokens and embeddings, got {}", describe(src)));
    check_keys(src, "source", {"tokens", "sentence", "embeddings"});
  }

  if (s.entry == Entry::Scores) {
    exclude({"embeddings", "q", "k", "weights", "random"}, "scores (scores are the starting point)");
    if (s.cross()) fail("mode", "\"cross\" needs keys from a source sequence; given scores start after that: use \"self\" or \"causal\"");
    if (s.scale_given && s.scale_kind == ScaleKind::SqrtDk) {
      fail("scale", "\"sqrt_dk\" needs d_k, which given scores do not carry: give a number, or \"none\" (the default: scores taken as already scaled)");
    }
    if (!s.scale_given) s.scale_kind = ScaleKind::None;
    Tensor sc = read_tensor(ctx, root["scores"], "scores", "a [T, S], [B, T, S] or [B, H, T, S] array of numbers");
    if (sc.rank() < 2 || sc.rank() > 4) {
      fail("scores", fmt::format("expected a [T, S], [B, T, S] or [B, H, T, S] array, got shape {}", shape_string(sc.shape())));
    }
    s.batched = sc.rank() >= 3;
    std::optional<std::int64_t> data_heads;
    if (sc.rank() == 4) data_heads = sc.dim(1);
    s.H = resolve_heads(root, s.mode, data_heads, "scores");
    if (sc.rank() < 4 && s.H > 1) {
      fail("scores", fmt::format("expected [B, H, T, S] with H = {}, got shape {}", s.H, shape_string(sc.shape())));
    }
    s.T = sc.dim(-2), s.S = sc.dim(-1);
    s.B = s.batched ? sc.dim(0) : 1;
    s.scores = sc.reshaped({s.B, s.H, s.T, s.S});
    if (has_v) {
      Tensor v = read_tensor(ctx, root["v"], "v", "a [T, C] or [B, T, C] array of numbers");
      const Shape want = s.batched ? Shape{s.B, s.S, v.dim(-1)} : Shape{s.S, v.dim(-1)};
      expect_shape(v, "v", want, " (one value row per key)");
      s.C = v.dim(-1);
      s.v = batched(v, s.batched);
    }
    check_heads_divide(s);
  } else if (s.entry == Entry::QKV) {
    exclude({"embeddings", "weights", "random"}, "q, k, v (projections are skipped when q, k, v are given)");
    for (const char* k : {"q", "k"})
      if (!root.contains(k)) fail(k, "required: q and k are given together (v is optional)");
    if (src.contains("embeddings")) fail("source.embeddings", "cannot be combined with q, k, v (k and v already come from the source)");
    Tensor q = read_tensor(ctx, root["q"], "q", "a [T, C] or [B, T, C] array of numbers");
    if (q.rank() != 2 && q.rank() != 3) fail("q", fmt::format("expected a [T, C] or [B, T, C] array, got shape {}", shape_string(q.shape())));
    s.batched = q.rank() == 3;
    s.B = s.batched ? q.dim(0) : 1, s.T = q.dim(-2), s.C = q.dim(-1);
    Tensor k = read_tensor(ctx, root["k"], "k", "a [S, C] or [B, S, C] array of numbers");
    s.S = k.rank() >= 2 ? k.dim(-2) : 0;
    // Cross-attention and causal attention over cached keys have S keys; plain self-attention has T.
    const bool own_length = s.cross() || s.causal;
    const Shape want_k = s.batched ? Shape{s.B, own_length ? s.S : s.T, s.C} : Shape{own_length ? s.S : s.T, s.C};
    expect_shape(k, "k", want_k, own_length ? " (k is [S, C] with the width C of q)" : " (self-attention: keys come from the same T tokens; use mode \"cross\" for another sequence)");
    s.S = k.dim(-2);
    s.q = batched(q, s.batched), s.k = batched(k, s.batched);
    if (has_v) {
      Tensor v = read_tensor(ctx, root["v"], "v", "a [S, C] or [B, S, C] array of numbers");
      expect_shape(v, "v", k.shape(), " (one value row per key, as k)");
      s.v = batched(v, s.batched);
    }
    s.H = resolve_heads(root, s.mode, std::nullopt, "");
    check_heads_divide(s);
  } else {
    Sequence x = read_sequence(ctx, root, "", "embeddings", "T", rnd, rnd.T, "T");
    s.batched = x.has_batch;
    s.x = x.x;
    s.B = s.x.dim(0), s.T = s.x.dim(1), s.C = s.x.dim(2);
    if (s.cross()) {
      if (!root.contains("source") && !rnd.present) {
        fail("source", "required for mode \"cross\": {\"tokens\": [...], \"embeddings\": [S, C] or [B, S, C]}");
      }
      std::optional<std::int64_t> random_s = rnd.S ? rnd.S : std::optional<std::int64_t>(s.T);
      Sequence y = read_sequence(ctx, src, "source", "embeddings", "S", rnd, random_s, "S");
      const Shape want = s.batched ? Shape{s.B, y.x.dim(1), s.C} : Shape{y.x.dim(1), s.C};
      const Shape got = y.has_batch ? y.x.shape() : Shape{y.x.dim(1), y.x.dim(2)};
      if (y.has_batch != s.batched || got != want) {
        expect_shape(y.has_batch ? y.x : y.x.reshaped(got), "source.embeddings", want,
                     fmt::format(" (source is [{}S, C]: the width C = {} and batch of embeddings)", s.batched ? "B, " : "", s.C));
      }
      s.source = y.x;
      s.S = s.source.dim(1);
    } else {
      s.S = s.T;
    }
    std::string heads_path;
    auto data_heads = heads_in_weights(root, heads_path);
    s.H = resolve_heads(root, s.mode, data_heads, heads_path);
    check_heads_divide(s);
    read_weights(ctx, root, s, rnd);
  }
  if (s.T == 0 || s.S == 0) fail("", "empty sequence");
  if (root.contains("expect")) read_expect(root, text, s);

  s.tokens = read_labels(root, "", s.T, s.B, s.batched, 't', "T");
  if (s.cross()) s.source_tokens = read_labels(src, "source", s.S, s.B, s.batched, 's', "S");
  else if (s.keys_are_queries()) s.source_tokens = s.tokens;
  else s.source_tokens = {default_labels('s', s.S)};  // given [T, S] scores with S != T

  if (root.contains("attn_mask")) read_attn_mask(root, s);
  if (root.contains("causal_align")) {
    s.causal_align = read_choice<CausalAlign>(root["causal_align"], "causal_align",
                                              {{"top-left", CausalAlign::TopLeft}, {"bottom-right", CausalAlign::BottomRight}});
    if (!s.causal) fail("causal_align", fmt::format("only a causal mask has an alignment (mode is \"{}\")", mode_name(s.mode)));
  }
  if (root.contains("masked_row")) {
    s.masked_row = read_choice<MaskedRow>(root["masked_row"], "masked_row",
                                          {{"error", MaskedRow::Error}, {"zeros", MaskedRow::Zeros}, {"nan", MaskedRow::Nan}, {"uniform", MaskedRow::Uniform}});
  }
  if (root.contains("mask_fill")) {
    const json& f = root["mask_fill"];
    if (f == "-inf") {
      s.mask_fill.reset();
    } else if (f.is_number() && std::isfinite(f.get<double>()) && std::fabs(f.get<double>()) <= std::numeric_limits<Scalar>::max()) {
      s.mask_fill = static_cast<Scalar>(f.get<double>());
    } else {
      fail("mask_fill", fmt::format("expected \"-inf\" or a finite number such as -1e9, got {}", describe(f)));
    }
  }
  if (root.contains("padding")) {
    const json& p = root["padding"];
    if (!p.is_object()) fail("padding", fmt::format("expected an object like {{\"lengths\": [4, 2]}}, got {}", describe(p)));
    check_keys(p, "padding", {"lengths"});
    if (!p.contains("lengths")) fail("padding.lengths", "required: one key length per batch row");
    const json& l = p["lengths"];
    if (!l.is_array() || static_cast<std::int64_t>(l.size()) != s.B) {
      fail("padding.lengths", fmt::format("expected an array of {} lengths (one per batch row, B = {}), got {}", s.B, s.B, describe(l)));
    }
    for (std::size_t i = 0; i < l.size(); ++i) {
      const auto lp = fmt::format("padding.lengths[{}]", i);
      if (!l[i].is_number_integer() || l[i].get<std::int64_t>() < 1 || l[i].get<std::int64_t>() > s.S) {
        fail(lp, fmt::format("expected an integer in 1..{} (the key length {} = {}), got {}", s.S, s.cross() ? "S" : "T", s.S, describe(l[i])));
      }
      s.lengths.push_back(l[i].get<std::int64_t>());
    }
  }
  return s;
}

Spec load_spec(const std::string& path, std::int64_t max_bytes) {
  std::string text;
  if (path == "-") {
    if (fcntl(STDIN_FILENO, F_GETFD) == -1) throw InputError("<stdin>: standard input is closed; give the JSON there or name a file");
    char buf[1 << 16];
    while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
      text.append(buf, static_cast<std::size_t>(std::cin.gcount()));
      if (text.size() > kMaxInputBytes) {
        throw InputError(fmt::format("<stdin>: more than {} of JSON; give large tensors as {{\"npy\": \"file.npy\"}}",
                                     human_bytes(static_cast<double>(kMaxInputBytes))));
      }
    }
    if (std::cin.bad()) throw InputError("<stdin>: cannot read standard input");
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      throw InputError("<stdin>: standard input is empty; give the JSON there or name a file");
    }
    return parse_spec(text, "<stdin>", "", max_bytes);
  }
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) throw InputError(fmt::format("{}: is a directory, not a JSON file", path));
  if (std::filesystem::is_regular_file(status)) {
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxInputBytes) {
      throw InputError(fmt::format("{}: the file is {}, more than the {} of JSON attn reads; give large tensors as {{\"npy\": \"file.npy\"}}",
                                   path, human_bytes(static_cast<double>(size)), human_bytes(static_cast<double>(kMaxInputBytes))));
    }
    if (!ec && size == 0) throw InputError(fmt::format("{}: the file is empty", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the file ({})", path, std::strerror(errno)));
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(fmt::format("{}: cannot read the file", path));
  return parse_spec(text, path, std::filesystem::path(path).parent_path().string(), max_bytes);
}

}  // namespace attn
