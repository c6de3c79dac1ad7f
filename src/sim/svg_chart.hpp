#pragma once
// Dependency-free SVG charts: a line chart (optionally log y) with marked
// points, and a bar chart. Each renders as a <g> panel so a report can stack
// several panels in one document.
#include <string>
#include <string_view>
#include <vector>

namespace hcwarm::sim::svg {

struct Point {
  double x = 0.0;
  double y = 0.0;
};

struct Mark {
  Point at;
  std::string tooltip;  // shown on hover (<title>)
};

struct LineSeries {
  std::string name;
  std::vector<Point> points;  // in x order
  std::vector<Mark> marks;    // drawn on top, never decimated
  // An interval of x drawn as a band in the series' colour along the bottom of
  // the plot (a replay's start-up: before its first point); empty when lo >= hi.
  double span_lo = 0.0, span_hi = 0.0;
  std::string span_tooltip;
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_y = true;          // y <= 0 is drawn at the bottom of a log axis
  std::string mark_legend;    // legend text of the mark symbol, e.g. "stall"
  double width = 960;
  double height = 420;        // plot, axes and title; the legend adds rows below
  std::vector<LineSeries> series;
};

struct Bar {
  std::string label;
  double value = 0.0;
  std::string value_text;  // printed above the bar; empty: the value, 3 significant digits
};

struct BarChart {
  std::string title;
  std::string y_label;
  double width = 960;
  double height = 280;
  std::vector<Bar> bars;  // bar i takes series colour i, to match a line chart's runs
};

// Panels placed at (x, y) in the enclosing document. A line chart's panel is
// taller than chart.height by its legend (one row per series, under the plot).
double panel_height(const LineChart& chart);
std::string line_chart_panel(const LineChart& chart, double x, double y);
std::string bar_chart_panel(const BarChart& chart, double x, double y);

// A complete document of the given size around already rendered panels.
std::string document(double width, double height, const std::vector<std::string>& panels);

// Colour of series i (a fixed palette, cycled).
std::string_view series_color(size_t i);
std::string escape_xml(std::string_view text);

}  // namespace hcwarm::sim::svg
