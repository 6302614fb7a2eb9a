// Heatmaps, colour, explanations, selection, markdown and SVG: what a class sees.
#include <fmt/format.h>

#include <cmath>
#include <regex>
#include <set>
#include <sstream>

#include "attn/core/select_steps.hpp"
#include "attn/tools/explain.hpp"
#include "attn/render/render.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

const std::string kCatSat = R"({"tokens": ["cat", "sat"], "embeddings": [[1, 0, 1], [0, 1, 1]],
  "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})";
const std::string kMasked = R"({"mode": "causal", "scores": [[0.2, 0.3, 0.1, 0.4], [0.5, 0.2, 0.1, 0.2], [0.3, 0.4, 0.2, 0.1], [0.1, 0.3, 0.4, 0.2]]})";

std::string text(const Trace& t, TextOptions o = {}) {
  std::ostringstream out;
  render_text(t, out, o);
  return out.str();
}

}  // namespace

TEST_CASE("viridis runs from dark purple to yellow; shades from blank to full", "[classroom]") {
  CHECK(svg_hex(viridis(0)) == "#440154");
  CHECK(svg_hex(viridis(1)) == "#fde725");
  CHECK(svg_hex(viridis(0.5)) == "#21918c");
  CHECK(shade(0) == " ");
  CHECK(shade(0.4) == "▒");
  CHECK(shade(1) == "█");
  CHECK(ansi_background(ColorMode::TrueColor, {1, 2, 3}) == "\x1b[48;2;1;2;3m");
  CHECK(ansi_background(ColorMode::Ansi256, {253, 231, 37}) == "\x1b[48;5;220m");  // nearest cube colour
  CHECK(ansi_background(ColorMode::None, {1, 2, 3}).empty());
}

TEST_CASE("the weights heatmap marks blocked cells apart from small weights", "[classroom]") {
  const auto out = text(trace_of(kMasked));
  // rows [1], [0.5744 0.4256], [0.3322 0.3672 0.3006], [0.2138 0.2612 0.2887 0.2363]
  CHECK_THAT(out, Catch::Contains("    t0  ██ ·· ·· ··\n    t1  ▓▓ ▒▒ ·· ··\n    t2  ▒▒ ▒▒ ▒▒ ··\n    t3  ░░ ▒▒ ▒▒ ░░\n"));
  // the legend wraps at the width (80), its parts whole
  CHECK_THAT(out, Catch::Contains("    heatmap of weights · ' ' 0.00–0.02  ░ 0.02–0.25  ▒ 0.25–0.50  ▓ 0.50–0.75\n      █ 0.75–1.00  ·· masked\n"));
  TextOptions wide;
  wide.width = 120;
  CHECK_THAT(text(trace_of(kMasked), wide), Catch::Contains("    heatmap of weights · ' ' 0.00–0.02  ░ 0.02–0.25  ▒ 0.25–0.50  ▓ 0.50–0.75  █ 0.75–1.00  ·· masked\n"));
  TextOptions colour;
  colour.color = ColorMode::TrueColor;
  const auto c = text(trace_of(kMasked), colour);
  CHECK_THAT(c, Catch::Contains("    t0  \x1b[48;2;253;231;37m  \x1b[0m \x1b[2m··\x1b[0m \x1b[2m··\x1b[0m"));
  TextOptions none;
  none.heatmaps.clear();
  CHECK(text(trace_of(kMasked), none).find("heatmap") == std::string::npos);
}

TEST_CASE("text fits the width: wide tables split into column blocks, notes and formulas wrap", "[classroom]") {
  const Trace t = trace_of(R"({"title": "a long title that goes on and on, well past the eighty columns of a terminal window", "mode": "self",
                              "random": {"seed": 1, "T": 3, "C": 24}})");
  TextOptions narrow;
  narrow.width = 60;
  const auto out = text(t, narrow);
  std::size_t widest = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) widest = std::max(widest, attn::cells(line));
  CHECK(widest <= 60);
  CHECK_THAT(out, Catch::Contains("    columns 0–5 of 24 (split to fit 60 columns)\n"));
  CHECK_THAT(out, Catch::Contains("\n    columns 6–11\n"));
  CHECK_THAT(out, Catch::StartsWith("Attention Tracer · a long title that goes on and on, well\n  past the eighty columns"));
  // a wider width uses the room: fewer column blocks, fewer lines
  TextOptions wide;
  wide.width = 300;
  const auto w = text(t, wide);
  CHECK(w.find("split to fit") == std::string::npos);
  CHECK(std::count(w.begin(), w.end(), '\n') < std::count(out.begin(), out.end(), '\n'));
}

