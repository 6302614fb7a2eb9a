// How one entry of a step was computed, with this run's numbers: for the HTML walkthrough's hover.
// Every worked line reproduces from its digits as printed (tests/explain_cell_arithmetic.py); the
// words say what was computed, never more than the trace shows.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>

#include "attn/tools/explain.hpp"
#include "attn/tools/explain_detail.hpp"
#include "attn/core/text.hpp"

namespace attn {

using explain_detail::q;
using explain_detail::rotated;
using explain_detail::rows_step;
using explain_detail::signed_num;

namespace {

// ---- one entry ---------------------------------------------------------------------------------

// A flat index split into the step's axes; `lead` is the index over every axis but the last two.
struct Cell {
  std::vector<std::int64_t> at;
  std::int64_t lead = 0, row = 0, col = 0, rows = 1, cols = 1;
};

Cell cell_of(const Step& s, std::int64_t flat) {
  Cell c;
  const auto& shape = s.value.shape();
  c.at.assign(shape.size(), 0);
  std::int64_t rest = flat;
  for (std::size_t k = shape.size(); k-- > 0;) {
    c.at[k] = rest % shape[k];
    rest /= shape[k];
  }
  const auto r = shape.size();
  c.cols = r >= 1 ? shape[r - 1] : 1;
  c.rows = r >= 2 ? shape[r - 2] : 1;
  c.col = r >= 1 ? c.at[r - 1] : 0;
  c.row = r >= 2 ? c.at[r - 2] : 0;
  c.lead = flat / (c.rows * c.cols);
  return c;
}

std::string num(double v, int decimals = 4) {
  if (std::isinf(v)) return v < 0 ? "−∞" : "+∞";
  if (std::isnan(v)) return "nan";
  // a sum or an exp worked in double keeps its digits (format_fixed would round it to float first)
  return std::fabs(v) >= 1e10 ? format_fixed(static_cast<Scalar>(v), decimals) : fmt::format("{:.{}f}", v, decimals);
}

// ---- worked arithmetic that reproduces -----------------------------------------------------------
// A reader recomputes a worked line from its numbers as printed; it reproduces when the result lies
// within half a unit of its last printed digit. Each hover prints its operands with the fewest
// decimals, 4 or more, at which all its lines reproduce, and the entry's own value (its first line)
// with 4, or more where even then a value at a rounding boundary would not. A result may show fewer
// decimals than its operands: more operand digits always bring the recomputed sum closer, while
// more result digits only narrow the half unit it must land in.

double shown(double v, int decimals) { return std::stod(num(v, decimals)); }  // as a reader reads it back
bool reproduces(double recomputed, double result, int decimals) {
  return std::fabs(recomputed - shown(result, decimals)) <= 0.5 * std::pow(10.0, -decimals) + 1e-12;
}
struct Digits {
  int op = 4, res = 4;  // decimals of the operands, of the result
};
// The fewest operand decimals (4 to 9), then result decimals (4 to as many), at which worked(op, res) holds.
template <class Worked>
Digits digits_for(const Worked& worked) {
  for (int op = 4; op <= 9; ++op)
    for (int res = 4; res <= op; ++res)
      if (worked(op, res)) return {op, res};
  return {9, 9};
}

std::string index_text(const Step& s, const Cell& c) { return fmt::format("{}[{}]", s.id, fmt::join(c.at, ", ")); }

// The batch row of a cell, for token labels: its B axis when the step has one.
std::int64_t batch_of(const Step& s, const Cell& c) {
  for (std::size_t k = 0; k < s.dims.size(); ++k)
    if (s.dims[k] == Dim::B) return c.at[k];
  return 0;
}

// 0.91×(-3.42), not 0.91×-3.42: a negative operand in parentheses.
std::string operand(double x, int decimals) { return x < 0 ? fmt::format("({})", num(x, decimals)) : num(x, decimals); }

// The terms a×b of a dot product: the first kShown written out, the others summed into one number,
// so that the line can still be recomputed.
struct Terms {
  static constexpr std::size_t kShown = 6;
  std::vector<std::pair<double, double>> t;
  double rest() const {
    double sum = 0;
    for (std::size_t k = kShown; k < t.size(); ++k) sum += t[k].first * t[k].second;
    return sum;
  }
  // The sum recomputed from the terms as printed with `decimals`.
  double printed(int decimals) const {
    double sum = t.size() > kShown ? shown(rest(), decimals) : 0;
    for (std::size_t k = 0; k < std::min(kShown, t.size()); ++k) sum += shown(t[k].first, decimals) * shown(t[k].second, decimals);
    return sum;
  }
  // "a×b + c×d + … + f×g + 1.2345 (the other 58 terms, summed)"
  std::string text(int decimals) const {
    std::vector<std::string> parts;
    for (std::size_t k = 0; k < std::min(kShown, t.size()); ++k)
      parts.push_back(fmt::format("{}×{}", operand(t[k].first, decimals), operand(t[k].second, decimals)));
    if (t.size() > kShown) parts.push_back(fmt::format("{} (the other {} terms, summed)", operand(rest(), decimals), t.size() - kShown));
    return fmt::format("{}", fmt::join(parts, " + "));
  }
};

// "b, h, " or "h, " or "": the leading indices of a cell (batch row, head), for naming operands.
std::string lead_text(const Cell& c) {
  std::string out;
  for (std::size_t k = 0; k + 2 < c.at.size(); ++k) out += fmt::format("{}, ", c.at[k]);
  return out;
}

// "q.heads[1, 2]" (head 1's query 2) or "q[2]" when there is one head: a row of an operand step.
std::string operand_row(const Step& operand, const Cell& c, std::int64_t row) {
  std::string lead;
  const auto r = operand.value.shape().size();
  for (std::size_t k = 0; k + 2 < r && k + 2 < c.at.size(); ++k) lead += fmt::format("{}, ", c.at[k]);
  return fmt::format("{}[{}{}]", operand.id, lead, row);
}


// The logits the mask and the softmax read: capped, biased, scaled or the scores, the last one run.
const Step* logits_step(const Trace& t) {
  for (const char* id : {"capped", "biased", "scaled"})
    if (const Step* s = t.find(id)) return s;
  return t.find("scores");
}

// The key rows k.repeat copies: rotated when RoPE ran, else the kv heads.
const Step* score_rows_step_before_repeat(const Trace& t) {
  if (const Step* s = t.find("k.rope")) return s;
  return rows_step(t, "k.heads", "k");
}

// The rows the scores multiply: rotated when RoPE ran ("q.rope"), else the heads.
const Step* score_rows_step(const Trace& t, char which) {
  const std::string id(1, which);
  if (const Step* s = which == 'k' ? t.find("k.repeat") : nullptr) return s;  // grouped-query: the kv heads lined up
  if (const Step* s = t.find(id + ".rope")) return s;
  return rows_step(t, (id + ".heads").c_str(), id.c_str());
}

// The words for one entry: the cell, its value and labels, and one short function a step id
// (the table in explain_cell below).
struct CellWords {
  const Trace& t;
  const Step& s;
  std::int64_t flat;
  const TraceConfig& c = t.config;
  const std::string& id = s.id;
  const Cell e = cell_of(s, flat);
  const Scalar v = s.value.at(flat);
  const std::int64_t b = batch_of(s, e);
  const std::string here = fmt::format("{} = {}", index_text(s, e), num(v));
  // keys are labelled along the step's own last axis (S with given scores of another length, or cross mode)
  const Dim key_dim = !s.dims.empty() && (s.dims.back() == Dim::S || s.dims.back() == Dim::T) ? s.dims.back() : (c.mode == Mode::Cross ? Dim::S : Dim::T);
  const std::string lead = lead_text(e);  // "b, " (and "h, ") before a row index, as the step's own index reads

