#include "sim/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace hcwarm::sim::svg {
namespace {

constexpr double kLeft = 78, kRight = 24, kTop = 38, kBottom = 52;  // plot margins inside a panel
constexpr double kLegendRow = 18;  // legend lines sit under the plot, full width, so names never clip

std::string num(double v) { return fmt::format("{:.1f}", v); }
std::string short_value(double v) { return fmt::format("{:.3g}", v); }
// Axis labels: whole numbers as such (1000, not 1e+03), small ones as short decimals.
std::string tick_value(double v) {
  // Whole numbers print plainly (no exponent up to 1e7); others keep their
  // digits, so a 1.5 tick never reads "2".
  if (std::abs(v) >= 1 && std::abs(v) < 1e7 && v == std::round(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{:g}", v);
}

// About n ticks at 1/2/5 x 10^k steps covering [lo, hi].
std::vector<double> linear_ticks(double lo, double hi, int n) {
  const double raw = (hi - lo) / std::max(n, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

struct Range {
  double lo = 0, hi = 1;
};

class Axis {
 public:
  Axis(Range r, double px_lo, double px_hi, bool log) : log_(log), px_lo_(px_lo), px_hi_(px_hi) {
    lo_ = log ? std::log10(r.lo) : r.lo;
    hi_ = log ? std::log10(r.hi) : r.hi;
  }
  double operator()(double v) const {
    double t = log_ ? (v > 0 ? std::log10(v) : lo_) : v;
    t = std::clamp(t, lo_, hi_);
    return px_lo_ + (t - lo_) / (hi_ - lo_) * (px_hi_ - px_lo_);
  }

 private:
  bool log_;
  double lo_, hi_, px_lo_, px_hi_;
};

// Keeps each pixel column's lowest and highest point, so spikes survive while
// a 100k-forward run still renders as a small file.
std::vector<Point> decimate(const std::vector<Point>& pts, Range x, double columns) {
  if (pts.size() <= static_cast<size_t>(4 * columns)) return pts;
  std::vector<Point> out;
  size_t i = 0;
  while (i < pts.size()) {
    const auto col = [&](const Point& p) { return std::floor((p.x - x.lo) / (x.hi - x.lo) * columns); };
    const double c = col(pts[i]);
    size_t lo = i, hi = i, j = i;
    for (; j < pts.size() && col(pts[j]) == c; ++j) {
      if (pts[j].y < pts[lo].y) lo = j;
      if (pts[j].y > pts[hi].y) hi = j;
    }
    out.push_back(pts[std::min(lo, hi)]);
    if (lo != hi) out.push_back(pts[std::max(lo, hi)]);
    i = j;
  }
  return out;
}

std::string text(double x, double y, std::string_view s, std::string_view attrs = "") {
  return fmt::format("<text x=\"{}\" y=\"{}\" {}>{}</text>\n", num(x), num(y), attrs, escape_xml(s));
}

std::string panel_frame(double x, double y, double w, double h, std::string_view title) {
  std::string out = fmt::format("<g transform=\"translate({},{})\">\n", num(x), num(y));
  out += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n", num(w), num(h));
  out += text(w / 2, 22, title, "text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\"");
  return out;
}

}  // namespace

std::string_view series_color(size_t i) {
  static constexpr std::array<std::string_view, 8> kPalette = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd",
                                                               "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
  return kPalette[i % kPalette.size()];
}

std::string escape_xml(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

double panel_height(const LineChart& chart) {
  const size_t rows = chart.series.size() + (chart.mark_legend.empty() ? 0 : 1);
  return chart.height + kLegendRow * static_cast<double>(rows) + 6;
}

std::string line_chart_panel(const LineChart& chart, double x, double y) {
  const double pw = chart.width - kLeft - kRight, ph = chart.height - kTop - kBottom;
  std::string out = panel_frame(x, y, chart.width, panel_height(chart), chart.title);

  // Data ranges over points and marks of every series.
  Range xr{std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest()};
  Range yr = xr;
  for (const auto& s : chart.series) {
    auto take = [&](const Point& p) {
      xr.lo = std::min(xr.lo, p.x);
      xr.hi = std::max(xr.hi, p.x);
      if (!chart.log_y || p.y > 0) {
        yr.lo = std::min(yr.lo, p.y);
        yr.hi = std::max(yr.hi, p.y);
      }
    };
    for (const auto& p : s.points) take(p);
    for (const auto& m : s.marks) take(m.at);
    if (s.span_lo < s.span_hi) {
      xr.lo = std::min(xr.lo, s.span_lo);
      xr.hi = std::max(xr.hi, s.span_hi);
    }
  }
  if (xr.lo > xr.hi) xr = {0, 1};
  if (xr.hi - xr.lo <= 0) xr = {xr.lo - 0.5, xr.hi + 0.5};
  if (yr.lo > yr.hi) yr = chart.log_y ? Range{1, 10} : Range{0, 1};
  std::vector<double> yticks;
  if (chart.log_y) {
    yr = {std::pow(10.0, std::floor(std::log10(yr.lo))), std::pow(10.0, std::ceil(std::log10(yr.hi)))};
    if (yr.hi <= yr.lo) yr.hi = yr.lo * 10;
    for (double t = yr.lo; t <= yr.hi * 1.0001; t *= 10) yticks.push_back(t);
  } else {
    yr.lo = std::min(0.0, yr.lo);
    if (yr.hi <= yr.lo) yr.hi = yr.lo + 1;
    yticks = linear_ticks(yr.lo, yr.hi, 5);
    yr.hi = std::max(yr.hi, yticks.back());
  }
  const Axis ax(xr, kLeft, kLeft + pw, false);
  const Axis ay(yr, kTop + ph, kTop, chart.log_y);

  // Grid, ticks, labels.
  for (double t : yticks) {
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ddd\"/>\n", num(kLeft), num(ay(t)),
                       num(kLeft + pw), num(ay(t)));
    out += text(kLeft - 6, ay(t) + 4, tick_value(t), "text-anchor=\"end\" font-size=\"11\"");
  }
  for (double t : linear_ticks(xr.lo, xr.hi, 8)) {
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#eee\"/>\n", num(ax(t)), num(kTop),
                       num(ax(t)), num(kTop + ph));
    out += text(ax(t), kTop + ph + 16, short_value(t), "text-anchor=\"middle\" font-size=\"11\"");
  }
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n",
                     num(kLeft), num(kTop), num(pw), num(ph));
  out += text(kLeft + pw / 2, chart.height - 12, chart.x_label, "text-anchor=\"middle\" font-size=\"12\"");
  out += fmt::format("<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">{}</text>\n",
                     num(kTop + ph / 2), escape_xml(chart.y_label + (chart.log_y ? " (log scale)" : "")));

  // Spans: one band per series, stacked up from the bottom of the plot.
  constexpr double kBand = 6;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const auto& s = chart.series[i];
    if (!(s.span_lo < s.span_hi)) continue;
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"0.45\"><title>{}</title></rect>\n",
        num(ax(s.span_lo)), num(kTop + ph - kBand * (i + 1)), num(std::max(ax(s.span_hi) - ax(s.span_lo), 1.0)),
        num(kBand - 1), series_color(i), escape_xml(s.span_tooltip));
  }

