// SPDX-License-Identifier: Apache-2.0
// mistakes.h: help as a command, suggestions, one-line usage errors.
#include "mistakes.h"

#include <algorithm>

namespace cli {

namespace {

// Global options that take a value: the word after one is not a command.
bool TakesValue(const std::string& arg) { return arg == "--store" || arg == "--secret-file"; }

// Index of the first word that is not a global option or its value.
size_t FirstWord(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (TakesValue(args[i])) {
      ++i;
      continue;
    }
    if (args[i].empty() || args[i][0] != '-') return i;
  }
  return args.size();
}

// Edit distance with adjacent transpositions (optimal string alignment).
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

}  // namespace

std::vector<std::string> RewriteHelp(int argc, char** argv, const CLI::App& app, std::string* error) {
  std::vector<std::string> args(argv, argv + argc);
  const size_t at = FirstWord(args);
  if (at >= args.size() || args[at] != "help") return args;
  args.erase(args.begin() + static_cast<std::ptrdiff_t>(at));
  // Each word after "help" must name a command below the one before it.
  const CLI::App* cmd = &app;
  std::string path = "chunkstore";
  for (size_t i = at; i < args.size() && error->empty(); ++i) {
    const CLI::App* sub = nullptr;
    for (const CLI::App* s : cmd->get_subcommands([](const CLI::App*) { return true; }))
      if (s->get_name() == args[i]) sub = s;
    if (!sub) {
      const std::string near = Closest(args[i], CommandNames(*cmd));
      *error = "unknown command '" + args[i] + "'" + (near.empty() ? "" : "; did you mean " + near + "?") +
               " (see '" + path + " --help')";
    } else {
      cmd = sub;
      path += " " + sub->get_name();
    }
  }
  args.push_back("--help");
  return args;
}

std::string Closest(const std::string& word, const std::vector<std::string>& choices) {
  std::vector<std::string> best;
  size_t best_distance = 3;  // more than two edits is not a typo
  for (const std::string& c : choices) {
    const size_t d = Distance(word, c);
    if (d < best_distance) best.clear(), best_distance = d;
    if (d == best_distance) best.push_back(c);
  }
  if (best.empty())
    for (const std::string& c : choices)
      if (word.size() >= 2 && c.compare(0, word.size(), word) == 0) best.push_back(c);
  if (best.empty() || best.size() > 3) return "";
  std::string out;
  for (size_t i = 0; i < best.size(); ++i) out += (i ? " or '" : "'") + best[i] + "'";
  return out;
}

std::string UsageMessage(const CLI::App& app, const std::vector<std::string>& args, const CLI::ParseError& e) {
  // The deepest command parsed, and the word after it: when that command
  // wants a subcommand and got none, the word is a mistyped one.
  const CLI::App* at = &app;
  std::string path = "chunkstore";
  size_t word = FirstWord(args);
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : at->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->parsed()) {
        path += " " + sub->get_name();
        at = sub;
        deeper = true;
        while (word < args.size() && args[word] != sub->get_name()) ++word;
        if (word < args.size()) ++word;
        while (word < args.size() && !args[word].empty() && args[word][0] == '-') ++word;
        break;
      }
  }
  const bool wants_command = at->get_require_subcommand_min() > 0 &&
                             at->get_subcommands([](const CLI::App* s) { return s->parsed(); }).empty();
  if (wants_command) {
    if (word < args.size()) {
      const std::string near = Closest(args[word], CommandNames(*at));
      return "unknown command '" + args[word] + "'" + (near.empty() ? "" : "; did you mean " + near + "?") +
             " (see '" + path + " --help')";
    }
    return "a command is required (see '" + path + " --help')";
  }
  return std::string(e.what()) + " (see '" + path + " --help')";
}

}  // namespace cli
