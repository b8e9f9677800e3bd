// SPDX-License-Identifier: Apache-2.0
// `chunkstore mount`: the store as a read-only FUSE file system, served in
// the foreground until it is unmounted (fusermount3 -u, umount) or the
// command is interrupted (Ctrl-C, SIGTERM, SIGHUP), which unmounts it.
// What the file system shows is mount_fs.h's; this file checks the mount
// point, opens the store read-only and runs libfuse's multi-threaded loop.
//
// Signals: libfuse's handlers end the loop, but only a thread blocked in
// the loop's wait notices them. The store starts threads of its own (read
// ahead, uploads), so SIGINT, SIGTERM and SIGHUP are blocked before it is
// opened, every thread started later inherits that, and only the main
// thread takes them once the loop runs.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common.h"
#include "mount_fs.h"

namespace cli {

using chunkstore::Status;

namespace {

std::mutex g_log_mu;

void LogLine(const std::string& line) {
  std::lock_guard<std::mutex> l(g_log_mu);
  std::cerr << line << "\n" << std::flush;
}

// libfuse's own messages, in the command's form.
void FuseLog(enum fuse_log_level level, const char* fmt, va_list ap) {
  if (level > FUSE_LOG_NOTICE) {
    // --debug's traces: as libfuse writes them.
    std::lock_guard<std::mutex> l(g_log_mu);
    std::vfprintf(stderr, fmt, ap);
    return;
  }
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string text = buf;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  LogLine("chunkstore: mount: fuse: " + Printable(text));
}

// Restores the signal mask it found when the command returns.
class SignalBlock {
 public:
  SignalBlock() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~SignalBlock() { Restore(); }
  void Restore() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

// Owns a libfuse session through every way out of the command.
struct Session {
  fuse_session* se = nullptr;
  bool handlers = false, mounted = false;
  ~Session() {
    if (!se) return;
    if (mounted) fuse_session_unmount(se);
    if (handlers) fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
  }
};

// One line of /proc/self/mountinfo:
// ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [TAGS...] - TYPE SOURCE ...
struct MountLine {
  std::string id, dev, point, type, source;
};

std::vector<MountLine> MountTable() {
  std::vector<MountLine> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    MountLine m;
    std::string parent, root, escaped;
    if (!(fields >> m.id >> parent >> m.dev >> root >> escaped)) continue;
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    if (!(tail >> m.type >> m.source)) continue;
    // The table escapes space, tab, newline and backslash as \ooo.
    for (size_t i = 0; i < escaped.size(); ++i) {
      if (escaped[i] == '\\' && i + 3 < escaped.size()) {
        const std::string oct = escaped.substr(i + 1, 3);
        if (oct.find_first_not_of("01234567") == std::string::npos) {
          m.point += static_cast<char>(std::stoi(oct, nullptr, 8));
          i += 3;
          continue;
        }
      }
      m.point += escaped[i];
    }
    out.push_back(std::move(m));
  }
  return out;
}

// The sysfs file holding the read-ahead (KiB) of the mount this process
// just made at mountpoint: the table's entry there of type
// fuse.chunkstore, on an anonymous device (major 0, as every FUSE mount
// but fuseblk's), that was not in the table before (ids in `before`);
// empty if there is no such entry, or more than one.
std::string ReadAheadFile(const std::string& mountpoint, const std::set<std::string>& before) {
  std::string found;
  int matches = 0;
  for (const MountLine& m : MountTable()) {
    if (m.point != mountpoint || m.type != "fuse.chunkstore" || before.count(m.id)) continue;
    if (m.dev.rfind("0:", 0) != 0 || m.dev.size() < 3 || m.dev.find_first_not_of("0123456789", 2) != std::string::npos)
      continue;
    found = "/sys/class/bdi/" + m.dev + "/read_ahead_kb";
    ++matches;
  }
  return matches == 1 ? found : std::string();
}

// Writes kib as the mount's read-ahead; the error when it may not (not
// root, a read-only /sys).
Status SetReadAhead(const std::string& file, uint32_t kib) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(file + ": " + std::strerror(errno));
  const std::string text = std::to_string(kib) + "\n";
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) return Status::IOError(file + ": " + std::strerror(n < 0 ? err : EIO));
  return Status::OK();
}

}  // namespace

