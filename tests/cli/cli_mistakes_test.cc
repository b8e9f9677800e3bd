// SPDX-License-Identifier: Apache-2.0
// Golden tests of the command's help with mistakes: `help [CMD]`, the
// closest command for a mistyped one (at the top and below `index` and
// `repair`), and usage errors on one line that name the help to read.
#include "cli_fixture.h"

namespace chunkstore {
namespace {

// Exactly one line, ending in a newline.
bool OneLine(const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; }

TEST_F(Cli, AMistypedCommandGetsTheClosestOne) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"publsh", "x"}, "chunkstore: unknown command 'publsh'; did you mean 'publish'? (see 'chunkstore --help')\n"},
      {{"lss"}, "chunkstore: unknown command 'lss'; did you mean 'ls'? (see 'chunkstore --help')\n"},
      {{"verfiy"}, "chunkstore: unknown command 'verfiy'; did you mean 'verify'? (see 'chunkstore --help')\n"},
      {{"index", "rebuld"},
       "chunkstore: unknown command 'rebuld'; did you mean 'rebuild'? (see 'chunkstore index --help')\n"},
      {{"zzzzzz"}, "chunkstore: unknown command 'zzzzzz' (see 'chunkstore --help')\n"},
      {{}, "chunkstore: a command is required (see 'chunkstore --help')\n"},
      {{"repair"}, "chunkstore: a command is required (see 'chunkstore repair --help')\n"},
  };
  for (const auto& [args, want] : cases) {
    auto r = Cs(args);
    EXPECT_EQ(r.code, 2) << want;
    EXPECT_EQ(r.err, want);
    EXPECT_EQ(r.out, "");
  }
  // Global options before the command are not taken for it.
  auto r = Exec({"--store", store(), "--json", "stast"});
  EXPECT_EQ(r.err, "chunkstore: unknown command 'stast'; did you mean 'stat' or 'stats'? (see 'chunkstore --help')\n");
}

TEST_F(Cli, UsageErrorsAreOneLineNamingTheCommandsHelp) {
  auto r = Cs({"cat"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "chunkstore: ref is required (see 'chunkstore cat --help')\n");
  r = Cs({"publish", "--nope", "x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(OneLine(r.err)) << r.err;
  EXPECT_NE(r.err.find("--nope"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(see 'chunkstore publish --help')"), std::string::npos) << r.err;
  r = Cs({"publish", "--name", "", "x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(OneLine(r.err)) << r.err;
}

TEST_F(Cli, HelpIsACommandToo) {
  auto by_flag = Cs({"publish", "--help"}), by_command = Cs({"help", "publish"});
  EXPECT_EQ(by_command.code, 0);
  EXPECT_EQ(by_command.out, by_flag.out);
  EXPECT_NE(by_command.out.find("Usage: chunkstore publish"), std::string::npos) << by_command.out;
  auto nested = Cs({"help", "index", "rebuild"});
  EXPECT_EQ(nested.code, 0);
  EXPECT_NE(nested.out.find("Usage: chunkstore index rebuild"), std::string::npos) << nested.out;
  auto top = Cs({"help"});
  EXPECT_EQ(top.code, 0);
  EXPECT_EQ(top.out, Cs({"--help"}).out);
  auto wrong = Cs({"help", "publsh"});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_EQ(wrong.err, "chunkstore: unknown command 'publsh'; did you mean 'publish'? (see 'chunkstore --help')\n");
}

}  // namespace
}  // namespace chunkstore
