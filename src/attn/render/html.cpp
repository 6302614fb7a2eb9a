// --format html: the walkthrough as one self-contained page. Everything it shows is in the file:
// the styles, a small script for the keyboard, the selectors and the hover, the heatmaps as inline
// SVG. It loads nothing (no network, no external script, font or image), so it works offline and
// can be saved, mailed and printed. The numbers and the words come from the trace, the hover texts
// from explain_cell; this file only lays them out.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "attn/tools/explain.hpp"
#include "attn/tools/predict.hpp"
#include "attn/render/html_predict.hpp"
#include "attn/render/render.hpp"

namespace attn {
namespace {

std::string esc(std::string_view s) { return markup_escape(s); }

constexpr const char* kStyle = R"css(
:root { --ink: #1b1b1b; --muted: #5a5a5a; --line: #d8d8d8; --accent: #3b528b; --blocked: #e6e6e6; }
* { box-sizing: border-box; }
body { margin: 0; font-family: "DejaVu Sans", Verdana, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--ink); line-height: 1.4; }
header.top { padding: 12px 20px; border-bottom: 1px solid var(--line); background: #fafafa; }
header.top h1 { font-size: 20px; margin: 0 0 4px; }
header.top .meta { color: var(--muted); font-size: 13px; }
.controls { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin-top: 8px; font-size: 14px; }
.controls button { font: inherit; padding: 2px 10px; }
.controls .keys { color: var(--muted); font-size: 12px; }
.layout { display: flex; }
nav.steps { width: 220px; flex: none; border-right: 1px solid var(--line); padding: 8px 0; font-size: 13px; min-height: 100vh; }
nav.steps a { display: block; padding: 3px 14px; color: var(--ink); text-decoration: none; }
nav.steps a[aria-current="step"] { background: var(--accent); color: #fff; }
main { flex: 1; padding: 12px 24px 40px; min-width: 0; }
section.step { display: none; }
section.step.current, body.all section.step { display: block; }
section.step h2 { font-size: 18px; margin: 8px 0 4px; }
section.step h2 code { font-size: 15px; color: var(--muted); }
.formula { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 15px; margin: 4px 0; }
.shape { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; color: var(--muted); margin: 2px 0 6px; }
.note { font-style: italic; color: var(--muted); margin: 2px 0 8px; }
.code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 13px; margin: 4px 0 8px; padding: 4px 8px; background: #f4f4f4; white-space: pre-wrap; overflow-wrap: anywhere; }
.explain { border-left: 3px solid var(--accent); padding: 2px 10px; margin: 8px 0; max-width: 60em; }
.block { margin: 12px 0 18px; }
.block[hidden] { display: none; }
.block h3 { font-size: 14px; margin: 0 0 4px; color: var(--muted); font-weight: normal; }
.pair { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
table.tensor { border-collapse: collapse; font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 13px; }
table.tensor th, table.tensor td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #eee; }
table.tensor thead th { border-bottom: 1px solid var(--line); color: var(--muted); font-weight: normal; }
table.tensor tbody th { color: var(--muted); font-weight: normal; text-align: left; }
table.tensor td[data-x] { cursor: help; }
table.tensor td[data-x]:hover, table.tensor td[data-x]:focus { background: #fff3b0; outline: 1px solid #d9b300; }
table.tensor td.sum { color: var(--muted); border-left: 1px solid var(--line); }
table.tensor td.blocked { color: #888; background: var(--blocked); }
#tip { position: fixed; display: none; max-width: 36em; padding: 8px 10px; background: #222; color: #fff; font-size: 13px;
       font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; white-space: pre-line; border-radius: 4px; pointer-events: none; z-index: 10; }
@media print {
  header.top .controls, nav.steps, #tip { display: none !important; }
  section.step { display: block !important; break-inside: avoid-page; page-break-inside: avoid; }
  section.step + section.step { break-before: page; page-break-before: always; }
  .block[hidden] { display: block !important; }
  main { padding: 0 0 0 12mm; }
  table.tensor td[data-x]:hover { background: none; outline: none; }
}
)css";

constexpr const char* kScript = R"js(
(function () {
  'use strict';
  var steps = Array.prototype.slice.call(document.querySelectorAll('section.step'));
  var links = Array.prototype.slice.call(document.querySelectorAll('nav.steps a'));
  var pos = document.getElementById('pos');
  var cur = 0;
  function show(k, opening) {
    cur = Math.max(0, Math.min(steps.length - 1, k));
    steps.forEach(function (s, i) { s.classList.toggle('current', i === cur); });
    links.forEach(function (a, i) { if (i === cur) a.setAttribute('aria-current', 'step'); else a.removeAttribute('aria-current'); });
    pos.textContent = 'step ' + (cur + 1) + ' of ' + steps.length;
    document.getElementById('prev').disabled = cur === 0;
    document.getElementById('next').disabled = cur === steps.length - 1;
    // (not while the page opens without a step in its address: Chromium would then scroll to the
    // fragment when loading ends, away from the title)
    if (history.replaceState && !(opening && !location.hash)) history.replaceState(null, '', '#' + steps[cur].id);
    // one step at a time: from the top, controls in view; every step on one page: go to it
    if (document.body.classList.contains('all')) steps[cur].scrollIntoView({block: 'start'});
    else window.scrollTo(0, 0);
    hideTip();
  }
  function filter() {
    var head = document.getElementById('head'), batch = document.getElementById('batch');
    var h = head ? head.value : 'all', b = batch ? batch.value : 'all';
    Array.prototype.forEach.call(document.querySelectorAll('.block'), function (el) {
      var hideH = h !== 'all' && el.dataset.head !== undefined && el.dataset.head !== h;
      var hideB = b !== 'all' && el.dataset.batch !== undefined && el.dataset.batch !== b;
      el.hidden = hideH || hideB;
    });
    // the explanations quote head 0 and batch row 0: say so when another is chosen
    Array.prototype.forEach.call(document.querySelectorAll('.explain-which'), function (el) {
      el.hidden = (h === 'all' || h === '0') && (b === 'all' || b === '0');
    });
  }
  links.forEach(function (a, i) { a.addEventListener('click', function (e) { e.preventDefault(); show(i); }); });
  document.getElementById('prev').addEventListener('click', function () { show(cur - 1); });
  document.getElementById('next').addEventListener('click', function () { show(cur + 1); });
  document.getElementById('all').addEventListener('change', function (e) { document.body.classList.toggle('all', e.target.checked); show(cur); });
  ['head', 'batch'].forEach(function (id) { var el = document.getElementById(id); if (el) el.addEventListener('change', filter); });
  document.addEventListener('keydown', function (e) {
    var k = e.key, tag = e.target && e.target.tagName;
    // (typing a prediction, or Space and Enter on a button, are the field's and the button's)
    if (e.altKey || e.ctrlKey || e.metaKey || tag === 'SELECT' || (tag === 'INPUT' && e.target.type === 'text') || (tag === 'BUTTON' && (k === ' ' || k === 'Enter'))) return;
    if (k === 'ArrowRight' || k === 'PageDown' || k === 'j' || k === 'n' || k === ' ') { show(cur + 1); e.preventDefault(); }
    else if (k === 'ArrowLeft' || k === 'PageUp' || k === 'k' || k === 'p' || k === 'b') { show(cur - 1); e.preventDefault(); }
    else if (k === 'Home') { show(0); e.preventDefault(); }
    else if (k === 'End') { show(steps.length - 1); e.preventDefault(); }
  });
  var tip = document.getElementById('tip');
  function hideTip() { tip.style.display = 'none'; }
  function place(x, y) {
    var w = tip.offsetWidth, h = tip.offsetHeight;
    tip.style.left = Math.max(4, Math.min(window.innerWidth - w - 4, x + 14)) + 'px';
    tip.style.top = (y + 18 + h > window.innerHeight ? Math.max(4, y - h - 10) : y + 18) + 'px';
  }
  function tipFor(td, x, y) { tip.textContent = td.dataset.x; tip.style.display = 'block'; place(x, y); }
  document.addEventListener('mouseover', function (e) {
    var td = e.target.closest ? e.target.closest('td[data-x]') : null;
    if (td) tipFor(td, e.clientX, e.clientY); else hideTip();
  });
  document.addEventListener('mousemove', function (e) { if (tip.style.display === 'block') place(e.clientX, e.clientY); });
  document.addEventListener('focusin', function (e) {
    var td = e.target.closest ? e.target.closest('td[data-x]') : null;
    if (td) { var r = td.getBoundingClientRect(); tipFor(td, r.left, r.bottom - 10); }
  });
  var start = 0;
  steps.forEach(function (s, i) { if ('#' + s.id === location.hash) start = i; });
  filter();
  show(start, true);
})();
)js";

std::string number(const Step& s, Scalar v, int precision) {
  if (s.kind == ValueKind::Mask) return v != 0 ? "1" : "0";
  if (s.kind == ValueKind::Index) return fmt::format("{:.0f}", v);
  if (std::isinf(v)) return v < 0 ? "−∞" : "+∞";
  return format_fixed(v, precision);
}

// A token axis header's hover text: the vocabulary's own spelling of a checkpoint's token ("Ġcat").
std::string piece_title(const TraceConfig& c, Dim dim, std::int64_t i) {
  if ((dim != Dim::T && dim != Dim::S) || i < 0 || i >= static_cast<std::int64_t>(c.token_pieces.size())) return "";
  return " title=\"vocabulary piece: " + esc(c.token_pieces[static_cast<std::size_t>(i)]) + "\"";
}

// An explanation: one paragraph, or its paragraphs and preformatted blocks (a matrix) in one framed
// part; `which` adds the note the head and batch-row selectors show.
std::string explanation(const std::vector<ExplainPart>& parts, bool which) {
  const std::string note = which ? " <em class=\"explain-which\" hidden>(The numbers quoted are head 0's, batch row 0's.)</em>" : "";
  if (parts.size() == 1 && !parts[0].preformatted) return "<p class=\"explain\">" + esc(parts[0].lines[0]) + note + "</p>\n";
  std::string out = "<div class=\"explain\">";
  for (const auto& p : parts) {
    if (p.preformatted) out += "<pre>" + esc(fmt::format("{}", fmt::join(p.lines, "\n"))) + "</pre>";
    else out += "<p>" + esc(p.lines[0]) + "</p>";
  }
  return out + (which ? "<p>" + note + "</p>" : "") + "</div>\n";
}

void table(std::ostream& out, const Trace& t, const Step& s, const StepLayout& l, const Block& b, int precision) {
  const auto& c = t.config;
  const Step* masked = blocking_step(t, s);
  out << "<table class=\"tensor\"><thead><tr><th></th>";
  for (const auto& j : l.cols) {
    out << "<th" << (j ? piece_title(c, l.col_dim, *j) : "") << ">" << (j ? esc(distinct_axis_label(c, l.col_dim, *j, b.batch)) : "…") << "</th>";
  }
  if (s.row_sums) out << "<th>sum</th>";
  out << "</tr></thead><tbody>\n";
  for (const auto& i : l.rows) {
    out << "<tr><th" << (i ? piece_title(c, l.row_dim, *i) : "") << ">" << (i ? esc(distinct_axis_label(c, l.row_dim, *i, b.batch)) : "…") << "</th>";
    for (const auto& j : l.cols) {
      if (!i || !j) {
        out << "<td>…</td>";
        continue;
      }
      const auto at = b.offset + *i * l.col_count + *j;
      const bool is_blocked = blocked(masked, at) || (s.id == "masked" && std::isinf(s.value.at(at)) && s.value.at(at) < 0);
      out << "<td" << (is_blocked ? " class=\"blocked\"" : "") << " tabindex=\"0\" data-x=\"" << esc(explain_cell(t, s, at)) << "\">"
          << number(s, s.value.at(at), precision) << "</td>";
    }
    if (s.row_sums) out << "<td class=\"sum\">" << (i ? number(s, s.row_sums->data()[b.row_offset + *i], precision) : "…") << "</td>";
    out << "</tr>\n";
  }
  out << "</tbody></table>";
}

// One step's section: title, formula, shape, note, code, explanation, tensors and pictures. ask
// (--predict): the questions come after the formula, and the rest stays hidden until answered.
void step_section(std::ostream& out, const Trace& t, const Step& s, std::size_t n, const TextOptions& o,
                  const std::map<std::pair<std::string, std::string>, std::string>& pictures, bool ask) {
  const auto& c = t.config;
  const StepLayout l = layout_step(s, c, o.view);
  out << fmt::format("<section class=\"step\" id=\"step-{}\">\n<h2>{}. {} <code>{}</code></h2>\n", esc(s.id), n + 1, esc(s.title), esc(s.id));
  out << "<p class=\"formula\">" << esc(s.formula) << "</p>\n";
  if (ask) {
    write_predict_form(out, t, s);
    out << "<div class=\"revealed\" hidden>\n";
  }
  out << "<p class=\"shape\">" << esc(shape_line(s))
      << (l.summarised ? " · summarised: the first and last entries of each axis" : "") << "</p>\n";
  if (!s.note.empty()) out << "<p class=\"note\">" << esc(s.note) << "</p>\n";
  if (!s.code.empty()) out << "<pre class=\"code\"><code>" << esc(fmt::format("{}", fmt::join(code_lines(s.code), "\n"))) << "</code></pre>\n";
  if (o.explain) {
    const auto text = explain_step(t, s, {o.view.batch.value_or(0), o.view.head.value_or(0)});
    if (!text.empty()) {
      // steps with heads or batch rows quote their first block
      const bool per_block = std::any_of(s.dims.begin(), s.dims.end(), [](Dim d) { return d == Dim::H || d == Dim::B; });
      out << explanation(explain_parts(text), per_block);
    }
  }
  if (is_scalar(s)) out << "<p class=\"scalar\"><code>" << esc(fmt::format("{} = {}", s.id, number(s, s.value.at(0), o.precision))) << "</code></p>\n";
  for (const auto& b : is_scalar(s) ? std::vector<Block>{} : l.blocks) {
    if (b.gap) {
      out << "<div class=\"block\"><h3>… " << esc(b.title) << "</h3></div>\n";
      continue;
    }
    out << "<div class=\"block\"" << (b.head >= 0 ? fmt::format(" data-head=\"{}\"", b.head) : "")
        << (b.has_batch ? fmt::format(" data-batch=\"{}\"", b.batch) : "") << ">";
    if (!b.title.empty()) out << "<h3>" << esc(b.title) << "</h3>";
    out << "<div class=\"pair\">";
    table(out, t, s, l, b, o.precision);
    if (const auto p = pictures.find({s.id, b.key}); p != pictures.end()) out << "<div class=\"picture\">" << p->second << "</div>";
    out << "</div></div>\n";
  }
  if (ask) out << "</div>\n";
  out << "</section>\n";
}

}  // namespace

void render_html(const Trace& t, std::ostream& out, const TextOptions& o) {
  check_text_options(t, o);
  const auto& c = t.config;
  const std::string title = c.title.empty() ? "Attention Tracer" : "Attention Tracer · " + c.title;
  // the pictures of each step and block (heatmap steps and the mask), drawn inline
  std::map<std::pair<std::string, std::string>, std::string> pictures;
  for (const auto& p : render_svg_pictures(t, o)) {
    std::string svg = p.svg;
    if (const auto at = svg.find("<svg"); at != std::string::npos) svg.erase(0, at);  // no XML declaration inside HTML
    pictures[{p.step, p.block}] = svg;
  }
  std::vector<std::size_t> indices = o.steps;
  if (indices.empty())
    for (std::size_t i = 0; i < t.steps.size(); ++i) indices.push_back(i);
  const std::vector<std::size_t> predicted = o.predict ? predicted_steps(t, o.predict_ids, o.steps) : std::vector<std::size_t>{};

  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // nothing may be fetched: the page is whole without the network
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "script-src 'unsafe-inline'; img-src data:\">\n"
      << "<title>" << esc(title) << "</title>\n<style>" << kStyle << (o.predict ? kPredictStyle : "") << "</style>\n</head>\n<body>\n";
  out << "<header class=\"top\">\n<h1>" << esc(title) << "</h1>\n<div class=\"meta\">"
      << esc(fmt::format("mode {} · {} · T = {} · S = {} · {}", mode_name(c.mode), c.batched ? fmt::format("B = {}", c.B) : "B = 1 (no batch dimension)",
                         c.T, c.S, widths_text(c, " · ")))
      << "<br>" << esc(fmt::format("scale {}", c.scale));
  for (const auto& n : c.notes) out << "<br>note: " << esc(n);
  out << "</div>\n<div class=\"controls\"><button id=\"prev\" type=\"button\">← previous</button><span id=\"pos\"></span>"
      << "<button id=\"next\" type=\"button\">next →</button>";
  // the selectors offer the heads and batch rows the page shows (a summarised trace leaves some out)
  std::set<std::int64_t> heads, batches;
  for (const auto idx : indices) {
    for (const auto& b : layout_step(t.steps[idx], c, o.view).blocks) {
      if (b.gap) continue;
      if (b.head >= 0) heads.insert(b.head);
      if (b.has_batch) batches.insert(b.batch);
    }
  }
  auto selector = [&](const char* id, const char* label, const std::set<std::int64_t>& values, std::int64_t all) {
    if (values.size() < 2) return;
    out << fmt::format("<label>{} <select id=\"{}\"><option value=\"all\">all</option>", label, id);
    for (const auto v : values) out << fmt::format("<option value=\"{0}\">{0}</option>", v);
    out << "</select>" << (static_cast<std::int64_t>(values.size()) < all ? fmt::format(" ({} of {} shown)", values.size(), all) : "") << "</label>";
  };
  selector("head", "head", heads, c.H);
  selector("batch", "batch row", batches, c.B);
  if (o.predict) out << "<span id=\"tally\" aria-live=\"polite\" data-total=\"" << predict_question_count(t, predicted) << "\"></span>";
  out << "<label><input id=\"all\" type=\"checkbox\"> every step on one page</label>"
      << "<span class=\"keys\">keys: → or Space next · ← back · Home / End · hover a number to see how it was computed</span></div>\n"
      << "</header>\n<div class=\"layout\">\n<nav class=\"steps\" aria-label=\"steps\">\n";
  for (std::size_t n = 0; n < indices.size(); ++n) {
    const Step& s = t.steps[indices[n]];
    out << fmt::format("<a href=\"#step-{}\">{}. {}</a>\n", esc(s.id), n + 1, esc(s.title));
  }
  out << "</nav>\n<main>\n";
  for (std::size_t n = 0; n < indices.size(); ++n) {
    const bool ask = std::find(predicted.begin(), predicted.end(), indices[n]) != predicted.end();
    step_section(out, t, t.steps[indices[n]], n, o, pictures, ask);
  }
  out << "</main>\n</div>\n<div id=\"tip\" role=\"tooltip\"></div>\n<script>" << kScript << "</script>\n";
  if (o.predict) out << "<script>" << kPredictScript << "</script>\n";
  out << "</body>\n</html>\n";
}

}  // namespace attn
