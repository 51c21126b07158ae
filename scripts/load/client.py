#!/usr/bin/env python3
"""The untimed side of scripts/load-test.sh and scripts/soak-test.sh (Python 3 standard library only).

  client.py prepare BASE DIR COUNT SHEETS APPLEPAY SANDBOX
      creates COUNT checkouts over one keep-alive connection, each priced by a sheet update (shipping contact),
      skips totals the sandbox processor declines on purpose, mints their tokens in one `applepay sandbox mint
      --batch` process, and writes DIR/payments.tsv (`path<TAB>body<TAB>secret` for bodies.lua, the secret being
      the checkout's client secret, its Checkout-Secret header) and DIR/checkouts.tsv (`id<TAB>total`); also SHEETS
      more checkouts for the sheet-update scenario, DIR/sheet.tsv
  client.py check BASE DIR
      reads the answers bodies.lua wrote (DIR/answers.K, DIR/replays.K, each in the order its answers came) and
      checks: every checkout answered exactly once, 200 success with an order of its own that reads back `paid`
      with its total over GET /v1/orders/{id}?secret=...; every replay (when posted) byte for byte its order's first
      answer, one per checkout.
      Prints one JSON line; exit 1 on any violation.
"""

import http.client
import json
import os
import subprocess
import sys
from decimal import Decimal
from urllib.parse import urlparse

SHIPPING_REGION = {"locality": "Cupertino", "administrativeArea": "CA", "postalCode": "95014", "countryCode": "US"}
SHIPPING_CONTACT = dict(
    SHIPPING_REGION, givenName="Ada", familyName="Lovelace", emailAddress="ada@example.com",
    phoneNumber="+1 408 555 0100", addressLines=["1 Infinite Loop"])
# The sandbox processor's test triggers: totals whose minor units end in these are declined, fail or hang.
TRIGGER_ENDINGS = {51, 52, 53, 54}


