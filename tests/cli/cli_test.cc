// SPDX-License-Identifier: Apache-2.0
// Golden tests of the chunkstore command: stdout, stderr and exit code of
// each command, including its failures.
#include <csignal>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "forge.h"

namespace chunkstore {
namespace {

TEST_F(Cli, PublishAndCatRoundTripFilesAndStdin) {
  const std::vector<size_t> sizes = {0, 1, 256 * 1024, 4u << 20, (4u << 20) + 1, 9u << 20};
  uint64_t seed = 1;
  for (size_t n : sizes) {
    const auto data = RandomBytes(n, seed++);
    const std::string path = Write("in", data);
    Outcome p = Cs({"publish", path});
    ASSERT_EQ(p.code, 0) << p.err;
    const std::string id = IdLine(p.out);
    EXPECT_EQ(p.out, id + "  " + path + "\n");
    Outcome s = Cs({"publish", "-"}, path);
    ASSERT_EQ(s.code, 0) << s.err;
    EXPECT_EQ(s.out, id + "  -\n");
    Outcome c = Cs({"cat", id});
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_EQ(c.out, std::string(data.begin(), data.end())) << "size " << n;
    EXPECT_EQ(c.err, "");
  }
}

TEST_F(Cli, ObjectIdMatchesSha256sumOfTheFixture) {
  const std::string img = std::string(CHUNKSTORE_TESTDATA) + "/SekienAkashita.jpg";
  if (!std::filesystem::exists(img)) GTEST_SKIP() << img << " is absent";
  Outcome p = Cs({"publish", "--name", "img", img});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, "sha256:d9e749d9367fc908876749d6502eb212fee88c9a94892fb07da5ef3ba8bc39ed  " + img + "\n");
  Outcome c = Cs({"cat", "img@latest", "--offset", "109400", "--length", "1000"});
  ASSERT_EQ(c.code, 0);
  const auto data = testing::ReadFile(img);
  EXPECT_EQ(c.out, std::string(data.begin() + 109400, data.end()));
}

TEST_F(Cli, ChunksPrintsReferenceCuts) {
  const std::string img = std::string(CHUNKSTORE_TESTDATA) + "/SekienAkashita.jpg";
  if (!std::filesystem::exists(img)) GTEST_SKIP() << img << " is absent";
  Outcome r = Exec({"chunks", "--min", "4096", "--avg", "16384", "--max", "65535", img});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "0 21325 695429afe5937d6c75099f6e587267065a64e9dd83596a3d7386df3ef5a792c2\n"
            "21325 17140 17119f7abc183375afdb652248aad0c7211618d263335cc4e4ffc9a31e719bcb\n"
            "38465 28084 1545925739c6bfbd6609752a0e6ab61854f14d1fdb9773f08a7f52a13f9362d8\n"
            "66549 18217 bbd5b0b284d4e3c2098e92e8e2897e738c669113d06472560188d99a288872a3\n"
            "84766 24700 ede34e1a6cb287766e857eb0ed45b9f4b5ad83bb93c597be880c3a2ac91cddbe\n");
  EXPECT_FALSE(std::filesystem::exists(store()));  // no store touched
}

TEST_F(Cli, ChunksRejectsBadParameters) {
  const std::string f = Write("f", RandomBytes(10, 1));
  Outcome r = Exec({"chunks", "--min", "10", f});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "chunkstore: chunk min size 10 is out of range: it must be 64 to 1048576\n");
  r = Exec({"chunks", "--min", "8192", "--avg", "4096", f});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "chunkstore: chunk min size 8192 must be smaller than avg size 4096\n");
  r = Exec({"chunks", "--level", "5", f});
  EXPECT_EQ(r.code, 2);
  r = Exec({"chunks", "--min", "abc", f});
  EXPECT_EQ(r.code, 2);
}