  // The first line with the entry's value to `decimals` (4 in `here`, the table's).
  std::string here_at(int decimals) const { return fmt::format("{} = {}", index_text(s, e), num(v, decimals)); }
  // A worked line "= a op b", its operands as printed with d.op decimals and the entry with d.res.
  template <class Recompute>
  Digits digits(const Recompute& recompute) const {
    return digits_for([&](int op, int res) { return reproduces(recompute(op), v, res); });
  }

  std::string qtok(std::int64_t i) const { return q(distinct_axis_label(c, Dim::T, i, b)); }
  std::string ktok(std::int64_t j) const { return q(distinct_axis_label(c, key_dim, j, b)); }

  std::string positions() const {
    if (c.learned_positions) return fmt::format("{}\nlearned: feature {} of position {}'s row", here, e.col, e.row);
    const auto i2 = e.col - e.col % 2;
    const double angle = static_cast<double>(e.row) / std::pow(10000.0, static_cast<double>(i2) / static_cast<double>(c.C));
    const Digits d = digits([&](int) { return e.col % 2 == 0 ? std::sin(angle) : std::cos(angle); });
    return fmt::format("{}\n= {}({} / 10000^({}/{})): position {}, column pair {}", here_at(d.res), e.col % 2 == 0 ? "sin" : "cos", e.row,
                       i2, c.C, e.row, e.col / 2);
  }

