#!/usr/bin/env bash
# `make attack`: the merchant server under the abuse of issue 14, on loopback, with figures.
# Starts `applepay serve` (sandbox mode, a fresh store) with a configuration naming its limits, then:
#   1. slow-loris: 127.0.0.1 opens ATTACK_CONNECTIONS connections and trickles a header byte into each, while
#      127.0.0.2 asks GET /healthz every 100 ms: every answer must come within a second, and the attacker's
#      connections must all be closed by the request timeout;
#   2. 500 invented methods (and paths): /metrics keeps the same series (lines), about the same size;
#   3. a checkout flood from 127.0.0.3: 429 with Retry-After once the burst is spent; the database stays small;
#   4. a 60 KB locality: 400 fieldTooLong;  5. a cross-site text/plain POST: 415 unsupportedMediaType;
#   6. a checkout's id (it is in every log line) without its client secret, or with a guessed one: read, sheet
#      update and payment all 404 checkoutNotFound, as for an unknown checkout.
# Prints one JSON object of figures on stdout; exits 1 if a check fails.
# ATTACK_SMALL=1 uses small numbers (the Swift test in `make test`); APPLEPAY_BIN picks the binary (default: a
# release build).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
if [ -z "${APPLEPAY_BIN:-}" ]; then
    swift build -c release --product applepay >&2
    APPLEPAY_BIN="$(swift build -c release --show-bin-path)/applepay"
fi
if [ "${ATTACK_SMALL:-0}" = 1 ]; then
    CONNECTIONS="${ATTACK_CONNECTIONS:-40}"; FLOOD="${ATTACK_FLOOD:-150}"; REQUEST_TIMEOUT=2
else
    CONNECTIONS="${ATTACK_CONNECTIONS:-300}"; FLOOD="${ATTACK_FLOOD:-3000}"; REQUEST_TIMEOUT=5
fi
PER_CLIENT=16
WORK="$(mktemp -d "${TMPDIR:-/tmp}/applepay-attack.XXXXXX")"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

"$APPLEPAY_BIN" sandbox init "$WORK/sandbox" --merchant-id merchant.com.example.attack >/dev/null
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cat > "$WORK/store.json" <<JSON
{
  "storeName": "Attack Tea", "merchantIdentifier": "merchant.com.example.attack",
  "countryCode": "GB", "currencyCode": "GBP", "supportedNetworks": ["visa", "masterCard"],
  "products": [{"sku": "TEA-1", "name": "Earl Grey", "price": "4.20", "currencyCode": "GBP"}],
  "shippingZones": [{"identifier": "uk", "countries": ["GB"],
                     "methods": [{"identifier": "post", "label": "Royal Mail", "amount": "3"}], "taxRate": "0.2"}],
  "server": {"requestTimeout": $REQUEST_TIMEOUT, "perClientConnectionLimit": $PER_CLIENT,
             "rateLimits": {"checkouts": {"perMinute": 60, "burst": 30}, "updates": {"perMinute": 600, "burst": 100}}}
}
JSON
mkdir -m 700 "$WORK/data"
"$APPLEPAY_BIN" serve --sandbox "$WORK/sandbox" --config "$WORK/store.json" --store "sqlite:$WORK/data/orders.sqlite" \
    --host 127.0.0.1 --port "$PORT" >"$WORK/stdout" 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 1 100); do
    if grep -q "Serving" "$WORK/stdout" 2>/dev/null; then break; fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then cat "$WORK/server.log" >&2; exit 1; fi
    sleep 0.1
done

python3 - "$PORT" "$CONNECTIONS" "$FLOOD" "$REQUEST_TIMEOUT" "$PER_CLIENT" "$WORK/data" <<'PY'
import http.client, json, os, socket, sys, threading, time

