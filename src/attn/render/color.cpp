// The viridis ramp by linear interpolation between five of its published anchors, and its encodings.
#include "attn/render/color.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace attn {

Rgb viridis(double t) {
  static constexpr std::array<Rgb, 5> kAnchors = {{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}};
  t = std::clamp(t, 0.0, 1.0);
  const double x = t * 4.0;
  const int i = std::min(3, static_cast<int>(x));
  const double f = x - i;
  auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
  const Rgb& a = kAnchors[static_cast<std::size_t>(i)];
  const Rgb& b = kAnchors[static_cast<std::size_t>(i + 1)];
  return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

namespace {

// The xterm 256-colour cube: levels 0, 95, 135, 175, 215, 255 per channel.
int cube_level(int v) {
  static constexpr std::array<int, 6> kLevels = {0, 95, 135, 175, 215, 255};
  int best = 0;
  for (int i = 1; i < 6; ++i)
    if (std::abs(kLevels[static_cast<std::size_t>(i)] - v) < std::abs(kLevels[static_cast<std::size_t>(best)] - v)) best = i;
  return best;
}

int xterm256(Rgb c) { return 16 + 36 * cube_level(c.r) + 6 * cube_level(c.g) + cube_level(c.b); }

}  // namespace

std::string ansi_background(ColorMode mode, Rgb c) {
  if (mode == ColorMode::TrueColor) return fmt::format("\x1b[48;2;{};{};{}m", c.r, c.g, c.b);
  if (mode == ColorMode::Ansi256) return fmt::format("\x1b[48;5;{}m", xterm256(c));
  return "";
}

std::string ansi_foreground(ColorMode mode, Rgb c) {
  if (mode == ColorMode::TrueColor) return fmt::format("\x1b[38;2;{};{};{}m", c.r, c.g, c.b);
  if (mode == ColorMode::Ansi256) return fmt::format("\x1b[38;5;{}m", xterm256(c));
  return "";
}

std::string shade(double t) {
  static const char* kShades[5] = {" ", "░", "▒", "▓", "█"};
  t = std::clamp(t, 0.0, 1.0);
  int k = 0;
  while (k < 4 && t >= kShadeBands[k]) ++k;
  return kShades[k];
}

int heat_step(double t) { return std::clamp(static_cast<int>(std::clamp(t, 0.0, 1.0) * 16.0), 0, 15); }

std::string heat_background(ColorMode mode, double t) {
  if (mode == ColorMode::Ansi256) return fmt::format("\x1b[48;5;{}m", kRamp256[heat_step(t)]);
  return ansi_background(mode, viridis(t));
}

std::string svg_hex(Rgb c) { return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b); }

bool is_light(Rgb c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b > 150; }

}  // namespace attn