  std::string x_pos() const {
    const Step* x = t.find("x");
    const Step* p = t.find("positions");
    if (x == nullptr || p == nullptr) return here;
    const auto C = p->value.shape().back();
    const double a = x->value.at(flat), b = p->value.at(e.row * C + e.col);
    const Digits d = digits([&](int op) { return shown(a, op) + shown(b, op); });
    return fmt::format("{}\n= x[…] + positions[{}, {}] = {} + {}: token {}'s feature {} plus its position's", here_at(d.res), e.row, e.col,
                       num(a, d.op), num(b, d.op), qtok(e.row), e.col);
  }

  std::string rope_tables() const {
    const auto R = 2 * s.value.shape().back();
    if (!c.rope_scaling.empty()) {
      const char band = static_cast<std::size_t>(e.col) < c.rope_bands.size() ? c.rope_bands[static_cast<std::size_t>(e.col)] : ' ';
      return fmt::format("{}\n= {}({} · θ_{}): position {}, pair {}{}", here, id == "rope.cos" ? "cos" : "sin", c.first_position + e.row, e.col,
                         c.first_position + e.row, e.col,
                         band == 'h'   ? ", in the high-frequency band: θ^(−2i/R) kept"
                         : band == 'm' ? ", in the middle band: smoothed between θ^(−2i/R) and θ^(−2i/R) / factor"
                         : band == 'l' ? ", in the low-frequency band: θ^(−2i/R) / factor"
                                       : fmt::format(", θ_i scaled ({})", c.rope_scaling));
    }
    return fmt::format("{}\n= {}({} · θ^(−2·{}/{})): position {}, pair {}", here, id == "rope.cos" ? "cos" : "sin", c.first_position + e.row,
                       e.col, R, c.first_position + e.row, e.col);
  }

  std::string rope() const {
    const bool query = id == "q.rope";
    const Step* in = t.find(query ? "q.norm" : "k.norm") != nullptr ? t.find(query ? "q.norm" : "k.norm")
                                                                    : rows_step(t, query ? "q.heads" : "k.heads", query ? "q" : "k");
    const Step* cs = t.find("rope.cos");
    const Step* sn = t.find("rope.sin");
    if (in == nullptr || cs == nullptr || sn == nullptr) return here;
    const auto pairs = cs->value.shape().back();
    const auto f = e.col;
    if (f >= 2 * pairs) return fmt::format("{}\n= {}[…, {}]: past the R = {} rotated features, unchanged", here, in->id, f, 2 * pairs);
    const bool interleaved = c.rope_interleaved;
    const bool second = interleaved ? f % 2 == 1 : f >= pairs;
    const std::int64_t i = interleaved ? f / 2 : (second ? f - pairs : f);
    const std::int64_t u = interleaved ? 2 * i : i, w = interleaved ? u + 1 : i + pairs;
    const std::int64_t position = (query ? c.query_first_position : c.key_first_position) + e.row;
    const std::int64_t row = position - c.first_position;
    const Scalar* x = in->value.data() + (flat - f);
    const Scalar cv = cs->value.at(row * pairs + i), sv = sn->value.at(row * pairs + i);
    // x[w]·cos + x[u]·sin for the second of the pair, x[u]·cos − x[w]·sin for the first
    const Scalar a = second ? x[w] : x[u], b = second ? x[u] : x[w];
    const double sign = second ? 1.0 : -1.0;
    const Digits d = digits([&](int op) { return shown(a, op) * shown(cv, op) + sign * shown(b, op) * shown(sv, op); });
    const std::string terms_text =
        fmt::format("{} × {} {} {} × {}", operand(a, d.op), operand(cv, d.op), second ? "+" : "−", operand(b, d.op), operand(sv, d.op));
    return fmt::format("{}\n= {}[…, {}]·cos {} {}[…, {}]·sin: pair {} (features {} and {}) turned by position {}'s angle\n= {}", here_at(d.res), in->id,
                       second ? w : u, second ? "+" : "−", in->id, second ? u : w, i, u, w, position, terms_text);
  }

