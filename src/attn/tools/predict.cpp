// --predict: see predict.hpp. The questions are chosen from the trace (its first block: batch row 0,
// head 0) and each reply names what the learner said, what it is, and how far apart the two are.
#include "attn/tools/predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "attn/core/error.hpp"
#include "attn/core/options.hpp"
#include "attn/core/text.hpp"

namespace attn {
namespace {

// "S, the keys": an axis as a learner counts it. T is the queries where keys stand beside it, else
// the tokens; the second of two token axes is the keys.
std::string axis_words(Dim d, bool key_axis, bool beside_keys) {
  // (self-attention writes the keys' axis T too: "S = T, the keys", so the two axes read apart)
  if (is_token_axis(d)) {
    if (key_axis) return d == Dim::T ? "S = T, the keys" : fmt::format("{}, the keys", d);
    return beside_keys ? "T, the queries" : fmt::format("{}, the tokens", d);
  }
  switch (d) {
    case Dim::B: return "B, the batch rows";
    case Dim::H: return "H, the heads";
    case Dim::Hkv: return "Hkv, the key/value heads";
    case Dim::C: return "C, the model width";
    case Dim::Cs: return "Cs, the source's width";
    case Dim::hs: return "hs, each head's query/key width";
    case Dim::hv: return "hv, each head's value width";
    case Dim::dk: return "dk, the query/key width";
    case Dim::dv: return "dv, the value width";
    case Dim::Co: return "Co, the output width";
    default: return fmt::format("{}", d);
  }
}

bool queries_by_keys(const Step& s) {
  const auto& d = s.dims;
  return d.size() >= 2 && is_token_axis(d[d.size() - 2]) && is_token_axis(d[d.size() - 1]);
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1));
}

Prediction shape_question(const Step& s) {
  Prediction p;
  p.kind = Prediction::Kind::Shape;
  p.step = s.id;
  p.shape = s.value.shape();
  const bool qk = queries_by_keys(s);
  std::vector<std::string> sizes;
  for (std::size_t a = 0; a < s.dims.size(); ++a) {
    const std::string words = axis_words(s.dims[a], qk && a + 1 == s.dims.size(), qk);  // "T, the queries"
    const auto comma = words.find(", the ");
    p.axes.push_back(words);
    sizes.push_back(comma == std::string::npos ? fmt::format("{} = {}", words, p.shape[a])
                                               : fmt::format("{} = {} {}", std::string_view(words).substr(0, comma), p.shape[a],
                                                             std::string_view(words).substr(comma + 6)));  // "T = 3 queries"
  }
  p.question = fmt::format("What is the shape of {}, in numbers (like [2, 3])?", s.id);
  p.truth = fmt::format("{} is {}: {}", s.id, shape_string(p.shape), fmt::join(sizes, ", "));
  return p;
}

// The last query row of the first block whose largest entry leads the next by 0.01 or more; its
// flat offset, or none.
std::optional<std::int64_t> clear_row(const Step& s) {
  const auto& shape = s.value.shape();
  const std::int64_t S = shape.back(), T = shape[shape.size() - 2];
  for (std::int64_t i = T - 1; i >= 0; --i) {
    std::vector<double> row;
    for (std::int64_t j = 0; j < S; ++j) row.push_back(s.value.at(i * S + j));
    if (std::any_of(row.begin(), row.end(), [](double v) { return std::isnan(v); })) continue;
    std::sort(row.rbegin(), row.rend());
    if (!std::isfinite(row[0])) continue;
    if (S == 1 || row[0] - row[1] >= 0.01) return i * S;
  }
  return std::nullopt;
}

Prediction value_question(const Trace& t, const Step& s, std::int64_t at) {
  Prediction p;
  p.kind = Prediction::Kind::Value;
  p.step = s.id;
  p.value = s.value.at(at);
  p.where = s.id + position_label(t.config, s.dims, s.value.shape(), at);
  p.question = fmt::format("What is {}, to two decimals?", p.where);
  p.truth = fmt::format("{} is {}", p.where, format_fixed(static_cast<Scalar>(p.value), 4));
  return p;
}