TEST_CASE("selection: --steps, --from/--to, --head, --batch", "[classroom]") {
  const Trace t = trace_of(R"({"mode": "multi-head", "heads": 2, "random": {"seed": 1, "B": 2, "T": 3, "C": 4}})");
  CHECK(select_steps(t, {"weights", "scores"}, "", "").size() == 2);
  const auto range = select_steps(t, {}, "scores", "weights");
  REQUIRE(range.size() == 3);
  CHECK(t.steps[range[0]].id == "scores");
  CHECK(t.steps[range[2]].id == "weights");
  TextOptions o;
  o.steps = select_steps(t, {"weights"}, "", "");
  o.view.head = 1;
  o.view.batch = 0;
  const auto out = text(t, o);
  CHECK_THAT(out, Catch::Contains("batch 0 · head 1"));
  CHECK(out.find("head 0") == std::string::npos);
  CHECK(out.find("batch 1") == std::string::npos);
  CHECK(out.find("[10] scores") == std::string::npos);
  ViewOptions bad;
  bad.head = 2;
  CHECK_THROWS_WITH(check_view(t, bad), "--head 2: this trace has H = 2 (heads 0 .. 1)");
  CHECK_THROWS_WITH(select_steps(t, {}, "weights", "q"), "--from weights comes after --to q in this trace");
}

TEST_CASE("explanations speak of the head and batch row that --head and --batch chose", "[classroom]") {
  const Trace t = trace_of(R"({"mode": "multi-head", "heads": 2, "random": {"seed": 1, "B": 2, "T": 3, "C": 4}})");
  const Step& w = step(t, "weights");
  const std::string chosen = explain_step(t, w, {1, 1}), first = explain_step(t, w);
  CHECK_THAT(chosen, Catch::Contains("In batch row 1, head 1, row"));
  CHECK_THAT(first, Catch::Contains("In batch row 0, head 0, row"));
  // the numbers are that block's: head 1 of batch row 1 is not head 0 of batch row 0
  CHECK(chosen.substr(chosen.find("row \"")) != first.substr(first.find("row \"")));
}

TEST_CASE("explanations use this run's numbers", "[classroom]") {
  const Trace t = trace_of(kCatSat);
  CHECK_THAT(explain_step(t, step(t, "weights")), Catch::Contains("Row \"cat\" puts 0.64 of its attention on itself and 0.36 on \"sat\"."));
  CHECK_THAT(explain_step(t, step(t, "scaled")), Catch::Contains("d_k = 3 products, so its variance is 3 (a spread of about ±1.73)"));
  CHECK_THAT(explain_step(t, step(t, "scaled")), Catch::Contains("1/√3 = 0.5774"));
  CHECK_THAT(explain_step(t, step(t, "context")), Catch::Contains("context[\"cat\"] = 0.64 · v[\"cat\"] + 0.36 · v[\"sat\"]."));
  const Trace m = trace_of(kMasked);
  CHECK_THAT(explain_step(m, step(m, "mask")), Catch::Contains("Row \"t1\" may look at \"t0\" and itself but not at \"t2\"."));
  CHECK_THAT(explain_step(m, step(m, "masked")), Catch::Contains("exp(−inf) is exactly 0"));
  const Trace x = trace_of(R"({"mode": "cross", "heads": 2, "random": {"seed": 1, "T": 2, "S": 3, "C": 4}})");
  CHECK_THAT(explain_step(x, step(x, "source")), Catch::Contains("the queries come from the target sequence (x, T = 2), the keys and values from this source sequence (S = 3)"));
  CHECK_THAT(explain_step(x, step(x, "q.heads")), Catch::Contains("each of the H = 2 heads is its own [T, hs = 2] matrix"));
  for (const auto& s : t.steps) CHECK_FALSE(explain_step(t, s).empty());
}

