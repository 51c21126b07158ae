"""What every provider fake shares: an HTTP server on a loopback port, a control API (`/_fake/...`) for faults
and for reading what happened, request and answer validation against the provider's published OpenAPI spec, and
a list of mismatches that fails the test.

Control API (JSON):
  POST /_fake/faults  {"faults": [{"path": "/v1/payment_intents/*/confirm", "kind": "lost"|"500"|"429"|"403"|"slow"|"hold",
                                   "times": 1, "seconds": 3}]}   each fault applies to the next `times` matching
                                                                requests ("lost": the request is committed, then
                                                                the connection is closed without an answer)
                                                                ("hold": the request is marked in flight under its
                                                                idempotency key for `seconds` before it runs, so
                                                                another with the same key meanwhile is refused
                                                                as the provider refuses it)
  POST /_fake/decline {"times": 1, "reason": "insufficient_funds"}  the next charges are declined
  POST /_fake/async   {"times": 1, "what": "charge"|"refund"}     the next charges (or refunds) are taken and left
                                                                undecided (Stripe `processing` / refund `pending`,
                                                                Checkout.com `202 Pending`, Adyen `Received`);
                                                                `fake.decide(...)` decides them later and gives the
                                                                signed webhook that says so (sent early, late,
                                                                twice or never by the test)
  GET  /_fake/state   the fake's ledger, every request seen, and every spec mismatch

Idempotency as the providers document it: the first answer saved for a key is answered again byte for byte
(status and body) to a request sent again with that key, however the object changed since (Stripe: "saves the
resulting status code and body of the first request made for any given idempotency key",
https://docs.stripe.com/idempotency); a key reused with other parameters is refused; a key whose first request is
still running is refused (`in_use`).
"""
import copy
import fnmatch
import json
import socket
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema
from jsonschema import ValidationError
from openapi_schema_validator import OAS30ReadValidator, OAS30WriteValidator, OAS31Validator

_descending = threading.local()


def _discriminator(validator, discriminator, instance, schema):
    """OpenAPI's discriminator on a plain object schema (Checkout.com's sources): the instance must also be valid
    against the schema its `propertyName` maps to. The mapped schema includes this one (allOf), so each instance
    descends into a mapping once."""
    if "anyOf" in schema or "oneOf" in schema or not isinstance(instance, dict):
        return
    name = discriminator["propertyName"]
    value = instance.get(name)
    if value is None:
        yield ValidationError("%r has no discriminating property %r" % (sorted(instance), name))
        return
    ref = discriminator.get("mapping", {}).get(value) or "#/components/schemas/%s" % value
    active = getattr(_descending, "active", None)
    if active is None:
        active = _descending.active = set()
    key = (id(instance), ref)
    if key in active:
        return
    active.add(key)
    try:
        yield from validator.descend(instance, {"$ref": ref})
    finally:
        active.discard(key)


def _with_discriminator(cls):
    return jsonschema.validators.extend(cls, {"discriminator": _discriminator})


REQUEST_VALIDATORS = {"3.0": _with_discriminator(OAS30WriteValidator), "3.1": _with_discriminator(OAS31Validator)}
ANSWER_VALIDATORS = {"3.0": _with_discriminator(OAS30ReadValidator), "3.1": _with_discriminator(OAS31Validator)}


class SpecMismatch(Exception):
    pass


