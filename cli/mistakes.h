// SPDX-License-Identifier: Apache-2.0
// Helping with mistakes on the command line: `chunkstore help [CMD]`, a
// suggestion for a mistyped command, and usage errors on one line naming
// the help of the command they are about.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace cli {

// argv as strings, with `help [CMD...]` (after any global options) turned
// into `[CMD...] --help`; *error (empty on entry) says which word after
// help is not a command of app's.
std::vector<std::string> RewriteHelp(int argc, char** argv, const CLI::App& app, std::string* error);

// The one-line message for a parse error of app on args (as given to
// parse): an unknown command gets the closest known one.
std::string UsageMessage(const CLI::App& app, const std::vector<std::string>& args, const CLI::ParseError& e);

// The closest of choices to word (at most two edits, else those it is a
// prefix of), quoted: "'stat'", "'stat' or 'stats'"; "" when none is close
// (or more than three are).
std::string Closest(const std::string& word, const std::vector<std::string>& choices);

}  // namespace cli