TEST_CASE("markdown handout: a heading per step and tables with token labels", "[classroom]") {
  std::ostringstream out;
  render_markdown(trace_of(kCatSat), out, {});
  const auto md = out.str();
  CHECK_THAT(md, Catch::Contains("## 8. Attention weights (`weights`)\n\n`weights = softmax(scaled, dim=-1)` · shape `[T, T] = [2, 2]`\n"));
  CHECK_THAT(md, Catch::Contains("| | cat | sat | sum |\n|---|---:|---:|---:|\n| **cat** | 0.6405 | 0.3595 | 1.0000 |\n"));
}

TEST_CASE("SVG pictures: one per head, the mask as its own, blocked cells grey", "[classroom]") {
  TextOptions o;
  const auto pics = render_svg_pictures(trace_of(R"({"mode": "causal", "heads": 2, "random": {"seed": 1, "T": 3, "C": 4}})"), o);
  std::vector<std::string> names;
  for (const auto& p : pics) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"mask.svg", "weights.h0.svg", "weights.h1.svg"});
  CHECK(pics[0].step == "mask");
  CHECK(pics[2].step == "weights");
  const auto& w = pics[1].svg;
  CHECK_THAT(w, Catch::StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK_THAT(w, Catch::Contains("fill=\"#e6e6e6\""));  // blocked cells
  CHECK_THAT(w, Catch::Contains(">masked</text>"));    // the legend says so
  CHECK_THAT(w, Catch::EndsWith("</svg>\n"));
  const auto again = render_svg_pictures(trace_of(R"({"mode": "causal", "heads": 2, "random": {"seed": 1, "T": 3, "C": 4}})"), o);
  REQUIRE(again.size() == pics.size());
  for (std::size_t i = 0; i < pics.size(); ++i) CHECK(again[i].svg == pics[i].svg);
}

TEST_CASE("the markdown handout carries its pictures: inline, or linked to --svg-dir", "[classroom]") {
  const auto trace = trace_of(R"({"mode": "causal", "heads": 2, "random": {"seed": 1, "T": 3, "C": 4}})");
  TextOptions o;
  o.heatmaps = {"weights"};
  std::ostringstream inline_md;
  render_markdown(trace, inline_md, o);
  const auto md = inline_md.str();
  // each picture right after its own step's tables, before the next step's heading
  const auto mask_at = md.find("\n![mask](data:image/svg+xml;base64,PD94bWwg");  // "<?xml "
  const auto h1_at = md.find("\n![weights.h1](data:image/svg+xml;base64,PD94bWwg");
  REQUIRE(mask_at != std::string::npos);
  REQUIRE(h1_at != std::string::npos);
  CHECK(mask_at > md.find("(`mask`)"));
  CHECK(mask_at < md.find("(`masked`)"));
  CHECK(h1_at > md.find("(`weights`)"));
  CHECK(md.find("![weights.h0]") < h1_at);
  o.picture_dir = "pics";
  std::ostringstream linked;
  render_markdown(trace, linked, o);
  CHECK_THAT(linked.str(), Catch::Contains("\n![mask](pics/mask.svg)\n"));
  CHECK_THAT(linked.str(), Catch::Contains("\n![weights.h0](pics/weights.h0.svg)\n"));
  CHECK(linked.str().find("base64") == std::string::npos);
  // a folder name with a space or a trailing slash still makes a working link
  o.picture_dir = "my pics (week 3)/";
  std::ostringstream spaced;
  render_markdown(trace, spaced, o);
  CHECK_THAT(spaced.str(), Catch::Contains("\n![mask](my%20pics%20%28week%203%29/mask.svg)\n"));
}

TEST_CASE("the shade ramp leaves only (near) zero blank", "[classroom]") {
  CHECK(shade(0.0) == " ");
  CHECK(shade(0.019) == " ");
  CHECK(shade(0.17) == "░");  // a near-uniform row of 0.17 .. 0.24 is not blank
  CHECK(shade(0.24) == "░");
  CHECK(shade(0.5) == "▓");
  CHECK(shade(1.0) == "█");
}

