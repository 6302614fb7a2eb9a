// attn_tracer._core: the library behind a thin Python layer (python/attn_tracer/__init__.py). Every
// function takes an input's JSON text (the Python side turns a path, a string or a dict into it) and
// calls what the CLI calls; nothing is printed, no file is written, and the GIL is released while the
// library computes. Every option goes through the library's checks, the CLI's, which name it as a
// keyword. attn::InputError becomes attn_tracer.InputError (a ValueError), any other failure
// attn_tracer.Error with the CLI's exit-3 wording. Types are the Python layer's to check.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <sstream>

#include "attn/spec/parse.hpp"
#include "attn/core/select_steps.hpp"
#include "attn/numerics/backend.hpp"
#include "attn/core/bytes.hpp"
#include "attn/core/config.hpp"
#include "attn/tools/cost.hpp"
#include "attn/tools/check.hpp"
#include "attn/pipeline/decode.hpp"
#include "attn/tools/diagnose.hpp"
#include "attn/tools/diff.hpp"
#include "attn/core/error.hpp"
#include "attn/pipeline/flash.hpp"
#include "attn/model/architectures/checkpoint.hpp"
#include "attn/model/tools/generate.hpp"
#include "attn/model/tools/heads.hpp"
#include "attn/spec/checkpoint_input.hpp"
#include "attn/core/options.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/pipeline/mistakes.hpp"
#include "attn/render/layout.hpp"
#include "attn/tools/predict.hpp"
#include "attn/render/render.hpp"
#include "attn/render/model_views.hpp"
#include "attn/core/spec.hpp"
#include "attn/core/steps.hpp"
#include "attn/io/trace_io.hpp"

namespace py = pybind11;

