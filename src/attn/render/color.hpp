// Colours for heatmaps: the viridis ramp (dark blue -> yellow, readable in grey and by most colour-blind
// readers), as 24-bit or 256-colour ANSI escapes, SVG hex, or a ` ░▒▓█` shade ramp without colour.
#pragma once

#include <string>

namespace attn {

enum class ColorMode { None, Ansi256, TrueColor };

struct Rgb {
  int r, g, b;
};

Rgb viridis(double t);  // t in [0, 1]
// A heatmap cell's background for t in [0, 1]: viridis in 24-bit colour; in 256 colours one of
// kRamp256's steps (heat_step), the same table the legend draws.
std::string heat_background(ColorMode mode, double t);
// The 256-colour ramp: 16 xterm cube colours nearest to viridis in CIELAB with strictly increasing
// lightness (L* 7 .. 87), chosen once by a dynamic programme over the cube; cells and legend use it.
inline constexpr int kRamp256[16] = {17, 53, 54, 24, 25, 60, 30, 66, 36, 72, 108, 77, 113, 149, 184, 220};
int heat_step(double t);  // 0 .. 15
std::string ansi_background(ColorMode mode, Rgb c);
std::string ansi_foreground(ColorMode mode, Rgb c);
inline constexpr const char* kAnsiReset = "\x1b[0m";
inline constexpr const char* kAnsiDim = "\x1b[2m";
// One of " ░▒▓█" for t in [0, 1]: blank only for (near) zero, below kShadeBands[0].
std::string shade(double t);
inline constexpr double kShadeBands[5] = {0.02, 0.25, 0.5, 0.75, 1.0};  // upper ends of " ", ░, ▒, ▓, █
std::string svg_hex(Rgb c);   // "#21918c"
bool is_light(Rgb c);         // dark text reads better on it

}  // namespace attn
