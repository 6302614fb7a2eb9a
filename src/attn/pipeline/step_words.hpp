// What step_text.cpp and the step words split out of it share: how a number is written, and the
// words of the positions (step_text_positions.cpp) and of the heads (step_text_heads.cpp). Prose only.
#pragma once

#include <string>

#include "attn/pipeline/step_text.hpp"

namespace attn::step_words {

// 0.125, 0.5774: at most four decimals, no trailing zeros.
std::string short_number(double v);
// -1e9, 0.5, 1e-05 -> "-1e9", "0.5", "1e-5": how a person writes a fill value.
std::string compact_number(double v);

// step_text_positions.cpp: the positions added to x, RoPE's tables and rotations, ALiBi, T5's bias.
StepText positions_text(const Spec& s);
StepText rope_text(StepId step, const Spec& s, const TextFacts& f);
StepText alibi_text(const Spec& s, const TextFacts& f);
StepText relative_bias_text(StepId step, const Spec& s);

// step_text_heads.cpp: the head split, the KV cache, grouped-query heads repeated, the heads merged.
StepText head_split(StepId step, const Spec& s, const TextFacts& f);
StepText cache_text(StepId step, const Spec& s);
StepText repeat_text(StepId step, const Spec& s, const TextFacts& f);
StepText merged_text(const Spec& s, const TextFacts& f);

}  // namespace attn::step_words
