#!/usr/bin/env python3
"""The traffic and the verdict of scripts/soak-test.sh (Python 3 standard library only).

  soak.py BASE DIR MINUTES APPLEPAY SANDBOX SERVER_PID DESCRIPTORS_BEFORE [RATE]

Mixed traffic at a steady RATE requests per second (default 100) for MINUTES minutes from WORKERS keep-alive
clients, each running the same cycle of ten requests: 4 x GET /v1/products, POST /v1/checkouts, a sheet update
(shipping contact) of that checkout, a payment, a replay of an earlier payment (its answer must be byte for byte
the first; one of the last 200 payments, as a token is only accepted for a few minutes after it was signed), and
GET /v1/orders/{id}?secret=... of a paid order (must be `paid`), plus one more products read.
Payments use tokens a minter thread makes as it goes: batches of BATCH priced checkouts, minted by one
`applepay sandbox mint --batch` process each.

The rate grows from half of RATE at the start to RATE at the end.
Every 10 s the server's resident memory (VmRSS), open descriptors and threads are sampled and printed as a JSON line. After
the traffic stops, the descriptors are sampled again. Passes when
  - no request failed,
  - memory is flat: the largest sample of the last third is at most the largest of the first third plus
    max(10 %, 5 MB), and no sample exceeds 100 MB,
  - the server's threads are flat as the load grows (last third's largest at most the first third's largest + 8)
    and never above 64,
  - descriptors are flat (last third's largest at most the first third's largest + 4) and back to at most
    DESCRIPTORS_BEFORE + 2 once the clients have closed their connections.
Prints a last JSON line with the verdict; exit 1 when it fails.
"""

import collections
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import SHIPPING_REGION, Client, create_checkouts, mint  # noqa: E402

WORKERS = 4
BATCH = 100
RECENT = 200
SAMPLE_SECONDS = 10
RSS_LIMIT_KB = 100 * 1024
THREAD_LIMIT = 64


def read_sample(pid):
    """Resident memory (kB), open descriptors and threads of the server."""
    with open(f"/proc/{pid}/status") as status:
        fields = dict(line.split(":", 1) for line in status if ":" in line)
    rss = int(fields["VmRSS"].split()[0])
    return rss, len(os.listdir(f"/proc/{pid}/fd")), int(fields["Threads"])