Prediction top_question(const Trace& t, const Step& s, std::int64_t row) {
  Prediction p;
  p.kind = Prediction::Kind::Top;
  p.step = s.id;
  const auto& shape = s.value.shape();
  const Dim qd = s.dims[s.dims.size() - 2], kd = s.dims.back();
  const std::int64_t S = shape.back();
  for (std::int64_t j = 0; j < S; ++j) {
    p.keys.push_back(distinct_axis_label(t.config, kd, j, 0));
    p.row.push_back(s.value.at(row + j));
  }
  p.key = std::max_element(p.row.begin(), p.row.end()) - p.row.begin();
  p.query = distinct_axis_label(t.config, qd, row / S, 0);
  std::vector<std::string> lead;  // the block asked about: "batch 0, head 0"
  for (std::size_t a = 0; a + 2 < s.dims.size(); ++a) lead.push_back(s.dims[a] == Dim::B ? "batch 0" : fmt::format("{} 0", s.dims[a] == Dim::H ? "head" : dim_name(s.dims[a])));
  const std::string in = lead.empty() ? "" : fmt::format(" (in {})", fmt::join(lead, ", "));
  p.question = s.id == "weights" ? fmt::format("Which key does \"{}\" attend to most{}? (a token)", p.query, in)
                                 : fmt::format("Which key has the largest {} in \"{}\"'s row{}? (a token)", s.id, p.query, in);
  // (no number: the value is the page's and the tables' to show)
  p.truth = s.id == "weights" ? fmt::format("\"{}\" attends most to \"{}\"", p.query, p.keys[static_cast<std::size_t>(p.key)])
                              : fmt::format("\"{}\"'s row of {} is largest at \"{}\"", p.query, s.id, p.keys[static_cast<std::size_t>(p.key)]);
  return p;
}

// The first finite entry from `from` on within the first block, else `from`.
std::int64_t finite_from(const Step& s, std::int64_t from, std::int64_t block) {
  for (std::int64_t k = from; k < block; ++k)
    if (std::isfinite(s.value.at(k))) return k;
  for (std::int64_t k = 0; k < from; ++k)
    if (std::isfinite(s.value.at(k))) return k;
  return from;
}

// An entry to ask for when no query row is asked about: the first token axis at its last token
// (in a causal run the row that sees every key), every other axis at 0.
std::int64_t plain_entry(const Step& s) {
  const auto& shape = s.value.shape();
  std::int64_t flat = 0;
  bool token_done = false;
  for (std::size_t a = 0; a < shape.size(); ++a) {
    std::int64_t i = 0;
    if (!token_done && is_token_axis(s.dims[a])) i = shape[a] - 1, token_done = true;
    flat = flat * shape[a] + i;
  }
  std::int64_t block = 1;
  for (std::size_t a = shape.size(); a-- > 0 && s.dims[a] != Dim::B && s.dims[a] != Dim::H && s.dims[a] != Dim::Hkv;) block *= shape[a];
  return finite_from(s, flat, std::min<std::int64_t>(block, s.value.size()));
}

// Sizes typed as numbers: "[3, 4]", "3 x 4", "(3,4)", "3×4"; none when anything else is in it.
std::optional<std::vector<std::int64_t>> read_sizes(std::string_view a) {
  std::string text;  // the separators as spaces
  for (std::size_t k = 0; k < a.size(); ++k) {
    const bool times = a.substr(k).starts_with("×");
    text += times || std::string_view("[](),xX*").find(a[k]) != std::string_view::npos ? ' ' : a[k];
    if (times) k += std::string_view("×").size() - 1;
  }
  std::vector<std::int64_t> sizes;
  std::size_t i = 0;
  while ((i = text.find_first_not_of(' ', i)) != std::string::npos) {
    std::int64_t n = 0;
    const auto r = std::from_chars(text.data() + i, text.data() + text.size(), n);
    if (r.ec != std::errc{} || n < 0 || (r.ptr != text.data() + text.size() && *r.ptr != ' ')) return std::nullopt;
    sizes.push_back(n);
    i = static_cast<std::size_t>(r.ptr - text.data());
  }
  if (sizes.empty()) return std::nullopt;
  return sizes;
}