  // Series lines, the first on top (reports put the configuration with stalls
  // first), then the marks above every line so nothing hides a stall.
  for (size_t i = chart.series.size(); i-- > 0;) {
    const auto& s = chart.series[i];
    std::string pts;
    for (const auto& p : decimate(s.points, xr, pw)) pts += num(ax(p.x)) + "," + num(ay(p.y)) + " ";
    out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.1\" stroke-opacity=\"0.75\" points=\"{}\"/>\n",
                       series_color(i), pts);
  }
  for (size_t i = 0; i < chart.series.size(); ++i) {
    for (const auto& m : chart.series[i].marks) {
      out += fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"><title>{}</title></circle>\n",
          num(ax(m.at.x)), num(ay(m.at.y)), series_color(i), escape_xml(m.tooltip));
    }
  }

  // Legend under the x-axis label.
  double ly = chart.height + 4;
  const double lx = kLeft;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const auto& s = chart.series[i];
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/>\n", num(lx),
                       num(ly), num(lx + 18), num(ly), series_color(i));
    out += text(lx + 24, ly + 4, s.name, "font-size=\"11\"");
    ly += kLegendRow;
  }
  if (!chart.mark_legend.empty()) {
    out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"none\" stroke=\"#444\" stroke-width=\"2\"/>\n",
                       num(lx + 9), num(ly));
    out += text(lx + 24, ly + 4, chart.mark_legend, "font-size=\"11\"");
  }
  out += "</g>\n";
  return out;
}

std::string bar_chart_panel(const BarChart& chart, double x, double y) {
  const double pw = chart.width - kLeft - kRight, ph = chart.height - kTop - kBottom;
  std::string out = panel_frame(x, y, chart.width, chart.height, chart.title);
  double hi = 0;
  for (const auto& b : chart.bars) hi = std::max(hi, b.value);
  if (hi <= 0) hi = 1;
  hi *= 1.15;  // room for the value printed above the tallest bar
  const std::vector<double> ticks = linear_ticks(0, hi, 4);
  hi = std::max(hi, ticks.back());
  const Axis ay({0, hi}, kTop + ph, kTop, false);
  for (double t : ticks) {
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ddd\"/>\n", num(kLeft), num(ay(t)),
                       num(kLeft + pw), num(ay(t)));
    out += text(kLeft - 6, ay(t) + 4, tick_value(t), "text-anchor=\"end\" font-size=\"11\"");
  }
  out += fmt::format("<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">{}</text>\n",
                     num(kTop + ph / 2), escape_xml(chart.y_label));
  const double slot = pw / std::max<size_t>(chart.bars.size(), 1);
  for (size_t i = 0; i < chart.bars.size(); ++i) {
    const Bar& b = chart.bars[i];
    const double bx = kLeft + slot * i + slot * 0.2, bw = slot * 0.6;
    const double top = ay(std::max(b.value, 0.0));
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>\n",
                       num(bx), num(top), num(bw), num(kTop + ph - top), series_color(i), escape_xml(b.label));
    out += text(bx + bw / 2, top - 5, b.value_text.empty() ? short_value(b.value) : b.value_text,
                "text-anchor=\"middle\" font-size=\"11\"");
    out += text(bx + bw / 2, kTop + ph + 16, b.label, "text-anchor=\"middle\" font-size=\"11\"");
  }
  out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#444\"/>\n", num(kLeft), num(kTop + ph),
                     num(kLeft + pw), num(kTop + ph));
  out += "</g>\n";
  return out;
}

std::string document(double width, double height, const std::vector<std::string>& panels) {
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"Helvetica, Arial, sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      num(width), num(height));
  for (const auto& p : panels) out += p;
  out += "</svg>\n";
  return out;
}

}  // namespace hcwarm::sim::svg