class Soak:
    def __init__(self, base, folder, applepay, sandbox, rate):
        self.base, self.folder, self.applepay, self.sandbox = base, folder, applepay, sandbox
        self.rate = rate
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.tokens = collections.deque()  # (checkout, its client secret, body) ready to pay
        # (checkout, its client secret, body, first answer, order id, order secret) of the last RECENT payments: a
        # replay must come within
        # the token's freshness window (the server refuses an old token, signingTimeOutOfRange, replay or not).
        self.paid = collections.deque(maxlen=RECENT)
        self.replayed = 0
        self.counts = collections.Counter()
        self.failures = []
        self.batch = 0

    def fail(self, message):
        with self.lock:
            self.counts["errors"] += 1
            if len(self.failures) < 20:
                self.failures.append(message)

    def minter(self):
        client = Client(self.base)
        while not self.stop.is_set():
            if len(self.tokens) >= BATCH:
                time.sleep(0.2)
                continue
            try:
                checkouts = create_checkouts(client, BATCH)
                self.batch += 1
                folder = os.path.join(self.folder, f"batch-{self.batch}")
                os.makedirs(folder)
                bodies = mint(self.applepay, self.sandbox, folder, checkouts)
            except Exception as error:  # noqa: BLE001 - counted, and the soak goes on
                self.fail(f"minting: {error}")
                time.sleep(1)
                continue
            with self.lock:
                self.counts["minted"] += len(bodies)
                self.counts["requests"] += 3 * len(bodies)
            secrets = {made[0]: made[4] for made in checkouts}
            self.tokens.extend((checkout, secrets[checkout], body.encode()) for checkout, body in bodies.items())

    def step(self, client, kind, state):
        if kind == "products":
            status, _ = client.call("GET", "/v1/products")
            return status == 200 or self.fail(f"GET /v1/products answered {status}")
        if kind == "checkout":
            status, raw = client.call("POST", "/v1/checkouts", {"items": [{"sku": "COFFEE-250", "quantity": 1}]})
            if status != 201:
                return self.fail(f"POST /v1/checkouts answered {status}: {raw[:200]!r}")
            created = json.loads(raw)
            state["checkout"], state["secret"] = created["id"], created["clientSecret"]
            return True
        if kind == "sheet":
            if "checkout" not in state:
                return None
            status, raw = client.call("POST", f"/v1/checkouts/{state['checkout']}/shipping-contact", SHIPPING_REGION,
                                      secret=state["secret"])
            return status == 200 or self.fail(f"shipping-contact answered {status}: {raw[:200]!r}")
        if kind == "payment":
            try:
                checkout, checkout_secret, body = self.tokens.popleft()
            except IndexError:
                with self.lock:
                    self.counts["noTokenYet"] += 1
                return None
            status, raw = client.call("POST", f"/v1/checkouts/{checkout}/payment", body, secret=checkout_secret)
            answer = json.loads(raw) if raw.startswith(b"{") else {}
            if status != 200 or answer.get("status") != "success":
                return self.fail(f"payment of {checkout}: {status} {raw[:200]!r}")
            with self.lock:
                self.counts["payments"] += 1
            with self.lock:
                self.paid.append((checkout, checkout_secret, body, raw, answer["orderId"], answer["orderSecret"]))
            return True
        if kind == "replay":
            with self.lock:
                if not self.paid:
                    return None
                # Newest first, going back through the window; no rotation, so the deque drops the oldest.
                self.replayed += 1
                checkout, checkout_secret, body, first, _, _ = self.paid[-1 - self.replayed % len(self.paid)]
            status, raw = client.call("POST", f"/v1/checkouts/{checkout}/payment", body, secret=checkout_secret)
            if status != 200 or raw != first:
                return self.fail(f"replay of {checkout}: {status} {raw[:200]!r}, first {first[:200]!r}")
            with self.lock:
                self.counts["replays"] += 1
            return True
        if kind == "order":
            with self.lock:
                if not self.paid:
                    return None
                checkout, _, _, _, order, secret = self.paid[-1]
            status, raw = client.call("GET", f"/v1/orders/{order}?secret={secret}")
            shown = json.loads(raw) if status == 200 else {}
            if (shown.get("status"), shown.get("checkoutId")) != ("paid", checkout):
                return self.fail(f"order {order}: {status} {raw[:200]!r}")
            return True
        raise AssertionError(kind)

    def worker(self, index):
        client = Client(self.base)
        cycle = ["products", "checkout", "products", "sheet", "payment", "products", "replay", "products", "order",
                 "products"]
        # The load grows: half of RATE at the start, all of it by the end (the threads must stay flat meanwhile).
        interval = WORKERS / self.rate
        due = time.monotonic() + index * interval / WORKERS
        state = {}
        step = 0
        while not self.stop.is_set():
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            due += interval / (0.5 + 0.5 * min(1.0, (time.monotonic() - self.started) / self.seconds))
            kind = cycle[step % len(cycle)]
            step += 1
            try:
                if self.step(client, kind, state):
                    with self.lock:
                        self.counts["requests"] += 1
            except Exception as error:  # noqa: BLE001 - counted, and the soak goes on
                self.fail(f"{kind}: {error}")
        client.connection and client.connection.close()


