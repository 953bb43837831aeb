#include "tfm/train/curves_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iterator>
#include <limits>

#include "tfm/core/check.h"

namespace tfm {

namespace {

constexpr double kPanelW = 480, kPanelH = 260;  // a panel, its margins included
constexpr double kLeft = 72, kRight = 16, kTop = 28, kBottom = 36;
constexpr double kHeader = 40, kLegendRow = 20;
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};

struct Point {
  double update, value;
};

// One quantity of a panel: its tag, whether it is validation's, and its points in a history.
struct Curve {
  const char* tag;
  bool valid;
  std::function<std::vector<Point>(const TrainHistory&)> points;
};

struct Panel {
  const char* title;
  bool log_scale;
  std::vector<Curve> curves;
};

template <typename Event>
std::function<std::vector<Point>(const TrainHistory&)> of(
    const std::vector<Event> TrainHistory::*events, double Event::*field, double scale = 1) {
  return [events, field, scale](const TrainHistory& h) {
    std::vector<Point> out;
    for (const Event& e : h.*events)
      if (e.*field >= 0) out.push_back({static_cast<double>(e.update), e.*field * scale});
    return out;
  };
}

std::vector<Panel> panels() {
  using H = TrainHistory;
  using S = TrainStatsEvent;
  using V = TrainValidationEvent;
  return {
      {"loss (train: label-smoothed)",
       false,
       {{"train/loss", false, of(&H::stats, &S::loss)},
        {"valid/loss", true, of(&H::validations, &V::loss)}}},
      {"perplexity",
       true,
       {{"train/perplexity", false, of(&H::stats, &S::perplexity)},
        {"valid/perplexity", true, of(&H::validations, &V::perplexity)}}},
      {"accuracy (%)",
       false,
       {{"train/accuracy", false, of(&H::stats, &S::accuracy, 100.0)},
        {"valid/accuracy", true, of(&H::validations, &V::accuracy, 100.0)}}},
      {"validation BLEU", false, {{"valid/bleu", true, of(&H::validations, &V::bleu)}}},
      {"learning rate", false, {{"train/learning_rate", false, of(&H::stats, &S::learning_rate)}}},
      {"gradient norm", false, {{"train/grad_norm", false, of(&H::stats, &S::grad_norm)}}},
      {"tokens/s",
       false,
       {{"train/tokens_per_second", false, of(&H::stats, &S::tokens_per_second)}}},
  };
}

std::string num(double v, const char* f = "%.2f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A tick's label: "0.0005", "2.5", "35k", "1.2M".
std::string tick_label(double v) {
  const double a = std::abs(v);
  if (a >= 1e6) return num(v / 1e6, "%.4g") + "M";
  if (a >= 1e4) return num(v / 1e3, "%.4g") + "k";
  return num(v, "%.4g");
}

// Ticks at 1, 2 or 5 times a power of ten, about `target` of them, covering [lo, hi] (which
// they widen to the outer ticks).
std::vector<double> linear_ticks(double& lo, double& hi, int target = 5) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  const double raw = (hi - lo) / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
  lo = std::floor(lo / step + 1e-9) * step;
  hi = std::ceil(hi / step - 1e-9) * step;
  std::vector<double> t;
  for (double v = lo; v <= hi + step * 1e-6; v += step)
    t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  return t;
}

// Powers of ten around [lo, hi] (> 0), with 2 and 5 between them when there are few decades.
std::vector<double> log_ticks(double& lo, double& hi) {
  lo = std::pow(10.0, std::floor(std::log10(lo)));
  hi = std::pow(10.0, std::ceil(std::log10(hi)));
  if (hi <= lo) hi = lo * 10;
  const bool fine = std::log10(hi / lo) <= 2;
  std::vector<double> t;
  for (double d = lo; d <= hi * 1.0001; d *= 10) {
    t.push_back(d);
    if (fine && d * 10 <= hi * 1.0001) t.push_back(2 * d), t.push_back(5 * d);
  }
  return t;
}

// A panel's axes: data to pixels.
struct Axes {
  double x0, x1, y0, y1, left, top, width, height;
  bool log_scale;
  double px(double u) const { return left + (u - x0) / (x1 - x0) * width; }
  double py(double v) const {
    const double f = log_scale ? std::log10(v / y0) / std::log10(y1 / y0) : (v - y0) / (y1 - y0);
    return top + height - f * height;
  }
};

void draw_axes(std::string& s, const Axes& a, const std::vector<double>& xt,
               const std::vector<double>& yt) {
  s += "<rect x=\"" + num(a.left) + "\" y=\"" + num(a.top) + "\" width=\"" + num(a.width) +
       "\" height=\"" + num(a.height) + "\" fill=\"white\" stroke=\"#999\"/>\n";
  for (double v : xt) {
    const double x = a.px(v);
    s += "<line x1=\"" + num(x) + "\" y1=\"" + num(a.top) + "\" x2=\"" + num(x) + "\" y2=\"" +
         num(a.top + a.height) + "\" stroke=\"#eee\"/><text x=\"" + num(x) + "\" y=\"" +
         num(a.top + a.height + 14) + "\" text-anchor=\"middle\">" + tick_label(v) + "</text>\n";
  }
  for (double v : yt) {
    const double y = a.py(v);
    s += "<line x1=\"" + num(a.left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(a.left + a.width) +
         "\" y2=\"" + num(y) + "\" stroke=\"#eee\"/><text x=\"" + num(a.left - 4) + "\" y=\"" +
         num(y + 4) + "\" text-anchor=\"end\">" + tick_label(v) + "</text>\n";
  }
}

// One panel at (x, y): false (nothing drawn) when no run has its data.
bool draw_panel(std::string& s, const Panel& p, const std::vector<CurveRun>& runs, double x,
                double y) {
  double xlo = 0, xhi = 0, ylo = std::numeric_limits<double>::infinity(), yhi = -ylo;
  std::vector<std::vector<std::vector<Point>>> pts(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const Curve& c : p.curves) {
      pts[r].push_back(c.points(runs[r].history));
      for (const Point& q : pts[r].back()) {
        xhi = std::max(xhi, q.update);
        ylo = std::min(ylo, q.value), yhi = std::max(yhi, q.value);
      }
    }
  }
  if (!(yhi >= ylo)) return false;
  const bool log_scale = p.log_scale && ylo > 0;
  Axes a{xlo,
         xhi,
         ylo,
         yhi,
         x + kLeft,
         y + kTop,
         kPanelW - kLeft - kRight,
         kPanelH - kTop - kBottom,
         log_scale};
  const std::vector<double> xt = linear_ticks(a.x0, a.x1);
  const std::vector<double> yt = log_scale ? log_ticks(a.y0, a.y1) : linear_ticks(a.y0, a.y1);
  s += "<g class=\"panel\" data-title=\"" + escaped(p.title) + "\" data-scale=\"" +
       (log_scale ? "log" : "linear") + "\" data-x=\"" + num(a.x0, "%.17g") + " " +
       num(a.x1, "%.17g") + "\" data-y=\"" + num(a.y0, "%.17g") + " " + num(a.y1, "%.17g") +
       "\" data-box=\"" + num(a.left) + " " + num(a.top) + " " + num(a.width) + " " +
       num(a.height) + "\">\n<text x=\"" + num(a.left) + "\" y=\"" + num(y + kTop - 8) +
       "\" font-weight=\"bold\">" + escaped(p.title) + "</text>\n";
  draw_axes(s, a, xt, yt);
  for (size_t r = 0; r < runs.size(); ++r) {
    const std::string colour = kColours[r % std::size(kColours)];
    for (size_t c = 0; c < p.curves.size(); ++c) {
      if (pts[r][c].empty()) continue;
      std::string points, dots;
      for (const Point& q : pts[r][c]) {
        if (!points.empty()) points += ' ';
        points += num(a.px(q.update)) + "," + num(a.py(q.value));
        if (p.curves[c].valid)
          dots += "<circle cx=\"" + num(a.px(q.update)) + "\" cy=\"" + num(a.py(q.value)) +
                  "\" r=\"2.5\" fill=\"" + colour + "\"/>";
      }
      s += "<polyline class=\"series\" data-run=\"" + escaped(runs[r].name) + "\" data-tag=\"" +
           p.curves[c].tag + "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"1.5\"" +
           (p.curves[c].valid ? " stroke-dasharray=\"5,3\"" : "") + " points=\"" + points + "\"/>" +
           dots + "\n";
    }
  }
  s += "<text x=\"" + num(a.left + a.width) + "\" y=\"" + num(a.top + a.height + 28) +
       "\" text-anchor=\"end\">update</text>\n</g>\n";
  return true;
}

}  // namespace

