// SPDX-License-Identifier: Apache-2.0
// The chunkstore command line: argument parsing and dispatch. The commands
// themselves live in commands.cc and catalog_commands.cc.
#include <CLI/CLI.hpp>
#include <csignal>
#include <fstream>
#include <iostream>

#include "chunkstore/options.h"
#include "chunkstore/version.h"
#include "commands.h"
#include "generate.h"
#include "mistakes.h"
#include "output.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  using namespace cli;
  CLI::App app{
      "chunkstore: a content-addressed, chunked object store.\n\n"
      "REF: sha256:<hex>, a unique id prefix of 8+ hex digits, NAME, NAME@N or NAME@latest;\n"
      "REF:PATH is a path inside the tree REF names.\n"
      "Store: --store, else $CHUNKSTORE_DIR, else $XDG_DATA_HOME/chunkstore\n"
      "(~/.local/share/chunkstore). s3://BUCKET/PREFIX keeps the store in S3 (settings\n"
      "from AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).\n"
      "Exit codes: 0 ok, 1 failure, 2 usage error, 3 not found, 4 integrity failure,\n"
      "5 access denied."};
  app.name("chunkstore");  // help says "Usage: chunkstore ...", however it was started
  app.require_subcommand(1);
  app.fallthrough();
  app.get_formatter()->column_width(28);
  Globals g;
  app.add_option("--store", g.store_dir, "Store directory or s3://BUCKET/PREFIX")->option_text("DIR|URL");
  app.add_option("--secret-file", g.secret_file,
                 "A bucket store's secret, read from FILE (else $CHUNKSTORE_SECRET_FILE)")
      ->option_text("FILE");
  app.add_option("--cache-dir", g.cache_dir,
                 "Local cache of a bucket or http store (index, fetched chunks)")
      ->option_text("DIR");
  app.add_option("--cache-size", g.cache_size,
                 "Fetched chunks kept on local disk (default 1GiB; 0: none)")
      ->transform(CLI::AsSizeValue(false))
      ->option_text("SIZE");
  app.add_flag("-q,--quiet", g.quiet, "Print nothing but errors");
  app.add_flag("--json", g.json, "Print results as JSON");
  app.add_option("--progress", g.progress,
                 "auto (a line on a terminal), json (JSON lines on stderr) or none")
      ->option_text("MODE")
      ->check(CLI::IsMember({"auto", "json", "none"}));
  app.set_version_flag("--version", std::string("chunkstore ") + chunkstore::Version() +
                                        " (index schema " + std::to_string(chunkstore::SchemaVersion()) +
                                        ")\nnew stores compress with " + chunkstore::Compression().ToString() +
                                        "\n" + chunkstore::DependencyVersions());

  chunkstore::ChunkerParams params;
  auto chunk_flags = [&params](CLI::App* cmd) {
    cmd->add_option("--min", params.min_size, "Minimum chunk size (default 262144)")->option_text("N");
    cmd->add_option("--avg", params.avg_size, "Average chunk size (default 1048576)")->option_text("N");
    cmd->add_option("--max", params.max_size, "Maximum chunk size (default 4194304)")->option_text("N");
    cmd->add_option("--level", params.level, "Normalization level 0-3 (default 1)")->option_text("L");
  };

  bool no_compression = false;
  auto* init = app.add_subcommand("init", "Create a store (publish also creates one)");
  init->footer("\nExamples:\n  chunkstore init\n  chunkstore --store /srv/images init --profile small-edits\n  chunkstore --store /srv/store init --avg 262144 --compression zstd:6\n  chunkstore --store s3://bucket/models init\n");
  chunk_flags(init);
  std::string profile;
  init->add_option("--profile", profile,
                   "large-files (256K/1M/4M, default) or small-edits (16K/64K/256K)")
      ->option_text("NAME")
      ->check(CLI::IsMember({"large-files", "small-edits"}));
  std::string compression;
  init->add_option("--compression", compression,
                   "zstd[:1-19], zlib[:1-12] or none (default " + chunkstore::Compression().ToString() + ")")
      ->option_text("CODEC[:LEVEL]");
  init->add_flag("--no-compression", no_compression, "Never compress chunks (as --compression none)");
  uint32_t inline_max = chunkstore::Options().inline_max;
  init->add_option("--inline-max", inline_max,
                   "Objects up to N bytes live in the index (default " + std::to_string(inline_max) +
                       ", max " + std::to_string(chunkstore::kInlineMaxLimit) + ")")
      ->option_text("N");

  PublishArgs pub;
  auto* publish = app.add_subcommand("publish", "Store files, directories or stdin (-); print ids");
  publish->footer("\nExamples:\n  chunkstore publish model.bin --name weights/llama\n  chunkstore publish ./dataset --name data/v2\n  tar c src | chunkstore publish - --name src.tar\n");
  publish->add_option("inputs", pub.inputs, "Files, directories (each as one tree), or -")
      ->required()->option_text("PATH...");
  publish->add_option("--name", pub.name, "Catalog name for the single input")->option_text("NAME");
  publish->add_option("--name-prefix", pub.name_prefix,
                       "Publish a directory's files one by one, named P/relative/path (no tree)")
      ->option_text("P");
  publish->add_flag("--force-hash", pub.force_hash,
                    "Read every file, even those unchanged since the last publish");

  std::string ref, out_path, offset, length;
  auto* cat = app.add_subcommand("cat", "Write an object's verified bytes");
  cat->footer("\nExamples:\n  chunkstore cat weights/llama -o model.bin\n  chunkstore cat weights/llama@2 > old.bin\n  chunkstore cat sha256:2f7c1b9e --offset 4096 --length 512 | xxd\n");
  cat->add_option("ref", ref, "Object to read")->required()->option_text("REF");
  cat->add_option("--offset", offset, "First byte (default 0)")->option_text("N");
  cat->add_option("--length", length, "Bytes to write (default: to the end)")->option_text("N");
  cat->add_option("-o,--output", out_path, "Write FILE atomically instead of stdout")->option_text("FILE");
  bool no_sparse = false;
  cat->add_flag("--no-sparse", no_sparse, "Write zero blocks to a file as data, not as holes");

  RestoreArgs rest;
  auto* restore = app.add_subcommand("restore", "Recreate a tree as a directory (or an object as a file)");
  restore->footer("\nExamples:\n  chunkstore restore data/v2 ./dataset\n  chunkstore restore data/v2 ./dataset --delete\n  chunkstore restore data/v2:images/cat.jpg cat.jpg\n");
  restore->add_option("ref", rest.ref, "Tree, REF:PATH inside one, or object")->required()->option_text("REF");
  restore->add_option("dest", rest.dest, "Directory (or file) to write")->required()->option_text("DEST");
  restore->add_flag("--delete", rest.delete_extra, "Remove what DEST holds that the tree does not");
  restore->add_flag("--verify-existing", rest.verify_existing,
                    "Compare the content of files whose size and mtime already match");
  restore->add_flag("--no-sparse", rest.no_sparse, "Write zero blocks as data, not as holes");

  std::string from, to;
  auto* diff = app.add_subcommand("diff", "List what changed between two trees");
  diff->footer("\nExamples:\n  chunkstore diff data/v2@1 data/v2\n  chunkstore --json diff sha256:2f7c1b9e site\n");
  diff->add_option("from", from, "Tree before")->required()->option_text("REF");
  diff->add_option("to", to, "Tree after")->required()->option_text("REF");

  std::string copy_from, copy_to;
  std::vector<std::string> copy_refs;
  auto* copy = app.add_subcommand("copy", "Copy names and objects to another store, sending only what it lacks");
  copy->footer("\nExamples:\n  chunkstore copy --to s3://bucket/models\n  chunkstore copy --from /srv/store --to /mnt/backup weights/llama data/\n  chunkstore copy --to http://10.0.0.5:8080 --token-file ~/.config/chunkstore/token\n");
  copy->add_option("refs", copy_refs, "Names (with history), PREFIX/ or objects (default: everything)")
      ->option_text("REF...");
  copy->add_option("--from", copy_from, "Source store (default: --store, as every command)")->option_text("DIR|URL");
  copy->add_option("--to", copy_to, "Destination store (created if missing)")->option_text("DIR|URL")->required();
  std::string copy_token_file;
  copy->add_option("--token-file", copy_token_file,
                   "The write token of an http:// destination's server (default: $CHUNKSTORE_TOKEN_FILE)")
      ->option_text("FILE");

  ServeArgs serve_args;
  auto* serve = app.add_subcommand("serve", "Serve the store over HTTP (objects, names, ranges)");
  serve->footer("\nExamples:\n  chunkstore serve\n  chunkstore serve --listen 0.0.0.0:8080\n  chunkstore serve --allow-write --token-file /etc/chunkstore/token\n  curl -r 0-1023 http://127.0.0.1:8080/names/weights/llama\n");
  serve->add_option("--listen", serve_args.listen, "Address and port (default 127.0.0.1:8080; port 0: any free one)")
      ->option_text("HOST:PORT");
  serve->add_flag("--allow-write", serve_args.allow_write, "Take PUT /objects from clients with the token");
  serve->add_option("--token-file", serve_args.token_file, "The bearer token writes need, read from FILE")
      ->option_text("FILE");
  serve->add_option("--max-connections", serve_args.max_connections, "Connections at once (default 256)")
      ->option_text("N");
  serve->add_option("--max-per-client", serve_args.max_per_client, "Connections from one address (default 64)")
      ->option_text("N");
  serve->add_option("--timeout", serve_args.timeout_seconds, "Close a connection idle this long (s, default 30)")
      ->option_text("S");
  serve->add_option("--max-upload-mib", serve_args.max_upload_mib,
                    "Refuse a write whose body is larger (413; default 0: no limit but the disk)")
      ->option_text("MIB");
  serve->add_option("--cache-mib", serve_args.cache_mib, "Verified chunks kept for repeated reads (MiB, default 512)")
      ->check(CLI::Range(1, 1 << 20))
      ->option_text("MIB");
  serve->add_option("--threads", serve_args.threads, "Worker threads (default twice the cores, at least 4)")
      ->option_text("N");

  MountArgs mount_args;
  auto* mount = app.add_subcommand("mount", "Mount the store as a read-only file system (FUSE)");
  mount->footer("\nExamples:\n  chunkstore mount /mnt/store\n  chunkstore --store s3://bucket/models mount /mnt/models --refresh 30\n"
                "  cat /mnt/store/weights/llama > /dev/null\n  fusermount3 -u /mnt/store\n");
  mount->add_option("mountpoint", mount_args.mountpoint, "An existing directory")->required()->option_text("DIR");
  mount->add_option("--refresh", mount_args.refresh_seconds, "New names show within S seconds (default 5)")
      ->option_text("S");
  mount->add_option("--read-ahead", mount_args.read_ahead_kib,
                    "Kernel read-ahead for the mount in KiB, set where permitted (root); 0 leaves the kernel's "
                    "(default 1024)")
      ->check(CLI::Range(0, 65536))
      ->option_text("KIB");
  mount->add_flag("--debug", mount_args.debug, "Trace every FUSE request on stderr");

  auto* stat = app.add_subcommand("stat", "Show an object's size, chunks, storage and names");
  stat->footer("\nExamples:\n  chunkstore stat weights/llama\n  chunkstore --json stat sha256:2f7c1b9e\n");
  stat->add_option("ref", ref, "Object")->required()->option_text("REF");

  std::string prefix;
  bool all = false;
  bool recursive = false;
  auto* ls = app.add_subcommand("ls", "List names (latest versions), or a tree's entries");
  ls->footer("\nExamples:\n  chunkstore ls\n  chunkstore ls weights/\n  chunkstore ls --all\n  chunkstore ls -R data/v2:images\n");
  ls->add_option("prefix", prefix, "Only names starting with PREFIX; a tree (REF, REF:PATH) lists it")
      ->option_text("PREFIX|REF");
  ls->add_flag("-a,--all", all, "Also list objects that no name points at");
  ls->add_flag("-R,--recursive", recursive, "List everything below a tree");

  std::string name;
  auto* log = app.add_subcommand("log", "Show every version of a name, newest first");
  log->footer("\nExamples:\n  chunkstore log weights/llama\n");
  log->add_option("name", name, "Name")->required()->option_text("NAME");

  auto* tag = app.add_subcommand("tag", "Point a name at an existing object (a new version)");
  tag->footer("\nExamples:\n  chunkstore tag weights/llama@2 weights/stable\n  chunkstore tag sha256:2f7c1b9e release/1.0\n");
  tag->add_option("ref", ref, "Object")->required()->option_text("REF");
  tag->add_option("name", name, "Name")->required()->option_text("NAME");

  std::vector<std::string> names;
  std::string object;
  auto* rm = app.add_subcommand("rm", "Remove names, or an object and all its names");
  rm->footer("\nExamples:\n  chunkstore rm weights/llama && chunkstore gc\n  chunkstore rm --object sha256:2f7c1b9e\n");
  rm->add_option("names", names, "Names to remove with their history")->option_text("NAME...");
  rm->add_option("--object", object, "Forget this object and every name version of it")
      ->option_text("REF");

  bool dry_run = false;
  double compact_below = 0.5;
  int64_t grace = 3600;
  auto* gc = app.add_subcommand("gc", "Reclaim space no live object needs");
  gc->footer("\nExamples:\n  chunkstore gc --dry-run\n  chunkstore gc --compact-below 0.8\n");
  gc->add_flag("-n,--dry-run", dry_run, "Report what would be reclaimed; change nothing");
  gc->add_option("--compact-below", compact_below, "Rewrite packs under this live fraction (0.5)")
      ->option_text("F");
  gc->add_option("--orphan-grace", grace, "Age before stray packs a lock cannot vouch for go (s, 3600)")
      ->option_text("S");

  std::vector<std::string> refs;
  bool quick = false;
  auto* verify = app.add_subcommand("verify", "Re-read and check objects (default: whole store)");
  verify->footer("\nExamples:\n  chunkstore verify\n  chunkstore verify --quick\n  chunkstore verify weights/llama\n");
  verify->add_option("refs", refs, "Objects to check")->option_text("REF...");
  verify->add_flag("--quick", quick, "Check xxHash64 of stored bytes, not SHA-256 of content");

  auto* stats = app.add_subcommand("stats", "Show store totals, dedupe and compression ratios");
  stats->footer("\nExamples:\n  chunkstore stats\n  chunkstore --json stats\n");

  std::string path;
  auto* chunks = app.add_subcommand("chunks", "Print a file's chunks: offset length sha256");
  chunks->footer("\nExamples:\n  chunkstore chunks model.bin\n  chunkstore chunks --avg 65536 - < model.bin\n");
  chunks->add_option("file", path, "File to cut, or - for stdin")->required()->option_text("FILE");
  chunk_flags(chunks);

  auto* index = app.add_subcommand("index", "Manage the store's index (a cache of its change log)");
  index->require_subcommand(1);
  auto* rebuild = index->add_subcommand("rebuild", "Recreate the index from the store's change log");
  rebuild->footer("\nExamples:\n  chunkstore index rebuild\n");

  auto* repair = app.add_subcommand("repair", "Repair a damaged store");
  repair->require_subcommand(1);
  std::string record;
  auto* quarantine = repair->add_subcommand(
      "quarantine",
      "Move a damaged log record out of a bucket's log, losing only its change (or record one that is missing)");
  quarantine->footer("\nExamples:\n  chunkstore --store s3://bucket/models repair quarantine log/0000000003-1764633600000-9f2c4e1a7b3d5f60\n");
  quarantine->add_option("key", record, "The record's key (log/...), as the error names it")->required()->option_text("KEY");
  std::string repair_from;
  auto* repair_chunks = repair->add_subcommand(
      "chunks", "Write damaged or missing chunks again from another store's verified copies");
  repair_chunks->footer(
      "\nExamples:\n  chunkstore repair chunks --from /mnt/backup/store\n"
      "  chunkstore --store s3://bucket/models repair chunks --from /srv/replica\n");
  repair_chunks->add_option("--from", repair_from, "A store holding good copies (a replica, a backup)")
      ->option_text("DIR|URL")
      ->required();

  // For the build: man pages and completion scripts from this very app.
  if (argc >= 3 && std::string(argv[1]) == "--generate") {
    const std::string what = argv[2];
    if (what == "man" && argc == 4) return WriteManPages(app, argv[3]) ? 0 : 1;
    if ((what == "bash" || what == "zsh") && argc <= 4) {
      const std::string script = what == "bash" ? BashCompletion(app) : ZshCompletion(app);
      if (argc == 3) return std::cout << script << std::flush ? 0 : 1;
      std::ofstream f(argv[3]);
      return f << script << std::flush ? 0 : 1;
    }
    std::cerr << "chunkstore: --generate takes 'man DIR', 'bash [FILE]' or 'zsh [FILE]'\n";
    return kUsage;
  }
  std::string help_error;
  const std::vector<std::string> args = RewriteHelp(argc, argv, app, &help_error);
  if (!help_error.empty()) {
    std::cerr << "chunkstore: " << help_error << "\n";
    return kUsage;
  }
  try {
    // CLI11 takes the arguments in reverse, without the program name.
    app.parse(std::vector<std::string>(args.rbegin(), args.rend() - 1));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "chunkstore: " << UsageMessage(app, args, e) << "\n";
    return kUsage;
  }
  // An empty value is a mistake (an unset shell variable), never a choice:
  // --store '' would quietly mean the default store.
  for (const auto& [opt, cmd] : {std::pair{app.get_option("--store"), &app},
                                 std::pair{publish->get_option("--name"), publish},
                                 std::pair{publish->get_option("--name-prefix"), publish},
                                 std::pair{init->get_option("--compression"), init},
                                 std::pair{copy->get_option("--from"), copy},
                                 std::pair{copy->get_option("--to"), copy}}) {
    if ((cmd == &app || cmd->parsed()) && opt->count() > 0 && opt->as<std::string>().empty()) {
      std::cerr << "chunkstore: " << opt->get_name() << " needs a value, not an empty string (see 'chunkstore --help')\n";
      return kUsage;
    }
  }
  const int code = [&] {
    if (*init) {
      if (profile == "small-edits") {
        // Explicit sizes still win over the profile's.
        if (init->get_option("--min")->count() == 0) params.min_size = 16 * 1024;
        if (init->get_option("--avg")->count() == 0) params.avg_size = 64 * 1024;
        if (init->get_option("--max")->count() == 0) params.max_size = 256 * 1024;
      }
      return CmdInit(g, params, compression, no_compression, inline_max);
    }
    if (*publish) return CmdPublish(g, pub);
    if (*cat) return CmdCat(g, ref, offset, length, out_path, no_sparse);
    if (*stat) return CmdStat(g, ref);
    if (*ls) return CmdLs(g, prefix, all, recursive);
    if (*restore) return CmdRestore(g, rest);
    if (*diff) return CmdDiff(g, from, to);
    if (*copy) {
      g.token_file = copy_token_file;
      return CmdCopy(g, copy_from, copy_to, copy_refs);
    }
    if (*serve) return CmdServe(g, serve_args);
    if (*mount) return CmdMount(g, mount_args);
    if (*log) return CmdLog(g, name);
    if (*tag) return CmdTag(g, ref, name);
    if (*rm) return CmdRm(g, names, object);
    if (*gc) return CmdGc(g, dry_run, compact_below, grace);
    if (*verify) return CmdVerify(g, refs, quick);
    if (*stats) return CmdStats(g);
    if (*chunks) return CmdChunks(g, path, params);
    if (*rebuild) return CmdIndexRebuild(g);
    if (*quarantine) return CmdRepairQuarantine(g, record);
    if (*repair_chunks) return CmdRepairChunks(g, repair_from);
    return static_cast<int>(kUsage);
  }();
  return FinishOutput(code);
}
