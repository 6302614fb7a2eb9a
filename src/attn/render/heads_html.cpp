// attn heads as one self-contained HTML page: the grid of layers × heads as small canvases, each
// with its pattern; a click (or the arrow keys) shows one head enlarged with token labels on both
// axes, each cell's weight under the pointer, and the head's summary line; every summary line below.
// Everything is in the file (styles, script, the weights as JSON with 4 decimals, the viridis
// palette from color.cpp): no network, works offline, prints (the grid and the summaries).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <sstream>

#include "attn/io/json_text.hpp"
#include "attn/model/tools/heads.hpp"
#include "attn/render/heads_layout.hpp"

namespace attn::model {

using namespace heads_detail;

namespace {

constexpr const char* kStyle = R"css(
:root { --ink: #1b1b1b; --muted: #5a5a5a; --line: #d8d8d8; --accent: #3b528b; --masked: #e6e6e6; }
* { box-sizing: border-box; }
body { margin: 0; font-family: "DejaVu Sans", Verdana, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--ink); line-height: 1.4; }
header.top { padding: 12px 20px; border-bottom: 1px solid var(--line); background: #fafafa; }
header.top h1 { font-size: 20px; margin: 0 0 4px; }
header.top .meta { color: var(--muted); font-size: 13px; }
header.top .tokens span { white-space: nowrap; }
header.top .tokens { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; margin-top: 4px; }
header.top .keys { color: var(--muted); font-size: 12px; margin-top: 4px; }
section.part > h2.part-title { font-size: 17px; margin: 14px 20px 2px; }
section.part > .meta { color: var(--muted); font-size: 13px; margin: 6px 20px 0; }
section.part > .tokens { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; margin: 4px 20px 0; }
section.part > .tokens span { white-space: nowrap; }
.layout { display: flex; flex-wrap: wrap; gap: 24px; padding: 12px 20px; align-items: flex-start; }
table.grid { border-collapse: collapse; }
table.grid th { font-size: 12px; color: var(--muted); font-weight: bold; padding: 0 4px; }
table.grid td { padding: 2px; }
button.head { display: block; border: 2px solid transparent; background: none; padding: 1px; cursor: pointer; font: inherit; }
button.head[aria-pressed="true"] { border-color: var(--accent); background: #eef1f8; }
button.head:focus-visible { outline: 2px solid #d9b300; }
button.head canvas { display: block; image-rendering: pixelated; image-rendering: crisp-edges; border: 1px solid #bbb; }
button.head span { display: block; font-size: 10px; color: #333; white-space: nowrap; text-align: left; }
.detail { position: sticky; top: 8px; flex: 1 1 360px; max-width: 560px; }
.detail h2 { font-size: 16px; margin: 0 0 4px; }
.detail .summary, .detail .at { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; margin: 2px 0; white-space: pre-wrap; }
.detail .at { min-height: 1.4em; color: var(--accent); }
.legend { display: flex; align-items: center; gap: 6px; font-size: 12px; margin: 6px 0; }
.legend i { display: inline-block; width: 14px; height: 12px; }
section.summaries { padding: 0 20px 30px; }
section.summaries h2 { font-size: 16px; }
section.summaries pre { font-size: 12px; margin: 0; }
@media print {
  .detail, header.top .keys { display: none !important; }
  button.head[aria-pressed="true"] { border-color: transparent; background: none; }
  .layout { padding: 0; }
  section.summaries { break-before: page; page-break-before: always; }
}
)css";

constexpr const char* kScript = R"js(
(function () {
  'use strict';
  var parts = [], active = null;
  Array.prototype.forEach.call(document.querySelectorAll('section.part'), function (root) { parts.push(init(root)); });
  function init(root) {
    var D = JSON.parse(root.querySelector('.heads-data').textContent);
    var L = D.layers, H = D.heads, T = D.T, S = D.S || D.T, W = D.weights, P = D.palette, WIN = D.windows;
    var KEYS = D.keys || D.tokens;
    function visible(l, i, j) { var win = WIN.length ? WIN[l] : 0; return D.bidirectional || D.cross || (j <= i && (win === 0 || j > i - win)); }
    function w(l, h, i, j) { return W[((l * H + h) * T + i) * S + j]; }
    function colour(x) { return P[Math.max(0, Math.min(255, Math.round(x * 255)))]; }
    function paint(ctx, l, h, cell, x0, y0) {
      for (var i = 0; i < T; i++) for (var j = 0; j < S; j++) {
        ctx.fillStyle = visible(l, i, j) ? colour(w(l, h, i, j)) : '#e6e6e6';
        ctx.fillRect(x0 + j * cell, y0 + i * cell, cell, cell);
      }
    }
    var part = { select: select, cur: [0, 0] };
    var buttons = Array.prototype.slice.call(root.querySelectorAll('button.head'));
    buttons.forEach(function (b) {
      var c = b.querySelector('canvas');
      paint(c.getContext('2d'), +b.dataset.l, +b.dataset.h, 1, 0, 0);
      b.addEventListener('click', function () { active = part; select(+b.dataset.l, +b.dataset.h, false); });
      b.addEventListener('focus', function () { active = part; });
    });
    var big = root.querySelector('canvas.big'), at = root.querySelector('.at');
    var cell = Math.max(4, Math.min(40, Math.floor(400 / Math.max(T, S, 1))));
    var every = Math.max(1, Math.ceil(12 / cell));
    var margin = 0, bottom = 0;
    var ctx0 = big.getContext('2d');
    ctx0.font = '11px "DejaVu Sans", Verdana, sans-serif';
    function label(ls, i) { return every > 1 ? i + ' ' + ls[i] : ls[i]; }
    for (var k = 0; k < T; k += every) margin = Math.max(margin, ctx0.measureText(label(D.tokens, k)).width);
    for (k = 0; k < S; k += every) bottom = Math.max(bottom, ctx0.measureText(label(KEYS, k)).width);
    margin = Math.ceil(margin) + 10; bottom = Math.ceil(bottom) + 10;
    big.width = margin + S * cell + 4; big.height = 8 + T * cell + bottom;
    function draw() {
      var ctx = big.getContext('2d'), l = part.cur[0], h = part.cur[1];
      ctx.fillStyle = '#ffffff'; ctx.fillRect(0, 0, big.width, big.height);
      paint(ctx, l, h, cell, margin, 8);
      ctx.fillStyle = '#1b1b1b'; ctx.font = '11px "DejaVu Sans", Verdana, sans-serif';
      ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
      for (var i = 0; i < T; i += every) ctx.fillText(label(D.tokens, i), margin - 4, 8 + (i + 0.5) * cell);
      for (var j = 0; j < S; j += every) {
        ctx.save(); ctx.translate(margin + (j + 0.5) * cell, 8 + T * cell + 4); ctx.rotate(-Math.PI / 2);
        ctx.fillText(label(KEYS, j), 0, 0); ctx.restore();
      }
    }
    function select(l, h, focus) {
      part.cur = [Math.max(0, Math.min(L - 1, l)), Math.max(0, Math.min(H - 1, h))];
      var cur = part.cur;
      buttons.forEach(function (b) { b.setAttribute('aria-pressed', +b.dataset.l === cur[0] && +b.dataset.h === cur[1] ? 'true' : 'false'); });
      var b = buttons[cur[0] * H + cur[1]];
      if (focus && b) b.focus();
      root.querySelector('.detail-title').textContent = 'layer ' + (cur[0] + (D.first_layer || 0)) + ', head ' + (cur[1] + (D.first_head || 0));
      root.querySelector('.detail-summary').textContent = D.summaries[cur[0] * H + cur[1]];
      at.textContent = 'hover a cell for its weight';
      draw();
    }
    big.addEventListener('mousemove', function (e) {
      var r = big.getBoundingClientRect();
      var x = (e.clientX - r.left) * big.width / r.width - margin, y = (e.clientY - r.top) * big.height / r.height - 8;
      var i = Math.floor(y / cell), j = Math.floor(x / cell);
      if (x < 0 || y < 0 || i < 0 || j < 0 || i >= T || j >= S) { at.textContent = 'hover a cell for its weight'; return; }
      var q = 'query ' + i + ' ' + D.tokens[i] + ' → key ' + j + ' ' + KEYS[j] + ': ';
      at.textContent = q + (visible(part.cur[0], i, j) ? w(part.cur[0], part.cur[1], i, j).toFixed(4) : j > i ? 'masked (a later token)' : 'masked (outside the window)');
    });
    big.addEventListener('mouseleave', function () { at.textContent = 'hover a cell for its weight'; });
    if (L > 0 && H > 0) select(0, 0, false);
    part.L = L; part.H = H;
    return part;
  }
  if (parts.length) active = parts[0];
  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey || !active) return;
    var k = e.key, l = active.cur[0], h = active.cur[1];
    if (k === 'ArrowRight') h++; else if (k === 'ArrowLeft') h--; else if (k === 'ArrowDown') l++; else if (k === 'ArrowUp') l--;
    else if (k === 'Home') { l = 0; h = 0; } else if (k === 'End') { l = active.L - 1; h = active.H - 1; } else return;
    e.preventDefault();
    active.select(l, h, true);
  });
})();
)js";

// A weight with 4 decimals, trailing zeros dropped ("0.25", "1", "0"): what the page shows.
std::string short_number(float v) {
  if (!std::isfinite(v)) return "0";
  std::string s = fmt::format("{:.4f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// Short pattern names for the grid's captions (the full line is in the detail and the list); an
// encoder's start and end tokens as the model spells them ("[CLS]", "</s>").
std::string short_name(const HeadSummary& s) {
  switch (s.pattern) {
    case HeadPattern::PreviousToken: return "prev";
    case HeadPattern::FirstToken: return "first";
    case HeadPattern::SameToken: return "same";
    case HeadPattern::Broad: return "broad";
    case HeadPattern::Mixed: return "mixed";
    case HeadPattern::NextToken: return "next";
    case HeadPattern::StartToken:
    case HeadPattern::EndToken: return s.label.starts_with("to ") ? s.label.substr(3) : s.label;
    case HeadPattern::Induction: return "induction";
    case HeadPattern::Diagonal: return "diagonal";
    case HeadPattern::Local: return "local";
  }
  return "mixed";
}

}  // namespace

namespace {

// The tokens as spans, "0 The · 1 cat …", each with its vocabulary piece as a tooltip.
void token_spans(std::ostream& out, const std::vector<std::string>& labels, const std::vector<std::string>& pieces) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string piece = i < pieces.size() ? pieces[i] : "";
    out << (i ? " · " : "") << "<span" << (piece.empty() ? "" : " title=\"vocabulary piece: " + esc(piece) + "\"") << ">" << i << "&nbsp;"
        << esc(labels[i]) << "</span>";
  }
}

// One view as a section: its sizes and tokens, the grid with the enlarged head beside it, every
// head's line, and its numbers for the script.
void view_html(const HeadsView& view, std::ostream& out) {
  check_view(view);
  const auto labels = token_labels(view);
  const auto key_labels = token_labels(view.key_labels());
  const auto lines = summary_lines(view, labels, key_labels);
  // the data for the script; "</" never appears inside the <script> element
  std::ostringstream d;
  d << "{\"layers\": " << view.layers << ", \"heads\": " << view.heads << ", \"T\": " << view.T << ", \"windows\": [" << fmt::format("{}", fmt::join(view.windows, ", ")) << "], "
    << (view.first_layer + view.first_head > 0 ? fmt::format("\"first_layer\": {}, \"first_head\": {}, ", view.first_layer, view.first_head) : "")
    << (view.bidirectional ? "\"bidirectional\": true, " : "") << (view.cross ? fmt::format("\"cross\": true, \"S\": {}, ", view.S) : "") << "\"tokens\": [";
  for (std::size_t i = 0; i < labels.size(); ++i) d << (i ? ", " : "") << json_quote(labels[i]);
  if (view.cross) {
    d << "],\n\"keys\": [";
    for (std::size_t i = 0; i < key_labels.size(); ++i) d << (i ? ", " : "") << json_quote(key_labels[i]);
  }
  d << "],\n\"summaries\": [";
  for (std::size_t i = 0; i < lines.size(); ++i) d << (i ? ", " : "") << json_quote(lines[i]);
  d << "],\n\"palette\": [";
  for (int k = 0; k < 256; ++k) d << (k ? ", " : "") << '"' << svg_hex(viridis(k / 255.0)) << '"';
  d << "],\n\"weights\": [";
  for (std::size_t k = 0; k < view.weights.size(); ++k) d << (k ? (k % 64 == 0 ? ",\n" : ",") : "") << short_number(view.weights[k]);
  d << "]}";
  std::string data = d.str();
  for (std::size_t at = data.find("</"); at != std::string::npos; at = data.find("</", at)) data.replace(at, 2, "<\\/");

  const std::int64_t side = std::max(view.T, view.keys());
  const int css_px = side <= 16 ? 96 : 52;  // the grid's canvases, drawn one pixel a token and scaled (the longer side)
  const auto css_w = static_cast<int>(css_px * view.keys() / std::max<std::int64_t>(side, 1)), css_h = static_cast<int>(css_px * view.T / std::max<std::int64_t>(side, 1));
  out << "<section class=\"part\"" << (view.part.empty() ? "" : " data-part=\"" + esc(view.part) + "\"") << ">\n";
  if (!view.part.empty()) out << "<h2 class=\"part-title\">" << esc(view.part_title()) << "</h2>\n";
  out << "<div class=\"meta\">"
      << esc(view.cross ? fmt::format("{} layers × {} heads, T = {} decoder tokens down, S = {} source tokens across; every head on one scale, "
                                      "0 to 1; nothing masked", view.layers, view.heads, view.T, view.S)
                        : fmt::format("{} × {}, T = {}: queries down, keys across; every head on one scale, 0 to 1; {}{}", counted(view.layers, "layer"),
                                      counted(view.heads, "head"), tokens_of(view), view.bidirectional ? "" : "grey: ", view.masked_text()))
      << "</div>\n<div class=\"tokens\">" << (view.cross ? "decoder: " : "");
  token_spans(out, labels, view.pieces);
  if (view.cross) {
    out << "<br>source: ";
    token_spans(out, key_labels, view.key_pieces);
  }
  out << "</div>\n<div class=\"layout\">\n<table class=\"grid\">\n<thead><tr><th></th>";
  for (std::int64_t h = 0; h < view.heads; ++h) out << "<th>h" << view.first_head + h << "</th>";
  out << "</tr></thead>\n<tbody>\n";
  for (std::int64_t l = 0; l < view.layers; ++l) {
    out << "<tr><th>L" << view.first_layer + l << "</th>";
    for (std::int64_t h = 0; h < view.heads; ++h) {
      const auto& s = view.summary(l, h);
      out << fmt::format("<td><button class=\"head\" type=\"button\" data-l=\"{0}\" data-h=\"{1}\" aria-pressed=\"false\" title=\"{2}\">"
                         "<canvas width=\"{3}\" height=\"{4}\" style=\"width:{5}px;height:{6}px\"></canvas><span>{7} {8:.2f}</span></button></td>",
                         l, h, esc(lines[static_cast<std::size_t>(l * view.heads + h)]), view.keys(), view.T, css_w, css_h, esc(short_name(s)),
                         s.pattern_share);
    }
    out << "</tr>\n";
  }
  out << "</tbody>\n</table>\n<div class=\"detail\">\n<h2 class=\"detail-title\"></h2>\n<p class=\"summary detail-summary\"></p>\n"
      << "<div class=\"legend\">weight 0";
  for (int k = 0; k < 10; ++k) out << "<i style=\"background:" << svg_hex(viridis(k / 9.0)) << "\"></i>";
  out << (view.bidirectional || view.cross ? "1</div>\n" : "1 <i style=\"background:#e6e6e6;margin-left:12px\"></i>masked</div>\n")
      << "<canvas class=\"big\" width=\"10\" height=\"10\"></canvas>\n<p class=\"at\"></p>\n</div>\n</div>\n"
      << "<section class=\"summaries\">\n<h2>Every head</h2>\n<pre>";
  for (const auto& line : lines) out << esc(line) << "\n";
  out << "</pre>\n</section>\n<script type=\"application/json\" class=\"heads-data\">" << data << "</script>\n</section>\n";
}

}  // namespace

void render_heads_html(const std::vector<HeadsView>& views, std::ostream& out) {
  const std::string model = views.empty() ? std::string() : views[0].model;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
      << "<title>" << esc("attn heads · " + model) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  out << "<header class=\"top\">\n<h1>" << esc("attn heads · " + model) << "</h1>\n<div class=\"meta\">";
  if (!views.empty())
    for (std::size_t i = 0; i < views[0].notes.size(); ++i) out << (i ? "<br>" : "") << "note: " << esc(views[0].notes[i]);
  out << "</div>\n<div class=\"keys\">click a head to enlarge it · arrow keys move between heads · hover the enlarged head for each weight</div>\n"
      << "</header>\n";
  for (const auto& v : views) view_html(v.kept() ? v : pooled_view(v), out);
  out << "<script>" << kScript << "</script>\n</body>\n</html>\n";
}

}  // namespace attn::model
