// Renderers: read a trace, write a stream. They format; they compute nothing.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "attn/io/json_text.hpp"
#include "attn/render/color.hpp"
#include "attn/render/layout.hpp"
#include "attn/core/trace.hpp"

namespace attn {

struct TextOptions {
  int precision = 4;          // decimals of every printed number
  bool shapes_only = false;   // the shape flow alone
  ViewOptions view;           // summarising, --head, --batch
  std::vector<std::size_t> steps;                   // indices into trace.steps to show; empty = all
  std::vector<std::string> heatmaps = {"weights"};  // step ids also drawn as heatmaps
  ColorMode color = ColorMode::None;
  bool explain = false;       // a short explanation after each step
  bool code = false;          // --code: each step's PyTorch statements under its formula
  bool fit_range = false;     // --heat-range fit: each heatmap's colours span its own values
  bool timings = false;       // each step's time (varies run to run: never in goldens)
  int width = 80;             // display columns: notes, formulas and explanations wrap, wider tables split into column blocks
  // where --svg-dir writes the pictures: the markdown handout links them there (relative to where
  // the handout is read); empty: the handout carries them inline as data URIs
  std::string picture_dir;
  // --predict: ask before the steps of predict_ids (exercise.predict; "weights" when empty) in the
  // pager and in the page (html), then reveal them
  bool predict = false;
  std::vector<std::string> predict_ids;
  Door door = Door::Cli;      // the door the options came through: messages name them as it spells them ("--head", "head=")
};

// Refuses a precision outside 0 .. 12 or a width outside 20 .. 1000, and with the trace check_view's
// refusals: every renderer below checks its options so before it indexes a step.
void check_text_options(const TextOptions& options);
void check_text_options(const Trace& trace, const TextOptions& options);

// The whole walkthrough: header, then every selected step.
void render_text(const Trace& trace, std::ostream& out, const TextOptions& options);
// The pieces, for --step pacing.
void render_text_header(const Trace& trace, std::ostream& out, const TextOptions& options);
void render_text_step(const Trace& trace, std::size_t index, std::ostream& out, const TextOptions& options);

// data_in_npy_files: each step says "npy": "<id>.npy" instead of holding its data (attn run --dump).
// only: indices into trace.steps to write (--steps); empty: every step.
void render_json(const Trace& trace, std::ostream& out, bool data_in_npy_files = false, const std::vector<std::size_t>& only = {});

// A handout: headings per step, formula, shape, tables with token labels (and explanations).
void render_markdown(const Trace& trace, std::ostream& out, const TextOptions& options);

// Pictures: attention heatmaps per batch row and head (and the mask pattern), as SVG documents.
struct SvgPicture {
  std::string step;  // the step id it shows
  std::string block; // its block's key ("b0.h1"; "" for a 2-D step)
  std::string name;  // file name: "weights.svg" or "weights.b0.h1.svg", "mask.svg", ...
  std::string svg;   // the whole SVG document
};
std::vector<SvgPicture> render_svg_pictures(const Trace& trace, const TextOptions& options);
// All pictures in one SVG document, stacked.
void render_svg(const Trace& trace, std::ostream& out, const TextOptions& options);

// --format html: the walkthrough as one self-contained page (no network, no external script or
// font): a step at a time with the keyboard, a head and batch selector, the tensors with token
// labels, heatmaps, each entry's computation on hover, and print styles for handouts.
void render_html(const Trace& trace, std::ostream& out, const TextOptions& options);

// Whether a step can be drawn as a heatmap: its last two axes are tokens (queries x keys).
bool heatmap_able(const Step& step);

// The algorithms' text (decode_text.cpp, flash_text.cpp, flash_backward_text.cpp): each reads the
// result its pipeline/ algorithm kept (decode.hpp, flash.hpp, flash_backward.hpp); its only
// arithmetic is on sizes (the bytes a cache holds, or the tiled pass never holds).
struct Decode;
struct Flash;
struct FlashBackward;
// attn decode: the prefill, each decoded token, then every row against the full trace; step_ids:
// the steps shown in every pass (all when empty).
void render_decode_text(const Decode& d, std::ostream& out, const TextOptions& options, const std::vector<std::string>& step_ids);
// --flash: the tiles of one batch row and head (the view's --batch and --head, else 0), the
// comparison and the memory never held.
void render_flash_text(const Flash& f, const Trace& trace, std::ostream& out, const TextOptions& options);
// attn backward --flash: the tiles of one batch row and head (the view's --batch and --head, else 0),
// the comparison and the memory never held.
void render_flash_backward_text(const FlashBackward& f, const Trace& trace, std::ostream& out, const TextOptions& options);

}  // namespace attn
