// FlashAttention's tiled forward pass over the trace's q, k and v rows. Built with -ffp-contract=off:
// exp and tanh are attn's own (fixed_math.hpp), so the tiles hold the same bits everywhere.
#include "attn/pipeline/flash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/core/error.hpp"
#include "attn/numerics/fixed_math.hpp"

namespace attn {
namespace {

constexpr Scalar kNegInf = -std::numeric_limits<Scalar>::infinity();

// e^d in float for d ≤ 0: 0 below float's range (and for −inf), attn's own exp otherwise
Scalar exp_down(double d) { return d < -700 ? Scalar{0} : static_cast<Scalar>(fixed::exp(d)); }

}  // namespace

const Step& rows_of(const Trace& t, std::initializer_list<const char*> ids, const char* what, Door door) {
  for (const char* id : ids)
    if (const Step* s = t.find(id)) return *s;
  throw InputError(fmt::format("{}: the trace has no {} to tile (given scores, or no values)", option_name(door, "flash"), what));
}

TileLogits::TileLogits(const Spec& s, const Trace& t, Door door)
    : s_(s),
      q_(&rows_of(t, {"q.rope", "q.heads", "q"}, "queries", door)),
      k_(&rows_of(t, {"k.repeat", "k.rope", "k.heads", "k"}, "keys", door)),
      mask_(t.find("mask")),
      mask_per_batch_(mask_ != nullptr && mask_->value.size() == s.B * s.T * s.S && s.B > 1),
      scale_(t.config.scale_factor),
      fill_(s.mask_fill ? *s.mask_fill : kNegInf) {}

Scalar TileLogits::operator()(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j, Scalar* slope) const {
  const auto& s = s_;
  const auto H = s.H, T = s.T, S = s.S, hs = s.hs();
  const Scalar* qi = q_->value.data() + ((b * H + h) * T + i) * hs;
  const Scalar* kj = k_->value.data() + ((b * H + h) * S + j) * hs;
  double dot = 0;
  for (std::int64_t d = 0; d < hs; ++d) dot += static_cast<double>(qi[d]) * static_cast<double>(kj[d]);
  Scalar x = static_cast<Scalar>(dot);
  Scalar dx = 1;
  if (s.scale_kind != ScaleKind::None) x = x * scale_, dx = scale_;
  if (!s.alibi_slopes.shape().empty()) x = x + -s.alibi_slopes.data()[h] * static_cast<Scalar>(i + s.causal_offset() - j);
  if (s.relative_bias) x = x + s.relative_bias->bias.data()[(h * T + i) * S + j];
  if (s.softcap) {
    const auto cap = static_cast<Scalar>(*s.softcap);
    const auto th = static_cast<Scalar>(fixed::tanh(static_cast<double>(x / cap)));
    x = th * cap;
    dx = dx * (1 - th * th);
  }
  if (!s.user_add.shape().empty()) x = x + s.user_add.data()[((s.user_add.dim(0) == 1 ? 0 : b) * T + i) * S + j];
  if (mask_ != nullptr && mask_->value.data()[((mask_per_batch_ ? b : 0) * T + i) * S + j] == 0) x = fill_, dx = 0;
  if (slope != nullptr) *slope = dx;
  return x;
}

std::pair<std::int64_t, std::int64_t> parse_tile_sizes(const std::string& text, Door door) {
  const auto x = text.find('x');
  std::int64_t bq = 0, bk = 0;
  std::size_t used_q = 0, used_k = 0;
  try {
    if (x != std::string::npos) bq = std::stoll(text.substr(0, x), &used_q), bk = std::stoll(text.substr(x + 1), &used_k);
  } catch (const std::exception&) {
    bq = bk = 0;
  }
  if (x == std::string::npos || used_q != x || used_k != text.size() - x - 1 || bq < 1 || bk < 1) {
    throw InputError(fmt::format("{}: expected BQxBK, two positive tile sizes such as 2x3 (queries × keys per tile)", option_with(door, "flash", text)));
  }
  return {bq, bk};
}

// One tile of the online softmax for its qn query rows: each row's running max m, sum l and weighted
// value sum acc rescaled by exp(m_old − m_new), then the tile's keys added (v_rows: the value row of
// the tile's first key, hv wide).
void absorb_tile(FlashTile& tile, std::int64_t qn, std::int64_t hv, const Scalar* v_rows, std::vector<Scalar>& m, std::vector<Scalar>& l,
                 std::vector<Scalar>& acc) {
  const auto kn = tile.kn;
  tile.rescale.resize(static_cast<std::size_t>(qn));
  for (std::int64_t i = 0; i < qn; ++i) {
    const auto r = static_cast<std::size_t>(i);
    Scalar mx = m[r];
    for (std::int64_t j = 0; j < kn; ++j) mx = std::max(mx, tile.scores[static_cast<std::size_t>(i * kn + j)]);
    // a row with nothing visible yet keeps m = −inf: nothing to rescale, nothing to add
    const Scalar factor = mx == kNegInf ? 1 : exp_down(static_cast<double>(m[r]) - static_cast<double>(mx));
    tile.rescale[r] = factor;
    double row_sum = 0;
    std::vector<double> add(static_cast<std::size_t>(hv), 0.0);
    for (std::int64_t j = 0; j < kn; ++j) {
      const Scalar x = tile.scores[static_cast<std::size_t>(i * kn + j)];
      if (x == kNegInf) continue;
      const Scalar p = exp_down(static_cast<double>(x - mx));
      row_sum += p;
      const Scalar* vj = v_rows + j * hv;
      for (std::int64_t d = 0; d < hv; ++d) add[static_cast<std::size_t>(d)] += static_cast<double>(p) * vj[d];
    }
    l[r] = factor * l[r] + static_cast<Scalar>(row_sum);
    for (std::int64_t d = 0; d < hv; ++d) {
      auto& a = acc[static_cast<std::size_t>(i * hv + d)];
      a = factor * a + static_cast<Scalar>(add[static_cast<std::size_t>(d)]);
    }
    m[r] = mx;
  }
}

void require_tileable(const PipelineOptions& o) {
  const auto flash = option_name(o.door, "flash");
  if (o.fused) {
    throw InputError(fmt::format("{}: the tiled pass draws the scores and weights, which the fused pass never keeps; run without {}", flash,
                                 switch_on(o.door, "fused")));
  }
  if (o.mistake != Mistake::None) throw InputError(fmt::format("{}: tiles the correct pass; leave out {}", flash, option_name(o.door, "mistake")));
}

Flash run_flash(const Spec& s, const Trace& t, std::int64_t BQ, std::int64_t BK, Door door) {
  if (BQ < 1 || BK < 1) throw InputError(fmt::format("{}: tile sizes must be positive", option_name(door, "flash")));
  const TileLogits logit(s, t, door);
  const Step& v = rows_of(t, {"v.repeat", "v.heads", "v"}, "values", door);
  const Step* context = t.find("context");
  Flash f;
  f.BQ = BQ, f.BK = BK, f.B = s.B, f.H = s.H, f.T = s.T, f.S = s.S, f.hs = s.hs(), f.hv = s.hv();
  const auto B = f.B, H = f.H, T = f.T, S = f.S, hv = f.hv;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t q0 = 0; q0 < T; q0 += BQ) {
        FlashBlock blk;
        blk.b = b, blk.h = h, blk.q0 = q0, blk.qn = std::min(BQ, T - q0);
        const auto qn = blk.qn;
        std::vector<Scalar> m(static_cast<std::size_t>(qn), kNegInf), l(static_cast<std::size_t>(qn), 0), acc(static_cast<std::size_t>(qn * hv), 0);
        for (std::int64_t k0 = 0; k0 < S; k0 += BK) {
          FlashTile tile;
          tile.k0 = k0, tile.kn = std::min(BK, S - k0);
          const auto kn = tile.kn;
          tile.scores.resize(static_cast<std::size_t>(qn * kn));
          bool any = false;
          for (std::int64_t i = 0; i < qn; ++i)
            for (std::int64_t j = 0; j < kn; ++j) {
              const Scalar x = logit(b, h, q0 + i, k0 + j);
              tile.scores[static_cast<std::size_t>(i * kn + j)] = x;
              any = any || x != kNegInf;
            }
          tile.m_old = m;
          if (!any) {
            tile.skipped = true;
            ++f.tiles_skipped;
            blk.tiles.push_back(std::move(tile));
            continue;
          }
          ++f.tiles_done;
          absorb_tile(tile, qn, hv, v.value.data() + ((b * H + h) * S + k0) * hv, m, l, acc);
          tile.m = m, tile.l = l, tile.acc = acc;
          blk.tiles.push_back(std::move(tile));
        }
        // the final normalisation; a row that saw no key follows the masked-row policy
        blk.out.resize(static_cast<std::size_t>(qn * hv));
        for (std::int64_t i = 0; i < qn; ++i)
          for (std::int64_t d = 0; d < hv; ++d) {
            const auto r = static_cast<std::size_t>(i);
            Scalar o = 0;
            if (l[r] > 0) {
              o = acc[static_cast<std::size_t>(i * hv + d)] / l[r];
            } else if (s.masked_row == MaskedRow::Nan) {
              o = std::numeric_limits<Scalar>::quiet_NaN();
            } else if (s.masked_row == MaskedRow::Uniform) {
              double sum = 0;
              for (std::int64_t j = 0; j < S; ++j) sum += v.value.data()[((b * H + h) * S + j) * hv + d];
              o = static_cast<Scalar>(sum / static_cast<double>(S));
            }
            blk.out[static_cast<std::size_t>(i * hv + d)] = o;
            if (context != nullptr) {
              const Scalar c = context->value.data()[((b * H + h) * T + q0 + i) * hv + d];
              const double diff = std::isnan(c) && std::isnan(o) ? 0.0 : std::fabs(static_cast<double>(c) - static_cast<double>(o));
              f.max_diff = std::isnan(diff) ? INFINITY : std::max(f.max_diff, diff);
            }
          }
        f.blocks.push_back(std::move(blk));
      }
  return f;
}

}  // namespace attn
