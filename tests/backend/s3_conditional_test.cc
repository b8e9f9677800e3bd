// SPDX-License-Identifier: Apache-2.0
// The S3 backend's conditional write (PutIfAbsent) against a scripted
// server: each answer is given in turn, so the cases a real service shows
// only under races and lost answers are reproducible. A 409 (a conditional
// write of the key under way) is asked again; a 412 after a retry is
// ours only when the blob holds our bytes; a 501 means the service has no
// conditional writes. Built into unit_tests.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/s3/s3_blob_store.h"

namespace chunkstore::internal {
namespace {

struct Answer {
  int status;
  std::string body;
};

// Answers one request per connection, in order, from a script; records
// each request line and whether it carried If-None-Match: *. A request
// beyond the script gets a 500 and is recorded too.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<Answer> script) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  void Serve() {
    while (!stop_) {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      const timeval patience{5, 0};  // a client that sends nothing does not hold the server
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
      std::string in;
      char buf[4096];
      size_t head_end = std::string::npos;
      while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
      }
      if (head_end == std::string::npos) {
        ::close(c);
        continue;
      }
      std::string lower = in.substr(0, head_end);
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      size_t body_len = 0;
      const size_t cl = lower.find("\r\ncontent-length:");
      if (cl != std::string::npos) body_len = std::stoul(lower.substr(cl + 17));
      while (in.size() < head_end + 4 + body_len) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
      }
      Answer a{500, ""};
      {
        std::lock_guard<std::mutex> l(mu_);
        const bool conditional = lower.find("\r\nif-none-match: *") != std::string::npos;
        requests_.push_back(in.substr(0, in.find(' ', in.find(' ') + 1)) + (conditional ? " if-none-match" : ""));
        if (next_ < script_.size()) a = script_[next_++];
      }
      const std::string out = "HTTP/1.1 " + std::to_string(a.status) + " X\r\nContent-Length: " +
                              std::to_string(a.body.size()) + "\r\nConnection: close\r\n\r\n" + a.body;
      size_t sent = 0;
      while (sent < out.size()) {
        const ssize_t n = ::write(c, out.data() + sent, out.size() - sent);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      ::close(c);
    }
  }

  std::vector<Answer> script_;
  size_t next_ = 0;
  std::mutex mu_;
  std::vector<std::string> requests_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::unique_ptr<BlobStore> StoreAt(const ScriptedServer& server) {
  EXPECT_GT(server.port(), 0) << "the scripted server could not listen";
  if (server.port() <= 0) return nullptr;
  ::setenv("NO_PROXY", "127.0.0.1", 1);  // straight to it, whatever proxy the environment names
  S3Options o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(server.port());
  o.region = "us-east-1";
  o.access_key = "AKIDEXAMPLE";
  o.secret_key = "secret";
  o.max_attempts = 3;
  o.stall_timeout_ms = 5000;
  auto s = NewS3BlobStore(S3Location{"bucket", "p"}, o, false);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

const std::string kOurs = "our record";

// One PutIfAbsent of kOurs against a server answering from script: its
// result, and the requests the server saw.
struct Outcome {
  Result<bool> result = Status::IOError("no store");
  std::vector<std::string> requests;
};

Outcome PutAgainst(std::vector<Answer> script) {
  ScriptedServer server(std::move(script));
  Outcome out;
  if (auto s = StoreAt(server)) out.result = s->PutIfAbsent("log/1", kOurs.data(), kOurs.size());
  out.requests = server.requests();
  return out;
}

const std::string kPut = "PUT /bucket/p/log/1 if-none-match";

TEST(S3ConditionalPut, AFirstAnswerDecides) {
  Outcome o = PutAgainst({{200, ""}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_TRUE(*o.result);
  EXPECT_EQ(o.requests, std::vector<std::string>{kPut});
  // Taken by another writer: lost, and no read to check whose it is.
  o = PutAgainst({{412, ""}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_FALSE(*o.result);
  EXPECT_EQ(o.requests.size(), 1u);
  o = PutAgainst({{501, "<Error><Code>NotImplemented</Code></Error>"}});
  EXPECT_TRUE(o.result.status().IsUnsupported()) << o.result.status().ToString();
  o = PutAgainst({{403, "<Error><Code>AccessDenied</Code></Error>"}});
  EXPECT_FALSE(o.result.ok());
  EXPECT_FALSE(o.result.status().IsUnsupported()) << o.result.status().ToString();
  EXPECT_EQ(o.requests.size(), 1u);
}

// A 409 says a conditional write of the key is under way, perhaps our own
// earlier one whose answer was lost; the 412 that follows is ours exactly
// when the blob holds our bytes.
TEST(S3ConditionalPut, A412AfterA409IsOursOnlyWhenTheBlobHoldsOurBytes) {
  Outcome o = PutAgainst({{409, ""}, {412, ""}, {200, kOurs}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_TRUE(*o.result);
  EXPECT_EQ(o.requests, (std::vector<std::string>{kPut, kPut, "GET /bucket/p/log/1"}));
  o = PutAgainst({{409, ""}, {412, ""}, {200, "their record"}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_FALSE(*o.result);
  // Our bytes with one more after them are not our bytes.
  o = PutAgainst({{409, ""}, {412, ""}, {200, kOurs + "!"}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_FALSE(*o.result);
  // The check cannot be made: an error, never a guess.
  o = PutAgainst({{409, ""}, {412, ""}, {404, "<Error><Code>NoSuchKey</Code></Error>"}});
  EXPECT_FALSE(o.result.ok());
  EXPECT_EQ(o.requests.size(), 3u);
}

// A 5xx answer is retried like any outage; a 412 on the retry may be the
// first attempt's own write, so it is checked the same way.
TEST(S3ConditionalPut, A412OnARetryAfterAnOutageIsCheckedToo) {
  Outcome o = PutAgainst({{503, ""}, {412, ""}, {200, kOurs}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_TRUE(*o.result);
  EXPECT_EQ(o.requests.size(), 3u);
  o = PutAgainst({{503, ""}, {412, ""}, {200, "their record"}});
  ASSERT_TRUE(o.result.ok()) << o.result.status().ToString();
  EXPECT_FALSE(*o.result);
}

// Conflicts that never settle give up after a bounded number of tries
// with an error, not a claim.
TEST(S3ConditionalPut, ConflictsThatNeverSettleFail) {
  Outcome o = PutAgainst(std::vector<Answer>(6, Answer{409, "<Error><Code>ConditionalRequestConflict</Code></Error>"}));
  EXPECT_FALSE(o.result.ok());
  EXPECT_EQ(o.requests.size(), 6u);
}

}  // namespace
}  // namespace chunkstore::internal
