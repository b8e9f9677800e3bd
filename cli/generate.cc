// SPDX-License-Identifier: Apache-2.0
// generate.h: man pages (roff, man(7) macros) and bash/zsh completion
// from the app's commands, options and footers.
#include "generate.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "chunkstore/version.h"

namespace cli {

namespace {

std::vector<const CLI::App*> Subcommands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

std::vector<const CLI::Option*> Options(const CLI::App& app) {
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* o : app.get_options([](const CLI::Option*) { return true; }))
    if (o->get_name() != "--help" && o->get_name() != "-h,--help") out.push_back(o);
  return out;
}

// Every flag spelling of an option: -q --quiet.
std::vector<std::string> Spellings(const CLI::Option& o) {
  std::vector<std::string> out;
  for (const auto& s : o.get_snames()) out.push_back("-" + s);
  for (const auto& l : o.get_lnames()) out.push_back("--" + l);
  return out;
}

// Text made safe for roff: backslashes and hyphens escaped, and no line
// starting with a dot or quote.
std::string Roff(const std::string& s) {
  std::string out;
  bool line_start = true;
  for (char c : s) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else out += c;
    line_start = c == '\n';
  }
  return out;
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string PageName(const std::string& path) {  // "chunkstore index rebuild" -> chunkstore-index-rebuild
  std::string out = path;
  for (char& c : out)
    if (c == ' ') c = '-';
  return out;
}

void OptionsSection(std::ostream& out, const CLI::App& app, const char* title) {
  std::vector<const CLI::Option*> opts = Options(app);
  if (opts.empty()) return;
  out << ".SH " << title << "\n";
  for (const CLI::Option* o : opts) {
    std::string label;
    if (o->get_positional()) {
      label = o->get_option_text().empty() ? o->get_name() : o->get_option_text();
    } else {
      for (const auto& s : Spellings(*o)) label += (label.empty() ? "" : ", ") + s;
      if (!o->get_option_text().empty()) label += " " + o->get_option_text();
    }
    out << ".TP\n.B " << Roff(label) << "\n" << Roff(o->get_description()) << "\n";
  }
}

void Examples(std::ostream& out, const CLI::App& app) {
  const std::string footer = app.get_footer();
  const size_t at = footer.find("Examples:");
  if (at == std::string::npos) return;
  out << ".SH EXAMPLES\n.nf\n";
  std::string body = footer.substr(at + 9);
  while (!body.empty() && body[0] == '\n') body.erase(0, 1);
  out << Roff(body) << "\n.fi\n";
}

bool WritePage(const std::string& dir, const std::string& name, const std::string& text) {
  std::ofstream f(dir + "/" + name + ".1");
  f << text;
  f.close();
  if (!f) {
    std::cerr << "chunkstore: cannot write " << dir << "/" << name << ".1\n";
    return false;
  }
  return true;
}

std::string Header(const std::string& name) {
  return ".TH " + Roff(name) + " 1 \"\" \"chunkstore " + std::string(chunkstore::Version()) +
         "\" \"chunkstore manual\"\n";
}

bool CommandPages(const CLI::App& cmd, const std::string& path, const std::string& dir) {
  for (const CLI::App* sub : Subcommands(cmd)) {
    const std::string sub_path = path + " " + sub->get_name();
    std::ostringstream out;
    out << Header(PageName(sub_path)) << ".SH NAME\n"
        << Roff(PageName(sub_path)) << " \\- " << Roff(FirstLine(sub->get_description())) << "\n"
        << ".SH SYNOPSIS\n.B " << Roff(sub_path) << "\n" << (Options(*sub).empty() ? "" : "[OPTIONS]");
    for (const CLI::Option* o : Options(*sub))
      if (o->get_positional())
        out << " " << (o->get_required() ? "" : "[") << Roff(o->get_option_text().empty() ? o->get_name() : o->get_option_text())
            << (o->get_required() ? "" : "]");
    out << "\n.SH DESCRIPTION\n" << Roff(sub->get_description()) << "\n";
    if (!Subcommands(*sub).empty()) {
      out << ".SH COMMANDS\n";
      for (const CLI::App* s : Subcommands(*sub))
        out << ".TP\n.BR " << PageName(sub_path + " " + s->get_name()) << " (1)\n" << Roff(s->get_description()) << "\n";
    }
    OptionsSection(out, *sub, "OPTIONS");
    Examples(out, *sub);
    out << ".SH SEE ALSO\n.BR chunkstore (1)\n";
    if (!WritePage(dir, PageName(sub_path), out.str())) return false;
    if (!CommandPages(*sub, sub_path, dir)) return false;
  }
  return true;
}

// Commands at every depth, as "publish", "index rebuild".
void AllPaths(const CLI::App& app, const std::string& prefix, std::vector<std::pair<std::string, const CLI::App*>>* out) {
  for (const CLI::App* sub : Subcommands(app)) {
    const std::string path = prefix.empty() ? sub->get_name() : prefix + " " + sub->get_name();
    out->push_back({path, sub});
    AllPaths(*sub, path, out);
  }
}

// What a command's positional arguments are: "file", "ref" or "none".
std::string ArgumentKind(const CLI::App& cmd) {
  for (const CLI::Option* o : Options(cmd)) {
    if (!o->get_positional()) continue;
    const std::string t = o->get_option_text();
    if (t.find("PATH") != std::string::npos || t.find("FILE") != std::string::npos) return "file";
    if (t.find("REF") != std::string::npos || t.find("NAME") != std::string::npos) return "ref";
  }
  return "none";
}

}  // namespace

