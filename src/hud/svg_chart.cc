#include "hud/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/time.h"
#include "hud/html.h"

namespace ootci {
namespace {

const char* kColors[] = {"#0969da", "#cf222e", "#1a7f37", "#8250df", "#bc4c00",
                         "#0550ae", "#bf3989", "#4d2d00", "#57606a", "#116329"};

}  // namespace

std::string svg_line_chart(const std::string& title, const std::vector<ChartSeries>& series,
                           int64_t first_day, int64_t last_day, const std::string& unit,
                           double y_max_hint) {
  const int w = 760, h = 260, left = 56, right = 16, top = 28, bottom = 36;
  double y_max = y_max_hint;
  for (const auto& s : series)
    for (const auto& [d, v] : s.points) y_max = std::max(y_max, v);
  if (y_max <= 0) y_max = 1;
  // Round the axis up to 1, 2, 2.5 or 5 times a power of ten, so gridlines read at a glance.
  double magnitude = std::pow(10, std::floor(std::log10(y_max)));
  for (double step : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (step * magnitude >= y_max) {
      y_max = step * magnitude;
      break;
    }
  int64_t span = std::max<int64_t>(1, last_day - first_day);
  auto x = [&](int64_t day) { return left + (w - left - right) * double(day - first_day) / span; };
  auto y = [&](double v) { return top + (h - top - bottom) * (1 - v / y_max); };
  std::string out = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{}" height="{}" viewBox="0 0 {} {}" style="background:#fff;border:1px solid #d0d7de;border-radius:6px">)",
      w, h, w, h);
  out += fmt::format(
      R"(<title>{}</title><text x="{}" y="18" font-size="13" font-weight="600">{}</text>)",
      esc(title), left, esc(title));
  for (int i = 0; i <= 4; ++i) {
    double v = y_max * i / 4;
    out += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#eaeef2"/>)", left,
                       w - right, y(v), y(v));
    out += fmt::format(
        R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end" fill="#57606a">{:.4g}{}</text>)",
        left - 6, y(v) + 4, v, esc(unit));
  }
  int64_t step = std::max<int64_t>(1, span / 6);
  for (int64_t d = first_day; d <= last_day; d += step)
    out += fmt::format(
        R"(<text x="{:.1f}" y="{}" font-size="11" text-anchor="middle" fill="#57606a">{}</text>)",
        x(d), h - 14, iso8601_utc(d * 86400000).substr(5, 5));
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    const char* color = kColors[i % std::size(kColors)];
    std::string pts;
    for (const auto& [d, v] : s.points) pts += fmt::format("{:.1f},{:.1f} ", x(d), y(v));
    out += fmt::format(
        R"(<polyline fill="none" stroke="{}" stroke-width="2" points="{}"><title>{}</title></polyline>)",
        color, pts, esc(s.name));
    for (const auto& [d, v] : s.points)
      out += fmt::format(
          R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="{}"><title>{} {}: {:.4g}{}</title></circle>)",
          x(d), y(v), color, esc(s.name), iso8601_utc(d * 86400000).substr(0, 10), v, esc(unit));
  }
  out += "</svg><div class=\"legend\">";
  for (size_t i = 0; i < series.size(); ++i)
    out += fmt::format(R"(<span><b style="color:{}">&#9632;</b> {}</span>)",
                       kColors[i % std::size(kColors)], esc(series[i].name));
  return out + "</div>";
}

}  // namespace ootci