class Client:
    """One keep-alive connection; reconnects once if the server closed it."""

    def __init__(self, base, admin_token=None):
        url = urlparse(base)
        self.host, self.port = url.hostname, url.port
        self.admin_token = admin_token
        self.connection = None

    def call(self, method, path, body=None, admin=False, secret=None):
        """One request; `secret`: the checkout's client secret, sent as Checkout-Secret (its routes want it)."""
        data = None
        headers = {}
        if secret is not None:
            headers["Checkout-Secret"] = secret
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if admin:
            headers["Authorization"] = "Bearer " + self.admin_token
        for attempt in range(2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                self.connection.request(method, path, body=data, headers=headers)
                response = self.connection.getresponse()
                raw = response.read()
                return response.status, raw
            except (http.client.HTTPException, OSError):
                self.connection.close()
                self.connection = None
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def json(self, method, path, body=None, expect=200, admin=False, secret=None):
        status, raw = self.call(method, path, body, admin, secret)
        if status != expect:
            raise RuntimeError(f"{method} {path} answered {status}: {raw[:300]!r}")
        return json.loads(raw)


def minor_units(amount):
    return int((Decimal(amount) * 100).to_integral_value())


def create_checkouts(client, count, priced=True):
    """COUNT checkouts (id, total, currency, applicationData, client secret), priced by a shipping-contact update."""
    made = []
    i = 0
    while len(made) < count:
        i += 1
        items = [{"sku": "COFFEE-250", "quantity": i % 3 + 1}]
        if i % 2:
            items.append({"sku": "MUG-01", "quantity": 1})
        created = client.json("POST", "/v1/checkouts", {"items": items}, expect=201)
        checkout, secret = created["id"], created["clientSecret"]
        if priced:
            client.json("POST", f"/v1/checkouts/{checkout}/shipping-contact", SHIPPING_REGION, secret=secret)
            request = client.json("GET", f"/v1/checkouts/{checkout}", secret=secret)["paymentRequest"]
        else:
            request = created["paymentRequest"]
        total = request["total"]["amount"]
        if priced and minor_units(total) % 100 in TRIGGER_ENDINGS:
            continue  # the sandbox processor would decline, fail or hang on purpose
        made.append((checkout, total, request["currencyCode"], request["applicationData"], secret))
    return made


def mint(applepay, sandbox, folder, checkouts):
    """Tokens for CHECKOUTS from one `applepay sandbox mint --batch` process: {checkout: token JSON text}."""
    requests_path = os.path.join(folder, "mint-requests.jsonl")
    with open(requests_path, "w") as requests:
        for checkout, total, currency, application_data, _ in checkouts:
            requests.write(json.dumps({"name": checkout, "amount": total, "currency": currency,
                                       "applicationData": application_data}) + "\n")
    tokens = os.path.join(folder, "tokens")
    result = subprocess.run([applepay, "sandbox", "mint", sandbox, "--batch", requests_path, "--out-dir", tokens],
                            capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"sandbox mint --batch failed: {result.stderr}")
    bodies = {}
    for checkout, _, _, _, _ in checkouts:
        path = os.path.join(tokens, checkout + ".json")
        with open(path) as token:
            bodies[checkout] = json.dumps({"token": json.load(token), "shippingContact": SHIPPING_CONTACT},
                                          separators=(",", ":"))
        os.remove(path)
    return bodies


def prepare(base, folder, count, sheets, applepay, sandbox):
    client = Client(base)
    checkouts = create_checkouts(client, count)
    bodies = mint(applepay, sandbox, folder, checkouts)
    with open(os.path.join(folder, "payments.tsv"), "w") as payments, \
            open(os.path.join(folder, "checkouts.tsv"), "w") as listed:
        for checkout, total, _, _, secret in checkouts:
            payments.write(f"/v1/checkouts/{checkout}/payment\t{bodies[checkout]}\t{secret}\n")
            listed.write(f"{checkout}\t{total}\n")
    region = json.dumps(SHIPPING_REGION, separators=(",", ":"))
    with open(os.path.join(folder, "sheet.tsv"), "w") as sheet:
        for checkout, _, _, _, secret in create_checkouts(client, sheets, priced=False):
            sheet.write(f"/v1/checkouts/{checkout}/shipping-contact\t{region}\t{secret}\n")


def read_answers(folder, name):
    """Every answer bodies.lua wrote to DIR/NAME.K, in no particular order: [(status, body)]."""
    answers = []
    for entry in sorted(os.listdir(folder)):
        prefix, _, k = entry.rpartition(".")
        if prefix != name or not k.isdigit():
            continue
        with open(os.path.join(folder, entry), "rb") as lines:
            for line in lines:
                status, _, body = line.rstrip(b"\n").partition(b"\t")
                answers.append((int(status), body))
    return answers


def check(base, folder):
    client = Client(base)
    with open(os.path.join(folder, "checkouts.tsv")) as listed:
        checkouts = [line.rstrip("\n").split("\t") for line in listed]
    totals = dict(checkouts)
    violations = []
    # A thread's connections answer in any order: each answer is matched to its checkout by the order it names,
    # read back over the API. Every checkout needs exactly one answer, a success whose order is its own and paid
    # with its total.
    firsts, orders = {}, {}
    for status, body in read_answers(folder, "answers"):
        answer = json.loads(body) if body.startswith(b"{") else {}
        if status != 200 or answer.get("status") != "success":
            violations.append(f"a payment answered {status} {body[:200]!r}")
            continue
        order_id = answer["orderId"]
        order = client.json("GET", f"/v1/orders/{order_id}?secret={answer['orderSecret']}")
        checkout = order["checkoutId"]
        if checkout not in totals:
            violations.append(f"order {order_id}: checkout {checkout} was not paid in this run")
        elif checkout in firsts:
            violations.append(f"checkout {checkout} answered twice: {firsts[checkout]!r} and {body!r}")
        elif (order["status"], order["totals"]["total"]) != ("paid", totals[checkout]):
            violations.append(f"order {order_id} of {checkout}: {order['status']}, total {order['totals']['total']}"
                              f" (expected paid, {totals[checkout]})")
        else:
            firsts[checkout] = body
            orders[order_id] = checkout
    for checkout, _ in checkouts:
        if checkout not in firsts:
            violations.append(f"payment of {checkout}: no success answer")
    # The replays are checked when they were posted (load-test.sh; load-outside.sh posts none): each names an order
    # of this run and is byte for byte that order's first answer, one replay per checkout.
    replays = read_answers(folder, "replays")
    if replays:
        replayed = set()
        for status, body in replays:
            answer = json.loads(body) if body.startswith(b"{") else {}
            checkout = orders.get(answer.get("orderId"))
            if checkout is None or body != firsts[checkout] or status != 200:
                violations.append(f"a replay answered {status} {body[:200]!r}, not a first answer")
            elif checkout in replayed:
                violations.append(f"checkout {checkout} replayed twice")
            else:
                replayed.add(checkout)
        for checkout, _ in checkouts:
            if checkout in firsts and checkout not in replayed:
                violations.append(f"replay of {checkout}: no answer")
    if len(orders) != len(checkouts) and not violations:
        violations.append(f"{len(checkouts)} checkouts paid with {len(orders)} distinct orders")
    print(json.dumps({"scenario": "answers", "payments": len(checkouts), "paidOnce": not violations,
                      "replaysMatch": not violations, "violations": len(violations)}), flush=True)
    for violation in violations[:20]:
        print(f"load-test: VIOLATION: {violation}", file=sys.stderr)
    return 1 if violations else 0


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "prepare" and len(sys.argv) == 8:
        base, folder, count, sheets, applepay, sandbox = sys.argv[2:]
        prepare(base, folder, int(count), int(sheets), applepay, sandbox)
        return 0
    if command == "check" and len(sys.argv) == 4:
        return check(sys.argv[2], sys.argv[3])
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main())