TEST_CASE("256 colours: 16 distinct steps of increasing lightness, the same in cells and legend", "[classroom]") {
  // relative luminance of an xterm cube colour
  auto luminance = [](int index) {
    static const int kLevels[6] = {0, 95, 135, 175, 215, 255};
    const int i = index - 16;
    auto lin = [](int v) {
      const double c = v / 255.0;
      return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * lin(kLevels[i / 36]) + 0.7152 * lin(kLevels[(i / 6) % 6]) + 0.0722 * lin(kLevels[i % 6]);
  };
  std::set<int> distinct;
  for (int k = 0; k < 16; ++k) {
    distinct.insert(kRamp256[k]);
    CHECK(kRamp256[k] >= 16);
    CHECK(kRamp256[k] < 232);
    if (k > 0) CHECK(luminance(kRamp256[k]) > luminance(kRamp256[k - 1]));
  }
  CHECK(distinct.size() == 16);
  CHECK(heat_step(0.0) == 0);
  CHECK(heat_step(1.0) == 15);
  // a row of 24 weights spread over 0 .. 1 uses 16 colours, every one of them in the legend
  std::string row = "[";
  for (int j = 0; j < 24; ++j) row += fmt::format("{}{}", j ? ", " : "", j / 23.0 * 8.0);
  const Trace t = trace_of(R"({"scores": [)" + row + R"(]], "heads": 1})");
  TextOptions o;
  o.color = ColorMode::Ansi256;
  o.heatmaps = {"scores"};
  const auto out = text(t, o);
  const auto legend = out.substr(out.find("heatmap of scores"));
  const auto legend_line = legend.substr(0, legend.find('\n'));
  const auto grid = legend.substr(legend.find('\n'));
  std::set<std::string> in_legend, in_cells;
  const std::regex code("\x1b\\[48;5;(\\d+)m");
  for (std::sregex_iterator it(legend_line.begin(), legend_line.end(), code), end; it != end; ++it) in_legend.insert((*it)[1]);
  for (std::sregex_iterator it(grid.begin(), grid.end(), code), end; it != end; ++it) in_cells.insert((*it)[1]);
  CHECK(in_legend.size() == 16);
  CHECK(in_cells.size() == 16);
  for (const auto& c : in_cells) CHECK(in_legend.count(c) == 1);
}

TEST_CASE("explanations in causal mode: no praise for a blocked key, no dangling terms", "[classroom][explain]") {
  // keys 0, 1, 9 along q: every query's largest score is the last key, which causal masking blocks
  // for queries 0 and 1
  const Trace t = trace_of(R"({"mode": "causal", "q": [[1, 0], [1, 0], [1, 0]], "k": [[0, 0], [1, 0], [9, 0]],
                               "v": [[1, 0], [0, 1], [5, 5]]})");
  const auto scores = explain_step(t, step(t, "scores"));
  // the example row sees more than itself (t0 would see only itself), and its best visible key is
  // named, not the blocked t2 with the larger score
  CHECK_THAT(scores, Catch::Contains("Row \"t1\" scores highest against itself (1.00) among the keys it may see"));
  CHECK_THAT(scores, !Catch::Contains("\"t2\""));
  const auto context = explain_step(t, step(t, "context"));
  CHECK_THAT(context, Catch::Contains("context[\"t1\"] = 0.33 · v[\"t0\"] + 0.67 · v[\"t1\"]."));
  CHECK_THAT(context, !Catch::Contains("…"));
  CHECK_THAT(context, Catch::Contains("Masked keys add nothing"));
}

