// Masks beyond mode "causal": attn_mask (block, keep or add), padding lengths, the causal alignment
// when T != S, the policy for fully masked rows, and the fill value. Applying them is the pipeline's job.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "attn/spec/readers.hpp"

namespace attn {

namespace {

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
  Tensor::Wide wide;  // an additive mask's numbers as written, for attn check's float64 judge
  a.for_each_leaf([&](const json& e, const LeafPath& at) {
    if (kind == "add") {
      if (e.is_number()) {
        const double d = e.get<double>();
        if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<Scalar>::max()) fail(at.str(), fmt::format("{} does not fit in float32", e.dump()));
        values.push_back(static_cast<Scalar>(d));
        wide.push_back(d);
      } else if (e == "-inf") {
        values.push_back(-std::numeric_limits<Scalar>::infinity());
        wide.push_back(-std::numeric_limits<double>::infinity());
      } else if (const char* name = non_finite_name(e)) {
        fail(at.str(), fmt::format("{} is not allowed here (expected a finite number or \"-inf\")", name));
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
  s.user_mask = kind == "add" ? UserMask::Add : kind == "keep" ? UserMask::Keep : UserMask::Block;
  if (kind == "add") s.user_add = t.with_wide(std::move(wide));
  else s.user_keep = t;
}

// padding: {"lengths": [one per batch row]}; key positions >= length are masked.
void read_padding(const json& root, Spec& s) {
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

}  // namespace

void read_masks(const json& root, Spec& s) {
  if (root.contains("attn_mask")) read_attn_mask(root, s);
  if (root.contains("causal_align")) {
    s.causal_align = read_choice<CausalAlign>(root["causal_align"], "causal_align",
                                              {{"top-left", CausalAlign::TopLeft}, {"bottom-right", CausalAlign::BottomRight}});
    if (!s.causal) fail("causal_align", fmt::format("only a causal mask has an alignment (mode is \"{}\")", mode_name(s.mode)));
  }
  if (root.contains("window")) {
    // Mistral's sliding window: W keys, the query's own included
    s.window = read_positive(root["window"], "window");
    if (!s.causal) {
      fail("window", fmt::format("a sliding window limits a causal mask to the last W keys: use mode \"causal\" (mode is \"{}\")", mode_name(s.mode)));
    }
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
  if (root.contains("padding")) read_padding(root, s);
}

}  // namespace attn
