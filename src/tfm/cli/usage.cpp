#include "tfm/cli/usage.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iostream>

namespace tfm::cli {

namespace {

// Lower case, '_' as '-', without the leading dashes: what the comparison sees of a name.
std::string normalized(std::string_view s) {
  s.remove_prefix(std::min(s.find_first_not_of('-'), s.size()));
  std::string out;
  for (char c : s)
    out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Edits (insert, delete, substitute, swap of neighbours) from a to b: the optimal string
// alignment distance, which counts a typed transposition ("tranlsate") as one.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

bool is_number(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

// A flag as the user wrote it ("--beam=4" is "--beam", "-b4" is "-b"), or "" for a value.
std::string flag_word(std::string_view arg) {
  if (arg.size() < 2 || arg[0] != '-' || is_number(arg)) return "";
  if (arg[1] != '-') return std::string(arg.substr(0, 2));
  return std::string(arg.substr(0, arg.find('=')));
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

// What the command line names: its command (null when it names none) and the flags that neither
// the command nor tfm itself knows.
struct Reading {
  const CLI::App* command = nullptr;
  std::string unknown_command;
  std::vector<std::string> unknown_flags;  // of the command's part
  std::vector<std::string> unknown_top;    // before the command
};

Reading read_command_line(const CLI::App& app, int argc, const char* const* argv) {
  Reading r;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    const std::string flag = flag_word(arg);
    const CLI::App& scope = r.command != nullptr ? *r.command : app;
    if (!flag.empty()) {
      if (scope.get_option_no_throw(flag) == nullptr)
        (r.command != nullptr ? r.unknown_flags : r.unknown_top).push_back(flag);
    } else if (r.command == nullptr && r.unknown_command.empty()) {
      const auto subs =
          app.get_subcommands([&](const CLI::App* sub) { return sub->get_name() == arg; });
      if (subs.empty()) {
        r.unknown_command = std::string(arg);
        return r;
      }
      r.command = subs.front();
    }
  }
  return r;
}

// "unknown flag '--beam'; did you mean --beam-size?"
std::string unknown(std::string_view what, const std::string& word,
                    const std::vector<std::string>& known, std::string_view quote) {
  std::string s = "unknown " + std::string(what) + " '" + word + "'";
  const std::vector<std::string> near = closest_names(word, known);
  if (!near.empty()) s += "; did you mean " + one_of(near, quote) + "?";
  return s;
}

}  // namespace

std::vector<std::string> closest_names(std::string_view word,
                                       const std::vector<std::string>& known) {
  const std::string w = normalized(word);
  if (w.empty()) return {};
  const size_t limit = w.size() >= 3 ? std::max<size_t>(1, w.size() / 3) : 0;
  std::vector<std::string> best, prefixed;
  size_t best_distance = limit + 1;
  for (const std::string& name : known) {
    const std::string n = normalized(name);
    const size_t d = edit_distance(w, n);
    if (d <= limit && d < best_distance) {
      best.clear();
      best_distance = d;
    }
    if (d <= limit && d == best_distance) best.push_back(name);
    if (n.size() > w.size() && n.compare(0, w.size(), w) == 0) prefixed.push_back(name);
  }
  if (!best.empty()) return best;
  if (prefixed.size() <= 3) return prefixed;
  return {};
}

std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  return names;
}

std::string one_of(const std::vector<std::string>& names, std::string_view quote) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) s += i + 1 == names.size() ? " or " : ", ";
    s += std::string(quote) + names[i] + std::string(quote);
  }
  return s;
}

int report_parse_error(const CLI::App& app, const CLI::ParseError& e, int argc,
                       const char* const* argv) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: their text on stdout
  const Reading r = read_command_line(app, argc, argv);
  std::vector<std::string> lines;
  for (const std::string& f : r.unknown_top)
    lines.push_back("tfm: " + unknown("flag", f, flag_names(app), ""));
  const std::string commands = one_of(command_names(app), "");
  if (!r.unknown_command.empty()) {
    std::string s = "tfm: " + unknown("command", r.unknown_command, command_names(app), "'");
    if (s.back() != '?') s += " (the commands: " + commands + ")";
    lines.push_back(s);
  } else if (r.command == nullptr) {
    if (lines.empty())
      lines.push_back("tfm: a command is required: tfm COMMAND [flags], COMMAND one of " +
                      commands + " (tfm --help says what each does)");
  } else {
    const std::string name = "tfm " + r.command->get_name();
    for (const std::string& f : r.unknown_flags) {
      std::string s = name + ": " + unknown("flag", f, flag_names(*r.command), "");
      if (s.back() != '?') s += " (" + name + " --help lists its flags)";
      lines.push_back(s);
    }
    // A flag that is not there explains the rest (a required flag misspelled is "missing").
    if (lines.empty()) lines.push_back(name + ": " + e.what() + " (" + name + " --help)");
  }
  if (lines.empty()) lines.push_back(std::string("tfm: ") + e.what() + " (tfm --help)");
  for (const std::string& line : lines) std::cerr << line << "\n";
  return kUsageExit;
}

}  // namespace tfm::cli
