// attn heads: summarise_head on hand-made heads, and the text, SVG and JSON renderers on a tiny view.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "attn/model/tools/heads.hpp"
#include "attn/render/heads_layout.hpp"

using namespace attn;
using namespace attn::model;

namespace {

// rows[i][j] for j ≤ i; zero above the diagonal
std::vector<float> head(const std::vector<std::vector<float>>& rows) {
  const auto T = rows.size();
  std::vector<float> w(T * T, 0.f);
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < rows[i].size(); ++j) w[i * T + j] = rows[i][j];
  return w;
}

// The uniform entropy of T causal rows: mean of log2(i + 1).
double uniform_entropy(int T) {
  double s = 0;
  for (int i = 0; i < T; ++i) s += std::log2(i + 1.0);
  return s / T;
}

// 2 layers × 2 heads × T = 3: L0 h0 previous token, L0 h1 first token, L1 h0 same token, L1 h1 uniform.
HeadsView tiny_view() {
  HeadsView v;
  v.model = "tiny (hand-made)";
  v.tokens = {"The", " cat", " sat"};
  v.layers = 2, v.heads = 2, v.T = 3;
  v.notes = {"hand-made weights"};
  const std::vector<std::vector<std::vector<float>>> heads = {
      {{1}, {1, 0}, {0, 1, 0}},                   // previous
      {{1}, {1, 0}, {1, 0, 0}},                   // first
      {{1}, {0, 1}, {0, 0, 1}},                   // same
      {{1}, {0.5f, 0.5f}, {0.3f, 0.3f, 0.4f}},    // broad
  };
  for (const auto& h : heads) {
    const auto w = head(h);
    v.weights.insert(v.weights.end(), w.begin(), w.end());
    v.summaries.push_back(summarise_head(w.data(), v.T));
  }
  return v;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("pattern names", "[heads]") {
  CHECK(std::string(pattern_name(HeadPattern::PreviousToken)) == "previous token");
  CHECK(std::string(pattern_name(HeadPattern::FirstToken)) == "first token");
  CHECK(std::string(pattern_name(HeadPattern::SameToken)) == "same token");
  CHECK(std::string(pattern_name(HeadPattern::Broad)) == "broad");
  CHECK(std::string(pattern_name(HeadPattern::Mixed)) == "mixed");
}

TEST_CASE("summarise_head: a pure previous-token head", "[heads]") {
  const auto w = head({{1}, {1, 0}, {0, 1, 0}, {0, 0, 1, 0}});
  const auto s = summarise_head(w.data(), 4);
  CHECK(s.pattern == HeadPattern::PreviousToken);
  CHECK(s.pattern_share == 1.0);
  CHECK(s.entropy == 0.0);
  CHECK(s.max_entropy == Approx((0 + 1 + std::log2(3.0) + 2) / 4));
  CHECK(s.max_off_diagonal == 1.0);
  CHECK(s.max_query == 1);  // the first of the ties, row-major
  CHECK(s.max_key == 0);
}

TEST_CASE("summarise_head: a first-token head", "[heads]") {
  const auto w = head({{1}, {1, 0}, {0.9f, 0.05f, 0.05f}, {0.7f, 0.1f, 0.1f, 0.1f}});
  const auto s = summarise_head(w.data(), 4);
  CHECK(s.pattern == HeadPattern::FirstToken);
  CHECK(s.pattern_share == Approx((1 + 0.9 + 0.7) / 3));
  const double h2 = -(0.9 * std::log2(0.9) + 2 * 0.05 * std::log2(0.05));
  const double h3 = -(0.7 * std::log2(0.7) + 3 * 0.1 * std::log2(0.1));
  CHECK(s.entropy == Approx((h2 + h3) / 4).epsilon(1e-6));
  CHECK(s.max_off_diagonal == Approx(1.0));
  CHECK(s.max_query == 1);
  CHECK(s.max_key == 0);
}

TEST_CASE("summarise_head: a same-token head", "[heads]") {
  const auto w = head({{1}, {0.2f, 0.8f}, {0.1f, 0.3f, 0.6f}});
  const auto s = summarise_head(w.data(), 3);
  CHECK(s.pattern == HeadPattern::SameToken);
  CHECK(s.pattern_share == Approx(0.7));  // (0.8 + 0.6) / 2: query 0 is left out
  CHECK(s.max_off_diagonal == Approx(0.3));
  CHECK(s.max_query == 2);
  CHECK(s.max_key == 1);
}

TEST_CASE("summarise_head: uniform weights are broad", "[heads]") {
  const auto w = head({{1}, {0.5f, 0.5f}, {1 / 3.f, 1 / 3.f, 1 / 3.f}, {0.25f, 0.25f, 0.25f, 0.25f}});
  const auto s = summarise_head(w.data(), 4);
  CHECK(s.pattern == HeadPattern::Broad);
  CHECK(s.entropy == Approx(uniform_entropy(4)).epsilon(1e-6));
  CHECK(s.max_entropy == Approx(uniform_entropy(4)));
  CHECK(s.pattern_share == Approx(1.0).epsilon(1e-6));
  CHECK(s.max_off_diagonal == 0.5);
  CHECK(s.max_query == 1);
  CHECK(s.max_key == 0);
}

TEST_CASE("summarise_head: a mixed head", "[heads]") {
  // no position holds half the weight, and the rows are far from uniform
  const auto w = head({{1}, {0.6f, 0.4f}, {0.3f, 0.05f, 0.65f}, {0.02f, 0.9f, 0.04f, 0.04f}, {0.02f, 0.02f, 0.9f, 0.03f, 0.03f}});
  const auto s = summarise_head(w.data(), 5);
  const double previous = (0.6 + 0.05 + 0.04 + 0.03) / 4, first = (0.6 + 0.3 + 0.02 + 0.02) / 4, same = (0.4 + 0.65 + 0.04 + 0.03) / 4;
  REQUIRE(same > previous);
  REQUIRE(same > first);
  REQUIRE(same < 0.5);
  CHECK(s.pattern == HeadPattern::Mixed);
  CHECK(s.pattern_share == Approx(same));
  CHECK(s.entropy < 0.8 * s.max_entropy);
  CHECK(s.max_off_diagonal == Approx(0.9));
  CHECK(s.max_query == 3);
  CHECK(s.max_key == 1);
}

TEST_CASE("summarise_head: previous and first both past 0.5, the larger wins, a tie goes to previous", "[heads]") {
  // T = 2: the previous token is the first token
  const auto two = head({{1}, {1, 0}});
  const auto s2 = summarise_head(two.data(), 2);
  CHECK(s2.pattern == HeadPattern::PreviousToken);
  CHECK(s2.pattern_share == 1.0);
  // T = 3: previous (1 + 0.3) / 2 = 0.65, first (1 + 0.7) / 2 = 0.85
  const auto three = head({{1}, {1, 0}, {0.7f, 0.3f, 0}});
  const auto s3 = summarise_head(three.data(), 3);
  CHECK(s3.pattern == HeadPattern::FirstToken);
  CHECK(s3.pattern_share == Approx(0.85));
}

TEST_CASE("summarise_head: one token", "[heads]") {
  const float w[1] = {1.f};
  const auto s = summarise_head(w, 1);
  CHECK(s.pattern == HeadPattern::SameToken);
  CHECK(s.pattern_share == 1.0);
  CHECK(s.entropy == 0.0);
  CHECK(s.max_entropy == 0.0);
  CHECK(s.max_off_diagonal == 0.0);
  CHECK(s.max_query == 0);
  CHECK(s.max_key == 0);
}

TEST_CASE("heads text: a 2 × 2 × 3 view, exact lines", "[heads]") {
  const auto v = tiny_view();
  std::ostringstream out;
  render_heads_text(v, out, ColorMode::None, 120);
  const std::vector<std::string> expected = {
      "attn heads · tiny (hand-made)",
      "2 layers × 2 heads, T = 3; weights on one scale, 0 to 1, for every head",
      "  note: hand-made weights",
      "tokens (3): 0 The  1 cat  2 sat",
      "",
      "      queries ↓ keys →",
      "      h0      h1",
      "L0    0 1 2   0 1 2",  // each layer's line: the keys' positions above each head
      "0 The ██····  ██····",  // each row: its query, as the tokens line names it
      "1 cat ██  ··  ██  ··",
      "2 sat   ██    ██",
      "",
      "L1    0 1 2   0 1 2",
      "0 The ██····  ██····",
      "1 cat   ██··  ▓▓▓▓··",
      "2 sat     ██  ▒▒▒▒▒▒",
      "",
      "weight:  ' ' < 0.02  ░ 0.02–0.25  ▒ 0.25–0.50  ▓ 0.50–0.75  █ ≥ 0.75",
      "· above the diagonal: masked (a query sees only itself and earlier tokens)",
      "after each pattern: the mean weight on that key (previous, first or same token), or for broad its entropy ÷ a uniform",
      "  head's, or for mixed the largest of the three means (under 0.5)",
      "entropy X of Y bits: how spread a head's rows are, averaged over the queries (0: each row on one key); Y is a uniform",
      "  head's, where every query spreads evenly over the keys it may see (log2 of their number, averaged)",
      // what the shares under each head are, and the labels' thresholds
      "under each head, means over the queries: first, previous, self (the first query left out: it sees only itself): the",
      "  weight on the first token, the token before, the token itself; distance: Σ weight × |query − key|, in tokens; local",
      "  (from T = 32): the weight on the query and the 7 tokens before it. The label: the largest of the named shares if ≥",
      "  0.5; else local if ≥ 0.8; induction (≥ 0.4) if larger than either; else broad if the entropy is ≥ 0.8 of a uniform",
      "  head's; else mixed",
      "",
      "L0 h0  previous token 1.00   entropy 0.00 of 0.86 bits   max off-diagonal 1.00 (cat → The)",
      // each head's shares under its line (queries 1 and 2: cat's previous token is the first), each layer's means after its heads
      "       first 0.50, previous 1.00, self 0.00, distance 0.7",
      "L0 h1  first token 1.00      entropy 0.00 of 0.86 bits   max off-diagonal 1.00 (cat → The)",
      "       first 1.00, previous 0.50, self 0.00, distance 1.0",
      "L0 mean: entropy 0.00 of 0.86 bits, first 0.75, previous 0.75, self 0.00, distance 0.8",
      "L1 h0  same token 1.00       entropy 0.00 of 0.86 bits   max off-diagonal 0.00 (cat → The)",
      "       first 0.00, previous 0.00, self 1.00, distance 0.0",
      "L1 h1  broad 0.99            entropy 0.86 of 0.86 bits   max off-diagonal 0.50 (cat → The)",
      "       first 0.40, previous 0.40, self 0.45, distance 0.5",
      "L1 mean: entropy 0.43 of 0.86 bits, first 0.20, previous 0.20, self 0.73, distance 0.2",
  };
  CHECK(lines_of(out.str()) == expected);
  // the same bytes every time
  std::ostringstream again;
  render_heads_text(v, again, ColorMode::None, 120);
  CHECK(again.str() == out.str());
}

TEST_CASE("heads text: colour cells and downsampling say what they show", "[heads]") {
  const auto v = tiny_view();
  std::ostringstream c;
  render_heads_text(v, c, ColorMode::TrueColor, 120);
  CHECK(c.str().find(heat_background(ColorMode::TrueColor, 1.0)) != std::string::npos);
  CHECK(c.str().find(kAnsiReset) != std::string::npos);
  // 2 same-token heads of 40 tokens in 40 columns: blocks of 3 × 3 tokens (the last holds 1), said under the grid
  HeadsView wide;
  wide.model = "wide";
  wide.layers = 1, wide.heads = 2, wide.T = 40;
  for (int k = 0; k < 40; ++k) wide.tokens.push_back("t" + std::to_string(k));
  wide.weights.assign(2 * 40 * 40, 0.f);
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 40; ++i) wide.weights[static_cast<std::size_t>((h * 40 + i) * 40 + i)] = 1.f;
  for (int h = 0; h < 2; ++h) wide.summaries.push_back(summarise_head(&wide.weights[static_cast<std::size_t>(h * 1600)], 40));
  std::ostringstream narrow;
  render_heads_text(wide, narrow, ColorMode::None, 40);
  const auto nl = lines_of(narrow.str());
  // said under the grid, wrapped to the 40 columns
  const auto said = std::find(nl.begin(), nl.end(), "each cell shows the largest weight of a");
  REQUIRE(nl.end() - said > 2);
  CHECK(said[1] == "  3 × 3 block of tokens (tokens 0–2,");
  CHECK(said[2] == "  3–5, …; the last block has 1); --width");
  // "--width N gives each token its row, named": at N no block is pooled, at N − 1 one still is
  REQUIRE(said[3].find(" gives each token its row, named") != std::string::npos);
  const int unpooled = std::stoi(said[3].substr(2));
  std::ostringstream at, below;
  render_heads_text(wide, at, ColorMode::None, unpooled);
  render_heads_text(wide, below, ColorMode::None, unpooled - 1);
  const auto named_row = [](const std::string& text) {  // query 39's row, labelled with its whole token
    for (const auto& line : lines_of(text))
      if (line.rfind("39 t39 ", 0) == 0) return true;
    return false;
  };
  CHECK(at.str().find("each cell shows the largest weight") == std::string::npos);
  CHECK(named_row(at.str()));
  CHECK(!named_row(below.str()));
  // 14 cells a side, one character each, the heads one column apart, within the 40 columns; each row
  // labelled with its block's positions, the layer's line with every 5th column's first position
  const auto top = std::find(nl.begin(), nl.end(), "      h0             h1");
  REQUIRE(top != nl.end());
  REQUIRE(nl.end() - top > 16);
  CHECK(top[1] == "L0    0    15   30   0    15   30");
  CHECK(top[2] == "  0–2 █············· █·············");  // masked cells dotted, a weight near 0 blank
  CHECK(top[4] == "  6–8   █···········   █···········");
  CHECK(top[15] == "   39              █              █");  // the last block: one token
  CHECK(top[16].empty());
  for (const auto& line : nl) CHECK(attn::cells(line) <= 40);
  const auto f = heads_detail::fit_text_grid(64, 64, 12, 5, 120);
  CHECK(f.block == 8);
  CHECK(f.n == 8);
  CHECK(f.per_band == 12);
  const auto g = heads_detail::fit_text_grid(8, 8, 4, 4, 120);
  CHECK(g.block == 1);
  CHECK(g.cell_w == 2);
}

