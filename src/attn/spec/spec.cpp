// JSON input -> validated Spec: the order the input format's blocks are read in (README "Input
// format"), and loading the text from a file or standard input. The rules of each block live in
// the readers beside this file; no attention arithmetic anywhere here.
#include "attn/core/spec.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>

#include "attn/core/bytes.hpp"
#include "attn/core/error.hpp"
#include "attn/spec/exercise.hpp"
#include "attn/spec/readers.hpp"
#include "attn/core/suggest.hpp"

namespace attn {

namespace {

constexpr std::uintmax_t kMaxInputBytes = std::uintmax_t{512} << 20;  // larger tensors belong in .npy files

const std::vector<std::string_view> kRootKeys = {"title", "comment", "mode", "heads", "tokens", "sentence",
                                                 "embeddings", "source", "weights", "layout", "scale",
                                                 "padding", "q", "k", "v", "scores", "random", "expect",
                                                 "attn_mask", "causal_align", "masked_row", "mask_fill", "dv", "positions", "rope", "window", "alibi", "softcap", "kv_heads", "checkpoint", "token_ids",
                                                 "sentence_b", "token_type_ids", "backward", "exercise"};

}  // namespace

bool known_root_key(std::string_view key) { return std::find(kRootKeys.begin(), kRootKeys.end(), key) != kRootKeys.end(); }

namespace {

// title, comment, mode, layout, scale: the settings every entry point shares.
void read_settings(const json& root, Spec& s) {
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
      s.scale_number = d;
    } else if (j == "sqrt_dk" || j == "none") {
      s.scale_kind = j == "none" ? ScaleKind::None : ScaleKind::SqrtDk;
    } else {
      const std::string hint = j.is_string() ? did_you_mean(j.get<std::string>(), {"sqrt_dk", "none"}) : "";
      fail("scale", fmt::format("expected \"sqrt_dk\", \"none\" or a non-zero number such as 0.125, got {}{}",
                                j.is_string() ? j.dump() : describe(j), hint));
    }
  }
}

// Standard input, whole: refused when closed, empty, or more than kMaxInputBytes.
std::string read_stdin() {
  std::string text;
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
  return text;
}

// A JSON file, whole: refused when it is a directory, empty, more than kMaxInputBytes, or unreadable.
std::string read_input_file(const std::string& path) {
  std::string text;
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
  return text;
}

}  // namespace

std::string read_input(const std::string& path) { return path == "-" ? read_stdin() : read_input_file(path); }

void draw_seeded(ReadContext& ctx) {
  // parts of kPart values (even: normals come in pairs); a part further into its stream first
  // twists through the words before it, which costs far less than drawing them
  constexpr std::int64_t kPart = std::int64_t{1} << 18;
  std::vector<std::pair<std::size_t, std::int64_t>> parts;  // (draw, first)
  std::int64_t total = 0;
  for (std::size_t d = 0; d < ctx.draws.size(); ++d) {
    for (std::int64_t first = 0; first < ctx.draws[d].count; first += kPart) parts.emplace_back(d, first);
    total += ctx.draws[d].count;
  }
  const auto count = static_cast<std::int64_t>(parts.size());
#pragma omp parallel for schedule(dynamic, 1) if (count > 1 && total >= (std::int64_t{1} << 19))
  for (std::int64_t i = 0; i < count; ++i) {
    const auto [d, first] = parts[static_cast<std::size_t>(i)];
    const auto& draw = ctx.draws[d];
    draw.part(first, std::min(kPart, draw.count - first));
  }
  ctx.draws.clear();
}

Spec parse_spec(std::string_view text, const std::string& origin, const std::string& base_dir, std::int64_t max_bytes) {
  const ParsedJson parsed = parse_json(text, origin, "expect");
  const json& root = parsed.root;
  if (!root.is_object()) fail("", fmt::format("expected a JSON object (see docs/input-format.md), got {}", describe(root)));
  Spec s;
  if (root.contains("checkpoint")) {
    read_checkpoint(root, base_dir, s);  // refuses the keys a checkpoint sets
    if (root.contains("title")) s.title = read_string(root["title"], "title");
    if (root.contains("comment")) read_string(root["comment"], "comment");
    if (root.contains("expect")) read_expect(root, parsed.decimals, parsed.literals, s);
    return s;
  }
  check_keys(root, "", kRootKeys);
  if (root.contains("token_ids")) fail("token_ids", "index a model's vocabulary: give them with \"checkpoint\": {\"path\": \"DIR\"}");

  ReadContext ctx{base_dir, max_bytes > 0 ? max_bytes : default_max_memory(), s.notes};
  read_settings(root, s);
  const RandomFill rnd = read_random(root);
  const json& src = read_source(root, s);
  read_entry(ctx, root, src, rnd, s);  // sets B, T, S, the widths and H: what the readers below count against
  if (root.contains("dv") && s.entry != Entry::Embeddings) {
    fail("dv", "sets the value width of projections (a fused W_qkv); given q, k, v or scores carry their own widths");
  }
  if (s.T == 0 || s.S == 0) fail("", "empty sequence");
  draw_seeded(ctx);
  if (root.contains("positions")) read_positions(ctx, root, s);
  if (root.contains("rope")) read_rope(root, s);
  if (root.contains("alibi")) read_alibi(root, s);
  if (root.contains("softcap")) read_softcap(root, s);
  if (root.contains("expect")) read_expect(root, parsed.decimals, parsed.literals, s);
  if (root.contains("backward")) read_backward(ctx, root, s);
  if (root.contains("exercise")) {
    read_exercise_block(root["exercise"]);  // attn exercise's keys (ask, values, decimals, variant)
    read_predict(root, s);                  // --predict's list
  }
  read_tokens(root, src, s);
  read_masks(root, s);
  if (!s.cross() && !s.causal && s.S != s.T) {
    // self-attention over given keys of their own count: where a position enters, the queries' place
    // among the keys would be a guess
    for (const auto& [given, key] : {std::pair{s.rope.has_value(), "rope"}, std::pair{!s.alibi_slopes.shape().empty(), "alibi"},
                                     std::pair{s.window > 0, "window"}}) {
      if (given) {
        fail(key, fmt::format("self-attention with S = {} keys for T = {} queries: where the queries stand among the keys is not given; use "
                              "mode \"causal\" with \"causal_align\": \"bottom_right\" (the queries are the last T of the S tokens) or mode "
                              "\"cross\" (another sequence)", s.S, s.T));
      }
    }
    // what the input gave the keys as: k and v's rows, or only the given scores' columns (and v's rows)
    const std::string keys = s.entry != Entry::Scores ? "k and v given with rows of their own"
                             : s.v.rank() > 0        ? "the given scores' columns and v's rows"
                                                     : "the given scores' columns; no k or v is given";
    s.notes.push_back(fmt::format("self: S = {} keys for T = {} queries ({}): every query sees every key; "
                                  "the keys are not the queries' tokens", s.S, s.T, keys));
  }
  return s;
}

Spec load_spec(const std::string& path, std::int64_t max_bytes) {
  if (path == "-") return parse_spec(read_stdin(), "<stdin>", "", max_bytes);
  return parse_spec(read_input_file(path), path, std::filesystem::path(path).parent_path().string(), max_bytes);
}

}  // namespace attn