  std::string input() const {
    return fmt::format("{}\nfeature {} of token {}'s embedding (an input)", here, e.col,
                       id == "x" ? qtok(e.row) : q(distinct_axis_label(c, Dim::S, e.row, b)));
  }

  std::string projection() const {
    const bool given = c.entry == Entry::QKV && id != "output";
    if (given) return fmt::format("{}\ngiven as input", here);
    const std::string w = id == "qkv" ? "W_qkv" : id == "output" ? "W_o" : "W_" + id;
    const Step* in = t.find(id == "output" ? (t.find("merged") != nullptr ? "merged" : "context") : (id == "q" || id == "qkv" || c.mode != Mode::Cross ? (t.find("x.pos") != nullptr ? "x.pos" : "x") : "source"));
    std::string row;
    if (in != nullptr && in->value.shape().size() >= 2) {
      const auto width = in->value.shape().back();
      std::vector<std::string> xs;
      for (std::int64_t k = 0; k < std::min<std::int64_t>(width, 6); ++k) xs.push_back(num(in->value.at((e.lead * e.rows + e.row) * width + k)));
      row = fmt::format("\n{}[{}{}] = [{}{}]", in->id, lead, e.row, fmt::join(xs, ", "), width > 6 ? ", …" : "");
    }
    return fmt::format("{}\n= {}[{}{}, :] · {}[:, {}]: row {} of {} times column {} of {} (a weight, an input not shown as a step){}", here,
                       in != nullptr ? in->id : "x", lead, e.row, w, e.col, e.row, in != nullptr ? in->id : "x", e.col, w, row);
  }

  std::string view() const {
    const auto r = e.at.size();
    const auto h = e.at[r - 2], d = e.at[r - 1], width = s.value.shape()[r - 1];
    const std::string batch = r > 3 ? fmt::format("{}, ", e.at[0]) : "";
    return fmt::format("{}\n= {}[{}{}, {}]: the same number, column {} = {}·{} + {} regrouped as head {}, feature {}", here, id.substr(0, 1),
                       batch, e.at[r - 3], h * width + d, h * width + d, h, width, d, h, d);
  }

  std::string repeat() const {
    const auto r = e.at.size();
    const std::int64_t n = c.H / c.Hkv, h = e.at[r - 3];
    const Step* in = id == "k.repeat" ? score_rows_step_before_repeat(t) : rows_step(t, "v.heads", "v");
    return fmt::format("{}\n= {}[{}{}{}, {}]: query head {} reads kv head ⌊{} / {}⌋ = {}", here, in != nullptr ? in->id : "k", r > 3 ? fmt::format("{}, ", e.at[0]) : "",
                       c.Hkv > 1 ? fmt::format("{}, ", h / n) : "", e.at[r - 2], e.at[r - 1], h, h, n, h / n);
  }

  std::string heads() const {
    const auto r = e.at.size();
    const std::string batch = r > 3 ? fmt::format("{}, ", e.at[0]) : "";
    return fmt::format("{}\n= {}.view[{}{}, {}, {}]: the same number, heads first", here, id.substr(0, 1), batch, e.at[r - 2], e.at[r - 3],
                       e.at[r - 1]);
  }

  std::string kt() const {
    const Step* ks = score_rows_step(t, 'k');
    return fmt::format("{}\n= {}[…, {}, {}]: key {} ({}), feature {}, transposed", here, ks != nullptr ? ks->id : "k.heads", e.col, e.row, e.col,
                       ktok(e.col), e.row);
  }

  std::string scores() const {
    const Step* qs = score_rows_step(t, 'q');
    const Step* ks = score_rows_step(t, 'k');
    if (qs == nullptr || ks == nullptr) return fmt::format("{}\ngiven as input", here);
    const auto hs = qs->value.shape().back();
    Terms tv;
    for (std::int64_t d = 0; d < hs; ++d)
      tv.t.emplace_back(qs->value.at((e.lead * e.rows + e.row) * hs + d), ks->value.at((e.lead * e.cols + e.col) * hs + d));
    const Digits d = digits([&](int op) { return tv.printed(op); });
    return fmt::format("{}\n= {} · {}: how well query {} matches key {}\n= {}", here_at(d.res), operand_row(*qs, e, e.row), operand_row(*ks, e, e.col),
                       qtok(e.row), ktok(e.col), tv.text(d.op));
  }