TEST_F(Cli, RangesAreClippedAndNegativeRejected) {
  const auto data = RandomBytes(1000, 3);
  const std::string id = IdLine(Cs({"publish", Write("f", data)}).out);
  Outcome r = Cs({"cat", id, "--offset", "990", "--length", "100"});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out, std::string(data.begin() + 990, data.end()));
  r = Cs({"cat", id, "--offset", "5000"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "");
  r = Cs({"cat", id, "--offset", "-1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "chunkstore: --offset cannot be negative\n");
  r = Cs({"cat", id, "--length", "-5"});
  EXPECT_EQ(r.code, 2);
  r = Cs({"cat", id, "--offset", "99999999999999999999999"});
  EXPECT_EQ(r.code, 2);
}

TEST_F(Cli, ErrorsAndExitCodes) {
  Cs({"publish", Write("f", RandomBytes(10, 1))});
  Outcome r = Cs({"cat", "missing-name"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "chunkstore: no object or name matches 'missing-name'\n");
  r = Cs({"cat", "sha256:" + std::string(64, 'a')});
  EXPECT_EQ(r.code, 3);
  r = Cs({"cat", "sha256:xyz"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("malformed object id"), std::string::npos);
  r = Cs({"publish", dir_ / "does-not-exist"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "chunkstore: no such file: " + (dir_ / "does-not-exist") + "\n");
  r = Cs({"publish", "/dev/null"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  r = Cs({"frobnicate"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("chunkstore: ", 0), 0u);
  r = Cs({"cat", "x", "--bogus"});
  EXPECT_EQ(r.code, 2);
  r = Cs({"publish", "--name", "bad\x01", Write("g", RandomBytes(3, 2))});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("control character"), std::string::npos);
}

TEST_F(Cli, AmbiguousPrefixExitsTwoAndListsCandidates) {
  // "69235" and "95303" have ids sharing the prefix c11eb5e6.
  std::ofstream(dir_ / "a") << "69235";
  std::ofstream(dir_ / "b") << "95303";
  ASSERT_EQ(Cs({"publish", dir_ / "a", dir_ / "b"}).code, 0);
  Outcome r = Cs({"cat", "c11eb5e6"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("ambiguous id prefix c11eb5e6 matches 2 objects"), std::string::npos) << r.err;
}

TEST_F(Cli, NonStoreDirectoryIsRefused) {
  std::filesystem::create_directories(dir_ / "plain");
  std::ofstream(dir_ / "plain/file") << "x";
  Outcome r = Exec({"--store", dir_ / "plain", "publish", Write("f", RandomBytes(5, 1))});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("is not a chunkstore store"), std::string::npos) << r.err;
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_ / "plain"), {}), 1);
  r = Exec({"--store", dir_ / "absent", "cat", "x"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "chunkstore: no store at " + (dir_ / "absent") + "\n");
}

TEST_F(Cli, FlippedPackByteMakesCatExitFourWithoutTheBadBytes) {
  const auto data = RandomBytes(6u << 20, 8);  // two or more default-size chunks
  const std::string id = IdLine(Cs({"publish", Write("f", data)}).out);
  std::string pack;
  for (auto& e : std::filesystem::directory_iterator(store() + "/packs")) pack = e.path();
  // Damage the second chunk's record (the first is at most 4 MiB long).
  Outcome chunks = Exec({"chunks", dir_ / "f"});
  const uint64_t first_len = std::stoull(chunks.out.substr(chunks.out.find(' ') + 1));
  const uint64_t second_payload = 16 + 64 + first_len + 64;
  {
    std::fstream f(pack, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(second_payload + 100));
    f.put('\x5a');
  }
  for (const char* sparse : {"", "--no-sparse"}) {
    std::vector<std::string> args{"cat", id};
    if (*sparse) args.push_back(sparse);
    Outcome r = Cs(args);
    EXPECT_EQ(r.code, 4);
    EXPECT_EQ(r.out, std::string(data.begin(), data.begin() + first_len)) << sparse;  // only verified bytes
    EXPECT_NE(r.err.find("object " + id), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("chunk "), std::string::npos);
  }
  // stdout is a regular file here: with --no-sparse, cat reserved the
  // object's blocks in it first (ReserveOutput), and the unused part of the
  // reservation stays past its end (its size is only what was written,
  // checked above).
  if (ReservesBlocks()) {
    EXPECT_GE(AllocatedBytes(dir_ / "stdout"), data.size());
  }
  // -o leaves no partial file behind.
  Outcome r = Cs({"cat", id, "-o", dir_ / "restored"});
  EXPECT_EQ(r.code, 4);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "restored"));
}

// Whole blocks of zeros in the object become holes in a regular file
// (stdout or -o), and the file's bytes and length are the object's;
// --no-sparse writes them, a pipe and an append get every byte too.
TEST_F(Cli, CatWritesZeroBlocksAsHoles) {
  // 12 MiB: zeros, with data at unaligned places, a zero run inside a
  // chunk of data and zeros to the end.
  std::vector<uint8_t> data(12u << 20, 0);
  const auto island = RandomBytes(300000, 11);
  for (uint64_t at : {uint64_t{0}, uint64_t{4u << 20} + 17, uint64_t{7u << 20} + 4095})
    std::copy(island.begin(), island.end(), data.begin() + at);
  std::fill(data.begin() + (4u << 20) + 100000, data.begin() + (4u << 20) + 200000, 0);
  const std::string f = Write("img", data);
  const std::string id = IdLine(Cs({"publish", f}).out);
  const std::string want(data.begin(), data.end());
  auto check = [&](const std::string& path, bool sparse) {
    EXPECT_EQ(Slurp(path), want) << path;
    const uint64_t allocated = AllocatedBytes(path);
    if (sparse) {
      EXPECT_LT(allocated, 2u << 20) << path << ": about 3 x 300 KB of data";
    } else {
      EXPECT_GE(allocated, data.size()) << path;
    }
  };
  Outcome r = Cs({"cat", id});
  ASSERT_EQ(r.code, 0) << r.err;
  check(dir_ / "stdout", true);
  ASSERT_EQ(Cs({"cat", id, "-o", dir_ / "restored"}).code, 0);
  check(dir_ / "restored", true);
  ASSERT_EQ(Cs({"cat", "--no-sparse", id, "-o", dir_ / "full"}).code, 0);
  check(dir_ / "full", false);
  // A range that ends in zeros still has the range's length.
  r = Cs({"cat", id, "--offset", "1000", "--length", std::to_string((7u << 20))});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out, want.substr(1000, 7u << 20));
  // Appending (>>) to a file with content: every byte, after the old ones.
  testing::WriteFile(dir_ / "stdout", {'o', 'l', 'd'});
  r = Cs({"cat", id}, "", true);
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "old" + want);
  // Through a pipe.
  const std::string cat = std::string(CHUNKSTORE_CLI) + " --store " + store() + " cat " + id;
  r = ExecArgv({"/bin/sh", "-c", cat + " | cat"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  // Two commands into one redirect: the second goes on where the first
  // ended (its trailing hole included), as a plain write would have.
  r = ExecArgv({"/bin/sh", "-c", "{ " + cat + "; " + cat + "; } > " + dir_ / "twice"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Slurp(dir_ / "twice"), want + want);
}

// cat into a regular file reserves the blocks it is about to write
// (fallocate, keeping the file's size) and writes into them: the file
// holds exactly the object, after what it held if opened to append, and
// no reservation is left past its end.
TEST_F(Cli, CatIntoARegularFileReservesOnlyWhatItWrites) {
  const auto data = RandomBytes(6u << 20, 10);
  const std::string id = IdLine(Cs({"publish", Write("f", data)}).out);
  Outcome r = Cs({"cat", id});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(data.begin(), data.end()));
  EXPECT_LE(AllocatedBytes(dir_ / "stdout"), data.size() + 4096);
  const auto before = RandomBytes(5000, 11);
  Write("stdout", before);
  r = Cs({"cat", id}, "", true);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(before.begin(), before.end()) + std::string(data.begin(), data.end()));
  EXPECT_LE(AllocatedBytes(dir_ / "stdout"), before.size() + data.size() + 4096);
  // A range, into the same file appended again.
  r = Cs({"cat", id, "--offset", "1000", "--length", "3000000"}, "", true);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.size(), before.size() + data.size() + 3000000);
  EXPECT_EQ(r.out.substr(before.size() + data.size()), std::string(data.begin() + 1000, data.begin() + 3001000));
  EXPECT_LE(AllocatedBytes(dir_ / "stdout"), r.out.size() + 4096);
}

TEST_F(Cli, CatToFile) {
  const auto data = RandomBytes(100000, 9);
  const std::string id = IdLine(Cs({"publish", Write("f", data)}).out);
  Outcome r = Cs({"cat", id, "-o", dir_ / "copy"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(testing::ReadFile(dir_ / "copy"), data);
  // An existing file is replaced whole.
  Write("copy2", RandomBytes(500000, 1));
  ASSERT_EQ(Cs({"cat", id, "-o", dir_ / "copy2"}).code, 0);
  EXPECT_EQ(testing::ReadFile(dir_ / "copy2"), data);
  // A device is written directly: no temporary file appears beside it.
  ASSERT_EQ(Cs({"cat", id, "-o", "/dev/null"}).code, 0);
  for (auto& e : std::filesystem::directory_iterator("/dev"))
    EXPECT_EQ(e.path().filename().string().find("null.chunkstore-tmp"), std::string::npos);
}

// script(1) runs a command on a pseudo-terminal and copies what the
// command writes to it (stdout and stderr alike) to its own stdout.
TEST_F(Cli, CatShowsProgressOnATerminalOnlyWhenTheBytesGoElsewhere) {
  const auto data = RandomBytes(9 << 20, 21);
  const std::string id = IdLine(Cs({"publish", Write("f", data)}).out);
  const std::string cli = std::string("'") + CHUNKSTORE_CLI + "' --store '" + store() + "' ";
  const std::string copy = dir_ / "copy";
  Outcome r = ExecArgv({"/usr/bin/script", "-qec", cli + "cat " + id + " -o '" + copy + "'", "/dev/null"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("9.00 MiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/s"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.back(), '\r') << "the line is cleared at the end";
  EXPECT_EQ(testing::ReadFile(copy), data);
  // --quiet, a read of 8 MiB or less, and bytes that go to the terminal
  // themselves: no line.
  r = ExecArgv({"/usr/bin/script", "-qec", cli + "cat " + id + " --length 8388608 -o '" + copy + "'", "/dev/null"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  r = ExecArgv({"/usr/bin/script", "-qec", cli + "-q cat " + id + " -o '" + copy + "'", "/dev/null"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  r = ExecArgv({"/usr/bin/script", "-qec", cli + "cat " + id, "/dev/null"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GE(r.out.size(), data.size());  // the terminal turns each \n into \r\n
  EXPECT_EQ(r.out.find("MiB/s"), std::string::npos);
  // Not a terminal: stderr stays empty.
  r = Cs({"cat", id, "-o", copy});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(Cli, DefaultStoreComesFromEnvironment) {
  setenv("CHUNKSTORE_DIR", (dir_ / "envstore").c_str(), 1);
  Outcome r = Exec({"publish", Write("f", RandomBytes(100, 1))});
  unsetenv("CHUNKSTORE_DIR");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "envstore/index.db"));
  setenv("XDG_DATA_HOME", (dir_ / "xdg").c_str(), 1);
  r = Exec({"publish", Write("f", RandomBytes(100, 1))});
  unsetenv("XDG_DATA_HOME");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "xdg/chunkstore/index.db"));
}

TEST_F(Cli, HelpFitsOneHundredColumnsOnStdout) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"init", "--help"}, {"publish", "--help"},
        {"cat", "--help"}, {"stat", "--help"}, {"ls", "--help"}, {"log", "--help"},
        {"tag", "--help"}, {"rm", "--help"}, {"gc", "--help"}, {"verify", "--help"},
        {"stats", "--help"}, {"chunks", "--help"}}) {
    Outcome r = Exec(args);
    EXPECT_EQ(r.code, 0);
    EXPECT_FALSE(r.out.empty());
    EXPECT_EQ(r.err, "");
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
  }
}

// Throws (failing the test) on output that is not JSON.
nlohmann::json ParseJson(const std::string& text) { return nlohmann::json::parse(text); }

TEST_F(Cli, InitRecordsParametersAndRefusesTwice) {
  Outcome r = Cs({"init", "--min", "1024", "--avg", "4096", "--max", "16384", "--no-compression", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = ParseJson(r.out);
  EXPECT_EQ(j["chunk_avg"].get<uint64_t>(), 4096u);
  EXPECT_EQ(j["compression"].get<std::string>(), "none");
  r = Cs({"init"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("already a chunkstore store"), std::string::npos);
  // Publishing later uses the recorded parameters, whatever the defaults.
  const auto data = RandomBytes(100000, 1);
  const std::string f = Write("f", data);
  r = Cs({"publish", "--json", f});
  ASSERT_EQ(r.code, 0);
  EXPECT_GT(ParseJson(r.out)["published"][0]["chunks"].get<uint64_t>(), 5u);
  r = Cs({"init", "--avg", "100"});
  EXPECT_EQ(r.code, 2);
}

TEST_F(Cli, InitInlineMaxDecidesWhereSmallFilesLive) {
  EXPECT_EQ(Cs({"init", "--inline-max", "4097"}).code, 2);
  EXPECT_FALSE(std::filesystem::exists(store() + "/index.db"));
  Outcome r = Cs({"init", "--inline-max", "0", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out)["inline_max"].get<uint64_t>(), 0u);
  const auto small = RandomBytes(300, 3);
  const std::string f = Write("small", small);
  r = Cs({"publish", "--json", "--name", "s", f});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out)["published"][0]["chunks"].get<uint64_t>(), 1u);
  r = Cs({"stat", "--json", "s"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(ParseJson(r.out)["inline"].get<bool>());
  // The default: a small file lives in the index, and cat verifies it.
  std::filesystem::remove_all(store());
  r = Cs({"init"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("inline up to 512 bytes"), std::string::npos) << r.out;
  const std::string id = IdLine(Cs({"publish", "--name", "s", f}).out);
  r = Cs({"stat", "s"});
  EXPECT_NE(r.out.find("inline in the index"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chunks:      0"), std::string::npos) << r.out;
  r = Cs({"cat", "s"});
  ASSERT_EQ(r.code, 0);
  EXPECT_TRUE(r.out == std::string(small.begin(), small.end()));
  r = Cs({"stats", "--json"});
  EXPECT_EQ(ParseJson(r.out)["inline_objects"].get<uint64_t>(), 1u);
  EXPECT_TRUE(std::filesystem::is_empty(store() + "/packs"));
  EXPECT_EQ(Cs({"verify"}).code, 0);
  EXPECT_FALSE(id.empty());
}

TEST_F(Cli, PublishDirectoryWithNamePrefixInOneTransaction) {
  std::filesystem::create_directories(dir_ / "tree/sub");
  std::ofstream(dir_ / "tree/a.txt") << "alpha";
  std::ofstream(dir_ / "tree/sub/b.txt") << "beta";
  Outcome r = Cs({"publish", "--json", "--name-prefix", "proj", dir_ / "tree"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = ParseJson(r.out);
  ASSERT_EQ(j["published"].size(), 2u);
  EXPECT_EQ(j["published"][0]["name"].get<std::string>(), "proj/a.txt");
  EXPECT_EQ(j["published"][1]["name"].get<std::string>(), "proj/sub/b.txt");
  EXPECT_EQ(j["published"][1]["size"].get<uint64_t>(), 4u);
  EXPECT_EQ(Cs({"cat", "proj/sub/b.txt"}).out, "beta");
  r = Cs({"ls", "proj/"});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("proj/a.txt  5 B  ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\nproj/sub/b.txt  4 B  "), std::string::npos);
  // A bad input anywhere publishes nothing.
  r = Cs({"publish", "--name-prefix", "p2", dir_ / "tree", dir_ / "missing"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(ParseJson(Cs({"ls", "--json", "p2/"}).out)["names"].empty());
}

TEST_F(Cli, StatLogTagRmAndJson) {
  const std::string f1 = Write("v1", RandomBytes(5000, 1));
  const std::string id1 = IdLine(Cs({"publish", "--name", "doc", f1}).out);
  const std::string f2 = Write("v2", RandomBytes(7000, 2));
  const std::string id2 = IdLine(Cs({"publish", "--name", "doc", f2}).out);
  Outcome r = Cs({"log", "doc"});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("doc@2  ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(id1), std::string::npos);
  auto log = ParseJson(Cs({"log", "--json", "doc"}).out);
  ASSERT_EQ(log["versions"].size(), 2u);
  EXPECT_EQ(log["versions"][0]["id"].get<std::string>(), id2);
  EXPECT_EQ(log["versions"][1]["version"].get<uint64_t>(), 1u);
  EXPECT_EQ(Cs({"cat", "doc@1"}).out.size(), 5000u);

  r = Cs({"tag", "--json", id1, "doc"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out)["version"].get<uint64_t>(), 3u);
  auto st = ParseJson(Cs({"stat", "--json", "doc"}).out);
  EXPECT_EQ(st["id"].get<std::string>(), id1);
  EXPECT_EQ(st["size"].get<uint64_t>(), 5000u);
  EXPECT_EQ(st["names"][0].get<std::string>(), "doc");
  EXPECT_GE(st["stored_bytes"].get<uint64_t>(), 5000u);
  r = Cs({"stat", "doc"});
  EXPECT_NE(r.out.find("size:        4.88 KiB (5000 bytes)"), std::string::npos) << r.out;

  EXPECT_EQ(Cs({"tag", id1, "bad"}).code, 2);
  EXPECT_EQ(Cs({"tag", "nothing", "x"}).code, 3);
  EXPECT_EQ(Cs({"rm", "nothing"}).code, 3);
  EXPECT_EQ(Cs({"rm"}).code, 2);
  r = Cs({"rm", "--json", "doc"});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(ParseJson(r.out)["removed"][0].get<std::string>(), "doc");
  EXPECT_EQ(Cs({"log", "doc"}).code, 3);
  auto ls = ParseJson(Cs({"ls", "--all", "--json"}).out);
  EXPECT_TRUE(ls["names"].empty());
  EXPECT_EQ(ls["unnamed"].size(), 2u);
  EXPECT_EQ(Cs({"rm", "--object", id1}).code, 0);
  EXPECT_EQ(Cs({"cat", id1}).code, 3);
}

TEST_F(Cli, GcAfterRmShrinksTheStoreAndTheRestReadsBack) {
  std::vector<std::vector<uint8_t>> data;
  for (int i = 0; i < 4; ++i) {
    data.push_back(RandomBytes(3u << 20, 40 + i));
    ASSERT_EQ(Cs({"publish", "--name", "f" + std::to_string(i), Write("f" + std::to_string(i), data[i])}).code, 0);
  }
  auto before = ParseJson(Cs({"stats", "--json"}).out);
  ASSERT_EQ(Cs({"rm", "f0", "f1", "f2"}).code, 0);
  auto dry = ParseJson(Cs({"gc", "--dry-run", "--json"}).out);
  EXPECT_TRUE(dry["dry_run"].get<bool>());
  EXPECT_GT(dry["bytes_reclaimed"].get<uint64_t>(), 8u << 20);
  Outcome r = Cs({"gc", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto gc = ParseJson(r.out);
  EXPECT_EQ(gc["objects_removed"].get<uint64_t>(), 3u);
  auto after = ParseJson(Cs({"stats", "--json"}).out);
  EXPECT_LT(after["pack_bytes"].get<uint64_t>(), before["pack_bytes"].get<uint64_t>() / 3);
  EXPECT_EQ(after["garbage_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(Cs({"cat", "f3"}).out, std::string(data[3].begin(), data[3].end()));
  r = Cs({"verify"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("ok: 1 objects", 0), 0u) << r.out;
}

TEST_F(Cli, GcKilledMidRunThenRerun) {
  std::vector<std::vector<uint8_t>> keep;
  for (int i = 0; i < 6; ++i) {
    keep.push_back(RandomBytes(2u << 20, 60 + i));
    ASSERT_EQ(Cs({"publish", "--name", "k" + std::to_string(i), Write("k", keep[i])}).code, 0);
    ASSERT_EQ(Cs({"publish", "--name", "d" + std::to_string(i), Write("d", RandomBytes(4u << 20, 80 + i))}).code, 0);
  }
  for (int i = 0; i < 6; ++i) ASSERT_EQ(Cs({"rm", "d" + std::to_string(i)}).code, 0);
  // Kill gc at growing delays; each time every kept object must still read.
  for (int delay_ms : {0, 2, 5, 10, 20, 40}) {
    std::vector<std::string> args = {CHUNKSTORE_CLI, "--store", store(), "gc", "--orphan-grace", "0"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    for (int i = 0; i < 6; ++i) {
      Outcome c = Cs({"cat", "k" + std::to_string(i)});
      ASSERT_EQ(c.code, 0) << "after kill at " << delay_ms << " ms: " << c.err;
      ASSERT_EQ(c.out, std::string(keep[i].begin(), keep[i].end()));
    }
  }
  Outcome r = Cs({"gc", "--orphan-grace", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = Cs({"verify"});
  EXPECT_EQ(r.code, 0) << r.out;
  auto st = ParseJson(Cs({"stats", "--json"}).out);
  EXPECT_EQ(st["garbage_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(st["objects"].get<uint64_t>(), 6u);
}

TEST_F(Cli, VerifyOfACorruptedStoreExitsFourNamingTheChunk) {
  const std::string id = IdLine(Cs({"publish", "--name", "x", Write("f", RandomBytes(1u << 20, 5))}).out);
  std::string pack;
  for (auto& e : std::filesystem::directory_iterator(store() + "/packs")) pack = e.path();
  {
    std::fstream f(pack, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16 + 64 + 1000);
    f.put('');
  }
  const std::string chunk = Exec({"chunks", dir_ / "f"}).out.substr(0, 200);
  const std::string first_chunk_id = chunk.substr(chunk.find(' ', chunk.find(' ') + 1) + 1, 64);
  Outcome r = Cs({"verify"});
  EXPECT_EQ(r.code, 4);
  EXPECT_NE(r.out.find("corrupt-chunk object " + id + " chunk " + first_chunk_id), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("offset 16"), std::string::npos);
  EXPECT_NE(r.out.find("DAMAGED"), std::string::npos);
  EXPECT_NE(r.out.find("repair chunks --from SRC"), std::string::npos) << r.out;
  r = Cs({"verify", "--quick", "--json", "x"});
  EXPECT_EQ(r.code, 4);
  auto j = ParseJson(r.out);
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["problems"][0]["chunk"].get<std::string>(), first_chunk_id);
  EXPECT_EQ(Cs({"cat", "x", "-o", dir_ / "out"}).code, 4);
}

// A chunk list forged so that every check on the manifest holds (chunks
// swapped, chain states and check recomputed, in the index and the log):
// only the content's SHA-256 shows it. cat hands out no byte past the
// point where that is known and exits 4, -o leaves no file, verify names
// the object.
TEST_F(Cli, AForgedChunkListMakesCatAndVerifyExitFourNamingTheObject) {
  ASSERT_EQ(Cs({"init", "--min", "1024", "--avg", "4096", "--max", "16384"}).code, 0);
  const auto data = RandomBytes(100000, 31);
  const std::string id = IdLine(Cs({"publish", "--name", "x", Write("f", data)}).out);
  ASSERT_EQ(Cs({"verify"}).code, 0);
  testing::ForgeSwappedChunks(store(), id, data);
  if (HasFatalFailure()) return;
  Outcome r = Cs({"cat", "x"});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("object " + id), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not match its id"), std::string::npos) << r.err;
  EXPECT_LT(r.out.size(), data.size());
  r = Cs({"cat", id, "-o", dir_ / "restored"});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "restored"));
  r = Cs({"verify"});
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_NE(r.out.find("bad-object object " + id), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ok"), std::string::npos) << r.out;
  // Rebuilding the index from the (forged) log changes nothing about it.
  ASSERT_EQ(Cs({"index", "rebuild"}).code, 0);
  EXPECT_EQ(Cs({"cat", "x"}).code, 4);
}

TEST_F(Cli, InitTakesACompressionThatStatsShows) {
  for (const char* bad : {"lz4", "zstd:0", "zstd:20", "zlib:13", "none:1", "zstd:", "zstd:x"}) {
    Outcome r = Cs({"init", "--compression", bad});
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--compression"), std::string::npos) << r.err;
    EXPECT_EQ(Cs({"stats"}).code, 3) << "a refused init created no store (" << bad << ")";
  }
  Outcome empty = Cs({"init", "--compression", ""});
  EXPECT_EQ(empty.code, 2) << "an empty value is a mistake, not the default: " << empty.err;
  Outcome both = Cs({"init", "--compression", "zstd", "--no-compression"});
  EXPECT_EQ(both.code, 2) << both.err;
  Outcome r = Cs({"init", "--compression", "zstd:7", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out)["compression"].get<std::string>(), "zstd:7");
  std::string text;
  while (text.size() < 3000000) text += "a line of text that compresses " + std::to_string(text.size() % 1000) + "\n";
  ASSERT_EQ(Cs({"publish", "--name", "t", Write("t", std::vector<uint8_t>(text.begin(), text.end()))}).code, 0);
  r = Cs({"stats", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = ParseJson(r.out);
  EXPECT_EQ(j["compression"].get<std::string>(), "zstd:7");
  EXPECT_GT(j["compression_ratio"].get<double>(), 5.0);
  r = Cs({"stats"});
  EXPECT_NE(r.out.find("(zstd:7)"), std::string::npos) << r.out;
  r = Cs({"cat", "t"});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out, text);
}

TEST_F(Cli, InitProfileSetsChunkSizesThatFlagsOverride) {
  Outcome bad = Cs({"init", "--profile", "tiny"});
  EXPECT_EQ(bad.code, 2) << bad.err;
  Outcome r = Cs({"init", "--profile", "small-edits", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = ParseJson(r.out);
  EXPECT_EQ(j["chunk_min"].get<uint64_t>(), 16384u);
  EXPECT_EQ(j["chunk_avg"].get<uint64_t>(), 65536u);
  EXPECT_EQ(j["chunk_max"].get<uint64_t>(), 262144u);
  std::filesystem::remove_all(store());
  r = Cs({"init", "--profile", "small-edits", "--max", "524288", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  j = ParseJson(r.out);
  EXPECT_EQ(j["chunk_avg"].get<uint64_t>(), 65536u);
  EXPECT_EQ(j["chunk_max"].get<uint64_t>(), 524288u);
  std::filesystem::remove_all(store());
  r = Cs({"init", "--profile", "large-files", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out)["chunk_avg"].get<uint64_t>(), 1048576u);
}

// A store holding only objects published without a name lists nothing;
// ls says on stderr where they are, and the listing stays empty.
TEST_F(Cli, LsOfOnlyUnnamedObjectsSaysHowToSeeThem) {
  ASSERT_EQ(Cs({"publish", Write("f", RandomBytes(5000, 3))}).code, 0);
  Outcome r = Cs({"ls"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("1 object published without a name"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ls --all"), std::string::npos) << r.err;
  EXPECT_EQ(Cs({"--quiet", "ls"}).err, "");
  EXPECT_EQ(Cs({"ls", "--all"}).err, "");
  ASSERT_EQ(Cs({"publish", "--name", "n", Write("g", RandomBytes(5000, 4))}).code, 0);
  r = Cs({"ls"});
  EXPECT_EQ(r.err, "") << "a store with names needs no hint";
  EXPECT_NE(r.out.find("n  "), std::string::npos) << r.out;
}

TEST_F(Cli, VersionNamesTheLibraries) {
  Outcome r = Exec({"--version"});
  EXPECT_EQ(r.code, 0);
  for (const char* lib : {"chunkstore 0.", "SQLite 3.", "OpenSSL 3.", "zstd 1.", "libdeflate 1.", "xxHash 0.",
                          "new stores compress with zstd:3"})
    EXPECT_NE(r.out.find(lib), std::string::npos) << r.out;
}

TEST_F(Cli, QuietPrintsNothingButErrors) {
  Outcome r = Cs({"--quiet", "publish", Write("f", RandomBytes(10, 1))});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "");
  r = Cs({"publish", "-q", dir_ / "nope"});
  EXPECT_EQ(r.code, 1);
  EXPECT_FALSE(r.err.empty());
}

}  // namespace
}  // namespace chunkstore