namespace {
std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("SVG pictures: axis titles, repeated tokens told apart, labels cut alike, masked only when masked", "[classroom]") {
  TextOptions o;
  o.heatmaps = {"weights"};
  // self attention, no mask: queries down the side, keys across; "the" twice on each axis
  const auto self = render_svg_pictures(
      trace_of(R"({"mode": "self", "sentence": "the extraordinarily long cat saw the", "random": {"seed": 1, "C": 4}})"), o);
  REQUIRE(self.size() == 1);
  const auto& w = self[0].svg;
  CHECK(count_of(w, ">queries ↓</text>") == 1);
  CHECK(count_of(w, ">keys →</text>") == 1);
  CHECK(count_of(w, ">the₁</text>") == 2);  // a row label and a column label
  CHECK(count_of(w, ">the₂</text>") == 2);
  CHECK(count_of(w, ">cat</text>") == 2);   // a token that occurs once keeps its name
  // a long token is cut to the same 11 characters and an ellipsis on both axes; long column labels stand upright
  CHECK(count_of(w, ">extraordina…</text>") == 2);
  CHECK(count_of(w, "transform=\"rotate(-90") == 6);
  CHECK(w.find(">masked</text>") == std::string::npos);  // nothing is blocked
  CHECK_THAT(w, Catch::Contains(">colour scale: fixed, 0 to 1</text>"));
  // cross attention: target and source; a causal picture keeps its "masked" swatch
  const auto cross = render_svg_pictures(trace_of(R"({"mode": "cross", "sentence": "a b", "source": {"sentence": "x y z"},
                                                      "random": {"seed": 1, "C": 4}})"),
                                         o);
  CHECK_THAT(cross[0].svg, Catch::Contains(">target (queries) ↓</text>"));
  CHECK_THAT(cross[0].svg, Catch::Contains(">source (keys) →</text>"));
  const auto causal = render_svg_pictures(trace_of(R"({"mode": "causal", "sentence": "a b c", "random": {"seed": 1, "C": 4}})"), o);
  CHECK_THAT(causal.back().svg, Catch::Contains(">masked</text>"));
}

TEST_CASE("heat range \"fit\": a near-uniform head's colours span its own values, and the legend says so", "[classroom]") {
  const auto trace = trace_of(R"({"mode": "self", "heads": 2, "random": {"seed": 4, "T": 5, "C": 4}})");
  const Step& weights = *trace.find("weights");
  TextOptions o;
  o.heatmaps = {"weights"};
  o.fit_range = true;
  const auto pics = render_svg_pictures(trace, o);
  REQUIRE(pics.size() == 2);
  for (int h = 0; h < 2; ++h) {
    float lo = 1, hi = 0;
    for (std::int64_t i = 0; i < 25; ++i) lo = std::min(lo, weights.value.at(h * 25 + i)), hi = std::max(hi, weights.value.at(h * 25 + i));
    REQUIRE(hi - lo < 0.5f);  // a near-uniform head: fixed 0..1 colours would hardly differ
    const auto& svg = pics[static_cast<std::size_t>(h)].svg;
    CHECK_THAT(svg, Catch::Contains(">" + format_fixed(lo, 4) + "</text>"));
    CHECK_THAT(svg, Catch::Contains(">" + format_fixed(hi, 4) + "</text>"));
    CHECK_THAT(svg, Catch::Contains(">colour scale: fitted to this picture's values</text>"));
    CHECK(count_of(svg, "fill=\"#440154\" stroke") == 1);  // the smallest weight alone gets the ramp's first colour
    CHECK(count_of(svg, "fill=\"#fde725\" stroke") == 1);  // and the largest its last
  }
  // the text heatmap: a legend per head, on that head's range
  std::ostringstream text;
  o.steps = {static_cast<std::size_t>(&weights - trace.steps.data())};
  render_text(trace, text, o);
  CHECK_THAT(text.str(), Catch::Contains("colours fitted to each block's own values"));
}

#include "attn/render/pager.hpp"