  std::string scaled() const {
    const Step* sc = t.find("scores");
    if (sc == nullptr) return fmt::format("{}\n= scores[…] × the scale\n(the scale: {})", here, c.scale);
    const double a = sc->value.at(flat);
    const Digits d = digits([&](int op) { return shown(a, op) * shown(c.scale_factor, op); });
    return fmt::format("{}\n= scores[…] × the scale = {} × {}\n(the scale: {})", here_at(d.res), num(a, d.op), num(c.scale_factor, d.op), c.scale);
  }

  std::string mask() const {
    return v != 0 ? fmt::format("{}\nquery {} may attend to key {}", here, qtok(e.row), ktok(e.col))
                  : fmt::format("{}\nquery {} may not attend to key {}: blocked", here, qtok(e.row), ktok(e.col));
  }

  std::string alibi() const {
    if (c.S != c.T) return fmt::format("{}\n−(the head's slope) × (the query's position − key {}'s)", here, ktok(e.col));
    const auto d = e.row - e.col;
    return fmt::format("{}\nkey {} lies {} position{} {} query {}: {} × the head's slope", here, ktok(e.col), d < 0 ? -d : d,
                       (d == 1 || d == -1) ? "" : "s", d < 0 ? "after" : "behind", qtok(e.row), -d);
  }

  std::string biased() const {
    const Step* sc = t.find("scaled") != nullptr ? t.find("scaled") : t.find("scores");
    const Step* al = t.find("alibi");
    if (sc == nullptr || al == nullptr) return here;
    const auto plane = al->value.size() / std::max<std::int64_t>(1, c.H);  // T·S
    const auto h = e.lead % std::max<std::int64_t>(1, c.H);
    const double a = sc->value.at(flat), b = al->value.at(h * plane + e.row * e.cols + e.col);
    const Digits d = digits([&](int op) { return shown(a, op) + shown(b, op); });
    return fmt::format("{}\n= {}[…] + alibi[…] = {} + {}", here_at(d.res), sc->id, num(a, d.op), num(b, d.op));
  }

  std::string capped() const {
    const Step* in = t.find("biased") != nullptr ? t.find("biased") : t.find("scaled") != nullptr ? t.find("scaled") : t.find("scores");
    if (in == nullptr) return here;
    if (!(c.softcap > 0)) return fmt::format("{}\n= c · tanh({}[…] / c)", here, in->id);
    const std::string cap = fmt::format("{:g}", c.softcap);
    const double a = in->value.at(flat), k = std::stod(cap);  // the cap as printed
    const Digits d = digits([&](int op) { return k * std::tanh(shown(a, op) / k); });
    return fmt::format("{}\n= {} · tanh({}[…] / {}) = {} · tanh({} / {})", here_at(d.res), cap, in->id, cap, cap, num(a, d.op), cap);
  }

  std::string mask_add() const {
    return fmt::format("{}\nadded to the scaled score before the softmax", here);
  }

  std::string masked() const {
    if (std::isinf(v) && v < 0) return fmt::format("{}\nblocked by the mask: −∞, so its weight will be exactly 0", here);
    const Step* before = logits_step(t);
    if (before == nullptr || before->value.shape() != s.value.shape()) return fmt::format("{}\n= the score: kept", here);
    const Scalar a = before->value.at(flat);
    const Step* add = t.find("mask.add");
    // mask.add is [T, S] (shared) or [B, T, S]
    const Scalar m = add == nullptr ? 0 : add->value.at((add->value.size() == e.rows * e.cols ? 0 : b * e.rows * e.cols) + e.row * e.cols + e.col);
    if (v != a + m)  // a finite mask_fill in place of the score
      return fmt::format("{}\nblocked by the mask: this run's mask_fill, {}, replaces the score (a finite number, not −∞)", here, signed_num(v, 0));
    if (add == nullptr) return fmt::format("{}\n= {}[…] = {}: kept", here, before->id, num(a));
    const Digits d = digits([&](int op) { return shown(a, op) + shown(m, op); });
    return fmt::format("{}\n= {}[…] + mask.add[…] = {} + {}: kept, plus the additive mask", here_at(d.res), before->id, num(a, d.op), num(m, d.op));
  }