TEST_CASE("heads text: repeated and blank tokens get distinct labels", "[heads]") {
  HeadsView v;
  v.tokens = {"the", " the", "\n", "a<b"};
  v.T = 4;
  const auto labels = heads_detail::token_labels(v);
  CHECK(labels == std::vector<std::string>{"the₁", "the₂", "⏎", "a<b"});
}

TEST_CASE("heads svg: well-formed, labelled", "[heads]") {
  const auto v = tiny_view();
  std::ostringstream out;
  render_heads_svg(v, out);
  const std::string s = out.str();
  CHECK(s.rfind("<?xml", 0) == 0);
  // balanced elements: every opening tag closed (or self-closed), in order
  std::vector<std::string> stack;
  for (std::size_t at = s.find('<'); at != std::string::npos; at = s.find('<', at + 1)) {
    if (s.compare(at, 2, "<?") == 0) continue;
    const auto end = s.find('>', at);
    REQUIRE(end != std::string::npos);
    const std::string tag = s.substr(at + 1, end - at - 1);
    if (tag.front() == '/') {
      REQUIRE(!stack.empty());
      CHECK(stack.back() == tag.substr(1));
      stack.pop_back();
    } else if (tag.back() != '/') {
      stack.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
  }
  CHECK(stack.empty());
  for (const char* label : {">L0<", ">L1<", ">h0<", ">h1<", ">The<", ">cat<", ">sat<", "previous token 1.00", "first token 1.00", "same token 1.00",
                            "broad 0.99", "masked"})
    CHECK(s.find(label) != std::string::npos);
  CHECK(s.find(svg_hex(viridis(1.0))) != std::string::npos);
}

TEST_CASE("heads json: parses back with the sizes and values", "[heads]") {
  auto v = tiny_view();
  v.weights[0] = 0.1f;  // a value that needs all its digits
  std::ostringstream out;
  render_heads_json(v, out);
  const auto j = nlohmann::json::parse(out.str());
  CHECK(j["format"] == "attn-heads");
  CHECK(j["model"] == "tiny (hand-made)");
  CHECK(j["tokens"] == std::vector<std::string>{"The", " cat", " sat"});
  CHECK(j["layers"] == 2);
  CHECK(j["heads"] == 2);
  CHECK(j["notes"].size() == 1);
  REQUIRE(j["weights"].size() == 2);
  REQUIRE(j["weights"][1].size() == 2);
  REQUIRE(j["weights"][1][1].size() == 3);
  REQUIRE(j["weights"][1][1][2].size() == 3);
  CHECK(j["weights"][0][0][0][0].get<float>() == 0.1f);
  CHECK(j["weights"][1][1][2][2].get<float>() == 0.4f);
  CHECK(j["weights"][1][1][2][0].get<float>() == 0.3f);
  CHECK(j["weights"][0][0][0][1].get<float>() == 0.f);
  REQUIRE(j["summaries"].size() == 2);
  REQUIRE(j["summaries"][0].size() == 2);
  const auto& s = j["summaries"][1][1];
  CHECK(s["pattern"] == "broad");
  CHECK(s["entropy"].get<double>() == v.summary(1, 1).entropy);
  CHECK(s["max_entropy"].get<double>() == v.summary(1, 1).max_entropy);
  CHECK(s["pattern_share"].get<double>() == v.summary(1, 1).pattern_share);
  CHECK(s["max_off_diagonal"].get<double>() == 0.5);
  CHECK(s["max_query"] == 1);
  CHECK(s["max_key"] == 0);
  CHECK(j["summaries"][0][0]["pattern"] == "previous token");
}

TEST_CASE("heads renderers refuse a view whose sizes do not match", "[heads]") {
  auto v = tiny_view();
  v.weights.pop_back();
  std::ostringstream out;
  CHECK_THROWS_AS(render_heads_json(v, out), InternalError);
  CHECK_THROWS_AS(render_heads_text(v, out, ColorMode::None, 120), InternalError);
}

TEST_CASE("heads html: self-contained, one button per head", "[heads]") {
  auto v = tiny_view();
  v.tokens[2] = "</script>";
  std::ostringstream out;
  render_heads_html(v, out);
  const std::string s = out.str();
  std::size_t buttons = 0;
  for (auto at = s.find("<button class=\"head\""); at != std::string::npos; at = s.find("<button class=\"head\"", at + 1)) ++buttons;
  CHECK(buttons == 4);
  CHECK(s.find("http://") == std::string::npos);
  CHECK(s.find("https://") == std::string::npos);
  // the token cannot end the data's script element early
  std::size_t closes = 0;
  for (auto at = s.find("</script>"); at != std::string::npos; at = s.find("</script>", at + 1)) ++closes;
  CHECK(closes == 2);
}

TEST_CASE("a sliding window bounds a head's uniform entropy and what is drawn as masked", "[heads]") {
  using namespace attn::model;
  // T = 4, window 2: query i sees keys i − 1 and i; uniform over them
  const std::vector<float> w = {1, 0, 0, 0, 0.5f, 0.5f, 0, 0, 0, 0.5f, 0.5f, 0, 0, 0, 0.5f, 0.5f};
  const HeadSummary s = summarise_head(w.data(), 4, 2);
  CHECK(s.max_entropy == Approx(0.75));  // (log2 1 + 3 · log2 2) / 4
  CHECK(s.entropy == Approx(0.75));
  CHECK(s.pattern == HeadPattern::PreviousToken);  // mean w[i][i−1] = 0.5 wins over same token's tie
  CHECK(summarise_head(w.data(), 4).max_entropy == Approx((0 + 1 + std::log2(3.0) + 2) / 4));
  HeadsView v;
  v.T = 4, v.layers = 1, v.windows = {2};
  CHECK(v.visible(0, 3, 2));
  CHECK_FALSE(v.visible(0, 3, 1));
  CHECK_FALSE(v.visible(0, 1, 2));
  CHECK(v.masked_text() == "masked (a query sees itself and the token before it: sliding window 2)");
  // Gemma's alternating layers: the window on layers 0 and 2 only
  v.layers = 3, v.windows = {2, 0, 2};
  CHECK_FALSE(v.visible(0, 3, 1));
  CHECK(v.visible(1, 3, 1));
  CHECK_FALSE(v.visible(2, 3, 1));
  CHECK(v.masked_text() == "masked (a query sees itself and earlier tokens; on the sliding layers 0, 2, itself and the token before it: sliding window 2)");
}

TEST_CASE("summarise_encoder_head: every key visible, and the next token, start and end tokens named", "[heads]") {
  // T = 5: [CLS] a b [SEP] c, ends at 3 (and nothing else)
  const std::int64_t T = 5;
  const EncoderSpecials sp{0, {3}, "[CLS]", "[SEP]"};
  auto one_hot = [&](auto key_of) {
    std::vector<float> w(T * T, 0.f);
    for (std::int64_t i = 0; i < T; ++i) w[static_cast<std::size_t>(i * T + key_of(i))] = 1.f;
    return w;
  };
  // every query on the next token (the last on itself): next 4/4
  auto next = summarise_encoder_head(one_hot([&](std::int64_t i) { return std::min(i + 1, T - 1); }).data(), T, sp);
  CHECK(next.pattern == HeadPattern::NextToken);
  CHECK(next.pattern_share == Approx(1.0));
  CHECK(next.max_entropy == Approx(std::log2(5.0)));
  CHECK(next.label.empty());
  // every query on [CLS]: the start token, labelled with its spelling
  auto cls = summarise_encoder_head(one_hot([](std::int64_t) { return std::int64_t{0}; }).data(), T, sp);
  CHECK(cls.pattern == HeadPattern::StartToken);
  CHECK(cls.label == "to [CLS]");
  CHECK(cls.pattern_share == Approx(1.0));
  // every query on [SEP], later keys included (an encoder sees them): the end token; the largest
  // off-diagonal weight may lie above the diagonal
  auto sep = summarise_encoder_head(one_hot([](std::int64_t) { return std::int64_t{3}; }).data(), T, sp);
  CHECK(sep.pattern == HeadPattern::EndToken);
  CHECK(sep.label == "to [SEP]");
  CHECK(sep.max_off_diagonal == Approx(1.0));
  CHECK(sep.max_query == 0);
  CHECK(sep.max_key == 3);
  // uniform over all five keys: broad, entropy log2 5 of log2 5
  std::vector<float> uniform(T * T, 0.2f);
  auto broad = summarise_encoder_head(uniform.data(), T, sp);
  CHECK(broad.pattern == HeadPattern::Broad);
  CHECK(broad.entropy == Approx(std::log2(5.0)));
  CHECK(heads_detail::pattern_text(broad) == "broad 1.00");
  CHECK(heads_detail::pattern_text(cls) == "to [CLS] 1.00");
}

TEST_CASE("summarise_head: an induction head, measured on a repeated sequence", "[heads]") {
  // tokens a b c a b c (ids 1 2 3 1 2 3): queries 3, 4, 5 have earlier occurrences at 0, 1, 2; the key
  // after each is 1, 2, 3. This head puts all its weight there (queries 0 .. 2 on themselves).
  const std::int64_t T = 6;
  const std::vector<std::int64_t> ids = {1, 2, 3, 1, 2, 3};
  std::vector<float> w(T * T, 0.f);
  for (std::int64_t i = 0; i < T; ++i) w[static_cast<std::size_t>(i * T + (i < 3 ? i : i - 2))] = 1.f;
  const auto s = summarise_head(w.data(), T, 0, &ids);
  CHECK(s.pattern == HeadPattern::Induction);
  CHECK(s.pattern_share == Approx(1.0));
  CHECK(std::string(pattern_name(s.pattern)) == "induction");
  // without the tokens there is nothing to measure: the same weights are mixed (same token only 2 of 5 queries)
  CHECK(summarise_head(w.data(), T).pattern == HeadPattern::Mixed);
  // a previous-token head on the same tokens stays a previous-token head (its induction score is 0)
  std::vector<float> prev(T * T, 0.f);
  prev[0] = 1.f;
  for (std::int64_t i = 1; i < T; ++i) prev[static_cast<std::size_t>(i * T + i - 1)] = 1.f;
  const auto p = summarise_head(prev.data(), T, 0, &ids);
  CHECK(p.pattern == HeadPattern::PreviousToken);
  CHECK(p.pattern_share == Approx(1.0));
  // under the 0.4 threshold: weight 0.3 on the induction key, the rest on the first token
  std::vector<float> weak(T * T, 0.f);
  for (std::int64_t i = 0; i < T; ++i) {
    if (i < 3) weak[static_cast<std::size_t>(i * T)] = 1.f;
    else weak[static_cast<std::size_t>(i * T + i - 2)] = 0.3f, weak[static_cast<std::size_t>(i * T)] += 0.7f;
  }
  CHECK(summarise_head(weak.data(), T, 0, &ids).pattern != HeadPattern::Induction);
}

TEST_CASE("heads html: every pattern has its caption (induction, next token, an encoder's start and end tokens)", "[heads]") {
  auto v = tiny_view();
  v.summaries[0].pattern = HeadPattern::Induction, v.summaries[0].pattern_share = 0.9;
  v.summaries[1].pattern = HeadPattern::NextToken, v.summaries[1].pattern_share = 0.8;
  v.summaries[2].pattern = HeadPattern::StartToken, v.summaries[2].pattern_share = 0.7, v.summaries[2].label = "to <s>";
  v.summaries[3].pattern = HeadPattern::EndToken, v.summaries[3].pattern_share = 0.6, v.summaries[3].label = "to [SEP]";
  std::ostringstream out;
  render_heads_html(v, out);
  const std::string html = out.str();
  CHECK(html.find("<span>induction 0.90</span>") != std::string::npos);
  CHECK(html.find("<span>next 0.80</span>") != std::string::npos);
  CHECK(html.find("<span>&lt;s&gt; 0.70</span>") != std::string::npos);
  CHECK(html.find("<span>[SEP] 0.60</span>") != std::string::npos);
}

TEST_CASE("summarise_cross_head: the diagonal, the source's end token, and the largest weight of all", "[heads]") {
  // T = 3 decoder tokens over S = 5 source tokens: the diagonal is keys 0, 2, 4
  const std::vector<float> diagonal = {0.8f, 0.1f, 0.05f, 0.05f, 0.f,  //
                                       0.1f, 0.1f, 0.6f, 0.1f, 0.1f,   //
                                       0.f, 0.1f, 0.1f, 0.1f, 0.7f};
  EncoderSpecials sp;
  sp.ends = {4};
  sp.end_name = "</s>";
  const HeadSummary d = summarise_cross_head(diagonal.data(), 3, 5, sp);
  CHECK(d.pattern == HeadPattern::Diagonal);
  CHECK(d.pattern_share == Approx((0.8 + 0.6 + 0.7) / 3));
  CHECK(d.max_off_diagonal == Approx(0.8));
  CHECK(d.max_query == 0);
  CHECK(d.max_key == 0);
  CHECK(d.max_entropy == Approx(std::log2(5.0)));
  const std::vector<float> end = {0.1f, 0.f, 0.f, 0.f, 0.9f, 0.f, 0.1f, 0.f, 0.2f, 0.7f, 0.f, 0.f, 0.f, 0.f, 1.f};
  const HeadSummary e = summarise_cross_head(end.data(), 3, 5, sp);
  CHECK(e.pattern == HeadPattern::EndToken);
  CHECK(e.label == "to </s>");
  CHECK(e.pattern_share == Approx((0.9 + 0.7 + 1.0) / 3));
}

TEST_CASE("heads: an encoder-decoder's three views, the cross one T × S, in text and JSON", "[heads]") {
  HeadsView enc, dec, x;
  for (HeadsView* v : {&enc, &dec, &x}) v->model = "tiny seq2seq", v->layers = 1, v->heads = 1;
  enc.part = "encoder", enc.tokens = {"a", "b", "</s>"}, enc.T = 3, enc.bidirectional = true, enc.weights.assign(9, 1.f / 3);
  dec.part = "decoder", dec.tokens = {"<pad>", "x"}, dec.T = 2, dec.weights = {1.f, 0.f, 0.5f, 0.5f};
  x.part = "cross", x.tokens = {"<pad>", "x"}, x.key_tokens = enc.tokens, x.cross = true, x.S = 3, x.T = 2;
  x.weights = {0.6f, 0.2f, 0.2f, 0.9f, 0.05f, 0.05f};
  enc.summaries = {summarise_encoder_head(enc.weights.data(), 3, {})};
  dec.summaries = {summarise_head(dec.weights.data(), 2)};
  x.summaries = {summarise_cross_head(x.weights.data(), 2, 3, {})};
  const std::vector<HeadsView> views = {enc, dec, x};
  std::ostringstream text;
  render_heads_text(views, text, ColorMode::None, 80);
  const std::string t = text.str();
  CHECK(t.find("══ encoder self-attention ══") != std::string::npos);
  CHECK(t.find("══ decoder self-attention ══") != std::string::npos);
  CHECK(t.find("══ cross-attention ══") != std::string::npos);
  CHECK(t.find("T = 2 decoder tokens (queries), S = 3 source tokens (keys)") != std::string::npos);
  CHECK(t.find("source tokens (3): 0 a  1 b  2 </s>") != std::string::npos);
  CHECK(t.find("max weight 0.90 (x → a)") != std::string::npos);
  CHECK(t.find("attn heads · tiny seq2seq") == 0);
  CHECK(t.find("attn heads ·", 1) == std::string::npos);  // the model's line once
  std::ostringstream js;
  render_heads_json(views, js);
  const auto j = nlohmann::json::parse(js.str());
  REQUIRE(j["parts"].size() == 3);
  CHECK(j["parts"][2]["part"] == "cross");
  CHECK(j["parts"][2]["S"] == 3);
  CHECK(j["parts"][2]["weights"][0][0][1][0].get<double>() == Approx(0.9));
  CHECK(j["parts"][2]["source_tokens"] == std::vector<std::string>{"a", "b", "</s>"});
  CHECK(j["parts"][2]["summaries"][0][0]["pattern"] == "first token");
  std::ostringstream svg, html;
  render_heads_svg(views, svg);
  render_heads_html(views, html);
  CHECK(svg.str().find(">cross-attention</text>") != std::string::npos);
  const std::string page = html.str();
  CHECK(page.find("<h2 class=\"part-title\">cross-attention</h2>") != std::string::npos);
  CHECK(std::count(page.begin(), page.end(), '<' ) > 0);
  // three sections, each with its own data for the script, the cross one with its keys
  std::size_t sections = 0;
  for (std::size_t at = page.find("<section class=\"part\""); at != std::string::npos; at = page.find("<section class=\"part\"", at + 1)) ++sections;
  CHECK(sections == 3);
  CHECK(page.find("\"cross\": true, \"S\": 3, ") != std::string::npos);
  CHECK(page.find("\"keys\": [\"a\", \"b\", \"</s>\"]") == std::string::npos);  // "</" is escaped inside the script element
  CHECK(page.find("\"keys\": [\"a\", \"b\", \"<\\/s>\"]") != std::string::npos);
}
