// SPDX-License-Identifier: Apache-2.0
// Journal, reading and reporting helpers for the campaigns.
#include "common.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

namespace campaign {

void JournalAppend(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) Die("cannot open journal " + path);
  const std::string l = line + "\n";
  if (::write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) Die("cannot write journal");
  ::fdatasync(fd);
  ::close(fd);
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    // A line without its newline is still being written by another
    // process (or was cut off by a kill): it is not in the journal yet.
    if (f.eof()) break;
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

chunkstore::Result<std::vector<uint8_t>> ReadAll(chunkstore::Store& store, const std::string& ref) {
  auto r = store.OpenReader(ref);
  if (!r.ok()) return r.status();
  std::vector<uint8_t> out((*r)->size());
  size_t pos = 0;
  while (pos < out.size()) {
    auto n = (*r)->Read(out.data() + pos, out.size() - pos);
    if (!n.ok()) return n.status();
    if (*n == 0) return chunkstore::Status::IOError("object ended early");
    pos += *n;
  }
  return out;
}

std::string Counters::Json() const {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", values[i].second);
    out += (i ? ", \"" : "\"") + values[i].first + "\": " + buf;
  }
  return out + "}";
}

}  // namespace campaign
