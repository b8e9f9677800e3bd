// SPDX-License-Identifier: Apache-2.0
// The command on the failure paths an operator meets: empty option values,
// multi-name rm, unwritable stdout, unreadable stdin, symlinks and special
// files in a published tree, a FIFO where a pack should be, output aimed
// into the store, killed `cat -o`, control characters in messages, file
// modes and stores that cannot be written.
#include <dirent.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "chunkstore/store.h"
#include "cli_fixture.h"

namespace chunkstore {
namespace {

namespace fs = std::filesystem;

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// The pack files of a directory store (packs/ and any folders below it).
std::vector<std::string> PackFiles(const std::string& store) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(store + "/packs"))
    if (e.is_regular_file() && e.path().extension() == ".pack") out.push_back(e.path().string());
  return out;
}

TEST_F(Cli, EmptyOptionValuesAreUsageErrors) {
  const std::string f = Write("f", RandomBytes(100, 1));
  Outcome r = Exec({"--store", "", "ls"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--store needs a value"), std::string::npos) << r.err;
  r = Cs({"publish", "--name", "", f});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--name needs a value"), std::string::npos) << r.err;
  r = Cs({"publish", "--name-prefix", "", f});
  EXPECT_EQ(r.code, 2);
  // None of them created a store.
  EXPECT_FALSE(fs::exists(store()));
  // --name names a directory's tree; with --name-prefix (a name per
  // file) it has no meaning: said, not ignored.
  fs::create_directories(dir_ / "tree");
  Write("tree/a", RandomBytes(10, 2));
  r = Cs({"publish", "--name", "x", "--name-prefix", "p", dir_ / "tree"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--name-prefix"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(store()));
}

TEST_F(Cli, AMistypedInputLeavesNoNewStoreBehind) {
  Outcome r = Cs({"publish", Write("real", RandomBytes(10, 16)), dir_ / "typo"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no such file: " + dir_ / "typo"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(store()));
}

// A publish that created its store and then failed (here: its input
// cannot be read) removes that store again; one into a store that was
// there keeps it, and what it held.
TEST_F(Cli, AFailedFirstPublishLeavesNoNewStoreBehind) {
  fs::create_directories(dir_ / "adir");
  Outcome r = Cs({"publish", "--name", "s", "-"}, dir_ / "adir");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot read standard input"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("removed the store"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(store())) << "a failed first publish left its new store behind";

  const std::string kept = Write("kept", RandomBytes(5000, 17));
  ASSERT_EQ(Cs({"publish", "--name", "k", kept}).code, 0);
  r = Cs({"publish", "--name", "s", "-"}, dir_ / "adir");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.find("removed the store"), std::string::npos) << r.err;
  ASSERT_TRUE(fs::exists(store()));
  EXPECT_EQ(Cs({"cat", "k"}).out, Slurp(kept));
}

// Two inits of one directory at once, with different chunking: exactly one
// creates the store, the other says it exists, and the store has the
// winner's parameters.
TEST_F(Cli, ConcurrentInitsHaveOneWinner) {
  for (int round = 0; round < 8; ++round) {
    const std::string where = dir_ / ("s" + std::to_string(round));
    Outcome a, b;
    std::thread ta([&] { a = ExecArgv({CHUNKSTORE_CLI, "--store", where, "--json", "init", "--avg", "65536",
                                       "--min", "16384", "--max", "262144"}); });
    // Exec shares dir_/stdout; this one writes its own.
    std::thread tb([&] {
      b = ExecArgv({"/bin/sh", "-c",
                    std::string(CHUNKSTORE_CLI) + " --store " + where + " --json init > " + where + ".b.out 2> " +
                        where + ".b.err"});
    });
    ta.join();
    tb.join();
    const std::string b_out = Slurp(where + ".b.out");
    EXPECT_EQ((a.code == 0) + (b.code == 0), 1) << "round " << round << ": " << a.err << " / " << Slurp(where + ".b.err");
    EXPECT_EQ(a.code + b.code, 1) << "the loser exits 1";
    const auto winner = nlohmann::json::parse(a.code == 0 ? a.out : b_out);
    const uint32_t avg = a.code == 0 ? 65536 : 1048576;
    EXPECT_EQ(winner["chunk_avg"], avg);
    Options o;
    o.create_if_missing = false;
    auto store = Store::Open(where, o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ((*store)->chunking().avg_size, avg) << "the store has the winner's parameters";
  }
}

TEST_F(Cli, RmOfSeveralNamesIsAllOrNothing) {
  ASSERT_EQ(Cs({"publish", "--name", "a", Write("a", RandomBytes(10, 3))}).code, 0);
  ASSERT_EQ(Cs({"publish", "--name", "b", Write("b", RandomBytes(10, 4))}).code, 0);
  Outcome r = Cs({"rm", "a", "nope", "b", "gone"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("no name nope, gone (nothing removed)"), std::string::npos) << r.err;
  Outcome ls = Cs({"--json", "ls"});
  ASSERT_EQ(ls.code, 0);
  EXPECT_EQ(nlohmann::json::parse(ls.out)["names"].size(), 2u) << ls.out;
  r = Cs({"--json", "rm", "a", "b", "a"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["removed"].size(), 3u);
  ls = Cs({"--json", "ls"});
  EXPECT_EQ(nlohmann::json::parse(ls.out)["names"].size(), 0u) << ls.out;
  EXPECT_EQ(Cs({"log", "a"}).code, 3);
}

TEST_F(Cli, AFailedWriteToStdoutFailsTheCommand) {
  const std::string f = Write("f", RandomBytes(5000, 5));
  Outcome r = ExecTo({"--store", store(), "publish", f}, "", false, "/dev/full");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot write output: No space left on device"), std::string::npos) << r.err;
  // The publish itself was done; only its report was lost.
  Outcome id = Cs({"publish", f});
  ASSERT_EQ(id.code, 0);
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{{"ls", "--all"}, {"stats"}, {"cat", IdLine(id.out)}, {"verify"}}) {
    std::vector<std::string> args = {"--store", store()};
    args.insert(args.end(), cmd.begin(), cmd.end());
    r = ExecTo(args, "", false, "/dev/full");
    EXPECT_EQ(r.code, 1) << cmd[0] << ": " << r.err;
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << cmd[0] << ": " << r.err;
  }
}

TEST_F(Cli, AReadErrorOnStdinPublishesNothing) {
  fs::create_directories(dir_ / "adir");
  ASSERT_EQ(Cs({"init"}).code, 0);
  Outcome r = Cs({"publish", "--name", "s", "-"}, dir_ / "adir");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot read standard input: Is a directory"), std::string::npos) << r.err;
  Outcome ls = Cs({"--json", "ls", "--all"});
  ASSERT_EQ(ls.code, 0);
  EXPECT_EQ(nlohmann::json::parse(ls.out)["names"].size(), 0u) << ls.out;
  EXPECT_EQ(Exec({"chunks", "-"}, dir_ / "adir").code, 1);
}

TEST_F(Cli, ATreeIsPublishedWithoutItsSymlinksAndSpecialFiles) {
  const std::string secret = Write("secret", RandomBytes(64, 6));
  fs::create_directories(dir_ / "tree/sub");
  const auto a = RandomBytes(300, 7);
  Write("tree/a", a);
  Write("tree/sub/b", RandomBytes(30, 8));
  fs::create_symlink(secret, dir_ / "tree/link");
  fs::create_directory_symlink(dir_.path(), dir_ / "tree/dirlink");
  ASSERT_EQ(::mkfifo((dir_ / "tree/fifo").c_str(), 0600), 0);
  const std::string sock = dir_ / "tree/sock";
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sock.c_str(), sock.size());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  Outcome r = Cs({"--json", "publish", "--name-prefix", "t", dir_ / "tree"});
  ::close(s);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["published"].size(), 2u) << r.out;
  std::map<std::string, std::string> skipped;
  for (const auto& e : j["skipped"]) skipped[fs::path(e["path"].get<std::string>()).filename()] = e["kind"];
  EXPECT_EQ(skipped, (std::map<std::string, std::string>{
                         {"dirlink", "symlink"}, {"fifo", "fifo"}, {"link", "symlink"}, {"sock", "socket"}}));
  EXPECT_NE(r.err.find("skipped symlink " + dir_ / "tree/link"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("skipped fifo"), std::string::npos) << r.err;
  Outcome ls = Cs({"--json", "ls"});
  ASSERT_EQ(ls.code, 0) << ls.err;
  const auto listed = nlohmann::json::parse(ls.out);
  std::set<std::string> names;
  for (const auto& e : listed["names"]) names.insert(e["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"t/a", "t/sub/b"}));
  Outcome c = Cs({"cat", "t/a"});
  EXPECT_EQ(c.out, std::string(a.begin(), a.end()));
}

TEST_F(Cli, AFifoInPlaceOfAPackFailsInsteadOfHanging) {
  ASSERT_EQ(Cs({"init", "--inline-max", "0"}).code, 0);
  Outcome p = Cs({"publish", Write("f", RandomBytes(100000, 9))});
  ASSERT_EQ(p.code, 0);
  const auto packs = PackFiles(store());
  ASSERT_EQ(packs.size(), 1u);
  fs::remove(packs[0]);
  ASSERT_EQ(::mkfifo(packs[0].c_str(), 0600), 0);
  // A hang here would be this test timing out.
  Outcome c = Cs({"cat", IdLine(p.out)});
  EXPECT_NE(c.code, 0);
  EXPECT_NE(c.err.find("is not a regular file"), std::string::npos) << c.err;
  Outcome v = Cs({"verify"});
  EXPECT_NE(v.code, 0);
}

TEST_F(Cli, CatRefusesToWriteIntoTheStore) {
  Outcome p = Cs({"publish", "--name", "f", Write("f", RandomBytes(3000, 10))});
  ASSERT_EQ(p.code, 0);
  const auto before = Slurp(store() + "/index.db");
  fs::create_directory_symlink(store(), dir_ / "alias");
  for (const std::string& target :
       {store() + "/index.db", store() + "/packs/x", store() + "/../store/new", dir_ / "alias/new"}) {
    Outcome c = Cs({"cat", "f", "-o", target});
    EXPECT_EQ(c.code, 2) << target;
    EXPECT_NE(c.err.find("inside the store directory"), std::string::npos) << c.err;
  }
  EXPECT_EQ(Slurp(store() + "/index.db"), before);
  EXPECT_FALSE(fs::exists(store() + "/new"));
  EXPECT_EQ(Cs({"verify"}).code, 0);
  // Beside the store is fine.
  EXPECT_EQ(Cs({"cat", "f", "-o", dir_ / "copy"}).code, 0);
}

TEST_F(Cli, AKilledCatLeavesNoFileBehind) {
  const auto data = RandomBytes(48u << 20, 11);
  Outcome p = Cs({"publish", Write("big", data)});
  ASSERT_EQ(p.code, 0);
  fs::create_directories(dir_ / "out");
  const std::string target = dir_ / "out/big";
  const std::string id = IdLine(p.out);
  for (int round = 0; round < 6; ++round) {
    std::vector<std::string> args = {CHUNKSTORE_CLI, "--store", store(), "cat", id, "-o", target};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(15 * (round + 1)));
    ::kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    // The target whole, or nothing at all: no temporary name.
    const auto entries = Entries(dir_ / "out");
    if (entries.empty()) continue;
    EXPECT_EQ(entries, std::set<std::string>{"big"}) << "round " << round;
    EXPECT_EQ(fs::file_size(target), data.size());
    fs::remove(target);
  }
  // A cat that ends writes the file whole, with the usual mode.
  ::umask(022);
  ASSERT_EQ(Cs({"cat", id, "-o", target}).code, 0);
  EXPECT_EQ(Entries(dir_ / "out"), std::set<std::string>{"big"});
  EXPECT_EQ(testing::ReadFile(target), data);
  struct stat st;
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  // Over an existing file too.
  ASSERT_EQ(Cs({"cat", id, "--length", "10", "-o", target}).code, 0);
  EXPECT_EQ(fs::file_size(target), 10u);
  EXPECT_EQ(Entries(dir_ / "out"), std::set<std::string>{"big"});
}

// Ctrl-C (or SIGTERM) during a publish drops what it wrote: no pack is
// left behind, nothing is published, the exit code is 128 + SIGINT.
TEST_F(Cli, AnInterruptedPublishLeavesNothingBehind) {
  ASSERT_EQ(Cs({"publish", "--name", "before", Write("before", RandomBytes(3u << 20, 17))}).code, 0);
  const auto packs_before = PackFiles(store());
  for (int sig : {SIGINT, SIGTERM}) {
    // A pipe whose write end this test keeps open: the publish waits for
    // more input when the signal comes.
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    std::vector<std::string> args = {CHUNKSTORE_CLI, "--store", store(), "publish", "--name", "cut", "-"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string err = dir_ / "interrupt-err";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[0], 0);
    posix_spawn_file_actions_addclose(&fa, p[1]);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    ::close(p[0]);
    const int w = p[1];
    // Enough for whole chunks to reach a new pack; then the input stalls
    // (the writer stays open) and the signal comes.
    const auto data = RandomBytes(6u << 20, 18 + sig);
    for (size_t at = 0; at < data.size();) {
      const ssize_t n = ::write(w, data.data() + at, data.size() - at);
      ASSERT_GT(n, 0);
      at += static_cast<size_t>(n);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(w);
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 130);
    EXPECT_NE(Slurp(err).find("interrupted: nothing was published"), std::string::npos) << Slurp(err);
    EXPECT_EQ(PackFiles(store()), packs_before) << "signal " << sig;
    EXPECT_EQ(Cs({"log", "cut"}).code, 3);
  }
  Outcome v = Cs({"verify"});
  EXPECT_EQ(v.code, 0) << v.out << v.err;
  EXPECT_EQ(v.out.find("orphan"), std::string::npos) << v.out;
}

TEST_F(Cli, AStoreWithoutItsLogIsDamageAndNothingStartsANewOne) {
  const std::string f = Write("f", RandomBytes(5000, 40));
  ASSERT_EQ(Cs({"publish", f, "--name", "f"}).code, 0);
  const auto packs = fs::directory_iterator(fs::path(store()) / "packs");
  const size_t pack_files = static_cast<size_t>(std::distance(fs::begin(packs), fs::end(packs)));
  fs::remove_all(fs::path(store()) / "log");
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"ls"}, {"cat", "f"}, {"publish", f}, {"verify"}, {"gc"}}) {
    Outcome r = Cs(args);
    EXPECT_EQ(r.code, 4) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("change log"), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("missing"), std::string::npos) << args[0] << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(fs::path(store()) / "log")) << "a command started a new log over the old changes";
  const auto after = fs::directory_iterator(fs::path(store()) / "packs");
  EXPECT_EQ(static_cast<size_t>(std::distance(fs::begin(after), fs::end(after))), pack_files);
}

TEST_F(Cli, ControlCharactersInMessagesAndPathsAreEscaped) {
  const std::string odd = dir_ / "line\nbreak\x1b[31m";
  testing::WriteFile(odd, RandomBytes(10, 12));
  Outcome p = Cs({"publish", odd});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(std::count(p.out.begin(), p.out.end(), '\n'), 1) << p.out;
  EXPECT_NE(p.out.find("line\\nbreak\\x1b[31m"), std::string::npos) << p.out;
  Outcome e = Cs({"publish", odd + "-missing"});
  EXPECT_EQ(e.code, 1);
  EXPECT_EQ(e.err.find('\x1b'), std::string::npos) << e.err;
  EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e.err;
  EXPECT_NE(e.err.find("line\\nbreak\\x1b[31m-missing"), std::string::npos) << e.err;
  // JSON carries the name as it is, escaped by JSON's own rules.
  Outcome j = Cs({"--json", "publish", odd});
  ASSERT_EQ(j.code, 0);
  EXPECT_EQ(nlohmann::json::parse(j.out)["published"][0]["input"], odd);
}

// A name is bytes: what is not UTF-8 is shown as \xNN byte by byte (a lone
// 0x9b is CSI to a terminal in an 8-bit mode), a C1 control written in
// UTF-8 as \uNNNN, and UTF-8 text as it is.
TEST_F(Cli, NameBytesThatAreNotUtf8AreEscapedOneByOne) {
  const struct {
    std::string name, shown;
  } cases[] = {
      {"lone\x9b" "31m", "lone\\x9b31m"},
      {"c1\xc2\x9b" "31m", "c1\\u009b31m"},
      {"cut\xe2\x82", "cut\\xe2\\x82"},            // a sequence that ends early
      {"long\xc0\xaf", "long\\xc0\\xaf"},          // an overlong '/'
      {"half\xed\xa0\x80", "half\\xed\\xa0\\x80"},  // a surrogate
      {"far\xf4\x90\x80\x80", "far\\xf4\\x90\\x80\\x80"},  // past U+10FFFF
      {"caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x93\xa6", "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x93\xa6"},
      // The edges of what is UTF-8: U+00A0 (just past C1), U+0800,
      // U+D7FF, U+E000, U+10000 and U+10FFFF as they are; the overlong
      // forms just below each, and the first surrogate, escaped.
      {"e\xc2\xa0\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xf0\x90\x80\x80\xf4\x8f\xbf\xbf",
       "e\xc2\xa0\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"},
      {"o\xc1\xbf\xe0\x9f\xbf\xf0\x8f\xbf\xbf", "o\\xc1\\xbf\\xe0\\x9f\\xbf\\xf0\\x8f\\xbf\\xbf"},
  };
  for (const auto& c : cases) {
    const std::string path = dir_ / c.name;
    testing::WriteFile(path, RandomBytes(10, 15));
    Outcome p = Cs({"publish", path});
    ASSERT_EQ(p.code, 0) << p.err;
    EXPECT_NE(p.out.find(c.shown + "\n"), std::string::npos) << p.out;
    Outcome e = Cs({"publish", path + "-missing"});
    EXPECT_EQ(e.code, 1);
    EXPECT_NE(e.err.find(c.shown + "-missing"), std::string::npos) << e.err;
    if (c.name != c.shown) {
      EXPECT_EQ(p.out.find(c.name), std::string::npos) << p.out;
      EXPECT_EQ(e.err.find(c.name), std::string::npos) << e.err;
    }
  }
}

TEST_F(Cli, EveryFileOfAStoreIsPrivateToItsOwner) {
  ::umask(022);
  ASSERT_EQ(Cs({"publish", "--name", "small", Write("s", RandomBytes(100, 13))}).code, 0);
  ASSERT_EQ(Cs({"publish", Write("big", RandomBytes(2u << 20, 14))}).code, 0);
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(store())) {
    struct stat st;
    ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
    if (S_ISDIR(st.st_mode)) {
      EXPECT_EQ(st.st_mode & 077, 0u) << e.path() << " is a directory others can open";
    } else {
      files.push_back(e.path().filename());
      EXPECT_EQ(st.st_mode & 077, 0u) << e.path() << " mode " << std::oct << (st.st_mode & 0777);
    }
  }
  // The index and its WAL were among them.
  EXPECT_NE(std::find(files.begin(), files.end(), "index.db"), files.end());
  // An index an older version left readable by all is made private by the
  // next command that may write.
  fs::permissions(store() + "/index.db", fs::perms::others_read | fs::perms::group_read, fs::perm_options::add);
  ASSERT_EQ(Cs({"tag", "small", "again"}).code, 0);
  struct stat st;
  ASSERT_EQ(::stat((store() + "/index.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// Runs the command as a user who cannot write the store: `nobody` when
// this test runs as root (root may write anything), else the caller after
// taking write permission away.
TEST_F(Cli, AStoreThatCannotBeWrittenCanStillBeRead) {
  const auto data = RandomBytes(3u << 20, 15);
  Outcome p = Cs({"publish", "--name", "d", Write("d", data)});
  ASSERT_EQ(p.code, 0);
  const bool root = ::geteuid() == 0;
  std::vector<std::string> prefix;
  if (root) {
    ASSERT_TRUE(fs::exists("/usr/bin/setpriv")) << "running as root needs setpriv (util-linux) to drop privileges";
    prefix = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    // A copy nobody may run (the build tree may sit in a private home).
    fs::copy_file(CHUNKSTORE_CLI, dir_ / "chunkstore");
    fs::permissions(dir_ / "chunkstore", fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
    // nobody may read and traverse, not write.
    for (fs::path d = dir_.path(); d != d.root_path(); d = d.parent_path())
      fs::permissions(d, fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add);
    for (const auto& e : fs::recursive_directory_iterator(store()))
      fs::permissions(e.path(), fs::perms::others_read | (e.is_directory() ? fs::perms::others_exec : fs::perms::none),
                      fs::perm_options::add);
    fs::permissions(store(), fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add);
  } else {
    for (const auto& e : fs::recursive_directory_iterator(store()))
      fs::permissions(e.path(), fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                      fs::perm_options::remove);
    fs::permissions(store(), fs::perms::owner_write, fs::perm_options::remove);
  }
  auto as_reader = [&](std::vector<std::string> args) {
    std::vector<std::string> full = {"--store", store()};
    full.insert(full.end(), args.begin(), args.end());
    if (!root) return Exec(full);
    // setpriv runs the command; Exec puts CHUNKSTORE_CLI first.
    full.insert(full.begin(), {prefix[1], prefix[2], prefix[3], dir_ / "chunkstore"});
    std::vector<std::string> argv = {prefix[0]};
    argv.insert(argv.end(), full.begin(), full.end());
    return ExecArgv(argv);
  };
  Outcome c = as_reader({"cat", "d"});
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find("is not writable by this user: its index is read as it is"), std::string::npos) << c.err;
  EXPECT_EQ(c.out, std::string(data.begin(), data.end()));
  for (const char* cmd : {"ls", "stats", "verify"}) {
    Outcome o = as_reader({cmd});
    EXPECT_EQ(o.code, 0) << cmd << ": " << o.err;
  }
  Outcome w = as_reader({"publish", "--name", "e", dir_ / "d"});
  EXPECT_EQ(w.code, 1);
  EXPECT_NE(w.err.find("is read-only"), std::string::npos) << w.err;
  Outcome t = as_reader({"tag", "d", "e"});
  EXPECT_EQ(t.code, 1);
  EXPECT_NE(t.err.find("is read-only"), std::string::npos) << t.err;
  if (!root) {
    fs::permissions(store(), fs::perms::owner_write, fs::perm_options::add);
    for (const auto& e : fs::recursive_directory_iterator(store()))
      fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  }
}

// A damaged chunk is mended from a replica; a source without it is named
// in a line that says what could not be mended and which object needs it.
TEST_F(Cli, RepairChunksMendsFromAReplicaAndSaysWhatItCouldNot) {
  const auto data = RandomBytes(6u << 20, 21);
  const std::string f = Write("f", data);
  const std::string id = IdLine(Cs({"publish", f}).out);
  const std::string replica = dir_ / "replica", other = dir_ / "other";
  ASSERT_EQ(Exec({"--store", replica, "publish", f}).code, 0);
  ASSERT_EQ(Exec({"--store", other, "publish", Write("g", RandomBytes(1000, 22))}).code, 0);
  Outcome chunks = Exec({"chunks", f});
  const uint64_t first_len = std::stoull(chunks.out.substr(chunks.out.find(' ') + 1));
  const std::string second = chunks.out.substr(chunks.out.find('\n') + 1);
  const std::string second_id = second.substr(second.rfind(' ', second.find('\n')) + 1, 64);
  std::string pack;
  for (auto& e : fs::directory_iterator(store() + "/packs")) pack = e.path();
  {
    std::fstream p(pack, std::ios::in | std::ios::out | std::ios::binary);
    p.seekp(static_cast<std::streamoff>(16 + 64 + first_len + 64 + 100));
    p.put('\x5a');
  }
  ASSERT_EQ(Cs({"verify"}).code, 4);

  Outcome r = Cs({"repair", "chunks", "--from", other});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.out.find("NOT repaired: chunk " + second_id + ": the source does not have it (needed by " + id + ")"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 damaged chunks, 0 repaired"), std::string::npos) << r.out;

  r = Cs({"--json", "repair", "chunks", "--from", replica});
  EXPECT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["damaged"], 1);
  EXPECT_EQ(j["repaired"], nlohmann::json::array({second_id}));
  EXPECT_TRUE(j["unrepaired"].empty());
  EXPECT_EQ(Cs({"verify"}).code, 0);
  r = Cs({"cat", id});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out == std::string(data.begin(), data.end()));

  EXPECT_EQ(Cs({"repair", "chunks"}).code, 2);  // --from is required
}

}  // namespace
}  // namespace chunkstore
