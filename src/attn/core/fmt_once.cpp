// fmt's out-of-line functions (vformat, the float formatting, the locale hooks), compiled once for the
// whole project from Debian's own headers (fmt/format-inl.h) rather than in every file that formats,
// as FMT_HEADER_ONLY does: that doubled the compile time of each such file. The release CLI links
// libstdc++ statically and so cannot load Debian's libfmt.so (a second libstdc++); this object is
// linked in instead. The sanitizer builds use libfmt.so (CMakeLists.txt).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

// the templates format.h declares extern (not header-only) and format-inl.h defines: char and wchar_t
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