// "0.64", ".64", "0,64", "−0.5": a number, or none.
std::optional<double> read_number(std::string_view a) {
  std::string text;
  for (const std::string_view minus : {"−", "-"}) {
    if (a.starts_with(minus)) text += '-', a.remove_prefix(minus.size());
  }
  if (a.starts_with(".") || a.starts_with(",")) text += '0';
  text.append(a);
  if (text.find('.') == std::string::npos && std::count(text.begin(), text.end(), ',') == 1) std::replace(text.begin(), text.end(), ',', '.');
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc{} || r.ptr != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

PredictReply check_shape(const Prediction& p, const std::string& a) {
  const auto sizes = read_sizes(a);
  if (!sizes) return {false, false, fmt::format("I could not read \"{}\" as a shape: type the sizes as numbers, like [2, 3].", a)};
  if (*sizes == p.shape) return {true, true, fmt::format("Right: {}.", p.truth)};
  std::string why;
  if (sizes->size() != p.shape.size()) {
    why = fmt::format("you gave {} size{}; {} has {} ax{}", sizes->size(), sizes->size() == 1 ? "" : "s", p.step, p.shape.size(), p.shape.size() == 1 ? "is" : "es");
  } else if (std::vector<std::int64_t>(sizes->rbegin(), sizes->rend()) == p.shape && sizes->size() == 2) {
    why = fmt::format("the other way round: the rows are {}, the columns {}", p.axes[0], p.axes[1]);
  } else {
    std::vector<std::string> off;
    for (std::size_t k = 0; k < sizes->size(); ++k)
      if ((*sizes)[k] != p.shape[k]) off.push_back(fmt::format("{}, is {}, not {}", p.axes[k], p.shape[k], (*sizes)[k]));
    why = fmt::format("{}", fmt::join(off, "; "));
  }
  return {true, false, fmt::format("Not quite: you said {}; {} ({}).", shape_string(*sizes), p.truth, why)};
}

PredictReply check_top(const Prediction& p, const std::string& a) {
  std::string said = a;
  if (said.size() >= 2 && (said.front() == '"' || said.front() == '\'') && said.back() == said.front()) said = said.substr(1, said.size() - 2);
  // a repeated token may be named as the tables name it ("the₂") or plainly ("the"): then any of
  // its occurrences that is the key attended to most is right
  std::vector<std::size_t> named;
  for (std::size_t j = 0; j < p.keys.size(); ++j) {
    const std::string& k = p.keys[j];
    const auto sub = k.find("\xe2\x82");  // a subscript digit's first two bytes
    if (k == said || (sub != std::string::npos && k.substr(0, sub) == said)) named.push_back(j);
  }
  if (named.empty()) {
    return {false, false, fmt::format("There is no key \"{}\": the keys are {}. Type one of them.", said, fmt::join(p.keys, ", "))};
  }
  const auto top = static_cast<std::size_t>(p.key);
  if (std::find(named.begin(), named.end(), top) != named.end()) return {true, true, fmt::format("Right: {}.", p.truth)};
  return {true, false, fmt::format("Not quite: you said \"{}\"; {}.", p.keys[named[0]], p.truth)};
}

PredictReply check_value(const Prediction& p, const std::string& a) {
  const auto v = read_number(a);
  if (!v) return {false, false, fmt::format("I could not read \"{}\" as a number: type it with two decimals, like 0.25.", a)};
  const double off = std::fabs(*v - p.value);
  const std::string by = fmt::format("{:.{}f}", off, off < 0.01 ? 4 : 2);
  if (off <= kPredictTolerance + 1e-9) return {true, true, fmt::format("Right: {}; you said {}, {} off.", p.truth, trim(a), by)};
  return {true, false, fmt::format("Not quite: you said {}; {}: {} too {}.", trim(a), p.truth, by, *v > p.value ? "high" : "low")};
}

}  // namespace

std::vector<Prediction> predict_questions(const Trace& t, const Step& s) {
  std::vector<Prediction> out{shape_question(s)};
  if (s.kind != ValueKind::Real || s.value.size() == 0) return out;
  const auto row = queries_by_keys(s) ? clear_row(s) : std::nullopt;
  if (row && s.value.shape().back() > 1) {
    // the value asked is another key's: the question names its key, which must not give the last answer away
    out.push_back(top_question(t, s, *row));
    out.push_back(value_question(t, s, *row + (out.back().key == 0 ? 1 : 0)));
  } else {
    out.push_back(value_question(t, s, plain_entry(s)));
  }
  return out;
}

PredictReply check_prediction(const Prediction& p, std::string_view answer) {
  const std::string a = trim(answer);
  if (a.empty()) return {true, false, fmt::format("No prediction: {}.", p.truth)};
  switch (p.kind) {
    case Prediction::Kind::Shape: return check_shape(p, a);
    case Prediction::Kind::Top: return check_top(p, a);
    case Prediction::Kind::Value: return check_value(p, a);
  }
  throw InternalError("check_prediction: a kind of question");
}

std::vector<std::size_t> predicted_steps(const Trace& t, const std::vector<std::string>& ids, const std::vector<std::size_t>& shown, Door door) {
  const std::string flag = switch_on(door, "predict");
  const std::vector<std::string> asked = ids.empty() ? std::vector<std::string>{"weights"} : ids;
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < asked.size(); ++k) {
    const Step* s = t.find(asked[k]);
    if (s == nullptr) {
      throw InputError(ids.empty() ? flag + ": this trace has no weights step to ask about (a fused run keeps none); add an \"exercise\": "
                                            "{\"predict\": [...]} block naming steps it has"
                                   : fmt::format("exercise.predict[{}]: this trace has no step \"{}\"", k, asked[k]));
    }
    const auto i = static_cast<std::size_t>(s - t.steps.data());
    if (shown.empty() || std::find(shown.begin(), shown.end(), i) != shown.end()) out.push_back(i);
  }
  if (out.empty()) {
    throw InputError(fmt::format("{}: none of the steps to predict ({}) is shown; show them too ({})", flag, fmt::join(asked, ", "),
                                 door == Door::Python ? "steps=" : "--steps, --from, --to"));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string prediction_tally(std::size_t right, std::size_t asked) {
  return fmt::format("{} of {} prediction{} right", right, asked, asked == 1 ? "" : "s");
}

}  // namespace attn
