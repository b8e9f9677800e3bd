// SPDX-License-Identifier: Apache-2.0
// Man pages and shell completion, generated from the command's own
// definition (the CLI11 app main.cc builds), so `--help`, `man` and
// completion cannot drift apart. Run at build time as
// `chunkstore --generate man DIR | bash | zsh`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace cli {

// Writes DIR/chunkstore.1 and one page per command (chunkstore-publish.1,
// chunkstore-index-rebuild.1, ...). Returns false (saying why on stderr)
// if a page cannot be written.
bool WriteManPages(const CLI::App& app, const std::string& dir);

// A bash completion script: commands, their flags, files where a command
// takes paths, and the store's names where it takes a REF or NAME.
std::string BashCompletion(const CLI::App& app);

// A zsh completion function (#compdef chunkstore): commands with their
// descriptions, flags, files.
std::string ZshCompletion(const CLI::App& app);

}  // namespace cli
