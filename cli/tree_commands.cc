// SPDX-License-Identifier: Apache-2.0
// The tree subcommands (restore, diff, and ls of a tree) and copy.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "common.h"
#include "terminal.h"

namespace cli {

using chunkstore::EntryType;
using chunkstore::Status;
using chunkstore::TreeEntry;

namespace {

// "drwxr-xr-x", "-rwsr-x---", "lrwxrwxrwx", as ls -l writes them.
std::string ModeString(const TreeEntry& e) {
  std::string s(10, '-');
  s[0] = e.type == EntryType::kDirectory ? 'd' : e.type == EntryType::kSymlink ? 'l' : '-';
  const uint32_t m = e.type == EntryType::kSymlink ? 0777 : e.mode;
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i)
    if (m & (0400u >> i)) s[1 + i] = rwx[i];
  auto special = [&](int at, uint32_t bit, char set, char unset) {
    if (m & bit) s[at] = s[at] == 'x' ? set : unset;
  };
  special(3, S_ISUID, 's', 'S');
  special(6, S_ISGID, 's', 'S');
  special(9, S_ISVTX, 't', 'T');
  return s;
}

// "2026-11-30 11:22:33 UTC", or with the nanoseconds in JSON.
std::string Mtime(int64_t ns) {
  int64_t sec = ns / 1000000000;
  if (ns % 1000000000 < 0) --sec;
  return HumanTime(sec);
}

std::string IsoNs(int64_t ns) {
  int64_t sec = ns / 1000000000;
  int64_t frac = ns % 1000000000;
  if (frac < 0) {
    frac += 1000000000;
    --sec;
  }
  std::string iso = IsoTime(sec);  // ends in Z
  char buf[16];
  std::snprintf(buf, sizeof buf, ".%09lld", static_cast<long long>(frac));
  return iso.substr(0, iso.size() - 1) + buf + "Z";
}

void EntryJson(Json& j, const TreeEntry& e) {
  j.BeginObject().Key("path").Str(e.name).Key("type").Str(chunkstore::EntryTypeName(e.type));
  if (e.type != EntryType::kSymlink) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", e.mode);
    j.Key("mode").Str(mode);
  }
  j.Key("mtime").Str(IsoNs(e.mtime_ns)).Key("mtime_ns").Int(e.mtime_ns);
  if (e.type == EntryType::kFile) j.Key("size").Num(e.size);
  if (!e.id.empty()) j.Key("id").Str(e.id);
  if (e.type == EntryType::kSymlink) j.Key("target").Str(e.target);
  j.EndObject();
}

std::string EntryLine(const TreeEntry& e) {
  std::string size = e.type == EntryType::kFile ? HumanSize(e.size) : "-";
  size.insert(0, size.size() < 10 ? 10 - size.size() : 0, ' ');
  std::string line = ModeString(e) + "  " + size + "  " + Mtime(e.mtime_ns) + "  " + Printable(e.name);
  if (e.type == EntryType::kDirectory) line += "/";
  if (e.type == EntryType::kSymlink) line += " -> " + Printable(e.target);
  return line + "\n";
}

}  // namespace

int ListTree(const Globals& g, chunkstore::Store& store, const std::string& ref, bool recursive) {
  std::vector<TreeEntry> entries;
  if (recursive) {
    Status s = store.WalkTree(ref, [&](const TreeEntry& e) {
      entries.push_back(e);
      return Status::OK();
    });
    if (!s.ok()) return Fail(s);
  } else {
    auto tree = store.OpenTree(ref);
    if (!tree.ok()) return Fail(tree.status());
    for (TreeEntry& e : tree->entries) {
      if (e.type == EntryType::kDirectory) {
        // A directory's mode and mtime are in its own tree.
        auto sub = store.OpenTree(e.id);
        if (!sub.ok()) return Fail(sub.status());
        e.mode = sub->mode;
        e.mtime_ns = sub->mtime_ns;
      }
      entries.push_back(std::move(e));
    }
  }
  if (g.json) {
    Json j;
    j.BeginObject().Key("entries").BeginArray();
    for (const auto& e : entries) EntryJson(j, e);
    j.EndArray().EndObject();
    Print(j.str() + "\n");
    return kOk;
  }
  std::string out;
  for (const auto& e : entries) out += EntryLine(e);
  Print(out);
  return kOk;
}

int CmdRestore(const Globals& g, const RestoreArgs& a) {
  if (a.dest.empty()) return Fail(Status::InvalidArgument("restore needs a destination"), kUsage);
  InterruptGuard guard;
  OPEN_OR_FAIL(store, Access::kRead);
  chunkstore::RestoreOptions o;
  o.delete_extra = a.delete_extra;
  o.verify_existing = a.verify_existing;
  o.sparse = !a.no_sparse;
  o.cancel = &g_interrupted;
  std::unique_ptr<Progress> progress = MakeProgress(WantProgress(g.progress, g.quiet), 0, 0, "restore", "entries");
  uint64_t last_bytes = 0, last_entries = 0;
  if (progress)
    o.progress = [p = progress.get(), &last_bytes, &last_entries](uint64_t bytes, uint64_t entries) {
      last_bytes = bytes;
      last_entries = entries;
      p->Update(bytes, entries);
    };
  auto r = store.Restore(a.ref, a.dest, o);
  if (progress && r.ok()) progress->Done(last_bytes, last_entries);
  progress.reset();
  if (!r.ok()) {
    if (g_interrupted.load()) {
      std::cerr << "chunkstore: interrupted: " << Printable(a.dest)
                << " is partly restored; restore again to finish it\n";
      return 130;
    }
    return Fail(r.status());
  }
  if (g.json) {
    Json j;
    j.BeginObject().Key("ref").Str(a.ref).Key("dest").Str(a.dest);
    j.Key("files_written").Num(r->files_written).Key("files_unchanged").Num(r->files_unchanged);
    j.Key("bytes_written").Num(r->bytes_written).Key("directories").Num(r->directories);
    j.Key("symlinks_written").Num(r->symlinks_written).Key("metadata_fixed").Num(r->metadata_fixed);
    j.Key("removed").Num(r->removed).EndObject();
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    std::cerr << "restored " << Printable(a.dest) << ": " << r->files_written << " files written ("
              << HumanSize(r->bytes_written) << "), " << r->files_unchanged << " unchanged, " << r->directories
              << " directories, " << r->symlinks_written << " symlinks written"
              << (r->removed ? ", " + std::to_string(r->removed) + " removed" : std::string()) << "\n";
  }
  return kOk;
}

