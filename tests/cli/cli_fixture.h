// SPDX-License-Identifier: Apache-2.0
// The fixture of the chunkstore command's golden tests: runs the built
// command with chosen stdin and stdout and collects its exit code, stdout
// and stderr.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

extern char** environ;

namespace chunkstore {

using testing::RandomBytes;
using testing::TempDir;

struct Outcome {
  int code = -1;
  std::string out, err;
};

inline std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class Cli : public ::testing::Test {
 protected:
  // Runs chunkstore with args; stdin from stdin_path ("" = /dev/null);
  // stdout a regular file (dir_/stdout), emptied first unless append (then
  // opened as `>>` opens it).
  Outcome Exec(std::vector<std::string> args, const std::string& stdin_path = "", bool append = false) {
    return ExecTo(std::move(args), stdin_path, append, "");
  }
  // As Exec, with stdout opened on stdout_path (e.g. /dev/full) when it is
  // not empty; r.out is then "".
  Outcome ExecTo(std::vector<std::string> args, const std::string& stdin_path, bool append,
                 const std::string& stdout_path) {
    args.insert(args.begin(), CHUNKSTORE_CLI);
    return ExecArgv(std::move(args), stdin_path, append, stdout_path);
  }
  // As ExecTo, running args[0] (any program) rather than chunkstore.
  Outcome ExecArgv(std::vector<std::string> args, const std::string& stdin_path = "", bool append = false,
                   const std::string& stdout_path = "") {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string out = dir_ / "stdout", err = dir_ / "stderr";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, stdin_path.empty() ? "/dev/null" : stdin_path.c_str(),
                                     O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, stdout_path.empty() ? out.c_str() : stdout_path.c_str(),
                                     O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    Outcome r;
    if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) return r;
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    waitpid(pid, &status, 0);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = stdout_path.empty() ? Slurp(out) : "";
    r.err = Slurp(err);
    return r;
  }
  Outcome Cs(std::vector<std::string> args, const std::string& stdin_path = "", bool append = false) {
    args.insert(args.begin(), {"--store", store()});
    return Exec(std::move(args), stdin_path, append);
  }
  std::string store() const { return dir_ / "store"; }
  std::string Write(const std::string& name, const std::vector<uint8_t>& data) {
    const std::string p = dir_ / name;
    testing::WriteFile(p, data);
    return p;
  }
  // Whether this directory's file system reserves blocks past a file's
  // end (fallocate with FALLOC_FL_KEEP_SIZE), as cat asks of its output.
  bool ReservesBlocks() {
    const std::string probe = dir_ / "reserve-probe";
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const bool ok = fd >= 0 && ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 << 20) == 0;
    if (fd >= 0) ::close(fd);
    ::unlink(probe.c_str());
    return ok;
  }
  TempDir dir_;
};

inline std::string IdLine(const std::string& out) { return out.substr(0, out.find(' ')); }

// Bytes of disk the file's blocks take (st_blocks counts 512-byte units).
inline uint64_t AllocatedBytes(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

}  // namespace chunkstore