std::string training_curves_svg(const std::vector<CurveRun>& runs, const std::string& title) {
  TFM_CHECK(!runs.empty()) << "training_curves_svg: no runs";
  std::string body;
  int drawn = 0;
  const double legend = kLegendRow * static_cast<double>(runs.size() + 1);
  for (const Panel& p : panels()) {
    const double x = (drawn % 2) * kPanelW, y = kHeader + legend + (drawn / 2) * kPanelH;
    if (draw_panel(body, p, runs, x, y)) ++drawn;
  }
  const double width = 2 * kPanelW, height = kHeader + legend + ((drawn + 1) / 2) * kPanelH;
  std::string s =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"" +
      num(width, "%.0f") + "\" height=\"" + num(height, "%.0f") +
      "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" "
      "height=\"100%\" fill=\"#fafafa\"/>\n<text x=\"16\" y=\"26\" font-size=\"16\" "
      "font-weight=\"bold\">" +
      escaped(title) + "</text>\n";
  for (size_t r = 0; r < runs.size(); ++r) {
    const double y = kHeader + kLegendRow * static_cast<double>(r) + 4;
    s += "<line x1=\"16\" y1=\"" + num(y) + "\" x2=\"44\" y2=\"" + num(y) + "\" stroke=\"" +
         kColours[r % std::size(kColours)] + "\" stroke-width=\"3\"/><text x=\"52\" y=\"" +
         num(y + 4) + "\">" + escaped(runs[r].name) + "</text>\n";
  }
  s += "<text x=\"16\" y=\"" + num(kHeader + kLegendRow * static_cast<double>(runs.size()) + 8) +
       "\">solid: training (each log window's mean); dashed with dots: validation</text>\n";
  return s + body + "</svg>\n";
}

}  // namespace tfm
