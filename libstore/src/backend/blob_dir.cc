// SPDX-License-Identifier: Apache-2.0
// DirectoryBlobStore: blobs as files under a directory, a key's '/'
// separated parts as subdirectories. A blob is written to a temporary file,
// fsynced and renamed into place (then its directory fsynced), so it is
// never seen partly written, and survives a crash once Put returns.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/whole_blob.h"
#include "chunkstore/blob_store.h"
#include "chunkstore/env.h"

namespace chunkstore {

namespace {

Status Errno(const std::string& what) { return Status::IOError(what + ": " + std::strerror(errno)); }

Status SyncDirOf(const std::string& path) {
  const std::string dir = path.substr(0, path.find_last_of('/'));
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open " + dir);
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::OK() : Errno("cannot sync " + dir);
}

Status MakeDirs(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return Status::OK();
  if (errno != ENOENT) return Errno("cannot create " + dir);
  const size_t slash = dir.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return Errno("cannot create " + dir);
  CHUNKSTORE_RETURN_IF_ERROR(MakeDirs(dir.substr(0, slash)));
  if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return Status::OK();
  return Errno("cannot create " + dir);
}

class DirectoryBlobStore final : public BlobStore {
 public:
  explicit DirectoryBlobStore(std::string root) : root_(std::move(root)) {}

  Status Put(const std::string& key, const void* data, size_t n) override {
    return Write(key, [&](int fd) -> Status { return WriteAll(fd, data, n, key); });
  }

  Result<bool> PutIfAbsent(const std::string& key, const void* data, size_t n) override {
    bool stored = false;
    Status s = Write(
        key, [&](int fd) -> Status { return WriteAll(fd, data, n, key); }, &stored);
    if (!s.ok()) return s;
    return stored;
  }

