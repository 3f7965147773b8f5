#pragma once
#include <string>
#include <vector>

namespace ootci {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<int64_t, double>> points;  // (day since epoch, value)
};

// A server-side SVG line chart: one line per series over a day axis, with axes, gridlines, a
// legend and the y unit. Server-side so the HUD needs no JavaScript and no CDN.
std::string svg_line_chart(const std::string& title, const std::vector<ChartSeries>& series,
                           int64_t first_day, int64_t last_day, const std::string& unit,
                           double y_max_hint = 0);

}  // namespace ootci
