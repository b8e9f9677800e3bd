// SPDX-License-Identifier: Apache-2.0
// The /blobs part of `serve` (serve_blobs.h): S3 answers from a store's
// read-only bucket view. Keys and prefixes come from the network and only
// ever reach the view, which knows its own key shapes and answers NotFound
// for any other; nothing here turns them into paths.
#include "serve_blobs.h"

#include <cstdlib>

#include "http_range.h"
#include "output.h"

namespace cli {

using chunkstore::Status;

namespace {

constexpr size_t kPage = 1000;  // keys in one listing, as S3's default

std::string XmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters have no place in XML 1.0; keys never hold them.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += '?';
        else out += c;
    }
  }
  return out;
}

BlobAnswer Xml(unsigned status, std::string body) {
  BlobAnswer a;
  a.status = status;
  a.headers.emplace_back("Content-Type", "application/xml");
  a.body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + std::move(body);
  return a;
}

BlobAnswer Error(unsigned status, const std::string& code, const std::string& message, const std::string& resource) {
  return Xml(status, "<Error><Code>" + code + "</Code><Message>" + XmlEscape(message) + "</Message><Resource>" +
                         XmlEscape(resource.substr(0, 256)) + "</Resource></Error>");
}

BlobAnswer FromStatus(const Status& s, const std::string& resource) {
  if (s.IsNotFound()) return Error(404, "NoSuchKey", "The specified key does not exist.", resource);
  if (s.IsPermissionDenied()) return Error(403, "AccessDenied", s.message(), resource);
  return Error(500, "InternalError", s.message(), resource);
}

BlobAnswer List(chunkstore::BlobStore& view, const std::function<const char*(const char*)>& arg) {
  const char* type = arg("list-type");
  if (!type || std::string(type) != "2")
    return Error(400, "InvalidArgument", "only ListObjectsV2 (list-type=2) is served", "/blobs");
  const char* prefix_arg = arg("prefix");
  const char* after_arg = arg("continuation-token");
  if (!after_arg) after_arg = arg("start-after");
  const std::string prefix = prefix_arg ? prefix_arg : "", after = after_arg ? after_arg : "";
  if (prefix.size() > 1024 || after.size() > 1024)
    return Error(400, "KeyTooLongError", "a prefix or marker is longer than 1024 bytes", "/blobs");
  chunkstore::Result<std::vector<chunkstore::BlobInfo>> blobs = view.List(prefix, after);
  if (!blobs.ok()) return FromStatus(blobs.status(), "/blobs");
  const bool truncated = blobs->size() > kPage;
  if (truncated) blobs->resize(kPage);
  std::string xml = "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>blobs</Name><Prefix>" +
                    XmlEscape(prefix) + "</Prefix><KeyCount>" + std::to_string(blobs->size()) +
                    "</KeyCount><MaxKeys>" + std::to_string(kPage) + "</MaxKeys><IsTruncated>" +
                    (truncated ? "true" : "false") + "</IsTruncated>";
  if (truncated) xml += "<NextContinuationToken>" + XmlEscape(blobs->back().key) + "</NextContinuationToken>";
  for (const chunkstore::BlobInfo& b : *blobs)
    xml += "<Contents><Key>" + XmlEscape(b.key) + "</Key><LastModified>" + IsoTime(b.modified) +
           "</LastModified><Size>" + std::to_string(b.size) + "</Size><StorageClass>STANDARD</StorageClass></Contents>";
  xml += "</ListBucketResult>";
  return Xml(200, std::move(xml));
}

}  // namespace

BlobAnswer RefuseBlobWrite(const std::string& path) {
  return Error(403, "AccessDenied", "the store is served read-only; change the store it serves instead",
               "/blobs" + path);
}

BlobAnswer AnswerBlobRequest(chunkstore::BlobStore& view, const std::string& method, const std::string& path,
                             const std::function<const char*(const char*)>& arg, const char* range) {
  if (method != "GET" && method != "HEAD") return RefuseBlobWrite(path);
  if (path.empty() || path == "/") {
    if (method == "HEAD") return BlobAnswer{};
    if (arg("uploads"))
      return Xml(200,
                 "<ListMultipartUploadsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>blobs</Bucket>"
                 "<IsTruncated>false</IsTruncated></ListMultipartUploadsResult>");
    return List(view, arg);
  }
  if (path[0] != '/') return Error(404, "NoSuchBucket", "The specified bucket does not exist.", "/blobs" + path);
  const std::string key = path.substr(1);
  if (key.size() > 1024) return Error(400, "KeyTooLongError", "a key is longer than 1024 bytes", "/blobs" + path);
  chunkstore::Result<uint64_t> size = view.Size(key);
  if (!size.ok()) return FromStatus(size.status(), "/blobs" + path);
  BlobAnswer a;
  a.headers.emplace_back("Content-Type", "application/octet-stream");
  a.headers.emplace_back("Accept-Ranges", "bytes");
  a.stream = true;
  a.key = key;
  a.length = *size;
  if (range) {
    const RangeRequest r = ParseRange(range, *size);
    if (r.outcome == RangeRequest::kUnsatisfiable) {
      BlobAnswer e = Error(416, "InvalidRange", "The requested range is not satisfiable", "/blobs" + path);
      e.headers.emplace_back("Content-Range", "bytes */" + std::to_string(*size));
      return e;
    }
    // One range, as S3 serves; several are answered with the whole blob.
    if (r.outcome == RangeRequest::kRanges && r.ranges.size() == 1) {
      a.status = 206;
      a.offset = r.ranges[0].first;
      a.length = r.ranges[0].length();
      a.headers.emplace_back("Content-Range", "bytes " + std::to_string(r.ranges[0].first) + "-" +
                                                 std::to_string(r.ranges[0].last) + "/" + std::to_string(*size));
    }
  }
  return a;
}

}  // namespace cli