  // One row of the softmax worked by hand: its largest logit, each key's exp(x − max) (blocked keys,
  // −∞, left out), their sum.
  struct SoftmaxRow {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    std::vector<double> exps;
    std::int64_t blocked = 0;
    double rest() const { return std::accumulate(exps.begin() + std::min<std::size_t>(Terms::kShown, exps.size()), exps.end(), 0.0); }
  };
  SoftmaxRow softmax_row(const Step& logits) const {
    SoftmaxRow r;
    const std::int64_t row0 = flat - e.col;
    for (std::int64_t j = 0; j < e.cols; ++j) r.mx = std::max(r.mx, static_cast<double>(logits.value.at(row0 + j)));
    for (std::int64_t j = 0; j < e.cols; ++j) {
      const double xj = logits.value.at(row0 + j);
      if (std::isinf(xj) && xj < 0) {
        ++r.blocked;
        continue;
      }
      r.exps.push_back(std::exp(xj - r.mx));
      r.sum += r.exps.back();
    }
    return r;
  }
  // Whether the softmax worked by hand reproduces with the logits and the terms of Σ to d.op decimals,
  // exp(x − max) and Σ (results, then operands of the quotient) to d.mid, the weight to d.res.
  struct SoftmaxDigits {
    int op = 4, mid = 4, res = 4;
  };
  bool softmax_reproduces(const SoftmaxRow& r, double x, const SoftmaxDigits& d) const {
    const double ex = std::exp(x - r.mx), ex_printed = std::exp(shown(x, d.op) - shown(r.mx, d.op));
    double sum = r.exps.size() > Terms::kShown ? shown(r.rest(), d.op) : 0;
    for (std::size_t j = 0; j < std::min(Terms::kShown, r.exps.size()); ++j) sum += shown(r.exps[j], d.op);
    return reproduces(ex_printed, ex, d.mid) && reproduces(sum, r.sum, d.mid) && reproduces(ex_printed / shown(r.sum, d.mid), v, d.res) &&
           reproduces(shown(ex, d.mid) / shown(r.sum, d.mid), v, d.res);
  }
  SoftmaxDigits softmax_digits(const SoftmaxRow& r, double x) const {
    for (int op = 4; op <= 9; ++op)
      for (int mid = 4; mid <= op; ++mid)
        for (int res = 4; res <= mid; ++res)
          if (softmax_reproduces(r, x, {op, mid, res})) return {op, mid, res};
    return {9, 9, 9};
  }
  // The weight as the sentence says it: 1 or 0 only when it is exactly that, else the digits that show it is not.
  static std::string share(double w, int decimals) {
    if (w == 0 || w == 1 || std::isnan(w)) return num(w, decimals);
    for (int d = decimals; d <= 9; ++d)
      if (const double back = shown(w, d); back != 0 && back != 1) return num(w, d);
    return fmt::format("{:.1e}", w);
  }

  std::string weights() const {
    const Step* logits = t.find("masked");
    if (logits == nullptr || logits->value.shape() != s.value.shape()) logits = logits_step(t);
    if (logits == nullptr) return here;
    const SoftmaxRow r = softmax_row(*logits);
    const double x = logits->value.at(flat);
    if (std::isinf(r.mx) && r.mx < 0) {  // no key left in the row: the masked_row policy fills it
      return fmt::format("{}\nquery {} may see no key at all: the row is filled by the \"masked_row\" policy ({})", here, qtok(e.row),
                         std::isnan(v) ? "nan" : v == 0 ? "zeros" : "uniform, 1/S each");
    }
    if (std::isinf(x) && x < 0) return fmt::format("{}\nexp(−∞) = 0: key {} is blocked", here, ktok(e.col));
    const SoftmaxDigits d = softmax_digits(r, x);
    std::vector<std::string> parts;
    for (std::size_t j = 0; j < std::min(Terms::kShown, r.exps.size()); ++j) parts.push_back(num(r.exps[j], d.op));
    if (r.exps.size() > Terms::kShown) parts.push_back(fmt::format("{} (the other {} keys, summed)", num(r.rest(), d.op), r.exps.size() - Terms::kShown));
    const std::string sum = num(r.sum, d.mid);
    return fmt::format("{}\n= exp({} − max) / Σ exp(row − max), max = {}\n= exp({} − {}) / {} = {} / {}\nΣ = {} = {}{}\nquery {} puts {} of its "
                       "attention on key {}",
                       here_at(d.res), logits->id, num(r.mx, d.op), num(x, d.op), operand(r.mx, d.op), sum, num(std::exp(x - r.mx), d.mid), sum,
                       fmt::join(parts, " + "), sum,
                       r.blocked > 0 ? fmt::format(" ({} blocked key{} add{} 0)", r.blocked, r.blocked == 1 ? "" : "s", r.blocked == 1 ? "s" : "") : "",
                       qtok(e.row), share(v, d.res), ktok(e.col));
  }

