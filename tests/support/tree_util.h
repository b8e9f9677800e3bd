// SPDX-License-Identifier: Apache-2.0
// Helpers for tests of trees: files made with a given mode and mtime, and
// a listing of a directory (every path below it with its type, mode,
// mtime to the nanosecond, size, and content digest or link target) that
// two directories compare equal by exactly when a restore is faithful.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "hash/digest.h"
#include "test_util.h"

namespace chunkstore::testing {

inline void SetMtime(const std::string& path, int64_t ns) {
  const struct timespec t[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, AT_SYMLINK_NOFOLLOW), 0) << path;
}

inline void MakeFile(const std::string& path, const std::vector<uint8_t>& data, mode_t mode, int64_t mtime_ns) {
  WriteFile(path, data);
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
  SetMtime(path, mtime_ns);
}

// path -> "type mode mtime_ns size digest|target" for everything below dir.
inline std::map<std::string, std::string> Listing(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (auto it = std::filesystem::recursive_directory_iterator(dir); it != std::filesystem::recursive_directory_iterator();
       ++it) {
    const std::string path = it->path().string();
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;
    std::string what;
    if (S_ISDIR(st.st_mode)) {
      what = "dir";
    } else if (S_ISLNK(st.st_mode)) {
      what = "link -> " + std::filesystem::read_symlink(path).string();
    } else if (S_ISREG(st.st_mode)) {
      const std::vector<uint8_t> data = ReadFile(path);
      what = "file " + std::to_string(st.st_size) + " " + internal::Sha256::Of(data.data(), data.size()).Hex();
    } else {
      continue;  // special files are not part of a tree
    }
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", S_ISLNK(st.st_mode) ? 0 : st.st_mode & 07777);
    out[it->path().lexically_relative(dir).string()] =
        what + " mode " + mode + " mtime " + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  }
  return out;
}

}  // namespace chunkstore::testing
