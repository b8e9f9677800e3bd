#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An HTTP proxy in front of the test S3 gateway that forgets multipart
uploads: it answers the first N CompleteMultipartUpload requests (POST with
an uploadId) with 404 NoSuchUpload, as a gateway that restarted between the
parts and the completion does, and passes everything else through
unchanged (signatures stay valid: the Host header is the one the client
signed).

Usage: fault_proxy.py UPSTREAM_URL N PORT_FILE LOG_FILE
Writes the port it listens on (127.0.0.1) to PORT_FILE, and one line per
refused completion to LOG_FILE. Runs until killed."""
import http.client
import http.server
import sys
import threading
import urllib.parse

UPSTREAM = urllib.parse.urlsplit(sys.argv[1])
lock = threading.Lock()
remaining = int(sys.argv[2])
port_file, log_file = sys.argv[3], sys.argv[4]
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        global remaining
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query, keep_blank_values=True)
        if self.command == "POST" and "uploadId" in query:
            with lock:
                refuse = remaining > 0
                remaining -= refuse
            if refuse:
                with open(log_file, "a") as f:
                    f.write(f"refused completion of upload {query['uploadId'][0]}\n")
                msg = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchUpload</Code>"
                       b"<Message>The specified upload does not exist.</Message></Error>")
                self.send_response(404)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)
                return
        conn = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port or 80, timeout=120)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        conn.request(self.command, self.path, body=body if body else None, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                self.send_header(k, v)
        if self.command == "HEAD":
            self.send_header("Content-Length", resp.getheader("Content-Length") or "0")
        else:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file, "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
