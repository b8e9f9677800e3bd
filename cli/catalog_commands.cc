// SPDX-License-Identifier: Apache-2.0
// The catalog and maintenance subcommands: stat, ls, log, tag, rm, gc,
// verify, stats and chunks.
#include <cstdio>
#include <iostream>

#include "common.h"
#include "terminal.h"

namespace cli {

using chunkstore::Status;

namespace {

std::string Short(const std::string& id) { return id.substr(0, 7 + 16); }

void NameJson(Json& j, const chunkstore::NameEntry& e) {
  j.BeginObject().Key("name").Str(e.name).Key("version").Int(e.version).Key("id").Str(e.id);
  j.Key("size").Num(e.size).Key("created").Str(IsoTime(e.created)).EndObject();
}

}  // namespace

int CmdStat(const Globals& g, const std::string& ref) {
  OPEN_OR_FAIL(store, Access::kRead);
  // A path inside a tree: the entry's own facts first (a symlink has no
  // object to say more of).
  auto entry = store.LookupPath(ref);
  if (!entry.ok()) return Fail(entry.status());
  const bool in_tree = !entry->name.empty();
  if (entry->type == chunkstore::EntryType::kSymlink) {
    if (g.json) {
      Json j;
      j.BeginObject().Key("path").Str(entry->name).Key("type").Str("symlink").Key("target").Str(entry->target);
      j.Key("mtime_ns").Int(entry->mtime_ns).EndObject();
      Print(j.str() + "\n");
    } else {
      Print("path:        " + Printable(entry->name) + "\ntype:        symlink\ntarget:      " +
            Printable(entry->target) + "\nmtime:       " + HumanTime(entry->mtime_ns / 1000000000) + "\n");
    }
    return kOk;
  }
  auto info = store.Stat(ref);
  if (!info.ok()) return Fail(info.status());
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", entry->mode);
  if (g.json) {
    Json j;
    j.BeginObject().Key("id").Str(info->id).Key("size").Num(info->size).Key("chunks").Num(info->chunks);
    j.Key("tree").Bool(info->tree);
    if (in_tree) j.Key("path").Str(entry->name);
    if (in_tree || info->tree) j.Key("mode").Str(mode).Key("mtime_ns").Int(entry->mtime_ns);
    j.Key("stored_bytes").Num(info->stored_bytes).Key("compressed_chunks").Num(info->compressed_chunks);
    j.Key("inline").Bool(info->stored_inline);
    j.Key("created").Str(IsoTime(info->created)).Key("pinned").Bool(info->pinned);
    j.Key("names").BeginArray();
    for (const auto& n : info->names) j.Str(n);
    j.EndArray().EndObject();
    Print(j.str() + "\n");
    return kOk;
  }
  std::string names;
  for (const auto& n : info->names) names += (names.empty() ? "" : ", ") + n;
  std::string head;
  if (in_tree) head += "path:        " + Printable(entry->name) + "\n";
  if (in_tree || info->tree)
    head += std::string("type:        ") + (info->tree ? "directory (a tree)" : "file") + "\nmode:        " + mode +
            "\nmtime:       " + HumanTime(entry->mtime_ns / 1000000000) + "\n";
  Print(head + "id:          " + info->id + "\nsize:        " + HumanSize(info->size) + " (" +
        std::to_string(info->size) + " bytes)\nchunks:      " + std::to_string(info->chunks) +
        "\nstored:      " + HumanSize(info->stored_bytes) + " (" + std::to_string(info->stored_bytes) +
        (info->stored_inline ? " bytes, inline in the index)" : " bytes, distinct chunks with headers)") +
        "\ncompression: " +
        std::to_string(info->compressed_chunks) + " of its distinct chunks stored compressed\ncreated:     " +
        HumanTime(info->created) + "\nkept:        " +
        (info->pinned ? "yes (published without a name)" : "while a name points at it") +
        "\nnames:       " + (names.empty() ? "(none)" : names) + "\n");
  return kOk;
}

int CmdLs(const Globals& g, const std::string& prefix, bool all, bool recursive) {
  OPEN_OR_FAIL(store, Access::kRead);
  // A ref to a tree (or REF:PATH of a directory in one) lists the tree;
  // anything else is a name prefix.
  if (!prefix.empty() && !all) {
    auto what = store.LookupPath(prefix);
    if (what.ok() && what->type == chunkstore::EntryType::kDirectory) return ListTree(g, store, prefix, recursive);
    if (!what.ok() && what.status().IsCorruption()) return Fail(what.status());
  }
  if (recursive) return Fail(Status::InvalidArgument("--recursive lists a tree: " + prefix + " names none"), kUsage);
  auto names = store.List(prefix);
  if (!names.ok()) return Fail(names.status());
  std::vector<chunkstore::ObjectInfo> unnamed;
  if (all) {
    auto u = store.ListUnnamed();
    if (!u.ok()) return Fail(u.status());
    unnamed = std::move(*u);
  }
  if (g.json) {
    Json j;
    j.BeginObject().Key("names").BeginArray();
    for (const auto& e : *names) NameJson(j, e);
    j.EndArray();
    if (all) {
      j.Key("unnamed").BeginArray();
      for (const auto& o : unnamed)
        j.BeginObject().Key("id").Str(o.id).Key("size").Num(o.size).Key("created").Str(IsoTime(o.created)).EndObject();
      j.EndArray();
    }
    j.EndObject();
    Print(j.str() + "\n");
    return kOk;
  }
  std::string out;
  for (const auto& e : *names)
    out += e.name + "  " + HumanSize(e.size) + "  " + HumanTime(e.created) + "  " + Short(e.id) + "\n";
  for (const auto& o : unnamed)
    out += "-  " + HumanSize(o.size) + "  " + HumanTime(o.created) + "  " + Short(o.id) + "\n";
  Print(out);
  // An empty listing of a store that does hold objects (published without
  // a name) would read as an empty store: say where they are, on stderr so
  // the listing itself stays as scripts expect.
  if (names->empty() && !all && prefix.empty() && !g.quiet) {
    auto u = store.ListUnnamed();
    if (u.ok() && !u->empty())
      std::cerr << "chunkstore: no names; " << u->size() << " object" << (u->size() == 1 ? "" : "s")
                << " published without a name ('chunkstore ls --all' lists them)\n";
  }
  return kOk;
}

int CmdLog(const Globals& g, const std::string& name) {
  OPEN_OR_FAIL(store, Access::kRead);
  auto versions = store.History(name);
  if (!versions.ok()) return Fail(versions.status());
  if (g.json) {
    Json j;
    j.BeginObject().Key("name").Str(name).Key("versions").BeginArray();
    for (const auto& e : *versions) NameJson(j, e);
    j.EndArray().EndObject();
    Print(j.str() + "\n");
    return kOk;
  }
  std::string out;
  for (const auto& e : *versions)
    out += name + "@" + std::to_string(e.version) + "  " + HumanTime(e.created) + "  " +
           HumanSize(e.size) + "  " + e.id + "\n";
  Print(out);
  return kOk;
}

int CmdTag(const Globals& g, const std::string& ref, const std::string& name) {
  Status v = chunkstore::ValidateName(name);
  if (!v.ok()) return Fail(v, kUsage);
  OPEN_OR_FAIL(store, Access::kWrite);
  auto e = store.Tag(ref, name);
  if (!e.ok()) return Fail(e.status());
  if (g.json) {
    Json j;
    NameJson(j, *e);
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    Print(e->name + "@" + std::to_string(e->version) + "  " + e->id + "\n");
  }
  return kOk;
}

int CmdRm(const Globals& g, const std::vector<std::string>& names, const std::string& object) {
  if (names.empty() == object.empty())
    return Fail(Status::InvalidArgument("rm takes names, or --object REF, but not both"), kUsage);
  OPEN_OR_FAIL(store, Access::kWrite);
  Json j;
  j.BeginObject().Key("removed").BeginArray();
  if (!object.empty()) {
    auto id = store.Resolve(object);
    if (!id.ok()) return Fail(id.status());
    Status s = store.RemoveObject(*id);
    if (!s.ok()) return Fail(s);
    j.Str(*id);
  }
  // All the names or none: one change set, refused whole when any name is
  // unknown.
  if (!names.empty()) {
    Status s = store.RemoveNames(names);
    if (!s.ok()) return Fail(s);
    for (const std::string& n : names) j.Str(n);
  }
  j.EndArray().EndObject();
  if (g.json) Print(j.str() + "\n");
  return kOk;
}

int CmdGc(const Globals& g, bool dry_run, double compact_below, int64_t grace_seconds) {
  if (compact_below < 0 || compact_below > 1)
    return Fail(Status::InvalidArgument("--compact-below must be between 0 and 1"), kUsage);
  if (grace_seconds < 0)
    return Fail(Status::InvalidArgument("--orphan-grace cannot be negative"), kUsage);
  OPEN_OR_FAIL(store, Access::kWrite);
  chunkstore::GcOptions o;
  o.dry_run = dry_run;
  o.compact_below = compact_below;
  o.orphan_grace_seconds = grace_seconds;
  std::unique_ptr<Progress> progress = MakeProgress(WantProgress(g.progress, g.quiet), 0, 0, "gc");
  uint64_t copied = 0;
  if (progress)
    o.progress = [p = progress.get(), &copied](uint64_t done, uint64_t total) {
      p->SetTotal(total);
      copied = done;
      p->Update(done);
    };
  auto r = store.Gc(o);
  if (progress && r.ok()) progress->Done(copied);
  progress.reset();
  if (!r.ok()) return Fail(r.status());
  if (g.json) {
    Json j;
    j.BeginObject().Key("dry_run").Bool(dry_run).Key("bytes_reclaimed").Num(r->bytes_reclaimed);
    j.Key("objects_removed").Num(r->objects_removed).Key("chunks_removed").Num(r->chunks_removed);
    j.Key("packs_deleted").Num(r->packs_deleted).Key("packs_compacted").Num(r->packs_compacted);
    j.Key("packs_skipped").Num(r->packs_skipped).Key("packs_left_for_space").Num(r->packs_left_for_space);
    j.Key("space_needed").Num(r->space_needed).Key("uploads_aborted").Num(r->uploads_aborted);
    j.Key("packs_merged").Num(r->packs_merged).Key("packs_damaged").Num(r->packs_damaged).EndObject();
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    Print(std::string(dry_run ? "would reclaim " : "reclaimed ") + HumanSize(r->bytes_reclaimed) + ": " +
          std::to_string(r->objects_removed) + " objects and " + std::to_string(r->chunks_removed) +
          " chunks dropped, " + std::to_string(r->packs_deleted) + " packs deleted, " +
          std::to_string(r->packs_compacted) + " compacted" +
          (r->packs_skipped ? ", " + std::to_string(r->packs_skipped) + " busy packs skipped" : "") + "\n");
  }
  if (r->packs_damaged && !g.quiet)
    std::cerr << "chunkstore: note: " << r->packs_damaged
              << " packs hold damaged live records and were not compacted; `chunkstore repair chunks --from SRC`, then gc again\n";
  if (r->packs_left_for_space && !g.quiet)
    std::cerr << "chunkstore: note: " << r->packs_left_for_space
              << " sparse packs were not compacted: the disk is too full (compacting the largest needs "
              << HumanSize(r->space_needed) << " free); free some space and run gc again\n";
  return kOk;
}

int CmdVerify(const Globals& g, const std::vector<std::string>& refs, bool quick) {
  OPEN_OR_FAIL(store, Access::kRead);
  chunkstore::VerifyOptions o;
  o.refs = refs;
  o.quick = quick;
  std::unique_ptr<Progress> progress = MakeProgress(WantProgress(g.progress, g.quiet), 0, 0, "verify", "objects");
  uint64_t checked = 0, objects = 0;
  if (progress)
    o.progress = [p = progress.get(), &checked, &objects](uint64_t bytes, uint64_t n) {
      checked = bytes;
      objects = n;
      p->Update(bytes, n);
    };
  auto r = store.Verify(o);
  if (progress && r.ok()) progress->Done(checked, objects);
  progress.reset();
  if (!r.ok()) return Fail(r.status());
  const bool corrupt = r->corrupt();
  if (g.json) {
    Json j;
    j.BeginObject().Key("ok").Bool(!corrupt).Key("quick").Bool(quick);
    j.Key("objects_checked").Num(r->objects_checked).Key("chunks_checked").Num(r->chunks_checked);
    j.Key("bytes_checked").Num(r->bytes_checked).Key("problems").BeginArray();
    for (const auto& p : r->problems) {
      j.BeginObject().Key("kind").Str(p.kind).Key("object").Str(p.object_id).Key("chunk").Str(p.chunk_id);
      j.Key("pack").Str(p.pack).Key("offset").Num(p.offset).Key("message").Str(p.message).EndObject();
    }
    j.EndArray().EndObject();
    Print(j.str() + "\n");
  } else {
    std::string out;
    for (const auto& p : r->problems) {
      out += p.kind;
      if (!p.object_id.empty()) out += " object " + p.object_id;
      if (!p.chunk_id.empty()) out += " chunk " + p.chunk_id;
      if (!p.pack.empty()) out += " pack " + p.pack + " offset " + std::to_string(p.offset);
      out += ": " + Printable(p.message) + "\n";
    }
    if (!g.quiet)
      out += std::string(corrupt ? "DAMAGED: " : "ok: ") + std::to_string(r->objects_checked) + " objects, " +
             std::to_string(r->chunks_checked) + " chunks, " + HumanSize(r->bytes_checked) + " checked" +
             (quick ? " (quick: xxHash64 only)" : "") + "\n";
    bool chunk_damage = false;
    for (const auto& p : r->problems) chunk_damage |= p.kind == "corrupt-chunk" || p.kind == "missing-chunk";
    if (chunk_damage && !g.quiet)
      out += "damaged chunks are written again from a store with good copies by `chunkstore repair chunks --from SRC`\n";
    if (!g.quiet || corrupt) Print(out);
  }
  return corrupt ? kIntegrity : kOk;
}

int CmdStats(const Globals& g) {
  OPEN_OR_FAIL(store, Access::kRead);
  auto st = store.Stats();
  if (!st.ok()) return Fail(st.status());
  if (g.json) {
    Json j;
    j.BeginObject().Key("objects").Num(st->objects).Key("names").Num(st->names).Key("chunks").Num(st->chunks);
    j.Key("logical_bytes").Num(st->logical_bytes).Key("unique_bytes").Num(st->unique_bytes);
    j.Key("stored_bytes").Num(st->stored_bytes).Key("dedupe_ratio").Real(st->dedupe_ratio());
    j.Key("inline_objects").Num(st->inline_objects).Key("inline_bytes").Num(st->inline_bytes);
    j.Key("compression").Str(store.compression().ToString());
    j.Key("compression_ratio").Real(st->compression_ratio()).Key("pack_count").Num(st->pack_count);
    j.Key("pack_bytes").Num(st->pack_bytes).Key("garbage_bytes").Num(st->garbage_bytes);
    j.Key("uncommitted_bytes").Num(st->uncommitted_bytes).EndObject();
    Print(j.str() + "\n");
    return kOk;
  }
  char ratios[96];
  std::snprintf(ratios, sizeof ratios, "dedupe ratio:      %.2fx\ncompression ratio: %.2fx (",
                st->dedupe_ratio(), st->compression_ratio());
  Print("objects:           " + std::to_string(st->objects) + "\nnames:             " +
        std::to_string(st->names) + "\nchunks:            " + std::to_string(st->chunks) +
        "\ninline objects:    " + std::to_string(st->inline_objects) + " (" + HumanSize(st->inline_bytes) + ")" +
        "\nlogical bytes:     " + HumanSize(st->logical_bytes) + "\nunique bytes:      " +
        HumanSize(st->unique_bytes) + "\nstored bytes:      " + HumanSize(st->stored_bytes) + "\n" +
        ratios + store.compression().ToString() + ")\npacks:             " + std::to_string(st->pack_count) + " (" +
        HumanSize(st->pack_bytes) + ")\ngarbage:           " + HumanSize(st->garbage_bytes) + "\n" +
        (st->uncommitted_bytes ? "uncommitted:       " + HumanSize(st->uncommitted_bytes) +
                                     " (writers at work, or left by one gc cannot yet prove gone)\n"
                               : std::string()));
  return kOk;
}

int CmdIndexRebuild(const Globals& g) {
  // The rebuild happens as the store opens: an index too damaged to open
  // is exactly the one to rebuild.
  auto opened = OpenStore(g, Access::kWrite, true);
  if (!opened.ok()) return FailOpen(opened.status());
  chunkstore::Store& store = **opened;
  auto st = store.Stats();
  if (!st.ok()) return Fail(st.status());
  if (g.json) {
    Json j;
    j.BeginObject().Key("store").Str(store.dir()).Key("objects").Num(st->objects);
    j.Key("names").Num(st->names).Key("chunks").Num(st->chunks).Key("packs").Num(st->pack_count).EndObject();
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    Print("rebuilt the index of " + store.dir() + " from its change log: " + std::to_string(st->objects) +
          " objects, " + std::to_string(st->names) + " names, " + std::to_string(st->chunks) +
          " chunks in " + std::to_string(st->pack_count) + " packs\n");
  }
  return kOk;
}

int CmdRepairQuarantine(const Globals& g, const std::string& key) {
  // The store is opened without reading its log: a damaged record is what
  // stops that, and what this command is for.
  auto opened = OpenStore(g, Access::kWrite, false, false);
  if (!opened.ok()) return FailOpen(opened.status());
  Status s = (*opened)->QuarantineLogRecord(key);
  if (!s.ok()) return Fail(s);
  if (g.json) {
    Json j;
    j.BeginObject().Key("quarantined").Str(key).EndObject();
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    Print("quarantined " + Printable(key) + ": its change is lost; `verify` reports it from now on\n");
  }
  return kOk;
}

int CmdRepairChunks(const Globals& g, const std::string& from) {
  if (from.empty()) return Fail(Status::InvalidArgument("repair chunks needs --from"), kUsage);
  OPEN_OR_FAIL(store, Access::kWrite);
  Globals gs = g;
  gs.store_dir = from;
  gs.secret_file.clear();  // a secret signs what is written: only the store repaired is
  auto src = OpenStore(gs, Access::kRead);
  if (!src.ok()) return FailOpen(src.status());
  chunkstore::RepairOptions o;
  std::unique_ptr<Progress> progress = MakeProgress(WantProgress(g.progress, g.quiet), 0, 0, "check", "objects");
  if (progress) o.progress = [p = progress.get()](uint64_t bytes, uint64_t n) { p->Update(bytes, n); };
  auto r = store.RepairChunks(**src, o);
  progress.reset();
  if (!r.ok()) return Fail(r.status());
  const bool left = !r->unrepaired.empty() || r->other_problems > 0;
  if (g.json) {
    Json j;
    j.BeginObject().Key("store").Str(store.dir()).Key("from").Str((*src)->dir());
    j.Key("damaged").Num(r->damaged).Key("repaired").BeginArray();
    for (const auto& id : r->repaired) j.Str(id);
    j.EndArray().Key("unrepaired").BeginArray();
    for (const auto& u : r->unrepaired) {
      j.BeginObject().Key("chunk").Str(u.chunk_id).Key("reason").Str(u.reason).Key("objects").BeginArray();
      for (const auto& o : u.objects) j.Str(o);
      j.EndArray().EndObject();
    }
    j.EndArray().Key("bytes_written").Num(r->bytes_written).Key("packs").BeginArray();
    for (const auto& p : r->packs) j.Str(p);
    j.EndArray().Key("pack_files").Num(r->pack_files).Key("other_problems").Num(r->other_problems).EndObject();
    Print(j.str() + "\n");
    return left ? kIntegrity : kOk;
  }
  std::string out;
  if (!g.quiet)
    for (const auto& id : r->repaired) out += "repaired chunk " + id + "\n";
  for (const auto& u : r->unrepaired) {
    out += "NOT repaired: chunk " + u.chunk_id + ": " + Printable(u.reason);
    if (!u.objects.empty()) {
      out += " (needed by " + u.objects[0];
      if (u.objects.size() > 1) out += " and " + std::to_string(u.objects.size() - 1) + " more";
      out += ")";
    }
    out += "\n";
  }
  if (!g.quiet || left) {
    out += std::to_string(r->damaged) + " damaged chunks, " + std::to_string(r->repaired.size()) + " repaired (" +
           HumanSize(r->bytes_written) + " written), " + std::to_string(r->unrepaired.size()) + " not repaired\n";
    if (r->other_problems > 0)
      out += std::to_string(r->other_problems) +
             " other problems are not chunk copies, and repair does not mend them: run verify to list them\n";
    if (!r->repaired.empty()) out += "the damaged records are garbage now; gc reclaims their space\n";
    if (r->pack_files > 0 && r->unrepaired.empty())
      out += "damaged pack files: " + std::to_string(r->pack_files) +
             "; no damaged chunk is left in them, and gc rewrites or drops them (but for a bucket's damaged pack"
             " header, which harms no record)\n";
  }
  Print(out);
  return left ? kIntegrity : kOk;
}

int CmdChunks(const Globals& g, const std::string& path, const chunkstore::ChunkerParams& params) {
  Status v = params.Validate();
  if (!v.ok()) return Fail(v, kUsage);
  auto chunks = chunkstore::ChunkFile(path, params);
  if (!chunks.ok()) return Fail(chunks.status(), kFailure);
  if (g.json) {
    Json j;
    j.BeginObject().Key("chunks").BeginArray();
    for (const auto& c : *chunks)
      j.BeginObject().Key("offset").Num(c.offset).Key("length").Num(c.length).Key("id").Str(c.id).EndObject();
    j.EndArray().EndObject();
    Print(j.str() + "\n");
    return kOk;
  }
  std::string out;
  for (const auto& c : *chunks)
    out += std::to_string(c.offset) + " " + std::to_string(c.length) + " " + c.id + "\n";
  Print(out);
  return kOk;
}

}  // namespace cli
