// --format html --predict: see html_predict.hpp. The replies the script writes follow
// check_prediction's words: what the learner said, what it is, how far apart.
#include "attn/render/html_predict.hpp"

#include <fmt/format.h>

#include "attn/core/text.hpp"
#include "attn/io/json_text.hpp"
#include "attn/tools/predict.hpp"

namespace attn {

const char* const kPredictStyle = R"css(
form.predict { border: 1px solid var(--line); border-left: 3px solid var(--accent); padding: 6px 12px; margin: 8px 0; max-width: 60em; }
form.predict .q { margin: 6px 0; }
form.predict label { display: block; }
form.predict input { font: inherit; width: 16em; margin: 2px 0; }
form.predict .reply { margin: 2px 0 0; }
form.predict .reply.right { color: #1b6e20; }
form.predict .reply.wrong { color: #8a3b00; }
.revealed[hidden] { display: none !important; }
#tally { font-weight: bold; }
)css";

// check() mirrors check_prediction (tools/predict.cpp): the same reading of an answer and the same
// words; an empty field asks for an answer instead (reveal gives up on it).
const char* const kPredictScript = R"js(
(function () {
  'use strict';
  var tally = document.getElementById('tally');
  var total = Number(tally.dataset.total), answered = 0, right = 0;
  function fixed(v, d) { var s = Number(v).toFixed(d); return /^-0\.?0*$/.test(s) ? s.slice(1) : s; }
  function sizes(a) {
    var parts = a.replace(/[×\[\](),xX*]/g, ' ').trim().split(/ +/);
    if (!parts[0]) return null;
    for (var i = 0; i < parts.length; i++) if (!/^\d+$/.test(parts[i])) return null;
    return parts.map(Number);
  }
  function number(a) {
    var s = a.replace(/^−/, '-');
    if (s.indexOf('.') < 0 && s.split(',').length === 2) s = s.replace(',', '.');
    return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s) ? Number(s) : null;
  }
  function shapeReply(d, a) {
    var got = sizes(a);
    if (!got) return { read: false, text: 'I could not read "' + a + '" as a shape: type the sizes as numbers, like [2, 3].' };
    var want = d.shape.split(',').map(Number), axes = JSON.parse(d.axes), shown = '[' + got.join(', ') + ']';
    if (shown === '[' + want.join(', ') + ']') return { read: true, right: true, text: 'Right: ' + d.truth + '.' };
    var why;
    if (got.length !== want.length) why = 'you gave ' + got.length + ' size' + (got.length === 1 ? '' : 's') + '; ' + d.step + ' has ' + want.length + ' ax' + (want.length === 1 ? 'is' : 'es');
    else if (got.length === 2 && got[0] === want[1] && got[1] === want[0]) why = 'the other way round: the rows are ' + axes[0] + ', the columns ' + axes[1];
    else why = got.map(function (g, k) { return g === want[k] ? null : axes[k] + ', is ' + want[k] + ', not ' + g; }).filter(Boolean).join('; ');
    return { read: true, right: false, text: 'Not quite: you said ' + shown + '; ' + d.truth + ' (' + why + ').' };
  }
  function topReply(d, a) {
    var said = a, keys = JSON.parse(d.keys), top = Number(d.key), named = [];
    if (said.length >= 2 && (said[0] === '"' || said[0] === "'") && said[said.length - 1] === said[0]) said = said.slice(1, -1);
    keys.forEach(function (k, j) { if (k === said || k.replace(/[₀-₉]+$/, '') === said && /[₀-₉]$/.test(k)) named.push(j); });
    if (!named.length) return { read: false, text: 'There is no key "' + said + '": the keys are ' + keys.join(', ') + '. Type one of them.' };
    if (named.indexOf(top) >= 0) return { read: true, right: true, text: 'Right: ' + d.truth + '.' };
    return { read: true, right: false, text: 'Not quite: you said "' + keys[named[0]] + '"; ' + d.truth + '.' };
  }
  function valueReply(d, a) {
    var v = number(a);
    if (v === null) return { read: false, text: 'I could not read "' + a + '" as a number: type it with two decimals, like 0.25.' };
    var off = Math.abs(v - Number(d.value)), by = fixed(off, off < 0.01 ? 4 : 2);
    if (off <= 0.005 + 1e-9) return { read: true, right: true, text: 'Right: ' + d.truth + '; you said ' + a + ', ' + by + ' off.' };
    return { read: true, right: false, text: 'Not quite: you said ' + a + '; ' + d.truth + ': ' + by + ' too ' + (v > Number(d.value) ? 'high' : 'low') + '.' };
  }
  function check(q) {
    var a = q.querySelector('input').value.trim(), d = q.dataset;
    if (!a) return { read: false, text: 'Type your prediction first (or reveal).' };
    return d.kind === 'shape' ? shapeReply(d, a) : d.kind === 'top' ? topReply(d, a) : valueReply(d, a);
  }
  function say(q, r) {
    var p = q.querySelector('.reply');
    p.textContent = r.text;
    p.className = 'reply' + (r.read ? (r.right ? ' right' : ' wrong') : '');
  }
  function count() {
    var left = total - answered;
    tally.textContent = right + ' of ' + answered + ' prediction' + (answered === 1 ? '' : 's') + ' right' + (left ? ' · ' + left + ' still to answer' : '');
  }
  // every question read, or given up on: counted once, the fields closed, the values shown
  function settle(form, replies) {
    Array.prototype.forEach.call(form.querySelectorAll('.q'), function (q, i) {
      say(q, replies[i]);
      answered += 1;
      if (replies[i].right) right += 1;
      q.querySelector('input').disabled = true;
    });
    form.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
    form.dataset.done = '1';
    form.parentNode.querySelector('.revealed').hidden = false;
    count();
  }
  Array.prototype.forEach.call(document.querySelectorAll('form.predict'), function (form) {
    var qs = Array.prototype.slice.call(form.querySelectorAll('.q'));
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      if (form.dataset.done) return;
      var replies = qs.map(check), unread = replies.filter(function (r) { return !r.read; });
      if (!unread.length) return settle(form, replies);
      qs.forEach(function (q, i) { say(q, replies[i].read ? { read: false, text: '' } : replies[i]); });
      qs[replies.indexOf(unread[0])].querySelector('input').focus();
    });
    form.querySelector('button.reveal').addEventListener('click', function () {
      if (form.dataset.done) return;
      settle(form, qs.map(function (q) {
        var r = check(q);
        return r.read ? r : { read: true, right: false, text: 'No prediction: ' + q.dataset.truth + '.' };
      }));
    });
  });
  count();
})();
)js";

