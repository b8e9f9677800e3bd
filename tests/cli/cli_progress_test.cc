// SPDX-License-Identifier: Apache-2.0
// --progress json: the lines long commands write on stderr for programs
// that drive the command, and that nothing is written with none.
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace chunkstore {
namespace {

// The JSON progress lines of a command's stderr, in order (other lines,
// such as a summary, are not JSON and are left out).
std::vector<nlohmann::json> ProgressLines(const std::string& err) {
  std::vector<nlohmann::json> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("{\"progress\"", 0) != 0) continue;
    out.push_back(nlohmann::json::parse(line)["progress"]);
  }
  return out;
}

TEST_F(Cli, ProgressAsJsonLinesEndsWithTheTotals) {
  const auto data = RandomBytes(3 << 20, 1);
  const std::string f = Write("f", data);
  std::filesystem::create_directories(dir_ / "tree/sub");
  Write("tree/a", RandomBytes(1000, 2));
  Write("tree/sub/b", RandomBytes(2000, 3));

  Outcome p = Cs({"--progress", "json", "publish", f, "--name", "f"});
  ASSERT_EQ(p.code, 0) << p.err;
  auto lines = ProgressLines(p.err);
  ASSERT_FALSE(lines.empty()) << p.err;
  EXPECT_EQ(lines.back()["command"], "publish");
  EXPECT_EQ(lines.back()["done"], true);
  EXPECT_EQ(lines.back()["bytes"], data.size());
  EXPECT_EQ(lines.back()["total"], data.size());

  Outcome c = Cs({"--progress", "json", "cat", "f", "-o", dir_ / "copy"});
  ASSERT_EQ(c.code, 0) << c.err;
  lines = ProgressLines(c.err);
  ASSERT_FALSE(lines.empty()) << c.err;
  EXPECT_EQ(lines.back()["command"], "cat");
  EXPECT_EQ(lines.back()["bytes"], data.size());
  EXPECT_EQ(lines.back()["done"], true);

  ASSERT_EQ(Cs({"publish", dir_ / "tree", "--name", "t"}).code, 0);
  Outcome r = Cs({"--progress", "json", "restore", "t", dir_ / "out"});
  ASSERT_EQ(r.code, 0) << r.err;
  lines = ProgressLines(r.err);
  ASSERT_FALSE(lines.empty()) << r.err;
  EXPECT_EQ(lines.back()["command"], "restore");
  EXPECT_EQ(lines.back()["bytes"], 3000);
  EXPECT_EQ(lines.back()["entries"], 3);  // two files and a directory
  EXPECT_EQ(lines.back()["done"], true);

  Outcome v = Cs({"--progress", "json", "verify"});
  ASSERT_EQ(v.code, 0) << v.err;
  lines = ProgressLines(v.err);
  ASSERT_FALSE(lines.empty()) << v.err;
  EXPECT_EQ(lines.back()["command"], "verify");
  EXPECT_EQ(lines.back()["done"], true);
  EXPECT_GE(lines.back()["bytes"].get<uint64_t>(), data.size());

  ASSERT_EQ(Cs({"rm", "f"}).code, 0);
  Outcome gc = Cs({"--progress", "json", "gc"});
  ASSERT_EQ(gc.code, 0) << gc.err;
  lines = ProgressLines(gc.err);
  ASSERT_FALSE(lines.empty()) << gc.err;
  EXPECT_EQ(lines.back()["command"], "gc");
  EXPECT_EQ(lines.back()["done"], true);
}

TEST_F(Cli, NoProgressWithNoneOrOnAPipe) {
  const std::string f = Write("f", RandomBytes(9 << 20, 1));
  Outcome p = Cs({"--progress", "none", "publish", f});
  ASSERT_EQ(p.code, 0);
  EXPECT_EQ(p.err, "");
  // auto on a stderr that is not a terminal: nothing either.
  Outcome q = Cs({"publish", f});
  ASSERT_EQ(q.code, 0);
  EXPECT_EQ(q.err, "");
  Outcome bad = Cs({"--progress", "loud", "ls"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--progress"), std::string::npos);
}

}  // namespace
}  // namespace chunkstore