TEST_CASE("step keys: arrows (even split across reads), PgUp/PgDn, Space, Enter, b, g/G, j/k, numbers, q and Ctrl-D", "[classroom]") {
  using A = attn::PagerAction;
  auto kinds = [](const std::string& bytes) {
    attn::KeyDecoder d;
    std::vector<int> out;
    for (char c : bytes) {
      const auto a = d.feed(c);
      if (a.kind == A::Jump) out.push_back(100 + static_cast<int>(a.step));
      else if (a.kind != A::None) out.push_back(a.kind);
    }
    return out;
  };
  CHECK(kinds("\x1b[C\r\nn") == std::vector<int>{A::Next, A::Next, A::Next, A::Next});
  CHECK(kinds(" ") == std::vector<int>{A::PageOrNext});  // Space pages down a tall step, then goes on
  CHECK(kinds("gGkj") == std::vector<int>{A::First, A::Last, A::LineUp, A::LineDown});  // as less: g/G top/bottom, k/j ↑/↓
  CHECK(kinds("\x1b[Db") == std::vector<int>{A::Back, A::Back});
  CHECK(kinds("\x1bOC\x1bOD") == std::vector<int>{A::Next, A::Back});  // application cursor mode
  CHECK(kinds("\x1b[A\x1b[B\x1bOA\x1bOB") == std::vector<int>{A::LineUp, A::LineDown, A::LineUp, A::LineDown});  // ↑ ↓ scroll a tall step
  CHECK(kinds("\x1b[5~\x1b[6~") == std::vector<int>{A::PageUp, A::PageDown});
  CHECK(kinds("\x1b[2~\x1bOP") == std::vector<int>{});  // Insert, F1: nothing, nothing echoed
  CHECK(kinds("\x1b[H\x1b[F\x1b[1~\x1b[4~") == std::vector<int>{A::First, A::Last, A::First, A::Last});
  CHECK(kinds("12\r") == std::vector<int>{112});
  CHECK(kinds("13\x7f" "5\r") == std::vector<int>{115});  // Backspace edits the number
  CHECK(kinds("q") == std::vector<int>{A::Quit});
  CHECK(kinds("\x04") == std::vector<int>{A::Quit});
  // an arrow split across reads decodes the same
  attn::KeyDecoder d;
  CHECK(d.feed('\x1b').kind == A::None);
  CHECK(d.feed('[').kind == A::None);
  CHECK(d.feed('C').kind == A::Next);
  d.feed('4');
  CHECK(d.number() == "4");
  CHECK(d.feed('x').kind == A::None);  // another key drops the number
  CHECK(d.number().empty());
  // line mode
  CHECK(attn::line_action("").kind == A::Next);
  CHECK(attn::line_action("b").kind == A::Back);
  CHECK(attn::line_action("q").kind == A::Quit);
  CHECK(attn::line_action("7").kind == A::Jump);
  CHECK(attn::line_action("7").step == 7);
  CHECK(attn::line_action("seven").kind == A::None);
}