namespace {

// A run's trace, kept for its steps and renderings.
struct TraceHandle {
  attn::Trace trace;
  attn::TextOptions text;  // steps, head, batch, explain, code, precision: checked when the trace is made
  std::optional<attn::Flash> flash;  // flash="BQxBK": FlashAttention's tiled pass, checked against the context
};

// Every option is checked by the library's own checks, the CLI's; Door::Python names the keywords in
// their messages ("head=5: this trace has H = 2"). The Python layer has checked their types.
constexpr attn::Door kPython = attn::Door::Python;

// An int keyword of the library's int options (precision, width), in its range before it is narrowed.
int narrowed(std::int64_t value, std::string_view key, attn::IntRange range) {
  attn::check_range(kPython, key, value, range);
  return static_cast<int>(value);
}

py::array_t<float> to_array(const attn::Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array_t<float> a(shape);
  if (t.size() > 0) std::memcpy(a.mutable_data(), t.data(), static_cast<std::size_t>(t.size()) * sizeof(float));
  return a;  // a copy: nothing of the trace's memory is shared
}

attn::Tensor from_array(const py::array_t<float, py::array::c_style | py::array::forcecast>& a) {
  attn::Shape shape(a.shape(), a.shape() + a.ndim());
  std::vector<attn::Scalar> values(a.data(), a.data() + a.size());
  return attn::Tensor(shape, std::move(values));
}

const char* kind_name(attn::ValueKind k) { return k == attn::ValueKind::Mask ? "mask" : k == attn::ValueKind::Index ? "index" : "real"; }

// max_memory: the CLI's --max-memory. None: half of physical memory; a byte count; or a size ("8G").
struct MemoryLimit {
  std::int64_t bytes;
  std::string why;
};
MemoryLimit memory_limit(const py::object& max_memory) {
  if (max_memory.is_none()) return {attn::default_max_memory(), "half of physical memory"};
  if (py::isinstance<py::str>(max_memory)) return {attn::parse_bytes(max_memory.cast<std::string>(), kPython, "max_memory"), "as given"};
  const auto bytes = max_memory.cast<std::int64_t>();
  attn::check_range(kPython, "max_memory", bytes, attn::kPositiveRange);
  return {bytes, "as given"};
}

// The input's JSON text as the CLI reads a file (attn_cli::load_checked): origin names it in messages,
// base_dir resolves relative paths (npy tensors, checkpoint directories); its trace refused when it
// would not fit the limit. fused: the trace of a fused run, which holds no [T, S] step.
attn::Spec parse(const std::string& text, const std::string& origin, const std::string& base_dir, const MemoryLimit& limit, bool fused = false) {
  attn::Spec spec = attn::parse_spec(text, origin, base_dir, limit.bytes);
  attn::require_fits(attn::plan_trace(spec, fused), limit.bytes, limit.why);
  return spec;
}

// What run and backward share: the input, the options of the trace and of its text.
struct RunArgs {
  std::string text, origin, base_dir;
  std::vector<std::string> steps;
  std::optional<std::int64_t> head, batch;
  std::string mistake;
  bool explain = false, code = false;
  std::int64_t precision = 4;
  py::object max_memory;
  std::int64_t summary_threshold = 1000;  // tensors with more values are summarised (edges shown), as attn run's
  bool predict = false;  // the page asks before the input's exercise.predict steps (the weights by default), as --format html --predict
};

// The trace of run (backward: of attn backward), its text options checked against it as attn run's.
std::unique_ptr<TraceHandle> trace(const RunArgs& a, attn::PipelineOptions options, bool backward, const std::string& backend_name,
                                   const std::string& flash) {
  auto h = std::make_unique<TraceHandle>();
  const MemoryLimit limit = memory_limit(a.max_memory);
  py::gil_scoped_release release;
  options.door = kPython;
  h->text.door = kPython;
  h->text.precision = narrowed(a.precision, "precision", attn::kPrecisionRange);
  if (!a.mistake.empty()) options.mistake = attn::mistake_for_pass(a.mistake, backward, kPython);
  if (!flash.empty()) attn::require_tileable(options);
  const auto tiles = flash.empty() ? std::pair<std::int64_t, std::int64_t>{} : attn::parse_tile_sizes(flash, kPython);
  const attn::Spec spec = parse(a.text, a.origin, a.base_dir, limit, options.fused);
  auto backend = attn::make_backend(backend_name, kPython);
  attn::require_fits_on(*backend, spec, options.fused);  // the device's memory, as parse did the host's
  h->trace = backward ? attn::run_backward(spec, *backend, options) : attn::run_pipeline(spec, *backend, options);
  h->text.explain = a.explain;
  h->text.code = a.code;
  h->text.view.head = a.head;
  h->text.view.batch = a.batch;
  h->text.view.summary_threshold = a.summary_threshold;
  attn::check_text_options(h->trace, h->text);
  if (!a.steps.empty()) h->text.steps = attn::select_steps(h->trace, a.steps, "", "", kPython);  // unknown ids refused, as attn run --steps
  h->text.predict = a.predict;
  h->text.predict_ids = spec.predict;
  if (a.predict) attn::predicted_steps(h->trace, spec.predict, h->text.steps, kPython);  // an id the trace lacks: refused now, not in the page
  if (options.fused) h->text.heatmaps.clear();  // a fused trace keeps no weights to draw, as attn run --fused draws none
  if (!flash.empty()) h->flash = attn::run_flash(spec, h->trace, tiles.first, tiles.second, kPython);
  return h;
}

std::unique_ptr<TraceHandle> run(RunArgs a, bool fused, const std::string& backend_name, const std::string& flash) {
  attn::PipelineOptions options;
  options.fused = fused;
  return trace(a, options, false, backend_name, flash);
}

std::string render(const TraceHandle& h, const std::string& format, std::int64_t width, const std::string& step) {
  py::gil_scoped_release release;
  std::ostringstream out;
  attn::TextOptions t = h.text;
  t.width = narrowed(width, "width", attn::kWidthRange);
  if (!step.empty()) t.steps = attn::select_steps(h.trace, {step}, "", "", kPython, "step");
  if (format == "text") {
    attn::render_text(h.trace, out, t);
    if (h.flash && step.empty()) {  // fitted to the width, as attn run prints its reports
      std::ostringstream report;
      attn::render_flash_text(*h.flash, h.trace, report, t);
      out << attn::fit_lines(report.str(), static_cast<std::size_t>(t.width));
    }
  }
  else if (format == "json") attn::render_json(h.trace, out, false, t.steps);
  else if (format == "markdown") attn::render_markdown(h.trace, out, t);
  else if (format == "html") attn::render_html(h.trace, out, t);
  else if (format == "svg") attn::render_svg(h.trace, out, t);
  else throw attn::InternalError("render: format \"" + format + "\"");  // (the Python layer's own calls only)
  return out.str();
}

// A student's or another trace's steps: a trace handle, or id -> array.
attn::LoadedTrace loaded(const py::object& o, const std::string& origin) {
  if (py::isinstance<TraceHandle>(o)) return attn::loaded_from(o.cast<const TraceHandle&>().trace, origin);
  if (py::isinstance<py::str>(o)) {
    const auto path = o.cast<std::string>();
    py::gil_scoped_release release;
    return attn::load_trace(path);
  }
  attn::LoadedTrace t;
  t.origin = origin;
  for (const auto& [key, value] : o.cast<py::dict>()) {
    const auto id = key.cast<std::string>();
    t.steps.push_back(attn::LoadedStep{id, from_array(value.cast<py::array_t<float, py::array::c_style | py::array::forcecast>>()), {}});
  }
  // in pipeline order, as a directory of <step id>.npy files is read
  std::stable_sort(t.steps.begin(), t.steps.end(), [](const attn::LoadedStep& a, const attn::LoadedStep& b) { return attn::step_order(a.id) < attn::step_order(b.id); });
  return t;
}

// atol and rtol as the CLI's --atol and --rtol: finite, 0 or more.
attn::Tolerance tolerance(double atol, double rtol) {
  attn::check_tolerance(kPython, "atol", atol);
  attn::check_tolerance(kPython, "rtol", rtol);
  attn::Tolerance tol;
  tol.atol = atol, tol.rtol = rtol;
  return tol;
}

py::dict step_diff(const attn::StepDiff& d) {
  py::dict out;
  out["id"] = d.id;
  out["compared"] = d.compared;
  out["differ"] = d.differ;
  out["max_abs"] = d.max_abs;
  out["note"] = d.note;
  out["shape_a"] = std::vector<std::int64_t>(d.shape_a.begin(), d.shape_a.end());
  out["shape_b"] = std::vector<std::int64_t>(d.shape_b.begin(), d.shape_b.end());
  return out;
}

// attn diff of two traces (Traces, dicts of step id -> array, or paths): its fields and text.
py::dict diff_call(const py::object& a, const py::object& b, double atol, double rtol) {
  const attn::Tolerance tol = tolerance(atol, rtol);
  const attn::LoadedTrace ta = loaded(a, "a"), tb = loaded(b, "b");
  attn::DiffReport r;
  std::ostringstream text;
  {
    py::gil_scoped_release release;
    r = attn::diff_traces(ta, tb, tol);
    attn::render_diff_text(r, text);
  }
  py::dict out;
  out["ok"] = r.same();
  out["shared"] = r.shared;
  out["first_diverging"] = r.first_diverging >= 0 ? py::object(py::str(r.steps[static_cast<std::size_t>(r.first_diverging)].id)) : py::none();
  py::list steps;
  for (const auto& s : r.steps) steps.append(step_diff(s));
  out["steps"] = steps;
  out["text"] = text.str();
  return out;
}

// attn diagnose of a student's tensors against the spec: the verdict's fields and text.
py::dict diagnose_call(const std::string& text, const std::string& origin, const std::string& base_dir, const py::object& student, double atol,
                       double rtol, const py::object& max_memory) {
  const attn::Tolerance tol = tolerance(atol, rtol);
  const MemoryLimit limit = memory_limit(max_memory);
  const attn::LoadedTrace st = loaded(student, "student");
  attn::Diagnosis d;
  std::ostringstream out_text;
  {
    py::gil_scoped_release release;
    const attn::Spec spec = parse(text, origin, base_dir, limit);
    d = attn::diagnose(spec, origin, st, tol);
    attn::render_diagnosis_text(d, out_text);
  }
  py::dict out;
  out["correct"] = d.correct;
  out["mistake"] = d.matches.empty() || d.matches.front().mistake == nullptr ? py::object(py::none()) : py::object(py::str(d.matches.front().mistake->name));
  py::list mistakes;
  for (const auto& mm : d.matches)
    if (mm.mistake) mistakes.append(py::str(mm.mistake->name));
  out["mistakes"] = mistakes;
  out["first"] = d.correct ? py::object(py::none()) : py::object(step_diff(d.first));
  out["compared"] = d.compared;
  out["matching"] = d.matching;
  out["unknown"] = d.unknown;
  out["hints"] = d.hints;
  out["text"] = out_text.str();
  return out;
}

// attn decode: with tokens, the model's generation; without, the cache against the full causal pass.
// (JSON text, the text shown, whether the cache reproduces the full pass)
std::tuple<std::string, std::string, bool> decode_call(const std::string& text, const std::string& origin, const std::string& base_dir,
                                                       std::optional<std::int64_t> tokens, std::optional<std::int64_t> top,
                                                       std::optional<std::int64_t> prefill, const py::object& max_memory) {
  const MemoryLimit limit = memory_limit(max_memory);
  py::gil_scoped_release release;
  attn::check_decode_options(kPython, tokens, top, prefill);
  std::ostringstream shown;
  auto backend = attn::make_cpu_backend();
  if (tokens) {
    const attn::model::CheckpointInput in = attn::model::load_checkpoint_input_text(text, origin, base_dir, "attn_tracer.decode(tokens=N)");
    const attn::model::Generation g = attn::model::generate(in, *backend, *tokens, top.value_or(5), kPython);
    std::ostringstream json;
    attn::model::render_generation_json(g, json);
    attn::model::render_generation_text(g, shown, attn::TextOptions{}, -1);
    return std::make_tuple(json.str(), shown.str(), g.agrees);
  }
  const attn::Spec spec = parse(text, origin, base_dir, limit);
  const attn::Decode d = attn::run_decode(spec, *backend, prefill, kPython);
  attn::render_decode_text(d, shown, attn::TextOptions{}, {});
  std::ostringstream json;  // the fields of the comparison (decode writes text only)
  json << "{\"prefill\": " << d.prefill << ", \"compared\": \"" << d.last_id << "\", \"prefill_max\": " << d.prefill_max
       << ", \"decoded_max\": " << d.decoded_max << ", \"tolerance\": " << attn::Decode::kTolerance << ", \"rows\": [";
  for (std::size_t i = 0; i < d.rows.size(); ++i) {
    const auto& r = d.rows[i];
    json << (i ? ", " : "") << "{\"position\": " << r.position << ", \"weights\": " << r.weights << ", \"context\": " << r.context
         << ", \"last\": " << r.last << "}";
  }
  json << "]}";
  return std::make_tuple(json.str(), shown.str(), d.agrees());
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "attn_tracer's engine: the C++ library of the attn command (use the attn_tracer package, not this module)";
  static py::exception<attn::InputError> input_error(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const attn::InputError& e) {
      input_error(e.what());
    } catch (const py::error_already_set&) {
      throw;
    } catch (const py::builtin_exception&) {
      throw;
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "out of memory (the trace fits max_memory, but the machine has less free)");
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, (std::string("internal error (a bug in attn, please report it): ") + e.what()).c_str());
    }
  });

  py::class_<TraceHandle>(m, "TraceHandle")
      .def("steps",
           [](const TraceHandle& h) {
             py::list out;
             for (const auto& s : h.trace.steps) {
               std::vector<std::string> dims;
               for (const auto d : s.dims) dims.emplace_back(attn::dim_name(d));
               std::vector<std::int64_t> shape(s.value.shape().begin(), s.value.shape().end());
               out.append(py::make_tuple(s.id, s.title, s.formula, s.note, s.code, dims, shape, kind_name(s.kind), to_array(s.value)));
             }
             return out;
           })
      .def("render", &render, py::arg("format"), py::arg("width") = 80, py::arg("step") = "")
      .def("flash_max_diff", [](const TraceHandle& h) { return h.flash ? py::object(py::float_(h.flash->max_diff)) : py::object(py::none()); });

  // an input file's bytes, refused as attn refuses it (missing, a directory, empty, too large); "-" is a file here
  m.def("read_input", [](const std::string& path) {
    std::string text;
    {
      py::gil_scoped_release release;
      text = attn::read_input(path == "-" ? "./-" : path);
    }
    return py::bytes(text);
  });

  m.def("run", [](const std::string& text, const std::string& origin, const std::string& base_dir, const std::vector<std::string>& steps,
                  std::optional<std::int64_t> head, std::optional<std::int64_t> batch, const std::string& mistake, bool fused, bool explain,
                  bool code, std::int64_t precision, const std::string& backend, const std::string& flash, const py::object& max_memory,
                  std::int64_t summary_threshold, bool predict) {
    return run(RunArgs{text, origin, base_dir, steps, head, batch, mistake, explain, code, precision, max_memory, summary_threshold, predict},
               fused, backend, flash);
  });

  m.def("backward", [](const std::string& text, const std::string& origin, const std::string& base_dir, const std::vector<std::string>& steps,
                       std::optional<std::int64_t> head, std::optional<std::int64_t> batch, const std::string& mistake, bool explain, bool code,
                       std::int64_t precision, const py::object& max_memory, std::int64_t summary_threshold) {
    return trace(RunArgs{text, origin, base_dir, steps, head, batch, mistake, explain, code, precision, max_memory, summary_threshold}, {},
                 true, "cpu", "");
  });

  m.def("check", [](const std::string& text, const std::string& origin, const std::string& base_dir, const py::object& max_memory) {
    const MemoryLimit limit = memory_limit(max_memory);
    py::gil_scoped_release release;
    const attn::Spec spec = parse(text, origin, base_dir, limit);
    auto backend = attn::make_cpu_backend();
    const attn::CheckReport report = attn::check_spec(spec, *backend);
    std::ostringstream json, shown;
    attn::render_check_json(report, json);
    attn::render_check_text(report, shown);
    return std::make_pair(json.str(), shown.str());
  });

  m.def("diff", &diff_call);
  m.def("diagnose", &diagnose_call);
  m.def("decode", &decode_call);

  m.def("heads", [](const std::string& text, const std::string& origin, const std::string& base_dir, const py::object& max_memory) {
    const MemoryLimit limit = memory_limit(max_memory);
    py::gil_scoped_release release;
    const auto views = attn::model::load_heads_text(text, origin, base_dir, limit.bytes, "attn_tracer.heads(max_memory=...)");
    std::ostringstream json, shown;
    attn::model::render_heads_json(views, json);
    attn::model::render_heads_text(views, shown, attn::ColorMode::None, 80);
    return std::make_pair(json.str(), shown.str());
  });
}
