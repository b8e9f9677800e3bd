// SPDX-License-Identifier: Apache-2.0
// Rewriting a directory store's change log in tests: every change set of
// the newest segment is decoded, handed to a function that may alter it,
// and written back in valid frames. What a writer with access to the
// store's files could do; the index is then rebuilt from the result.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "format/change_set.h"
#include "log/segment.h"
#include "test_util.h"

namespace chunkstore::testing {

inline void RewriteLog(const std::string& store_dir, const std::function<void(internal::ChangeSet&)>& edit) {
  namespace fs = std::filesystem;
  std::string newest;
  for (auto& e : fs::directory_iterator(store_dir + "/log"))
    if (internal::IsSegmentName(e.path().filename().string(), nullptr) && e.path().filename().string() > newest)
      newest = e.path().filename().string();
  ASSERT_FALSE(newest.empty());
  const std::string path = store_dir + "/log/" + newest;
  auto file = Env::Posix()->OpenFile(path, OpenMode::kRead);
  ASSERT_TRUE(file.ok());
  auto scan = internal::ScanSegment(**file, newest);
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  ASSERT_TRUE(scan->damage.empty()) << scan->damage;
  std::string out = internal::EncodeSegmentHeader(scan->first_seq, scan->store_id);
  for (const internal::Frame& f : scan->frames) {
    auto c = internal::DecodeChangeSet(f.payload);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    edit(*c);
    out += internal::EncodeFrame(f.seq, internal::EncodeChangeSet(*c));
  }
  file->reset();
  WriteFile(path, std::vector<uint8_t>(out.begin(), out.end()));
}

}  // namespace chunkstore::testing
