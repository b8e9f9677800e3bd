// SPDX-License-Identifier: Apache-2.0
// A SQLite VFS shim for tests: forwards everything to the default VFS but
// fails the Nth write, sync or truncate of any database, WAL or journal
// file with an I/O error or "disk full". Installed as the default VFS while
// a ScopedSqliteFaults object lives, so the store's own index is affected.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstring>

namespace chunkstore::testing {

class SqliteFaults {
 public:
  static void FailAt(int n, bool full = false) {
    count() = 0;
    fail_at() = n;
    disk_full() = full;
  }
  static int Count() { return count(); }
  // A disk with no room left, from now until Full(false): every write and
  // truncate fails with SQLITE_FULL, and the -shm file cannot be made
  // (SQLITE_IOERR_SHMSIZE, what SQLite says when it cannot grow it).
  static void Full(bool on) { always_full() = on; }

  // Returns the error to report for this operation, or SQLITE_OK.
  static int Tick(int io_error) {
    if (always_full()) return SQLITE_FULL;
    const int n = ++count();
    if (fail_at() != 0 && n == fail_at()) return disk_full() ? SQLITE_FULL : io_error;
    return SQLITE_OK;
  }

  static void Install() {
    static sqlite3_vfs vfs;
    real() = sqlite3_vfs_find(nullptr);
    vfs = *real();
    vfs.zName = "chunkstore-faults";
    vfs.szOsFile = static_cast<int>(sizeof(Wrapped)) + real()->szOsFile;
    vfs.xOpen = &Open;
    sqlite3_vfs_register(&vfs, 1);
    installed_vfs() = &vfs;
  }
  static void Uninstall() {
    sqlite3_vfs_unregister(installed_vfs());
    sqlite3_vfs_register(real(), 1);
  }

 private:
  struct Wrapped {
    sqlite3_file base;
    sqlite3_file* inner;
  };

  static std::atomic<int>& count() { static std::atomic<int> v{0}; return v; }
  static std::atomic<int>& fail_at() { static std::atomic<int> v{0}; return v; }
  static std::atomic<bool>& disk_full() { static std::atomic<bool> v{false}; return v; }
  static std::atomic<bool>& always_full() { static std::atomic<bool> v{false}; return v; }
  static sqlite3_vfs*& real() { static sqlite3_vfs* v = nullptr; return v; }
  static sqlite3_vfs*& installed_vfs() { static sqlite3_vfs* v = nullptr; return v; }
  static sqlite3_file* In(sqlite3_file* f) { return reinterpret_cast<Wrapped*>(f)->inner; }

  static int Close(sqlite3_file* f) { return In(f)->pMethods->xClose(In(f)); }
  static int Read(sqlite3_file* f, void* b, int n, sqlite3_int64 o) { return In(f)->pMethods->xRead(In(f), b, n, o); }
  static int Write(sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
    if (int rc = Tick(SQLITE_IOERR_WRITE)) return rc;
    return In(f)->pMethods->xWrite(In(f), b, n, o);
  }
  static int Truncate(sqlite3_file* f, sqlite3_int64 size) {
    if (int rc = Tick(SQLITE_IOERR_TRUNCATE)) return rc;
    return In(f)->pMethods->xTruncate(In(f), size);
  }
  static int Sync(sqlite3_file* f, int flags) {
    if (int rc = Tick(SQLITE_IOERR_FSYNC)) return rc;
    return In(f)->pMethods->xSync(In(f), flags);
  }
  static int FileSize(sqlite3_file* f, sqlite3_int64* s) { return In(f)->pMethods->xFileSize(In(f), s); }
  static int Lock(sqlite3_file* f, int l) { return In(f)->pMethods->xLock(In(f), l); }
  static int Unlock(sqlite3_file* f, int l) { return In(f)->pMethods->xUnlock(In(f), l); }
  static int CheckReservedLock(sqlite3_file* f, int* r) { return In(f)->pMethods->xCheckReservedLock(In(f), r); }
  static int FileControl(sqlite3_file* f, int op, void* a) { return In(f)->pMethods->xFileControl(In(f), op, a); }
  static int SectorSize(sqlite3_file* f) { return In(f)->pMethods->xSectorSize(In(f)); }
  static int DeviceCharacteristics(sqlite3_file* f) { return In(f)->pMethods->xDeviceCharacteristics(In(f)); }
  static int ShmMap(sqlite3_file* f, int i, int sz, int ext, void volatile** p) {
    if (always_full()) return SQLITE_IOERR_SHMSIZE;
    return In(f)->pMethods->xShmMap(In(f), i, sz, ext, p);
  }
  static int ShmLock(sqlite3_file* f, int o, int n, int fl) { return In(f)->pMethods->xShmLock(In(f), o, n, fl); }
  static void ShmBarrier(sqlite3_file* f) { In(f)->pMethods->xShmBarrier(In(f)); }
  static int ShmUnmap(sqlite3_file* f, int del) { return In(f)->pMethods->xShmUnmap(In(f), del); }
  static int Fetch(sqlite3_file* f, sqlite3_int64 o, int n, void** p) { return In(f)->pMethods->xFetch(In(f), o, n, p); }
  static int Unfetch(sqlite3_file* f, sqlite3_int64 o, void* p) { return In(f)->pMethods->xUnfetch(In(f), o, p); }

  static int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* f, int flags, int* out) {
    static const sqlite3_io_methods methods = {
        3, &Close, &Read, &Write, &Truncate, &Sync, &FileSize, &Lock, &Unlock, &CheckReservedLock,
        &FileControl, &SectorSize, &DeviceCharacteristics, &ShmMap, &ShmLock, &ShmBarrier, &ShmUnmap,
        &Fetch, &Unfetch};
    auto* w = reinterpret_cast<Wrapped*>(f);
    w->inner = reinterpret_cast<sqlite3_file*>(w + 1);
    const int rc = real()->xOpen(real(), name, w->inner, flags, out);
    w->base.pMethods = w->inner->pMethods ? &methods : nullptr;
    return rc;
  }
};

// Installs the shim for the life of the object.
class ScopedSqliteFaults {
 public:
  ScopedSqliteFaults() { SqliteFaults::Install(); }
  ~ScopedSqliteFaults() {
    SqliteFaults::FailAt(0);
    SqliteFaults::Full(false);
    SqliteFaults::Uninstall();
  }
};

}  // namespace chunkstore::testing
