// SPDX-License-Identifier: Apache-2.0
// A scripted HTTP server for the S3 backend's tests: each connection gets
// the script's next answer, so answers a real service gives only under
// races, lost replies or hostility are reproducible. Header-only, for
// tests.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/s3/s3_blob_store.h"

namespace chunkstore::internal::testing {

struct Answer {
  int status;
  std::string body;
  std::string raw = {};  // when set, sent as it is instead (headers and all)
  int drip_ms = 0;       // when set, the answer goes out 8 bytes at a time, this far apart
};

// Answers one request per connection, in order, from a script; records
// each request line (with its query) and whether it carried
// If-None-Match: *, and how many bytes of each answer went out before the
// client closed. A request beyond the script gets a 500 and is recorded
// too.
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
  std::vector<size_t> sent() {
    std::lock_guard<std::mutex> l(mu_);
    return sent_;
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
      const std::string out = !a.raw.empty() ? a.raw
                                             : "HTTP/1.1 " + std::to_string(a.status) + " X\r\nContent-Length: " +
                                                   std::to_string(a.body.size()) + "\r\nConnection: close\r\n\r\n" +
                                                   a.body;
      size_t sent = 0;
      while (sent < out.size()) {
        if (a.drip_ms > 0 && sent > 0) std::this_thread::sleep_for(std::chrono::milliseconds(a.drip_ms));
        const size_t piece = a.drip_ms > 0 ? std::min<size_t>(8, out.size() - sent) : out.size() - sent;
        const ssize_t n = ::send(c, out.data() + sent, piece, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      {
        std::lock_guard<std::mutex> l(mu_);
        sent_.push_back(sent);
      }
      ::close(c);
    }
  }

  std::vector<Answer> script_;
  size_t next_ = 0;
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::vector<size_t> sent_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

inline std::unique_ptr<BlobStore> StoreAt(const ScriptedServer& server, int max_attempts = 3,
                                          int stall_timeout_ms = 5000) {
  EXPECT_GT(server.port(), 0) << "the scripted server could not listen";
  if (server.port() <= 0) return nullptr;
  ::setenv("NO_PROXY", "127.0.0.1", 1);  // straight to it, whatever proxy the environment names
  S3Options o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(server.port());
  o.region = "us-east-1";
  o.access_key = "AKIDEXAMPLE";
  o.secret_key = "secret";
  o.max_attempts = max_attempts;
  o.stall_timeout_ms = stall_timeout_ms;
  auto s = NewS3BlobStore(S3Location{"bucket", "p"}, o, false);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

}  // namespace chunkstore::internal::testing
