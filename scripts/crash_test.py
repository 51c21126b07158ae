#!/usr/bin/env python3
"""Crash test of the merchant server and the processor service (driven by scripts/crash-test.sh).

Python 3 standard library only. Starts `applepay processor serve` and `applepay serve` on fixed loopback ports,
creates PAYMENTS checkouts, mints their tokens in one `applepay sandbox mint --batch` run, then posts the
payments from several client threads while SIGKILLing the merchant server SERVER_KILLS times and the processor
PROCESSOR_KILLS times (each restarted at once on the same port, store and ledger). The payments are released in
slices, one slice per kill, and each kill falls at a random moment while its slice is being posted, so every kill
hits requests in flight. Afterwards: one reconciliation pass (`olderThanSeconds=0`), then the store (admin API)
and the ledger (`GET /v1/charges`) are checked against each other and against what the clients saw.

Prints one JSON line of figures on standard output; violations on standard error; exit 1 on any violation.
"""

import argparse
import base64
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from decimal import Decimal

ADMIN_TOKEN = "crash-test-admin-token-0123456789abcdef"
SHIPPING_REGION = {"locality": "Cupertino", "administrativeArea": "CA", "postalCode": "95014", "countryCode": "US"}
SHIPPING_CONTACT = dict(
    SHIPPING_REGION, givenName="Ada", familyName="Lovelace", emailAddress="ada@example.com",
    phoneNumber="+1 408 555 0100", addressLines=["1 Infinite Loop"])
# The sandbox processor's test triggers: totals whose minor units end in these are declined, fail or hang.
TRIGGER_ENDINGS = {51, 52, 53, 54}
# How long a retry after a connection error waits for its answer.
RETRY_TIMEOUT = 2.5
# How long an abandoned request may still run on the server (processor time limit 10 s, plus a margin).
QUIET_SECONDS = 15.0