def flat(samples, key, margin):
    third = max(1, len(samples) // 3)
    first = max(s[key] for s in samples[:third])
    last = max(s[key] for s in samples[-third:])
    return last <= first + margin(first), first, last


def main():
    if len(sys.argv) not in (8, 9):
        print(__doc__, file=sys.stderr)
        return 64
    base, folder, minutes, applepay, sandbox, pid, fds_before = sys.argv[1:8]
    rate = float(sys.argv[8]) if len(sys.argv) == 9 else 100.0
    soak = Soak(base, folder, applepay, sandbox, rate)
    seconds = float(minutes) * 60
    threads = [threading.Thread(target=soak.minter, daemon=True)]
    threads += [threading.Thread(target=soak.worker, args=(i,), daemon=True) for i in range(WORKERS)]
    started = time.monotonic()
    soak.started, soak.seconds = started, seconds
    for thread in threads:
        thread.start()
    samples = []
    while True:
        elapsed = time.monotonic() - started
        rss, fds, server_threads = read_sample(pid)
        with soak.lock:
            sample = {"t": round(elapsed), "rssKB": rss, "descriptors": fds, "threads": server_threads, "requests": soak.counts["requests"],
                      "payments": soak.counts["payments"], "replays": soak.counts["replays"],
                      "errors": soak.counts["errors"], "loadAverage": open("/proc/loadavg").read()[:14].strip()}
        samples.append(sample)
        print(json.dumps(sample), flush=True)
        if elapsed >= seconds:
            break
        time.sleep(min(SAMPLE_SECONDS, seconds - elapsed))
    soak.stop.set()
    for thread in threads:
        thread.join(timeout=120)
    # The clients' connections are closed; the server's kept connections to the processor close once idle for the
    # client's idle connection lifetime (30 s): wait for the descriptors to come back, at most 45 s.
    time.sleep(2)
    _, fds_after, _ = read_sample(pid)
    for _ in range(43):
        if fds_after <= int(fds_before) + 2:
            break
        time.sleep(1)
        _, fds_after, _ = read_sample(pid)
    # The first sample is taken before any traffic: leave it out of the flatness checks.
    measured = samples[1:] if len(samples) > 3 else samples
    rss_flat, rss_first, rss_last = flat(measured, "rssKB", lambda first: max(first * 0.10, 5 * 1024))
    fds_flat, fds_first, fds_last = flat(measured, "descriptors", lambda _: 4)
    threads_flat, threads_first, threads_last = flat(measured, "threads", lambda _: 8)
    threads_max = max(s["threads"] for s in samples)
    rss_max = max(s["rssKB"] for s in samples)
    # Least-squares slope of memory over the measured samples, for the record (not a pass criterion).
    mean_t = sum(s["t"] for s in measured) / len(measured)
    mean_r = sum(s["rssKB"] for s in measured) / len(measured)
    spread = sum((s["t"] - mean_t) ** 2 for s in measured)
    slope = sum((s["t"] - mean_t) * (s["rssKB"] - mean_r) for s in measured) / spread * 60 if spread else 0.0
    back = fds_after <= int(fds_before) + 2
    passed = rss_flat and fds_flat and back and rss_max <= RSS_LIMIT_KB and soak.counts["errors"] == 0 \
        and threads_flat and threads_max <= THREAD_LIMIT \
        and soak.counts["payments"] > 0
    wall = time.monotonic() - started
    print(json.dumps({
        "scenario": "soak", "minutes": round(seconds / 60, 1), "samples": len(samples),
        "requests": soak.counts["requests"], "requestsPerSecond": round(soak.counts["requests"] / wall),
        "payments": soak.counts["payments"], "replays": soak.counts["replays"], "minted": soak.counts["minted"],
        "noTokenYet": soak.counts["noTokenYet"], "errors": soak.counts["errors"],
        "rssKB": {"firstThirdMax": rss_first, "lastThirdMax": rss_last, "max": rss_max, "flat": rss_flat,
                  "slopeKBPerMinute": round(slope)},
        "descriptors": {"before": int(fds_before), "firstThirdMax": fds_first, "lastThirdMax": fds_last,
                        "after": fds_after, "flat": fds_flat, "backToBaseline": back},
        "threads": {"firstThirdMax": threads_first, "lastThirdMax": threads_last, "max": threads_max,
                    "flat": threads_flat},
        "loadAverage": open("/proc/loadavg").read()[:14].strip(), "passed": passed}), flush=True)
    for failure in soak.failures:
        print(f"soak-test: FAILURE: {failure}", file=sys.stderr)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
