#!/usr/bin/env python3
"""aws_server.py DIR - a stand-in for AWS on 127.0.0.1, for aws_config.bats.

Listens on a free port of 127.0.0.1 and writes it to DIR/port once ready.

  GET /creds   a container credentials endpoint: answers DIR/answer.json
               (200) when the Authorization header equals DIR/token (or
               when DIR/token does not exist), else 401.
  anything     an S3 endpoint that knows no object: answers 404.

Every request is logged to DIR/requests.log as one line:
  METHOD PATH id=KEY_ID region=REGION token=SESSION_TOKEN auth=ok|bad|-
with the key id and region read from a SigV4 Authorization header
("Credential=ID/DATE/REGION/s3/aws4_request"), so that a test can tell
which credentials, region and session token chute sent.
"""
import http.server
import os
import re
import sys

DIR = sys.argv[1]


def read(name):
    try:
        with open(os.path.join(DIR, name), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def log_request_line(self, auth_state):
        cred = re.search(r"Credential=([^/]*)/[^/]*/([^/]*)/",
                         self.headers.get("Authorization", ""))
        line = "%s %s id=%s region=%s token=%s auth=%s\n" % (
            self.command, self.path,
            cred.group(1) if cred else "-", cred.group(2) if cred else "-",
            self.headers.get("x-amz-security-token", "-"), auth_state)
        with open(os.path.join(DIR, "requests.log"), "a") as f:
            f.write(line)

    def answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        if self.path == "/creds":
            token = read("token")
            ok = token is None or \
                self.headers.get("Authorization", "") == token.decode()
            self.log_request_line("ok" if ok else "bad")
            if ok:
                self.answer(200, read("answer.json") or b"{}")
            else:
                self.answer(401, b"bad token")
            return
        self.log_request_line("-")
        self.answer(404)

    do_HEAD = do_GET

    def do_PUT(self):
        self.log_request_line("-")
        self.answer(404)


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(os.path.join(DIR, "port.tmp"), "w") as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
server.serve_forever()
