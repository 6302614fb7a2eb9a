// --dump and --svg-dir (dump.hpp): the steps as .npy files with the trace JSON and steps.py, the
// inputs as the user wrote them, and the heatmap pictures, each into an OutputDir.
#include "attn/render/dump.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "attn/core/error.hpp"
#include "attn/core/steps.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/output_dir.hpp"
#include "attn/render/render.hpp"

namespace attn {

namespace {

// W (in, out) as the input wrote it: nn.Linear's (out, in) under the torch layout.
Tensor as_written(const Spec& s, const Tensor& w) {
  if (s.layout != Layout::Torch) return w;
  const auto in = w.dim(0), n = w.dim(1);
  Tensor t = Tensor::uninitialized({n, in});
  const Scalar* p = w.data();
  Scalar* o = t.mutable_data();
  for (std::int64_t i = 0; i < in; ++i)
    for (std::int64_t j = 0; j < n; ++j) o[j * in + i] = p[i * n + j];
  return t;
}

// Without the leading batch axis when the input had none (x, source, q, k, v, scores), or when one
// pattern serves every batch row (the masks).
Tensor unbatched(const Tensor& t, bool drop) {
  if (!drop || t.shape().empty() || t.dim(0) != 1) return t;
  return t.reshaped(Shape(t.shape().begin() + 1, t.shape().end()));
}

// The inputs the steps' code names (pipeline/step_code.cpp), as DIR/inputs/<name>.npy; returns the names.
std::vector<std::string> dump_inputs(const Spec& s, OutputDir& out) {
  std::vector<std::string> names;
  auto put = [&](const std::string& name, const Tensor& t) {
    write_npy(out.file("inputs/" + name + ".npy"), t);
    names.push_back(name);
  };
  const bool drop_b = !s.batched;
  if (!s.x.shape().empty()) put("x", unbatched(s.x, drop_b));
  if (!s.source.shape().empty()) put("source", unbatched(s.source, drop_b));
  if (s.positions == Positions::Learned) put("positions", s.position_table);
  const auto& w = s.w;
  for (const auto& [name, t] : {std::pair{"W_q", &w.W_q}, {"W_k", &w.W_k}, {"W_v", &w.W_v}, {"W_qkv", &w.W_qkv}, {"W_o", &w.W_o}})
    if (*t) put(name, as_written(s, **t));
  for (const auto& [name, t] : {std::pair{"b_q", &w.b_q}, {"b_k", &w.b_k}, {"b_v", &w.b_v}, {"b_qkv", &w.b_qkv}, {"b_o", &w.b_o}})
    if (*t) put(name, **t);
  if (s.entry == Entry::QKV) put("q", unbatched(s.q, drop_b)), put("k", unbatched(s.k, drop_b));
  if (!s.v.shape().empty() && s.entry != Entry::Embeddings) put("v", unbatched(s.v, drop_b));
  if (s.entry == Entry::Scores) {
    // (B, H, T, S), without the axes the input had not: no B when unbatched, no H with one head
    Shape shape;
    if (s.batched) shape.push_back(s.B);
    if (s.H > 1) shape.push_back(s.H);
    shape.push_back(s.T), shape.push_back(s.S);
    put("scores", s.scores.reshaped(shape));
  }
  // attn backward's given upstream gradient or target, as written
  if (s.backward.upstream == Spec::Backward::Upstream::Given) put("grad_output", s.backward.tensor);
  if (s.backward.upstream == Spec::Backward::Upstream::Target) put("target", s.backward.tensor);
  if (!s.lengths.empty()) {
    write_npy(out.file("inputs/lengths.npy"), s.lengths);
    names.push_back("lengths");
  }
  if (!s.user_keep.shape().empty()) put("attn_mask_keep", unbatched(s.user_keep, true));
  if (!s.user_add.shape().empty()) put("mask_add", unbatched(s.user_add, true));
  if (!s.alibi_slopes.shape().empty()) put("alibi_slopes", s.alibi_slopes);
  if (s.relative_bias) put("rel_table", s.relative_bias->table);
  if (s.qk_norm) {
    // Gemma's stored weight w, which the code adds 1 to (the spec holds the sum)
    for (const auto& [name, t] : {std::pair{"q_norm_weight", &s.qk_norm->q_weight}, {"k_norm_weight", &s.qk_norm->k_weight}}) {
      Tensor stored(t->shape(), std::vector<Scalar>(t->values().begin(), t->values().end()));
      if (s.qk_norm->plus_one)
        for (std::int64_t i = 0; i < stored.size(); ++i) stored.mutable_data()[i] -= 1.0F;
      put(name, stored);
    }
  }
  return names;
}

std::string step_name(std::string id) {
  for (auto& c : id)
    if (c == '.') c = '_';
  return id;
}

// DIR/steps.py: the steps' code as one script that loads the inputs, runs every step and prints how
// far each is from attn's values (a re-layout of the trace: nothing computed here).
void write_steps_py(const Trace& t, const std::vector<std::string>& inputs, std::ostream& out) {
  const auto& c = t.config;
  out << "# Every step of \"" << (c.title.empty() ? std::string("the trace") : c.title) << "\" as PyTorch, written by attn run --dump.\n"
      << "# Run it: python3 steps.py (from any directory). It loads inputs/*.npy, runs each step's code and\n"
      << "# prints its largest difference from attn's values (<step id>.npy).\n"
      << "import math\nimport os\n\nimport numpy as np\nimport torch\n\n"
      << "os.chdir(os.path.dirname(os.path.abspath(__file__)))  # the paths below are this directory's\n\n";
  std::vector<std::string> sizes = {fmt::format("B = {}", c.B), fmt::format("T = {}", c.T), fmt::format("S = {}", c.S)};
  for (const auto& [name, v] : {std::pair{"C", c.C}, {"Cs", c.Cs}, {"dk", c.dk}, {"dv", c.dv}, {"Co", c.Co}})
    if (v > 0) sizes.push_back(fmt::format("{} = {}", name, v));
  sizes.push_back(fmt::format("H = {}", c.H));
  sizes.push_back(fmt::format("kv_heads = {}", c.Hkv));  // Hkv, by the trace JSON's name for it
  if (c.hs > 0) sizes.push_back(fmt::format("hs = {}", c.hs));
  if (c.hv > 0) sizes.push_back(fmt::format("hv = {}", c.hv));
  out << fmt::format("{}\n\n", fmt::join(sizes, "\n"));
  for (const auto& name : inputs) {
    const bool step = t.find(name) != nullptr || (name == "mask_add" && t.find("mask.add") != nullptr);
    if (!step) out << fmt::format("{} = torch.from_numpy(np.load(\"inputs/{}.npy\"))\n", name, name);
  }
  out << "\n\ndef check(name, value):\n"
      << "    want = torch.from_numpy(np.load(name + \".npy\")).to(torch.float64)\n"
      << "    got = value.detach().to(torch.float64).reshape(want.shape)\n"
      << "    finite = torch.isfinite(want)\n"
      << "    same = bool(torch.equal(finite, torch.isfinite(got)) and torch.equal(got[~finite].nan_to_num(0), want[~finite].nan_to_num(0)))\n"
      << "    d = float((got[finite] - want[finite]).abs().max()) if bool(finite.any()) else 0.0\n"
      << "    print(f\"{name:10} {list(want.shape)!s:16} largest difference {d:.2g}{'' if same else ', non-finite values differ'}\")\n";
  for (const auto& s : t.steps) {
    out << fmt::format("\n\n# [{}] {}: {}\n", s.id, s.title, s.formula);
    for (const auto& line : code_lines(s.code)) out << line << "\n";
    out << fmt::format("check(\"{}\", {})\n", s.id, step_name(s.id));
  }
}

}  // namespace

void dump_trace(const Trace& trace, const Spec& spec, const std::string& dir, bool force) {
  OutputDir out(dir, "--dump", force);
  for (const auto& step : trace.steps) write_npy(out.file(step.id + ".npy"), step.value);
  const auto inputs = dump_inputs(spec, out);
  std::ofstream py(out.file("steps.py"), std::ios::binary | std::ios::trunc);
  write_steps_py(trace, inputs, py);
  if (!py) throw InputError(fmt::format("--dump {}: cannot write steps.py", dir));
  std::ofstream json(out.file("trace.json"), std::ios::binary | std::ios::trunc);
  if (!json) throw InputError(fmt::format("--dump {}: cannot write trace.json", dir));
  render_json(trace, json, /*data_in_npy_files=*/true);
  out.finish();
}

void write_svg_pictures(const Trace& trace, const TextOptions& options, const std::string& dir, bool force) {
  OutputDir out(dir, "--svg-dir", force);
  for (const auto& p : render_svg_pictures(trace, options)) {
    std::ofstream f(out.file(p.name), std::ios::binary | std::ios::trunc);
    if (!(f << p.svg)) throw InputError(fmt::format("--svg-dir {}: cannot write {}", dir, p.name));
  }
  out.finish();
}

}  // namespace attn
