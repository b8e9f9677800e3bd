// SPDX-License-Identifier: Apache-2.0
// Golden tests of the tree commands: publish of a directory, ls and ls -R
// of a tree, cat and stat of a path inside one, diff, and restore.
#include <sys/stat.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "tree_util.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;

class CliTree : public Cli {
 protected:
  void SetUp() override {
    src_ = dir_ / "src";
    fs::create_directories(src_ + "/sub");
    testing::MakeFile(src_ + "/a.txt", {'h', 'i', '\n'}, 0640, 1600000000000000000);
    testing::MakeFile(src_ + "/sub/run", {'#', '!'}, 0755, 1600000000000000000);
    fs::create_symlink("a.txt", src_ + "/link");
    testing::SetMtime(src_ + "/link", 1600000000000000000);
    testing::SetMtime(src_ + "/sub", 1600000000000000000);
    testing::SetMtime(src_, 1600000000000000000);
  }
  std::string src_;
};

TEST_F(CliTree, ADirectoryIsOneTreeThatListsAndReadsBack) {
  Outcome p = Cs({"publish", src_, "--name", "site"});
  ASSERT_EQ(p.code, 0) << p.err;
  const std::string id = IdLine(p.out);
  EXPECT_EQ(p.out, id + "  " + src_ + "\n");
  EXPECT_EQ(p.err, "");
  Outcome ls = Cs({"ls", "site"});
  ASSERT_EQ(ls.code, 0) << ls.err;
  EXPECT_EQ(ls.out,
            "-rw-r-----         3 B  2020-09-13 12:26:40 UTC  a.txt\n"
            "lrwxrwxrwx           -  2020-09-13 12:26:40 UTC  link -> a.txt\n"
            "drwxr-xr-x           -  2020-09-13 12:26:40 UTC  sub/\n");
  Outcome rec = Cs({"ls", "-R", id});
  ASSERT_EQ(rec.code, 0) << rec.err;
  EXPECT_NE(rec.out.find("-rwxr-xr-x         2 B  2020-09-13 12:26:40 UTC  sub/run\n"), std::string::npos) << rec.out;
  Outcome cat = Cs({"cat", "site:a.txt"});
  ASSERT_EQ(cat.code, 0) << cat.err;
  EXPECT_EQ(cat.out, "hi\n");
  Outcome stat = Cs({"stat", "site:sub/run"});
  ASSERT_EQ(stat.code, 0) << stat.err;
  EXPECT_EQ(stat.out.substr(0, stat.out.find("id:")),
            "path:        sub/run\ntype:        file\nmode:        0755\nmtime:       2020-09-13 12:26:40 UTC\n");
  Outcome link = Cs({"--json", "stat", "site:link"});
  ASSERT_EQ(link.code, 0) << link.err;
  EXPECT_EQ(nlohmann::json::parse(link.out)["target"], "a.txt");
  // A path that is not there, a symlink read as a file.
  Outcome missing = Cs({"cat", "site:nope"});
  EXPECT_EQ(missing.code, 3);
  EXPECT_EQ(missing.err, "chunkstore: no nope in the tree\n");
  Outcome through = Cs({"cat", "site:link"});
  EXPECT_EQ(through.code, 2);
  // The names listing shows the tree under its name; ls of a name prefix
  // is unchanged.
  Outcome names = Cs({"ls"});
  EXPECT_EQ(names.out.substr(0, 6), "site  ");
}

TEST_F(CliTree, JsonListingsCarryEverything) {
  ASSERT_EQ(Cs({"publish", src_, "--name", "site"}).code, 0);
  Outcome ls = Cs({"--json", "ls", "-R", "site"});
  ASSERT_EQ(ls.code, 0) << ls.err;
  const auto j = nlohmann::json::parse(ls.out);
  ASSERT_EQ(j["entries"].size(), 4u);
  EXPECT_EQ(j["entries"][0]["path"], "a.txt");
  EXPECT_EQ(j["entries"][0]["mode"], "0640");
  EXPECT_EQ(j["entries"][0]["mtime"], "2020-09-13T12:26:40.000000000Z");
  EXPECT_EQ(j["entries"][0]["size"], 3);
  EXPECT_EQ(j["entries"][3]["path"], "sub/run");
  Outcome pub = Cs({"--json", "publish", src_, "--name", "site"});
  ASSERT_EQ(pub.code, 0);
  const auto p = nlohmann::json::parse(pub.out)["published"][0];
  EXPECT_EQ(p["tree"], true);
  EXPECT_EQ(p["files"], 2);
  EXPECT_EQ(p["directories"], 2);
  EXPECT_EQ(p["symlinks"], 1);
  EXPECT_EQ(p["version"], 2);
  EXPECT_EQ(p["new_bytes"], 0);
}

