// Golden tests of the chunkstore command: stdout, stderr and exit code of
// each command, including its failures.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "test_util.h"

extern char** environ;

namespace chunkstore {
namespace {

using testing::RandomBytes;
using testing::TempDir;

struct Outcome {
  int code = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class Cli : public ::testing::Test {
 protected:
  // Runs chunkstore with args; stdin from stdin_path ("" = /dev/null).
  Outcome Exec(std::vector<std::string> args, const std::string& stdin_path = "") {
    args.insert(args.begin(), CHUNKSTORE_CLI);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string out = dir_ / "stdout", err = dir_ / "stderr";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, stdin_path.empty() ? "/dev/null" : stdin_path.c_str(),
                                     O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    Outcome r;
    if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) return r;
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    waitpid(pid, &status, 0);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }
  Outcome Cs(std::vector<std::string> args, const std::string& stdin_path = "") {
    args.insert(args.begin(), {"--store", store()});
    return Exec(std::move(args), stdin_path);
  }
  std::string store() const { return dir_ / "store"; }
  std::string Write(const std::string& name, const std::vector<uint8_t>& data) {
    const std::string p = dir_ / name;
    testing::WriteFile(p, data);
    return p;
  }
  TempDir dir_;
};

std::string IdLine(const std::string& out) { return out.substr(0, out.find(' ')); }

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
  Outcome r = Cs({"cat", id});
  EXPECT_EQ(r.code, 4);
  EXPECT_EQ(r.out, std::string(data.begin(), data.begin() + first_len));  // only verified bytes
  EXPECT_NE(r.err.find("object " + id), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chunk "), std::string::npos);
  // -o leaves no partial file behind.
  r = Cs({"cat", id, "-o", dir_ / "restored"});
  EXPECT_EQ(r.code, 4);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "restored"));
}

TEST_F(Cli, CatToFile) {
  const auto data = RandomBytes(100000, 9);
  const std::string id = IdLine(Cs({"publish", Write("f", data)}).out);
  Outcome r = Cs({"cat", id, "-o", dir_ / "copy"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(testing::ReadFile(dir_ / "copy"), data);
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
       {std::vector<std::string>{"--help"}, {"publish", "--help"}, {"cat", "--help"},
        {"chunks", "--help"}}) {
    Outcome r = Exec(args);
    EXPECT_EQ(r.code, 0);
    EXPECT_FALSE(r.out.empty());
    EXPECT_EQ(r.err, "");
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
  }
}

}  // namespace
}  // namespace chunkstore
