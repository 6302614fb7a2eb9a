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
std::string ansi_background(ColorMode mode, Rgb c);
std::string ansi_foreground(ColorMode mode, Rgb c);
inline constexpr const char* kAnsiReset = "\x1b[0m";
inline constexpr const char* kAnsiDim = "\x1b[2m";
std::string shade(double t);  // one of " ░▒▓█"
std::string svg_hex(Rgb c);   // "#21918c"
bool is_light(Rgb c);         // dark text reads better on it

}  // namespace attn