int CmdMount(const Globals& g, const MountArgs& a) {
  if (!(a.refresh_seconds > 0) || a.refresh_seconds > 86400)
    return Fail(Status::InvalidArgument("--refresh takes seconds from above 0 to 86400"), kUsage);
  struct stat st {};
  if (::stat(a.mountpoint.c_str(), &st) != 0)
    return Fail(Status::NotFound("mount point " + a.mountpoint + ": " + std::strerror(errno)), errno == ENOENT ? kNotFound : kFailure);
  if (!S_ISDIR(st.st_mode))
    return Fail(Status::InvalidArgument("mount point " + a.mountpoint + " is not a directory"), kUsage);
  char real[PATH_MAX];
  if (!::realpath(a.mountpoint.c_str(), real))
    return Fail(Status::IOError("mount point " + a.mountpoint + ": " + std::strerror(errno)), kFailure);
  const std::string mountpoint = real;
  // libfuse would say this too, but in terms of its own internals.
  const int probe = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (probe < 0)
    return Fail(Status::IOError(std::string("cannot open /dev/fuse: ") + std::strerror(errno) +
                                " (FUSE is needed: load the fuse module, or give a container --device /dev/fuse)"),
                errno == EACCES || errno == EPERM ? kDenied : kFailure);
  ::close(probe);

  SignalBlock block;
  OPEN_OR_FAIL(store, Access::kRead);
  MountConfig config;
  config.refresh_seconds = a.refresh_seconds;
  MountFs fs(store, config, LogLine);
  Status loaded = fs.Load();
  if (!loaded.ok()) return Fail(loaded);

  fuse_set_log_func(FuseLog);
  fuse_args args = FUSE_ARGS_INIT(0, nullptr);
  fuse_opt_add_arg(&args, "chunkstore");
  if (a.debug) fuse_opt_add_arg(&args, "-odebug");
  // ro: the kernel refuses every write with EROFS before asking us.
  // default_permissions: the kernel checks the modes trees record.
  // nosuid, nodev: a tree's setuid bits and device-like names are data
  // from the store, never privileges (fusermount3 adds them for users;
  // root mounts directly).
  fuse_opt_add_arg(&args, "-oro,nosuid,nodev,default_permissions,fsname=chunkstore,subtype=chunkstore");
  Session session;
  session.se = fuse_session_new(&args, MountFs::Ops(), sizeof(fuse_lowlevel_ops), fs.UserData());
  fuse_opt_free_args(&args);
  if (!session.se) return Fail(Status::IOError("cannot start a FUSE session"), kFailure);
  if (fuse_set_signal_handlers(session.se) != 0)
    return Fail(Status::IOError("cannot install the signal handlers"), kFailure);
  session.handlers = true;
  std::set<std::string> mounts_before;
  for (const MountLine& m : MountTable()) mounts_before.insert(m.id);
  if (fuse_session_mount(session.se, mountpoint.c_str()) != 0)
    return Fail(Status::IOError("cannot mount on " + mountpoint + " (the line above says why)"), kFailure);
  session.mounted = true;
  // Before the loop answers the kernel's first request (its INIT, whose
  // answer the kernel takes only to lower the read-ahead).
  const std::string read_ahead_file = ReadAheadFile(mountpoint, mounts_before);
  uint32_t read_ahead_set = 0;
  if (!read_ahead_file.empty() && a.read_ahead_kib > 0) {
    Status set = SetReadAhead(read_ahead_file, a.read_ahead_kib);
    if (set.ok()) read_ahead_set = a.read_ahead_kib;
    else if (::geteuid() == 0) LogLine("chunkstore: mount: the kernel's read-ahead stays: " + Printable(set.message()));
  }
  fs.SetReadAhead(read_ahead_file, read_ahead_set);

  if (g.json) {
    Json j;
    j.BeginObject().Key("mountpoint").Str(mountpoint).Key("store").Str(store.dir()).EndObject();
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    Print("mounted " + store.dir() + " on " + mountpoint + " (unmount: fusermount3 -u " + mountpoint + ")\n");
  }
  block.Restore();
  fuse_loop_config* loop = fuse_loop_cfg_create();
  const int rc = fuse_session_loop_mt(session.se, loop);
  fuse_loop_cfg_destroy(loop);
  // 0: unmounted from outside; a signal number: interrupted, unmounted by
  // the Session; below 0: the kernel connection failed.
  if (rc < 0) return Fail(Status::IOError(std::string("the FUSE session failed: ") + std::strerror(-rc)), kFailure);
  return kOk;
}

}  // namespace cli