bool WriteManPages(const CLI::App& app, const std::string& dir) {
  std::ostringstream out;
  out << Header("chunkstore") << ".SH NAME\nchunkstore \\- " << Roff(FirstLine(app.get_description()).substr(12))
      << "\n.SH SYNOPSIS\n.B chunkstore\n[GLOBAL OPTIONS] COMMAND [ARGS]\n.SH DESCRIPTION\n"
      << Roff(app.get_description().substr(app.get_description().find('\n') + 1)) << "\n.SH COMMANDS\n";
  for (const CLI::App* sub : Subcommands(app))
    out << ".TP\n.BR " << PageName("chunkstore " + sub->get_name()) << " (1)\n" << Roff(sub->get_description()) << "\n";
  OptionsSection(out, app, "GLOBAL OPTIONS");
  Examples(out, app);
  out << ".SH SEE ALSO\nThe documents in docs/ of the source: cli.md, format.md, design.md.\n";
  return WritePage(dir, "chunkstore", out.str()) && CommandPages(app, "chunkstore", dir);
}

std::string BashCompletion(const CLI::App& app) {
  std::vector<std::pair<std::string, const CLI::App*>> paths;
  AllPaths(app, "", &paths);
  std::string globals;
  for (const CLI::Option* o : Options(app))
    for (const auto& s : Spellings(*o)) globals += " " + s;
  std::string out =
      "# bash completion for chunkstore (generated by chunkstore --generate bash)\n"
      "_chunkstore() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} path='' store=() i w\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=${COMP_WORDS[i]}\n"
      "    case $w in\n"
      "      --store|--secret-file) [ $w = --store ] && store=(--store \"${COMP_WORDS[i+1]}\"); ((i++)) ;;\n"
      "      -*) ;;\n"
      "      *) case \"${path:+$path }$w\" in\n";
  for (const auto& [p, cmd] : paths) out += "           '" + p + "') path=\"${path:+$path }$w\" ;;\n";
  out +=
      "         esac ;;\n"
      "    esac\n"
      "  done\n"
      "  case $path in\n"
      "    '') COMPREPLY=($(compgen -W '";
  std::string top;
  for (const CLI::App* sub : Subcommands(app)) top += sub->get_name() + " ";
  out += top + globals + " help' -- \"$cur\")) ;;\n";
  for (const auto& [p, cmd] : paths) {
    std::string words;
    for (const CLI::App* sub : Subcommands(*cmd)) words += sub->get_name() + " ";
    for (const CLI::Option* o : Options(*cmd))
      for (const auto& s : Spellings(*o)) words += s + " ";
    words += "--help";
    const std::string kind = ArgumentKind(*cmd);
    out += "    '" + p + "')\n      if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W '" + words + "' -- \"$cur\"))\n";
    if (kind == "file")
      out += "      else COMPREPLY=($(compgen -f -- \"$cur\")); compopt -o filenames 2>/dev/null\n";
    else if (kind == "ref")
      out += "      else COMPREPLY=($(compgen -W \"$(chunkstore \"${store[@]}\" -q ls 2>/dev/null | cut -d' ' -f1)\" -- \"$cur\"))\n";
    else if (!Subcommands(*cmd).empty())
      out += "      else COMPREPLY=($(compgen -W '" + words + "' -- \"$cur\"))\n";
    out += "      fi ;;\n";
  }
  out += "  esac\n}\ncomplete -F _chunkstore chunkstore\n";
  return out;
}

std::string ZshCompletion(const CLI::App& app) {
  auto quote = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c == '\'') out += "'\\''";
      else if (c == ':' || c == '[' || c == ']') out += std::string("\\") + c;
      else out += c;
    }
    return out;
  };
  std::string out = "#compdef chunkstore\n# zsh completion for chunkstore (generated by chunkstore --generate zsh)\n"
                    "_chunkstore() {\n  local -a commands\n  commands=(\n";
  for (const CLI::App* sub : Subcommands(app))
    out += "    '" + sub->get_name() + ":" + quote(FirstLine(sub->get_description())) + "'\n";
  out += "  )\n  _arguments -C \\\n";
  for (const CLI::Option* o : Options(app))
    for (const auto& s : Spellings(*o))
      out += "    '" + s + "[" + quote(o->get_description()) + "]" + (o->get_option_text().empty() ? "" : ":value:_files") + "' \\\n";
  out += "    '1:command:->command' \\\n    '*::arg:->args'\n  case $state in\n"
         "    command) _describe 'command' commands ;;\n    args)\n      case $words[1] in\n";
  for (const CLI::App* sub : Subcommands(app)) {
    out += "        " + sub->get_name() + ") _arguments";
    for (const CLI::Option* o : Options(*sub)) {
      if (o->get_positional()) continue;
      for (const auto& s : Spellings(*o))
        out += " '" + s + "[" + quote(o->get_description()) + "]" + (o->get_option_text().empty() ? "" : ":value:") + "'";
    }
    out += ArgumentKind(*sub) == "file" ? " '*:file:_files'" : " '*:argument:'";
    out += " ;;\n";
  }
  out += "      esac ;;\n  esac\n}\n_chunkstore \"$@\"\n";
  return out;
}

}  // namespace cli