int CmdDiff(const Globals& g, const std::string& from, const std::string& to) {
  OPEN_OR_FAIL(store, Access::kRead);
  auto changes = store.DiffTrees(from, to);
  if (!changes.ok()) return Fail(changes.status());
  if (g.json) {
    Json j;
    j.BeginObject().Key("changes").BeginArray();
    for (const auto& c : *changes) {
      j.BeginObject().Key("kind").Str(chunkstore::ChangeKindName(c.kind)).Key("path").Str(c.path);
      if (c.kind != chunkstore::ChangeKind::kAdded) {
        j.Key("before");
        EntryJson(j, c.before);
      }
      if (c.kind != chunkstore::ChangeKind::kRemoved) {
        j.Key("after");
        EntryJson(j, c.after);
      }
      j.EndObject();
    }
    j.EndArray().EndObject();
    Print(j.str() + "\n");
    return kOk;
  }
  std::string out;
  for (const auto& c : *changes) {
    const char* mark = c.kind == chunkstore::ChangeKind::kAdded      ? "A"
                       : c.kind == chunkstore::ChangeKind::kRemoved  ? "D"
                       : c.kind == chunkstore::ChangeKind::kModified ? "M"
                       : c.kind == chunkstore::ChangeKind::kType     ? "T"
                                                                     : "m";
    const TreeEntry& e = c.kind == chunkstore::ChangeKind::kRemoved ? c.before : c.after;
    out += std::string(mark) + "  " + Printable(c.path) + (e.type == EntryType::kDirectory ? "/" : "") + "\n";
  }
  Print(out);
  return kOk;
}

int CmdCopy(const Globals& g, const std::string& from, const std::string& to, const std::vector<std::string>& refs) {
  if (to.empty()) return Fail(Status::InvalidArgument("copy needs --to"), kUsage);
  InterruptGuard guard;
  Globals gs = g, gd = g;
  gs.store_dir = from.empty() ? g.store_dir : from;
  gd.store_dir = to;
  gs.secret_file.clear();  // the secret is the destination's, which the copy changes
  if (to.rfind("http://", 0) == 0 || to.rfind("https://", 0) == 0) {
    std::string file = g.token_file;
    if (file.empty())
      if (const char* env = std::getenv("CHUNKSTORE_TOKEN_FILE")) file = env;
    if (!file.empty()) {
      chunkstore::Result<std::string> token = ReadTokenFile(file);
      if (!token.ok()) return Fail(token.status(), token.status().IsInvalidArgument() ? kUsage : kFailure);
      gd.http_token = *token;
    }
  }
  auto src_r = OpenStore(gs, Access::kRead);
  if (!src_r.ok()) return FailOpen(src_r.status());
  auto dst_r = OpenStore(gd, Access::kCreate);
  if (!dst_r.ok()) return FailOpen(dst_r.status());
  chunkstore::CopyOptions o;
  o.cancel = &g_interrupted;
  std::unique_ptr<Progress> progress = MakeProgress(WantProgress(g.progress, g.quiet), 0, 0, "copy", "objects");
  uint64_t sent = 0, objects = 0;
  if (progress)
    o.progress = [p = progress.get(), &sent, &objects](uint64_t bytes, uint64_t n) {
      sent = bytes;
      objects = n;
      p->Update(bytes, n);
    };
  auto r = (*src_r)->CopyTo(**dst_r, refs, o);
  if (progress && r.ok()) progress->Done(sent, objects);
  progress.reset();
  if (!r.ok()) {
    if (g_interrupted.load()) {
      std::cerr << "chunkstore: interrupted: what was committed stays; copy again to finish\n";
      return 130;
    }
    return Fail(r.status());
  }
  if (g.json) {
    Json j;
    j.BeginObject().Key("from").Str((*src_r)->dir()).Key("to").Str((*dst_r)->dir());
    j.Key("objects_copied").Num(r->objects_copied).Key("objects_present").Num(r->objects_present);
    j.Key("chunks_sent").Num(r->chunks_sent).Key("chunks_skipped").Num(r->chunks_skipped);
    j.Key("bytes_sent").Num(r->bytes_sent).Key("name_versions").Num(r->name_versions);
    j.Key("commits").Num(r->commits).Key("requests").Num(r->requests).Key("diverged").BeginArray();
    for (const auto& n : r->diverged) j.Str(n);
    j.EndArray().EndObject();
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    Print("copied " + std::to_string(r->objects_copied) + " objects (" + std::to_string(r->objects_present) +
          " there already), " + std::to_string(r->chunks_sent) + " chunks sent (" + HumanSize(r->bytes_sent) +
          "), " + std::to_string(r->chunks_skipped) + " skipped, " + std::to_string(r->name_versions) +
          " name versions\n");
    for (const auto& n : r->diverged)
      std::cerr << "chunkstore: note: " << Printable(n)
                << " had other versions at the destination; the source's were added after them\n";
  }
  return kOk;
}

}  // namespace cli
