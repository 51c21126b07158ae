#!/usr/bin/env python3
"""A merchant server stand-in for `applepay sandbox gateway emit`: plain HTTP on 127.0.0.1.

Usage: flaky_merchant.py FAILURES LOG_FILE
Prints the bound port on the first line of standard output, then serves until killed (or 60 s).
The first FAILURES requests are answered 503, the later ones 200; every request's path is appended to LOG_FILE
as one line.
"""
import http.server
import sys
import threading


def main():
    failures, log_file = int(sys.argv[1]), sys.argv[2]
    seen = [0]
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            with lock:
                seen[0] += 1
                count = seen[0]
                with open(log_file, "a") as log:
                    log.write(self.path + "\n")
            status = 503 if count <= failures else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    threading.Timer(60, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