  std::string context() const {
    const Step* w = t.find("weights");
    const Step* vs = t.find("v.repeat") != nullptr ? t.find("v.repeat") : rows_step(t, "v.heads", "v");
    if (w == nullptr || vs == nullptr) return here;
    const auto S = w->value.shape().back(), hv = vs->value.shape().back();
    Terms tv;
    std::int64_t blocked_terms = 0;
    for (std::int64_t j = 0; j < S; ++j) {
      const Scalar wj = w->value.at((e.lead * e.rows + e.row) * S + j);
      if (wj == 0) {
        ++blocked_terms;
        continue;
      }
      tv.t.emplace_back(wj, vs->value.at((e.lead * S + j) * hv + e.col));
    }
    const Digits d = digits([&](int op) { return tv.printed(op); });
    return fmt::format("{}\n= Σ over keys j of weights[{}{}, j] × {}[{}j, {}]: query {}'s mixture of values, feature {}\n= {}{}", here_at(d.res), lead,
                       e.row, vs->id, lead, e.col, qtok(e.row), e.col, tv.text(d.op),
                       blocked_terms > 0 ? fmt::format("\n({} key{} with weight 0 add{} nothing)", blocked_terms, blocked_terms == 1 ? "" : "s",
                                                       blocked_terms == 1 ? "s" : "") : "");
  }

  std::string merged() const {
    const auto hv = c.hv > 0 ? c.hv : c.hs;
    const auto h = hv > 0 ? e.col / hv : 0, d = hv > 0 ? e.col % hv : e.col;
    return fmt::format("{}\n= context[{}{}, {}, {}]: head {}'s feature {} placed at column {}·{} + {}", here, lead, h, e.row, d, h, d, h, hv, d);
  }
};

}  // namespace

std::string explain_cell(const Trace& t, const Step& s, std::int64_t flat) {
  using Words = std::string (CellWords::*)() const;
  static const std::map<std::string_view, Words> kTable = {
      {"positions", &CellWords::positions},
      {"x.pos", &CellWords::x_pos},
      {"rope.cos", &CellWords::rope_tables},
      {"rope.sin", &CellWords::rope_tables},
      {"q.rope", &CellWords::rope},
      {"k.rope", &CellWords::rope},
      {"x", &CellWords::input},
      {"source", &CellWords::input},
      {"q", &CellWords::projection},
      {"k", &CellWords::projection},
      {"v", &CellWords::projection},
      {"qkv", &CellWords::projection},
      {"output", &CellWords::projection},
      {"q.view", &CellWords::view},
      {"k.view", &CellWords::view},
      {"v.view", &CellWords::view},
      {"k.repeat", &CellWords::repeat},
      {"v.repeat", &CellWords::repeat},
      {"q.heads", &CellWords::heads},
      {"k.heads", &CellWords::heads},
      {"v.heads", &CellWords::heads},
      {"k.T", &CellWords::kt},
      {"scores", &CellWords::scores},
      {"scaled", &CellWords::scaled},
      {"mask", &CellWords::mask},
      {"alibi", &CellWords::alibi},
      {"biased", &CellWords::biased},
      {"capped", &CellWords::capped},
      {"mask.add", &CellWords::mask_add},
      {"masked", &CellWords::masked},
      {"weights", &CellWords::weights},
      {"context", &CellWords::context},
      {"merged", &CellWords::merged},
  };
  const CellWords words{t, s, flat};
  const auto it = kTable.find(s.id);
  return it == kTable.end() ? words.here : (words.*(it->second))();
}

}  // namespace attn


