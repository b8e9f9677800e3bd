// SPDX-License-Identifier: Apache-2.0
// The file-system work of a restore that needs no restorer: removing an
// entry (a whole directory tree included) and comparing a file's content
// with an object's (fs.h).
#include <dirent.h>

#include <vector>

#include "format/tree.h"
#include "hash/digest.h"
#include "tree/fs.h"

namespace chunkstore::internal {

Status RemoveEntry(int dir_fd, const std::string& name, const std::string& path, int depth) {
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Status::OK();
    return Errno("cannot stat", path);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) return Errno("cannot remove", path);
    return Status::OK();
  }
  if (depth > kMaxTreeDepth) return Status::InvalidArgument(path + " nests too deep to remove");
  Fd sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (sub.get() < 0) return Errno("cannot open", path);
  std::vector<std::string> names;
  {
    const int dup = ::dup(sub.get());
    DIR* d = dup >= 0 ? ::fdopendir(dup) : nullptr;
    if (!d) {
      if (dup >= 0) ::close(dup);
      return Errno("cannot read directory", path);
    }
    while (struct dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    ::closedir(d);
  }
  for (const std::string& n : names) CHUNKSTORE_RETURN_IF_ERROR(RemoveEntry(sub.get(), n, path + "/" + n, depth + 1));
  if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) return Errno("cannot remove", path);
  return Status::OK();
}

Result<bool> HasContent(int dir_fd, const std::string& name, const std::string& path, uint64_t size, const Digest& id,
                        const SeenFile* seen) {
  Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    // A link, a socket, or a file its mode keeps from us (0200, which the
    // tree's mode may be about to fix): not one to take as it is.
    if (errno == ELOOP || errno == ENXIO || errno == EACCES) return false;
    return Errno("cannot open", path);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Errno("cannot stat", path);
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != size) return false;
  if (seen && (st.st_dev != seen->dev || st.st_ino != seen->ino || (seen->set_mode && st.st_nlink > 1))) return false;
  Sha256 h;
  std::vector<uint8_t> buf(1 << 20);
  uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("cannot read", path);
    }
    if (n == 0) break;
    h.Update(buf.data(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
  if (total != size || h.Finish() != id) return false;
  if (seen && seen->set_mode && ::fchmod(fd.get(), seen->mode) != 0) return Errno("cannot set the mode of", path);
  return true;
}

Result<bool> SetModeIfSame(int dir_fd, const std::string& name, const std::string& path, dev_t dev, ino_t ino,
                           mode_t mode) {
  // Read-only first; a file its owner may not read (mode 0200) opens
  // write-only, which without O_TRUNC changes nothing in it.
  Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0 && errno == EACCES) fd = Fd(::openat(dir_fd, name.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return false;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != dev || st.st_ino != ino || st.st_nlink > 1)
    return false;
  if (::fchmod(fd.get(), mode) != 0) return Errno("cannot set the mode of", path);
  return true;
}

}  // namespace chunkstore::internal