  Status PutFile(const std::string& key, const File& file, uint64_t size) override {
    return Write(key, [&](int fd) -> Status {
      std::vector<char> buf(1 << 20);
      for (uint64_t off = 0; off < size;) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - off));
        size_t got = 0;
        CHUNKSTORE_RETURN_IF_ERROR(file.ReadAt(off, want, buf.data(), &got));
        if (got != want) return Status::IOError("the file to store as " + key + " is shorter than expected");
        for (size_t done = 0; done < got;) {
          const ssize_t w = ::write(fd, buf.data() + done, got - done);
          if (w < 0 && errno == EINTR) continue;
          if (w < 0) return Errno("cannot write blob " + key);
          done += static_cast<size_t>(w);
        }
        off += got;
      }
      return Status::OK();
    });
  }

  Status GetRange(const std::string& key, uint64_t offset, size_t n, void* buf,
                  size_t* got) override {
    *got = 0;
    const int fd = ::open(Path(key).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? Status::NotFound("no blob " + key) : Errno("cannot open blob " + key);
    Status s;
    while (*got < n) {
      const ssize_t r = ::pread(fd, static_cast<char*>(buf) + *got, n - *got,
                                static_cast<off_t>(offset + *got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        s = Errno("cannot read blob " + key);
        break;
      }
      if (r == 0) break;
      *got += static_cast<size_t>(r);
    }
    ::close(fd);
    return s;
  }

  Result<std::string> Get(const std::string& key) override { return internal::GetWholeBlob(*this, key); }

  Result<uint64_t> Size(const std::string& key) override {
    struct stat st;
    if (::stat(Path(key).c_str(), &st) != 0)
      return errno == ENOENT ? Status::NotFound("no blob " + key) : Errno("cannot stat blob " + key);
    return static_cast<uint64_t>(st.st_size);
  }

  Result<std::vector<BlobInfo>> List(const std::string& prefix,
                                     const std::string& start_after) override {
    // Only the directory holding the prefix's last '/' can hold matches.
    const size_t slash = prefix.find_last_of('/');
    const std::string sub = slash == std::string::npos ? "" : prefix.substr(0, slash + 1);
    std::vector<BlobInfo> out;
    CHUNKSTORE_RETURN_IF_ERROR(Walk(sub, prefix, start_after, &out));
    std::sort(out.begin(), out.end(), [](const BlobInfo& a, const BlobInfo& b) { return a.key < b.key; });
    return out;
  }

  Status Delete(const std::string& key) override {
    if (::unlink(Path(key).c_str()) != 0 && errno != ENOENT) return Errno("cannot delete blob " + key);
    return Status::OK();
  }

  std::string Describe() const override { return root_; }

 private:
  std::string Path(const std::string& key) const { return root_ + "/" + key; }

  static Status WriteAll(int fd, const void* data, size_t n, const std::string& key) {
    const auto* p = static_cast<const char*>(data);
    size_t done = 0;
    while (done < n) {
      const ssize_t w = ::write(fd, p + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Errno("cannot write blob " + key);
      done += static_cast<size_t>(w);
    }
    return Status::OK();
  }

  // exclusive (PutIfAbsent): the blob goes in place with link(2), which
  // fails where the key exists, instead of rename(2), which replaces it;
  // *exclusive says whether it went in.
  Status Write(const std::string& key, const std::function<Status(int)>& fill, bool* exclusive = nullptr) {
    if (key.empty() || key.find("..") != std::string::npos || key[0] == '/' || key.rfind(".tmp", 0) == 0)
      return Status::InvalidArgument("malformed blob key '" + key + "'");
    const std::string path = Path(key);
    CHUNKSTORE_RETURN_IF_ERROR(MakeDirs(path.substr(0, path.find_last_of('/'))));
    CHUNKSTORE_RETURN_IF_ERROR(MakeDirs(root_ + "/.tmp"));
    static thread_local std::mt19937_64 rng(std::random_device{}());
    const std::string tmp = root_ + "/.tmp/" + std::to_string(rng());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return Errno("cannot create " + tmp);
    Status s = fill(fd);
    if (s.ok() && ::fsync(fd) != 0) s = Errno("cannot sync blob " + key);
    ::close(fd);
    if (s.ok() && exclusive) {
      *exclusive = ::link(tmp.c_str(), path.c_str()) == 0;
      if (!*exclusive && errno == EEXIST) {
        // A network file system may answer a retransmitted link that
        // succeeded with EEXIST: then the temporary file has two names.
        struct stat st;
        *exclusive = ::stat(tmp.c_str(), &st) == 0 && st.st_nlink > 1;
      } else if (!*exclusive) {
        s = Errno("cannot store blob " + key);
      }
      ::unlink(tmp.c_str());
      if (!s.ok() || !*exclusive) return s;
    } else if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
      s = Errno("cannot store blob " + key);
    }
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
    return SyncDirOf(path);
  }

  Status Walk(const std::string& sub, const std::string& prefix, const std::string& after,
              std::vector<BlobInfo>* out) {
    const std::string dir = root_ + "/" + sub;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return errno == ENOENT ? Status::OK() : Errno("cannot list " + dir);
    Status s;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == ".." || (sub.empty() && name == ".tmp")) continue;
      const std::string key = sub + name;
      struct stat st;
      if (::stat((dir + name).c_str(), &st) != 0) continue;  // deleted meanwhile
      if (S_ISDIR(st.st_mode)) {
        // Descend only where keys with the prefix can be.
        const std::string k = key + "/";
        if (k.compare(0, std::min(k.size(), prefix.size()), prefix, 0, std::min(k.size(), prefix.size())) == 0) {
          s = Walk(k, prefix, after, out);
          if (!s.ok()) break;
        }
        continue;
      }
      if (key.compare(0, prefix.size(), prefix) != 0 || (!after.empty() && key <= after)) continue;
      out->push_back({key, static_cast<uint64_t>(st.st_size), static_cast<int64_t>(st.st_mtim.tv_sec)});
    }
    ::closedir(d);
    return s;
  }

  std::string root_;
};

}  // namespace

std::unique_ptr<BlobStore> NewDirectoryBlobStore(const std::string& dir) {
  std::string root = dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return std::make_unique<DirectoryBlobStore>(root);
}

}  // namespace chunkstore
