#!/usr/bin/env python3
"""A stand-in for Apple's Apple Pay gateway in tests: HTTPS on 127.0.0.1 that demands a client certificate.

Usage: gateway.py CERT KEY CLIENT_CA_FILE LOG_FILE
Prints the bound port on the first line of standard output, then serves until killed (or 60 s).
POST /paymentservices/paymentSession answers a fake merchant session echoing the request body and the
client certificate's subject; every request is appended to LOG_FILE as one JSON line.
"""
import http.server
import json
import ssl
import sys
import threading


def main():
    cert, key, client_ca, log_file = sys.argv[1:5]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            peer = self.connection.getpeercert() or {}
            subject = {k: v for rdn in peer.get("subject", ()) for (k, v) in rdn}
            with open(log_file, "a") as log:
                log.write(json.dumps({"path": self.path, "body": body.decode("utf-8", "replace")}) + "\n")
            if self.path != "/paymentservices/paymentSession":
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            try:
                received = json.loads(body)
            except ValueError:
                received = None
            answer = json.dumps({
                "merchantSessionIdentifier": "SSH-TEST-SESSION",
                "epochTimestamp": 1700000000000,
                "expiresAt": 1700000300000,
                "received": received,
                "clientSubject": subject,
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(client_ca)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    threading.Timer(60, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