class Spec:
    """One OpenAPI document; validates a value against a schema of it (references resolved in the document)."""

    def __init__(self, document, version="3.0"):
        self.document = self.nullable(document) if version.startswith("3.0") else document
        self.version = "3.1" if version.startswith("3.1") else "3.0"

    @classmethod
    def nullable(cls, node):
        """OpenAPI 3.0's `nullable: true` as JSON Schema (also beside an enum or anyOf): the schema or null."""
        if isinstance(node, list):
            return [cls.nullable(item) for item in node]
        if not isinstance(node, dict):
            return node
        node = {key: cls.nullable(value) if key not in ("example", "examples") else value
                for key, value in node.items()}
        if node.get("nullable") is True:
            rest = {key: value for key, value in node.items() if key != "nullable"}
            return {"anyOf": [rest, {"enum": [None]}]}
        return node

    def validate(self, schema, value, what, answer=None):
        """Raises SpecMismatch unless `value` is valid; a request (`what` not an answer) is checked as written
        (readOnly members refused), an answer as read (writeOnly members refused)."""
        root = dict(schema)
        root["components"] = self.document.get("components", {})
        is_answer = what.startswith("answer") if answer is None else answer
        validator = (ANSWER_VALIDATORS if is_answer else REQUEST_VALIDATORS)[self.version](root)
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if errors:
            first = errors[0]
            path = "/".join(str(p) for p in first.absolute_path)
            raise SpecMismatch("%s: %s at '%s'" % (what, first.message[:300], path))

    def operation(self, method, path):
        """The operation of `path` (a concrete path) in the spec, and its template."""
        for template, item in self.document["paths"].items():
            if self.matches(template, path) and method.lower() in item:
                return template, item[method.lower()]
        raise SpecMismatch("%s %s is not in the spec" % (method, path))

    @staticmethod
    def matches(template, path):
        a, b = template.strip("/").split("/"), path.strip("/").split("/")
        return len(a) == len(b) and all(x == y or (x.startswith("{") and x.endswith("}")) for x, y in zip(a, b))

    def response_schema(self, operation, status, content_type="application/json"):
        responses = operation.get("responses", {})
        answer = responses.get(str(status)) or responses.get("%dXX" % (status // 100)) or responses.get("default")
        if answer is None:
            raise SpecMismatch("status %d is not a documented answer" % status)
        answer = self.resolve(answer)
        content = answer.get("content")
        if not content:
            return None
        media = content.get(content_type) or next(iter(content.values()))
        return media.get("schema")

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            assert ref.startswith("#/"), ref
            target = self.document
            for part in ref[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node


class Answer:
    """`raw`, when set, is the exact body sent (a replayed answer's saved bytes)."""

    def __init__(self, status, body=None, headers=None, raw=None):
        self.status, self.body, self.headers, self.raw = status, body, headers or {}, raw

    def saved(self):
        """A copy frozen now: later changes to the objects its body holds do not reach it."""
        raw = None if self.body is None else json.dumps(self.body).encode()
        return Answer(self.status, None if raw is None else json.loads(raw), dict(self.headers), raw)


_holding = threading.local()


class Fake:
    """The shared server. A provider subclass implements `handle(method, path, query, headers, body)` returning
    an `Answer`, and `validate_request` / `validate_answer`; both raise SpecMismatch."""

    name = "fake"
    idempotency_header = "Idempotency-Key"

    def __init__(self, credentials):
        self.credentials = credentials
        self.lock = threading.RLock()
        self.faults = []
        self.declines = []
        self.asyncs = []
        self.in_flight = set()
        self.requests = []
        self.mismatches = []
        self.idempotency = {}  # key -> (fingerprint, Answer)
        self.server = None

    # -- provider hooks
    def authorised(self, headers):
        raise NotImplementedError

    def handle(self, method, path, query, headers, body):
        raise NotImplementedError

    def validate_request(self, method, path, headers, body):
        pass

    def validate_answer(self, method, path, answer):
        pass

    def state(self):
        return {}

    def ledger_charges(self):
        """Every charge as a ledger lists it: idempotencyKey, reference, status (approved, …), amount, currencyCode."""
        raise NotImplementedError

    def charge_count(self):
        return sum(1 for charge in self.ledger_charges() if charge["status"] == "approved")

    def double_charges(self):
        """Approved charges beyond the first for one transaction id."""
        approved = {}
        for charge in self.ledger_charges():
            if charge["status"] == "approved":
                approved[charge["idempotencyKey"]] = approved.get(charge["idempotencyKey"], 0) + 1
        return sum(count - 1 for count in approved.values())

    # -- shared behaviour
    def take_fault(self, method, path):
        with self.lock:
            for fault in self.faults:
                if fault.get("times", 1) > 0 and fnmatch.fnmatch(path, fault["path"]) and \
                        fault.get("method", method) == method:
                    fault["times"] = fault.get("times", 1) - 1
                    return fault
        return None

    def take_decline(self):
        with self.lock:
            for decline in self.declines:
                if decline.get("times", 1) > 0:
                    decline["times"] = decline.get("times", 1) - 1
                    return decline
        return None

    def take_async(self, what):
        with self.lock:
            for entry in self.asyncs:
                if entry.get("what", "charge") == what and entry.get("times", 1) > 0:
                    entry["times"] = entry.get("times", 1) - 1
                    return entry
        return None

    def idempotent(self, key, fingerprint, produce):
        """The first answer for `key` again, byte for byte (the provider's idempotency store), or a new one; a key
        reused with another request is the provider's conflict answer (`conflict(key)`), a key whose first request
        is still running its in-use answer (`in_use(key)`)."""
        with self.lock:
            if key is not None and key in self.in_flight:
                return self.in_use(key)
            if key is not None and key in self.idempotency:
                earlier_fingerprint, answer = self.idempotency[key]
                if earlier_fingerprint != fingerprint:
                    return self.conflict(key)
                return Answer(answer.status, copy.deepcopy(answer.body), dict(answer.headers), answer.raw)
            if key is not None:
                self.in_flight.add(key)
        try:
            hold = getattr(_holding, "seconds", 0)
            if hold:
                time.sleep(hold)
            with self.lock:
                answer = produce()
                if key is not None and self.saves(answer):
                    self.idempotency[key] = (fingerprint, answer.saved())
                return answer
        finally:
            with self.lock:
                self.in_flight.discard(key)

    def idempotent_json(self, headers, path, body):
        """`idempotent` for a JSON request to `post(path, body)`: keyed by the provider's idempotency header, the
        request known by its path and body."""
        fingerprint = (path, json.dumps(body, sort_keys=True))
        return self.idempotent(headers.get(self.idempotency_header.lower()), fingerprint, lambda: self.post(path, body))

    def conflict(self, key):
        return Answer(409, {"error": "idempotency conflict"})

    def saves(self, answer):
        """Whether the provider keeps this answer for its key (Stripe: any it began executing, 5xx aside here)."""
        return answer.status < 500

    def in_use(self, key):
        return Answer(409, {"error": "idempotency key in use"})

    def serve(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.dispatch("GET")

            def do_POST(self):
                self.dispatch("POST")

            def reply(self, status, body, headers=None):
                data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def dispatch(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path, _, query = self.path.partition("?")
                if path.startswith("/_fake/"):
                    return self.control(method, path, raw)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake.lock:
                    fake.requests.append({"method": method, "path": path, "query": query,
                                          "idempotencyKey": headers.get(fake.idempotency_header.lower()),
                                          "body": raw.decode(errors="replace")})
                if not fake.authorised(headers):
                    return self.reply(401, fake.unauthorised_body())
                fault = fake.take_fault(method, path)
                if fault and fault["kind"] in ("500", "429", "403"):
                    status = int(fault["kind"])
                    return self.reply(status, fake.error_body(status), {"Retry-After": "0"} if status == 429 else {})
                if fault and fault["kind"] == "slow":
                    time.sleep(float(fault.get("seconds", 3)))
                _holding.seconds = float(fault.get("seconds", 2)) if fault and fault["kind"] == "hold" else 0
                try:
                    fake.validate_request(method, path, headers, raw)
                    answer = fake.handle(method, path, query, headers, raw)
                    fake.validate_answer(method, path, answer)
                except SpecMismatch as mismatch:
                    with fake.lock:
                        fake.mismatches.append("%s %s: %s" % (method, path, mismatch))
                    return self.reply(400, fake.error_body(400))
                except Exception:
                    with fake.lock:
                        fake.mismatches.append("%s %s: fake failed: %s" % (method, path, traceback.format_exc()))
                    return self.reply(500, fake.error_body(500))
                if fault and fault["kind"] == "lost":
                    # Committed, then the answer is lost.
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                self.reply(answer.status, answer.raw if answer.raw is not None else answer.body, answer.headers)

            def control(self, method, path, raw):
                body = json.loads(raw or b"{}")
                with fake.lock:
                    if path == "/_fake/faults" and method == "POST":
                        fake.faults.extend(body.get("faults", []))
                        return self.reply(200, {"ok": True})
                    if path == "/_fake/decline" and method == "POST":
                        fake.declines.append(body)
                        return self.reply(200, {"ok": True})
                    if path == "/_fake/async" and method == "POST":
                        fake.asyncs.append(body)
                        return self.reply(200, {"ok": True})
                    if path == "/_fake/state":
                        return self.reply(200, {"requests": fake.requests, "mismatches": fake.mismatches,
                                                "ledger": fake.state()})
                    if path == "/_fake/event" and method == "POST":
                        return self.reply(200, fake.event(body))
                self.reply(404, {"error": "no such control"})

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a client gone mid-request (a killed merchant server) is not the fake's failure

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.server.server_address[1]

    def unauthorised_body(self):
        return self.error_body(401)

    def error_body(self, status):
        return {"error": "status %d" % status}

    def event(self, body):
        return {}

    def stop(self):
        if self.server:
            self.server.shutdown()