namespace {

// The data a question's answer is checked against, as attributes of its <div class="q">.
std::string question_data(const Prediction& p) {
  std::string d = fmt::format(" data-step=\"{}\" data-truth=\"{}\"", markup_escape(p.step), markup_escape(p.truth));
  switch (p.kind) {
    case Prediction::Kind::Shape: {
      std::vector<std::string> axes;
      for (const auto& a : p.axes) axes.push_back(json_quote(a));
      return " data-kind=\"shape\"" + d + fmt::format(" data-shape=\"{}\" data-axes=\"{}\"", fmt::join(p.shape, ","), markup_escape(fmt::format("[{}]", fmt::join(axes, ","))));
    }
    case Prediction::Kind::Top: {
      std::vector<std::string> keys;
      for (const auto& k : p.keys) keys.push_back(json_quote(k));
      return " data-kind=\"top\"" + d + fmt::format(" data-key=\"{}\" data-keys=\"{}\"", p.key, markup_escape(fmt::format("[{}]", fmt::join(keys, ","))));
    }
    case Prediction::Kind::Value: return " data-kind=\"value\"" + d + fmt::format(" data-value=\"{:.9g}\"", p.value);
  }
  return d;
}

}  // namespace

void write_predict_form(std::ostream& out, const Trace& trace, const Step& step) {
  const auto questions = predict_questions(trace, step);
  out << "<form class=\"predict\" autocomplete=\"off\"><p>Predict before you see it: " << questions.size() << " question"
      << (questions.size() == 1 ? "" : "s") << ", then <em>check</em> (Enter) or <em>reveal</em>.</p>\n";
  for (std::size_t k = 0; k < questions.size(); ++k) {
    const std::string id = fmt::format("predict-{}-{}", markup_escape(step.id), k + 1);
    out << "<div class=\"q\"" << question_data(questions[k]) << "><label for=\"" << id << "\">" << k + 1 << ". "
        << markup_escape(questions[k].question) << "</label><input id=\"" << id << "\" type=\"text\" spellcheck=\"false\">"
        << "<p class=\"reply\" aria-live=\"polite\"></p></div>\n";
  }
  out << "<button type=\"submit\">check</button> <button type=\"button\" class=\"reveal\">reveal</button></form>\n";
}

std::size_t predict_question_count(const Trace& trace, const std::vector<std::size_t>& steps) {
  std::size_t n = 0;
  for (const auto i : steps) n += predict_questions(trace, trace.steps[i]).size();
  return n;
}

}  // namespace attn