def log(message):
    print(f"crash-test: {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port, method, path, body=None, timeout=30.0, admin=False, secret=None):
    """One HTTP request on a new connection: (status, parsed JSON or None). Raises OSError on connection trouble.
    `secret`: a checkout's client secret, the Checkout-Secret header its routes want."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {}
        if secret is not None:
            headers["Checkout-Secret"] = secret
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if admin:
            headers["Authorization"] = "Bearer " + ADMIN_TOKEN
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return response.status, parsed
    except http.client.HTTPException as error:  # a connection closed mid-answer counts as connection trouble
        raise ConnectionError(str(error)) from error
    finally:
        connection.close()


class Service:
    """One child process (`applepay serve` or `applepay processor serve`) that can be killed and restarted."""

    def __init__(self, name, command, environment, work, ready_marker):
        self.name = name
        self.command = command
        self.environment = environment
        self.work = work
        self.ready_marker = ready_marker
        self.process = None
        self.starts = 0
        self.kills = 0
        self.lock = threading.Lock()

    def start(self):
        for attempt in range(20):
            self.starts += 1
            out_path = os.path.join(self.work, f"{self.name}.out")
            with open(out_path, "wb") as out, open(os.path.join(self.work, f"{self.name}.log"), "ab") as err:
                self.process = subprocess.Popen(
                    self.command, stdout=out, stderr=err, env=self.environment, start_new_session=True)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with open(out_path, "rb") as out:
                    if self.ready_marker in out.read():
                        return
                if self.process.poll() is not None:
                    break
                time.sleep(0.02)
            if self.process.poll() is None:
                raise RuntimeError(f"{self.name} did not say it listens within 60 s")
            # Exited before listening (the port may still be held for a moment): try again.
            log(f"{self.name} exited with {self.process.returncode} before listening; starting it again")
            time.sleep(0.2 * (attempt + 1))
        raise RuntimeError(f"{self.name} could not be started (see {self.name}.log)")

    def kill_and_restart(self):
        with self.lock:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
            self.kills += 1
            self.start()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.send_signal(signal.SIGKILL)
                self.process.wait()


class Payment:
    def __init__(self, checkout, secret, total, application_data):
        self.checkout = checkout
        self.secret = secret  # the checkout's client secret
        self.total = total  # decimal string, e.g. "36.45"
        self.application_data = application_data
        self.body = None
        self.outcome = "notPosted"  # acknowledged | declined | unsettled | refused | gaveUp
        self.order_id = None
        self.attempts = 0
        self.last_answer = None


def minor_units(amount):
    return int((Decimal(amount) * 100).to_integral_value())


class ProviderFake:
    """A provider's fake in this process, where the processor service would be: never killed."""

    def __init__(self, fake):
        self.fake = fake
        self.kills = 0

    def start(self):
        pass

    def kill_and_restart(self):
        raise RuntimeError("a provider fake is not killed")

    def stop(self):
        self.fake.stop()


def create_checkouts(port, count):
    payments = []
    rng = random.Random(7)
    while len(payments) < count:
        quantity = rng.randint(1, 4)
        items = [{"sku": "COFFEE-250", "quantity": quantity}]
        if rng.random() < 0.5:
            items.append({"sku": "MUG-01", "quantity": rng.randint(1, 2)})
        status, created = call(port, "POST", "/v1/checkouts", {"items": items})
        if status != 201:
            raise RuntimeError(f"POST /v1/checkouts answered {status}: {created}")
        checkout, secret = created["id"], created["clientSecret"]
        status, update = call(port, "POST", f"/v1/checkouts/{checkout}/shipping-contact", SHIPPING_REGION,
                              secret=secret)
        if status != 200:
            raise RuntimeError(f"shipping-contact answered {status}: {update}")
        status, fetched = call(port, "GET", f"/v1/checkouts/{checkout}", secret=secret)
        if status != 200:
            raise RuntimeError(f"GET checkout answered {status}: {fetched}")
        request = fetched["paymentRequest"]
        total = request["total"]["amount"]
        if minor_units(total) % 100 in TRIGGER_ENDINGS:
            continue  # the sandbox processor would decline, fail or hang on purpose
        payments.append(Payment(checkout, secret, total, request["applicationData"]))
    return payments


def mint(applepay, sandbox, work, payments):
    requests_path = os.path.join(work, "mint-requests.jsonl")
    with open(requests_path, "w") as requests:
        for payment in payments:
            requests.write(json.dumps({
                "name": payment.checkout, "amount": payment.total, "currency": "USD",
                "applicationData": payment.application_data}) + "\n")
    tokens = os.path.join(work, "tokens")
    result = subprocess.run(
        [applepay, "sandbox", "mint", sandbox, "--batch", requests_path, "--out-dir", tokens],
        capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"sandbox mint --batch failed: {result.stderr}")
    for payment in payments:
        with open(os.path.join(tokens, payment.checkout + ".json")) as token:
            payment.body = json.dumps({"token": json.load(token), "shippingContact": SHIPPING_CONTACT}).encode()
    return json.loads(result.stdout)


class Pacer:
    """Releases the payments slice by slice; the killer releases the next slice after each kill."""

    def __init__(self, total, slices):
        self.total = total
        self.bounds = [round(total * (i + 1) / slices) for i in range(slices)]
        self.released = self.bounds[0]
        self.taken = 0
        self.condition = threading.Condition()

    def take(self):
        with self.condition:
            while self.taken >= self.released and self.taken < self.total:
                self.condition.wait()
            if self.taken >= self.total:
                return None
            index = self.taken
            self.taken += 1
            self.condition.notify_all()
            return index

    def release(self, slice_index):
        with self.condition:
            self.released = self.bounds[min(slice_index, len(self.bounds) - 1)]
            self.condition.notify_all()

    def wait_taken(self, count, timeout):
        deadline = time.monotonic() + timeout
        with self.condition:
            while self.taken < count and time.monotonic() < deadline:
                self.condition.wait(timeout=0.1)


def pay(port, payment, stats, stats_lock):
    """Posts one payment until an answer; retries connection errors and 5xx with the same token.

    A retry after a connection error may find the order a killed server left `pending`: the server then waits its
    concurrent-attempt limit (processor time limit + 2 s) before answering 409 paymentInProgress. Retries therefore
    wait at most RETRY_TIMEOUT seconds; an answer not seen in time leaves the payment to the reconciler.
    """
    deadline = time.monotonic() + 90
    delay = 0.02
    timeout = 30.0
    while time.monotonic() < deadline:
        payment.attempts += 1
        try:
            status, answer = call(port, "POST", f"/v1/checkouts/{payment.checkout}/payment", payment.body,
                                  timeout=timeout, secret=payment.secret)
        except TimeoutError:
            with stats_lock:
                stats["clientTimeouts"] += 1
                stats["lastTimeout"] = time.monotonic()
            payment.outcome = "unsettled"
            return
        except OSError:
            with stats_lock:
                stats["connectionErrors"] += 1
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
            timeout = RETRY_TIMEOUT
            continue
        payment.last_answer = (status, answer)
        if status == 200 and answer and answer.get("status") == "success":
            payment.outcome = "acknowledged"
            payment.order_id = answer.get("orderId")
            return
        if status == 402:
            payment.outcome = "declined"
            return
        if status in (202, 409) and answer and (answer.get("error") or {}).get("code") in (
                "paymentOutcomeUnknown", "paymentInProgress", "checkoutPaymentUnconfirmed"):
            payment.outcome = "unsettled"  # not seen, or pending after a kill: the reconciler settles it
            return
        if status >= 500:
            with stats_lock:
                stats["serverErrors"] += 1
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
            continue
        payment.outcome = "refused"
        return
    payment.outcome = "gaveUp"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--applepay", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--payments", type=int, default=300)
    parser.add_argument("--server-kills", type=int, default=20)
    parser.add_argument("--processor-kills", type=int, default=5)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--psp", choices=["stripe", "checkout", "adyen"], default=None,
                        help="charge through this provider's connector against its local fake "
                             "(Tests/CommandLineTests/python/psp) instead of the processor service")
    options = parser.parse_args()
    if options.psp:
        options.processor_kills = 0  # the fake plays the provider, which does not crash
    seed = options.seed if options.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    started = time.monotonic()
    work = options.work
    applepay = options.applepay

    sandbox = os.path.join(work, "sandbox")
    subprocess.run([applepay, "sandbox", "init", sandbox, "--merchant-id", "merchant.com.example.crash"],
                   check=True, stdout=subprocess.DEVNULL)
    processor_port, server_port = free_port(), free_port()
    while server_port == processor_port:
        server_port = free_port()
    environment = dict(os.environ, APPLEPAY_ADMIN_TOKEN=ADMIN_TOKEN)
    fake = None
    if options.psp:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "../Tests/CommandLineTests/python/psp"))
        from psp_setup import base_url, configure
        fake, section = configure(options.psp, work)
        section.update(baseURL=base_url(options.psp, fake.serve()), timeoutSeconds=10)
        with open(os.path.join(work, "provider.json"), "w") as file:
            json.dump({"processor": section}, file)
        processor = ProviderFake(fake)
        processor_option = ["--config", os.path.join(work, "provider.json")]
    else:
        processor = Service(
            "processor",
            [applepay, "processor", "serve", "--ledger", f"sqlite:{work}/ledger.sqlite", "--sandbox", sandbox,
             "--port", str(processor_port)],
            environment, work, b"listening on http://")
        processor_option = ["--processor", f"http://127.0.0.1:{processor_port}"]
    server = Service(
        "server",
        [applepay, "serve", "--sandbox", sandbox] + processor_option
        + ["--store", f"sqlite:{work}/orders.sqlite", "--port", str(server_port)],
        environment, work, b"Serving ")
    violations = []
    try:
        processor.start()
        server.start()
        log(f"processor on port {processor_port}, server on port {server_port}, seed {seed}")

        payments = create_checkouts(server_port, options.payments)
        minted = mint(applepay, sandbox, work, payments)
        log(f"{len(payments)} checkouts, tokens minted in {minted['seconds']} s")
        mint_time = time.monotonic()

        kinds = ["server"] * options.server_kills + ["processor"] * options.processor_kills
        rng.shuffle(kinds)
        pacer = Pacer(len(payments), len(kinds) + 1)
        stats = {"connectionErrors": 0, "serverErrors": 0, "clientTimeouts": 0, "lastTimeout": None}
        stats_lock = threading.Lock()

        def client():
            while (index := pacer.take()) is not None:
                pay(server_port, payments[index], stats, stats_lock)

        threads = [threading.Thread(target=client, daemon=True) for _ in range(options.clients)]
        for thread in threads:
            thread.start()
        kill_error = []

        def killer():
            try:
                for number, kind in enumerate(kinds):
                    low = pacer.bounds[number - 1] if number > 0 else 0
                    high = pacer.bounds[number]
                    # A random moment inside this slice: once a random share of it has been taken by the clients.
                    pacer.wait_taken(low + max(1, int((high - low) * rng.uniform(0.2, 0.9))), timeout=60)
                    time.sleep(rng.uniform(0, 0.02))
                    (server if kind == "server" else processor).kill_and_restart()
                    pacer.release(number + 1)
            except Exception as error:  # noqa: BLE001 - reported as a violation below
                kill_error.append(error)
                pacer.release(len(kinds))

        kill_thread = threading.Thread(target=killer, daemon=True)
        kill_thread.start()
        kill_thread.join()
        for thread in threads:
            thread.join()
        if kill_error:
            violations.append(f"could not kill and restart: {kill_error[0]}")
        paying_seconds = time.monotonic() - mint_time

        # A request whose client stopped waiting may still be running on the server; reconciling it with
        # olderThanSeconds=0 before it ends would race it. Wait until none can be left.
        if stats["lastTimeout"] is not None:
            time.sleep(max(0.0, stats["lastTimeout"] + QUIET_SECONDS - time.monotonic()))
        status, reconciled = call(server_port, "POST", "/admin/v1/reconcile?olderThanSeconds=0", b"{}", admin=True,
                                  timeout=120)
        if status != 200:
            violations.append(f"reconcile answered {status}: {reconciled}")
            reconciled = {"settled": []}
        settled = reconciled["settled"]

        status, listed = call(server_port, "GET", "/admin/v1/orders?limit=10000", admin=True)
        if status != 200:
            raise RuntimeError(f"GET /admin/v1/orders answered {status}: {listed}")
        orders = listed["orders"]
        if fake is not None:
            charges = fake.ledger_charges()
            mismatches = fake.mismatches
            if mismatches:
                violations.append(f"{len(mismatches)} requests or answers broke {options.psp}'s spec: {mismatches[:3]}")
        else:
            status, ledger = call(processor_port, "GET", "/v1/charges")
            if status != 200:
                raise RuntimeError(f"GET /v1/charges answered {status}: {ledger}")
            charges = ledger["charges"]
        # A provider whose lost answers only its webhook settles (Adyen; Checkout.com after a restart) leaves those
        # payments unknown here, where no webhook is sent: they are counted, and checked against the fake.
        awaiting_webhook = []

        # The ledger: no idempotency key twice, at most one approval per key.
        by_key = {}
        double_charges = 0
        for charge in charges:
            by_key.setdefault(charge["idempotencyKey"], []).append(charge)
        for key, found in by_key.items():
            approved = [c for c in found if c["status"] == "approved"]
            if len(found) > 1:
                violations.append(f"idempotency key {key} appears {len(found)} times in the ledger")
            if len(approved) > 1:
                double_charges += len(approved) - 1
                violations.append(f"idempotency key {key} approved {len(approved)} times")
        orders_by_key = {}
        live_by_checkout = {}
        for order in orders:
            orders_by_key.setdefault(order["payment"]["transactionId"], []).append(order)
            if order["status"] != "declined":
                live_by_checkout.setdefault(order["checkoutId"], []).append(order)
            if order["status"] in ("pending", "unknown") and options.psp in ("adyen", "checkout"):
                awaiting_webhook.append(order)
            elif order["status"] in ("pending", "unknown"):
                violations.append(f"order {order['id']} is still {order['status']} after the reconciliation pass")
        for checkout, live in live_by_checkout.items():
            if len(live) > 1:
                violations.append(f"checkout {checkout} has {len(live)} non-declined orders: "
                                  + ", ".join(f"{o['id']} {o['status']}" for o in live))
        # Two approved charges for one checkout (under different keys) are a double charge too.
        approved_by_checkout = {}
        for charge in charges:
            if charge["status"] != "approved":
                continue
            owners = orders_by_key.get(charge["idempotencyKey"], [])
            if not owners:
                violations.append(f"approved charge {charge['reference']} (key {charge['idempotencyKey']}) has no order")
                continue
            for owner in owners:
                approved_by_checkout.setdefault(owner["checkoutId"], []).append(charge)
            paid = [o for o in owners if o["status"] == "paid" or o in awaiting_webhook]
            if not paid:
                violations.append(f"approved charge {charge['reference']} belongs to order "
                                  f"{owners[0]['id']}, which is {owners[0]['status']}, not paid")
        for checkout, approved in approved_by_checkout.items():
            if len(approved) > 1:
                double_charges += len(approved) - 1
                violations.append(f"checkout {checkout} was charged {len(approved)} times: "
                                  + ", ".join(c["reference"] for c in approved))
        # Every paid order has exactly one approved charge of its total.
        for order in orders:
            if order["status"] != "paid":
                continue
            key = order["payment"]["transactionId"]
            approved = [c for c in by_key.get(key, []) if c["status"] == "approved"]
            if len(approved) != 1:
                violations.append(f"paid order {order['id']} has {len(approved)} approved ledger charges")
                continue
            total = minor_units(order["totals"]["total"])
            if approved[0]["amount"] != total or approved[0]["currencyCode"] != order["currencyCode"]:
                violations.append(f"order {order['id']} total {order['totals']['total']} {order['currencyCode']}, "
                                  f"ledger {approved[0]['amount']} {approved[0]['currencyCode']}")
        # Every acknowledged payment is paid, in the order the client was told, charged once.
        orders_by_id = {o["id"]: o for o in orders}
        for payment in payments:
            if payment.outcome != "acknowledged":
                continue
            order = orders_by_id.get(payment.order_id)
            if order is None:
                violations.append(f"acknowledged payment of {payment.checkout}: order {payment.order_id} is missing")
            elif order["status"] != "paid" or order["checkoutId"] != payment.checkout:
                violations.append(f"acknowledged payment of {payment.checkout}: order {payment.order_id} is "
                                  f"{order['status']} for {order['checkoutId']}")
            elif order["totals"]["total"] != payment.total:
                violations.append(f"acknowledged payment of {payment.checkout}: order total "
                                  f"{order['totals']['total']}, token {payment.total}")
        for payment in payments:
            if payment.outcome in ("refused", "gaveUp", "notPosted"):
                violations.append(f"payment of {payment.checkout}: {payment.outcome}, last answer "
                                  f"{payment.last_answer}")
        outcomes = {}
        for payment in payments:
            outcomes[payment.outcome] = outcomes.get(payment.outcome, 0) + 1
        statuses = {}
        for order in orders:
            statuses[order["status"]] = statuses.get(order["status"], 0) + 1
        figures = {
            "payments": len(payments),
            "serverKills": server.kills,
            "processorKills": processor.kills,
            "paymentsPosted": sum(1 for p in payments if p.attempts > 0),
            "postAttempts": sum(p.attempts for p in payments),
            "acknowledged": outcomes.get("acknowledged", 0),
            "declined": outcomes.get("declined", 0),
            "unsettledAtClient": outcomes.get("unsettled", 0),
            "reconciled": len(settled),
            "reconciledTo": {s: sum(1 for x in settled if x["to"] == s) for s in sorted({x["to"] for x in settled})},
            "orders": statuses,
            "awaitingWebhook": len(awaiting_webhook),
            "ledgerCharges": len(charges),
            "ledgerApproved": sum(1 for c in charges if c["status"] == "approved"),
            "psp": options.psp,
            "doubleCharges": double_charges,
            "connectionErrors": stats["connectionErrors"],
            "serverErrors": stats["serverErrors"],
            "clientTimeouts": stats["clientTimeouts"],
            "violations": len(violations),
            "payingSeconds": round(paying_seconds, 1),
            "seconds": round(time.monotonic() - started, 1),
            "seed": seed,
        }
        if options.server_kills > server.kills or options.processor_kills > processor.kills:
            violations.append("fewer kills than asked")
            figures["violations"] = len(violations)
        print(json.dumps(figures, sort_keys=True), flush=True)
    finally:
        server.stop()
        processor.stop()
    for violation in violations[:50]:
        log("VIOLATION: " + violation)
    if len(violations) > 50:
        log(f"... and {len(violations) - 50} more")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
