#include "tfm/cli/usage.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <iostream>
#include <string_view>

#include "tfm/core/suggest.h"

namespace tfm::cli {

namespace {

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

std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : o->get_snames()) names.push_back("-" + n);
  }
  return names;
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