TEST_CASE("the HTML walkthrough: one self-contained page, every step, each entry's computation", "[classroom]") {
  const auto trace = trace_of(R"({"mode": "causal", "heads": 2, "sentence": "the cat sat", "random": {"seed": 3, "C": 4}})");
  TextOptions o;
  o.heatmaps = {"weights"};
  std::ostringstream out;
  render_html(trace, out, o);
  const auto html = out.str();
  CHECK_THAT(html, Catch::StartsWith("<!DOCTYPE html>\n<html lang=\"en\">"));
  CHECK_THAT(html, Catch::EndsWith("</html>\n"));
  // nothing to fetch: no src or link, no url(), no @import; the only "http" is the SVG namespace (and
  // the http-equiv of the policy that forbids fetching)
  CHECK(html.find(" src=") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
  CHECK(count_of(html, "http") == count_of(html, "xmlns=\"http://www.w3.org/2000/svg\"") + count_of(html, "<meta http-equiv="));
  CHECK_THAT(html, Catch::Contains("default-src 'none'"));
  for (const auto& s : trace.steps) CHECK_THAT(html, Catch::Contains("<section class=\"step\" id=\"step-" + s.id + "\">"));
  CHECK(count_of(html, "<div class=\"block\" data-head=\"1\">") == count_of(html, "<div class=\"block\" data-head=\"0\">"));
  CHECK_THAT(html, Catch::Contains("<select id=\"head\"><option value=\"all\">all</option><option value=\"0\">0</option>"));
  CHECK(count_of(html, "<svg xmlns") == 3);  // the mask, and the weights of each head
  // hover texts: the computation with this run's numbers
  const Step& scores = *trace.find("scores");
  const Step& qh = *trace.find("q.heads");
  const Step& kh = *trace.find("k.heads");
  const auto at = 1 * 9 + 2 * 3 + 1;  // head 1, query "sat", key "cat"
  const auto text = explain_cell(trace, scores, at);
  // to 4 decimals, (−0.1236)×1.1521 + (−1.3431)×0.0789 = −0.24837 would not reproduce the entry's −0.2483 or
  // −0.2484: the hover prints 5 (tests/explain_cell_arithmetic.py checks every hover of every example)
  CHECK_THAT(text, Catch::StartsWith("scores[1, 2, 1] = " + format_fixed(scores.value.at(at), 5) + "\n= q.heads[1, 2] · k.heads[1, 1]: how well query \"sat\" matches key \"cat\""));
  const auto term = [](Scalar x) { return x < 0 ? "(" + format_fixed(x, 5) + ")" : format_fixed(x, 5); };
  CHECK_THAT(text, Catch::Contains(term(qh.value.at((1 * 3 + 2) * 2 + 0)) + "×" + term(kh.value.at((1 * 3 + 1) * 2 + 0))));
  const Step& weights = *trace.find("weights");
  CHECK_THAT(explain_cell(trace, weights, 1), Catch::Contains("exp(−∞) = 0: key \"cat\" is blocked"));
  CHECK_THAT(explain_cell(trace, weights, 4), Catch::Contains("= exp(masked − max) / Σ exp(row − max), max = "));
  CHECK_THAT(explain_cell(trace, weights, 4), Catch::Contains("(1 blocked key adds 0)"));  // row "cat" of head 0 sees 2 of 3 keys
  CHECK_THAT(explain_cell(trace, *trace.find("context"), 1 * 3 * 2 + 2 * 2 + 1),  // head 1, query 2, feature 1
             Catch::Contains("= Σ over keys j of weights[1, 2, j] × v.heads[1, j, 1]"));
  // the page carries them, escaped
  CHECK_THAT(html, Catch::Contains("data-x=\"scores[1, 2, 1] = "));
  CHECK_THAT(html, Catch::Contains("query &quot;sat&quot; matches key &quot;cat&quot;"));
}

TEST_CASE("hover texts: batch rows in operand names, keys on the step's own axis, empty rows by their policy", "[classroom]") {
  // B = 2: q[1, 0, 0] is row 0 of batch row 1 of x
  const auto batched = trace_of(R"({"mode": "self", "random": {"seed": 2, "B": 2, "T": 2, "C": 2}})");
  CHECK_THAT(explain_cell(batched, *batched.find("q"), 4), Catch::Contains("= x[1, 0, :] · W_q[:, 0]"));
  CHECK_THAT(explain_cell(batched, *batched.find("q"), 4), Catch::Contains("\nx[1, 0] = ["));
  // given scores with S = 2 keys and T = 3 queries, bottom-right: query 0 sees no key
  const auto empty = trace_of(R"({"mode": "causal", "causal_align": "bottom-right", "masked_row": "uniform", "scores": [[1, 2], [3, 4], [5, 6]]})");
  const Step& w = *empty.find("weights");
  CHECK(w.value.at(0) == 0.5f);
  CHECK_THAT(explain_cell(empty, w, 0), Catch::Contains("may see no key at all: the row is filled by the \"masked_row\" policy (uniform"));
  CHECK_THAT(explain_cell(empty, w, 0), !Catch::Contains("exp(−∞)"));
  CHECK_THAT(explain_cell(empty, w, 5), Catch::Contains("key \"s1\""));  // keys are s0, s1, not queries' t labels
}

TEST_CASE("backward --explain: the softmax's Jacobian of the row, one minus sign, one precision, ties as ties", "[classroom][explain]") {
  auto backend = make_cpu_backend();
  const Trace t = run_backward(parse_spec(R"({"tokens": ["cat", "sat"], "embeddings": [[1, 0, 1], [0, 1, 1]],
    "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}, "backward": {"target": [[1, 0, 1], [0, 1, 1]]}})", "t.json"),
                                  *backend);
  const std::string jac = explain_step(t, step(t, "grad.scaled"));
  // J = diag(w) − w wᵀ for w = [0.6405, 0.3595], written out as a matrix (preformatted lines), then J · g
  CHECK_THAT(jac, Catch::Contains("J = diag(w) − w wᵀ; with this row's weights, w = [0.6405, 0.3595], it is:\n"
                                  "           cat      sat\n"
                                  "  cat   0.2303  −0.2303\n"
                                  "  sat  −0.2303   0.2303\n"));
  CHECK_THAT(jac, Catch::Contains("g = [−0.1198, 0.1198]: J · g = [−0.0552, 0.0552], the row of grad.scaled above."));
  // the rowsum form at 4 decimals would not reproduce (0.6405 · (−0.1198 − (−0.0337)) is −0.05515, printed −0.0552): it takes 6
  CHECK_THAT(jac, Catch::Contains("\"cat\": 0.640457 · (−0.119848 − (−0.033667)) = −0.055195"));
  // the paragraphs and the matrix as the renderers take them
  const auto parts = explain_parts(jac);
  REQUIRE(parts.size() == 4);
  CHECK(parts[1].preformatted);
  CHECK(parts[1].lines == std::vector<std::string>{"         cat      sat", "cat   0.2303  −0.2303", "sat  −0.2303   0.2303"});
  // every explanation of the backward pass: minus signs are U+2212 and every decimal number has 4 decimals, but the rowsum
  // form's paragraph, which needs 6 to reproduce from its printed digits
  const std::regex hyphen_minus("(^|[^A-Za-z0-9_])-[0-9]"), decimals("[0-9]+\\.([0-9]+)");
  for (const auto& s : t.steps) {
    if (!s.id.starts_with("grad.")) continue;
    const std::string e = explain_step(t, s);
    CHECK_FALSE(std::regex_search(e, hyphen_minus));
    std::size_t at = 0;
    while (at < e.size()) {
      const std::size_t end = std::min(e.find('\n', at), e.size());
      const std::string paragraph = e.substr(at, end - at);
      const std::size_t want = paragraph.starts_with("The code computes") ? 6 : 4;
      for (auto it = std::sregex_iterator(paragraph.begin(), paragraph.end(), decimals); it != std::sregex_iterator(); ++it)
        CHECK((*it)[1].length() == want);
      at = end + 1;
    }
  }
  // grad.weights' row "cat" is [−0.1198, 0.1198]: a tie, not "the largest"
  CHECK_THAT(explain_step(t, step(t, "grad.weights")),
             Catch::Contains("For query \"cat\", keys \"cat\" and \"sat\" tie for the largest in size at ±0.1198: more weight on \"cat\" "
                             "would lower the loss, on \"sat\" raise it."));
  // the loss is one number: "loss = 0.0862", not a 1×1 table labelled 0
  TextOptions o;
  o.steps = {0};
  for (std::size_t i = 0; i < t.steps.size(); ++i)
    if (t.steps[i].id == "loss") o.steps = {i};
  const std::string shown = text(t, o);
  CHECK_THAT(shown, Catch::Contains("\n    loss = mean((context − target)²)\n    a scalar (one number)\n"));
  CHECK_THAT(shown, Catch::Contains("\n    loss = 0.0862\n"));
  CHECK_THAT(shown, !Catch::Contains("    0  0.0862"));
  std::ostringstream md, html;
  render_markdown(t, md, o);
  render_html(t, html, o);
  CHECK_THAT(md.str(), Catch::Contains("\n**loss = 0.0862**\n"));
  CHECK_THAT(md.str(), !Catch::Contains("| **0** |"));
  CHECK_THAT(html.str(), Catch::Contains("<p class=\"scalar\"><code>loss = 0.0862</code></p>"));
}

TEST_CASE("backward --explain: a repeated token named as the tables name it, the₁ and the₂", "[classroom][explain]") {
  auto backend = make_cpu_backend();
  const Trace t = run_backward(parse_spec(R"({"tokens": ["the", "cat", "the"], "embeddings": [[1, 0], [0, 1], [1, 1]],
    "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}, "backward": {"target": [[0, 1], [1, 0], [1, 1]]}})", "t.json"),
                                  *backend);
  // the explained row is query 0, "the₁"; its keys are the₁, cat, the₂ in the Jacobian, the gradients and the rowsum form
  const std::string jac = explain_step(t, step(t, "grad.scaled"));
  CHECK_THAT(jac, Catch::Contains("For query \"the₁\", the weights"));
  CHECK_THAT(jac, Catch::Contains("          the₁      cat     the₂\n  the₁ "));
  CHECK_THAT(jac, Catch::Contains("Row \"the₁\" of J, for one:"));
  CHECK_THAT(jac, Catch::Contains("; \"the₂\": "));
  CHECK_THAT(explain_step(t, step(t, "grad.weights")), Catch::Contains("For query \"the₁\", "));
  CHECK_THAT(explain_step(t, step(t, "grad.scores")), Catch::Contains("For query \"the₁\", key \"the₁\": "));
  for (const char* id : {"grad.scaled", "grad.weights", "grad.scores"}) CHECK_THAT(explain_step(t, step(t, id)), !Catch::Contains("\"the\""));
}