port, connections, flood, request_timeout, per_client, data = (
    int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
figures, failures = {}, []

def check(condition, message):
    if not condition:
        failures.append(message)

def request(method, path, body=None, headers=None, source="127.0.0.2"):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()

def metrics():
    _, _, body = request("GET", "/metrics")
    return body

# 1. Slow-loris from 127.0.0.1 while 127.0.0.2 checks its health.
attackers, refused = [], 0
for _ in range(connections):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: attack\r\nX-Slow: ")
        attackers.append(s)
    except OSError:
        refused += 1
        s.close()
latencies, stop = [], threading.Event()

def legitimate():
    while not stop.is_set():
        started = time.monotonic()
        try:
            status, _, _ = request("GET", "/healthz")
        except OSError:
            status = 0
        latencies.append(time.monotonic() - started)
        check(status == 200, f"the legitimate client's /healthz answered {status}")
        time.sleep(0.1)

watcher = threading.Thread(target=legitimate)
watcher.start()
held_peak, started = 0, time.monotonic()
while time.monotonic() - started < request_timeout + 3:
    alive = []
    for s in attackers:
        try:
            s.sendall(b"a")
            # The server closes a refused or late connection: a read sees the end (or a reset).
            s.setblocking(False)
            try:
                closed = s.recv(1024) == b""
            except BlockingIOError:
                closed = False
            s.setblocking(True)
            if not closed:
                alive.append(s)
        except OSError:
            pass
    if time.monotonic() - started > 0.5:
        held_peak = max(held_peak, len(alive))
    attackers = alive
    time.sleep(0.5)
stop.set()
watcher.join()
figures["slowLorisConnectionsOpened"] = connections
figures["slowLorisConnectionsHeldPeak"] = held_peak
figures["slowLorisConnectionsHeldAtEnd"] = len(attackers)
figures["legitimateRequests"] = len(latencies)
figures["legitimateWorstLatencyMs"] = round(max(latencies) * 1000, 1) if latencies else None
check(held_peak <= per_client, f"the attacker held {held_peak} connections (limit {per_client})")
check(not attackers, f"{len(attackers)} slow connections outlived the request timeout")
check(latencies and max(latencies) < 1.0, "the legitimate client waited a second or more")
for s in attackers:
    s.close()

# 2. Invented methods and paths leave /metrics the same.
# Every series the loop can touch exists once first (a first request to a route adds its series, as it should).
request("GET", "/nowhere")
request("M0", "/healthz")
request("M0", "/invented/0")
metrics()
before = metrics()
for i in range(500):
    request(f"M{i}", "/healthz" if i % 2 else f"/invented/{i}")
after = metrics()
figures["metricsBytesBefore"], figures["metricsBytesAfter"] = len(before), len(after)
figures["metricsLinesBefore"], figures["metricsLinesAfter"] = before.count(b"\n"), after.count(b"\n")
check(before.count(b"\n") == after.count(b"\n"), "/metrics grew new series")
check(len(after) - len(before) < 200, "/metrics grew by more than counters")

# 3. A checkout flood from one address.
statuses, retry_after = {}, None
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=("127.0.0.3", 0))
body = json.dumps({"items": [{"sku": "TEA-1", "quantity": 1}]})
checkout_id, checkout_secret = None, None
for _ in range(flood):
    connection.request("POST", "/v1/checkouts", body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = response.read()
    statuses[response.status] = statuses.get(response.status, 0) + 1
    if response.status == 201 and checkout_id is None:
        created = json.loads(answer)
        checkout_id, checkout_secret = created["id"], created["clientSecret"]
    if response.status == 429:
        retry_after = response.getheader("Retry-After")
connection.close()
size = sum(os.path.getsize(os.path.join(data, name)) for name in os.listdir(data))
figures["floodRequests"] = flood
figures["floodCreated"] = statuses.get(201, 0)
figures["floodRateLimited"] = statuses.get(429, 0)
figures["floodRetryAfter"] = retry_after
figures["databaseBytesAfterFlood"] = size
check(statuses.get(429, 0) > 0 and retry_after, "the flood was never answered 429 with Retry-After")
check(size < 8 * 1024 * 1024, f"the database grew to {size} bytes")
modes = {name: oct(os.stat(os.path.join(data, name)).st_mode & 0o777) for name in sorted(os.listdir(data))}
figures["storeFileModes"] = modes
check(all(mode == "0o600" for mode in modes.values()), f"store files not 0600: {modes}")

# 4. Oversized fields; 5. a cross-site text/plain POST.
status, _, answer = request(
    "POST", f"/v1/checkouts/{checkout_id}/shipping-contact",
    body=json.dumps({"locality": "x" * 60000, "countryCode": "GB"}),
    headers={"Content-Type": "application/json", "Checkout-Secret": checkout_secret})
figures["oversizedField"] = f"{status} {json.loads(answer)['error']['code']}"
check(status == 400 and b"fieldTooLong" in answer, f"a 60 KB locality answered {status}")
status, headers, answer = request(
    "POST", "/v1/checkouts", body=body, headers={"Content-Type": "text/plain", "Origin": "https://evil.example"})
figures["crossSiteTextPlain"] = f"{status} {json.loads(answer)['error']['code']}"
check(status == 415, f"a text/plain POST answered {status}")
check(headers.get("Cache-Control") == "no-store" and headers.get("X-Content-Type-Options") == "nosniff",
      "an answer without Cache-Control: no-store / nosniff")

# 6. The checkout's id alone, or with a guessed secret: as unknown as a checkout that never was.
json_headers = {"Content-Type": "application/json"}
guessed = dict(json_headers, **{"Checkout-Secret": "0" * 32})
tries = [("GET", f"/v1/checkouts/{checkout_id}", None, {}),
         ("GET", f"/v1/checkouts/{checkout_id}", None, {"Checkout-Secret": "0" * 32}),
         ("POST", f"/v1/checkouts/{checkout_id}/coupon", json.dumps({"couponCode": "WELCOME10"}), json_headers),
         ("POST", f"/v1/checkouts/{checkout_id}/shipping-contact", json.dumps({"countryCode": "GB"}), guessed),
         ("POST", f"/v1/checkouts/{checkout_id}/payment", json.dumps({"token": {}}), guessed)]
answers = [request(method, path, body=payload, headers=sent) for method, path, payload, sent in tries]
figures["checkoutWithoutSecret"] = [f"{status} {json.loads(answer)['error']['code']}" for status, _, answer in answers]
check(all(status == 404 and b"checkoutNotFound" in answer for status, _, answer in answers),
      f"a checkout's routes without its secret answered {figures['checkoutWithoutSecret']}")
status, _, answer = request("GET", f"/v1/checkouts/{checkout_id}", headers={"Checkout-Secret": checkout_secret})
check(status == 200, f"the checkout with its secret answered {status}")

figures["failures"] = failures
print(json.dumps(figures, indent=2))
sys.exit(1 if failures else 0)
PY