TEST_F(CliTree, DiffAndRestore) {
  ASSERT_EQ(Cs({"publish", src_, "--name", "site"}).code, 0);
  testing::MakeFile(src_ + "/a.txt", {'h', 'o', '\n'}, 0640, 1600000001000000000);
  testing::MakeFile(src_ + "/new", {'n'}, 0644, 1600000000000000000);
  fs::remove(src_ + "/link");
  testing::SetMtime(src_, 1600000000000000000);
  ASSERT_EQ(Cs({"publish", src_, "--name", "site"}).code, 0);
  Outcome d = Cs({"diff", "site@1", "site"});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(d.out, "M  a.txt\nD  link\nA  new\n");
  Outcome dj = Cs({"--json", "diff", "site@1", "site@2"});
  ASSERT_EQ(dj.code, 0);
  const auto changes = nlohmann::json::parse(dj.out)["changes"];
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0]["kind"], "modified");
  EXPECT_NE(changes[0]["before"]["id"], changes[0]["after"]["id"]);
  EXPECT_EQ(changes[1]["kind"], "removed");
  EXPECT_EQ(changes[1]["before"]["target"], "a.txt");
  // Restore, then restore an older version over it with --delete.
  const std::string out = dir_ / "out";
  Outcome r = Cs({"restore", "site", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(testing::Listing(out), testing::Listing(src_));
  Outcome back = Cs({"--json", "restore", "site@1", out, "--delete"});
  ASSERT_EQ(back.code, 0) << back.err;
  const auto rj = nlohmann::json::parse(back.out);
  EXPECT_EQ(rj["files_written"], 1);
  EXPECT_EQ(rj["symlinks_written"], 1);
  EXPECT_EQ(rj["removed"], 1);
  EXPECT_TRUE(fs::is_symlink(out + "/link"));
  EXPECT_FALSE(fs::exists(out + "/new"));
  Outcome bad = Cs({"diff", "site", "site:a.txt"});
  EXPECT_EQ(bad.code, 2);
  Outcome nowhere = Cs({"restore", "nothing", out});
  EXPECT_EQ(nowhere.code, 3);
}

TEST_F(CliTree, NamePrefixStillNamesEachFile) {
  Outcome p = Cs({"publish", "--name-prefix", "p", src_});
  ASSERT_EQ(p.code, 0) << p.err;
  Outcome ls = Cs({"ls"});
  EXPECT_EQ(ls.out.substr(0, 8), "p/a.txt ");
  EXPECT_NE(ls.out.find("p/sub/run "), std::string::npos);
}

TEST_F(CliTree, CopySendsOnlyWhatIsMissing) {
  ASSERT_EQ(Cs({"publish", src_, "--name", "site"}).code, 0);
  const std::string other = dir_ / "other";
  Outcome c = Cs({"--json", "copy", "--to", other});
  ASSERT_EQ(c.code, 0) << c.err;
  auto j = nlohmann::json::parse(c.out);
  EXPECT_GT(j["objects_copied"].get<int>(), 0);
  EXPECT_EQ(j["name_versions"], 1);
  Outcome again = Cs({"--json", "copy", "--to", other});
  ASSERT_EQ(again.code, 0) << again.err;
  j = nlohmann::json::parse(again.out);
  EXPECT_EQ(j["chunks_sent"], 0);
  EXPECT_EQ(j["commits"], 0);
  EXPECT_EQ(j["requests"], 0);  // between directories
  Outcome r = Exec({"--store", other, "restore", "site", dir_ / "out"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(testing::Listing(dir_ / "out"), testing::Listing(src_));
  // From another store into the default one, by --from.
  Outcome back = Cs({"copy", "--from", other, "--to", dir_ / "third", "site"});
  ASSERT_EQ(back.code, 0) << back.err;
  EXPECT_NE(back.out.find("copied "), std::string::npos);
  Outcome same = Cs({"copy", "--to", store()});
  EXPECT_EQ(same.code, 2);
  Outcome missing = Cs({"copy", "--to", other, "nothing"});
  EXPECT_EQ(missing.code, 3);
  Outcome no_to = Cs({"copy"});
  EXPECT_EQ(no_to.code, 2);
}

}  // namespace
}  // namespace chunkstore
