// Each step as the PyTorch statement(s) that compute it (the trace's `code`): a table keyed by step
// id beside step_text's words. See step_code.cpp for the names the statements use.
#pragma once

#include <string>

#include "attn/pipeline/step_text.hpp"

namespace attn {

// The batch axis as the code and the formulas write it: "B, " where the input has one, "" where the
// trace leaves it out (the shapes printed have none); and axis a of a batched tensor without it.
std::string batch_lead(const Spec& spec);
int batch_axis(const Spec& spec, int a);

// "q_heads = q.view(B, T, H, hs).transpose(1, 2)" (batched), "q_heads = q.view(T, H, hs).transpose(0, 1)";
// statements are separated by "; ".
std::string step_code(StepId step, const Spec& spec, const TraceConfig& config, const TextFacts& facts);
// RoPE's rotation of `in` (…, L, width) as PyTorch, rows first .. first + L − 1 of the tables named
// cos_table and sin_table (the backward pass turns back with "(-rope_sin)").
std::string rotate_code(const Spec& spec, const std::string& in, std::int64_t first, std::int64_t L, std::int64_t width, const char* cos_table,
                        const char* sin_table);
// The backward steps' code (backward_text.cpp); step_code hands them there.
std::string backward_code(StepId step, const Spec& spec, const TraceConfig& config);

}  // namespace attn
