"""The fakes catch what they are there to catch: a request that breaks the provider's spec is recorded as a
mismatch (and answered 400), one without its idempotency key too, and a valid one is not. They also behave as the
provider does with idempotency keys (Stripe's checked here: the first answer replayed byte for byte however the
object changed since, 409 `idempotency_key_in_use` while the first request runs, 400 `idempotency_error` for the
key reused with other parameters). Prints JSON; exits 1 when a fake misses one. Usage: fake_selftest.py PROVIDER"""
import base64
import json
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

provider = sys.argv[1]


def exchange(port, path, body, headers):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body, headers=headers,
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def send(port, path, body, headers):
    return exchange(port, path, body, headers)[0]


cases = []
if provider == "stripe":
    from stripe_fake import StripeFake
    fake = StripeFake("sk_test_self")
    form = {"Authorization": "Bearer sk_test_self", "Content-Type": "application/x-www-form-urlencoded",
            "Stripe-Version": "2023-08-16"}
    cases = [
        ("valid", "/v1/payment_intents", b"amount=100&currency=usd&payment_method_types[0]=card",
         dict(form, **{"Idempotency-Key": "a"}), False),
        ("amount not a number", "/v1/payment_intents", b"amount=ten&currency=usd", dict(form, **{"Idempotency-Key": "b"}), True),
        ("unknown parameter", "/v1/payment_intents", b"amount=100&currency=usd&colour=red",
         dict(form, **{"Idempotency-Key": "c"}), True),
        ("no idempotency key", "/v1/payment_intents", b"amount=100&currency=usd", form, True),
        ("JSON instead of a form", "/v1/payment_intents", b'{"amount": 100}',
         {"Authorization": "Bearer sk_test_self", "Content-Type": "application/json", "Idempotency-Key": "d"}, True),
        ("pk_token not a token", "/v1/tokens", b"pk_token=%7B%7D", dict(form, **{"Idempotency-Key": "e"}), True),
        ("no Stripe-Version", "/v1/payment_intents", b"amount=100&currency=usd&payment_method_types[0]=card",
         {k: v for k, v in dict(form, **{"Idempotency-Key": "f"}).items() if k != "Stripe-Version"}, True),
    ]
elif provider == "checkout":
    from checkout_fake import CheckoutFake
    fake = CheckoutFake("sk_sbox_self")
    js = {"Authorization": "Bearer sk_sbox_self", "Content-Type": "application/json"}
    valid = {"source": {"type": "token", "token": "tok_ubfj2q76miwundwlk72vxt2i7q"}, "amount": 100, "currency": "USD",
             "processing_channel_id": "pc_fakechannel000000000000000", "reference": "x"}
    cases = [
        ("valid shape, unknown token", "/payments", json.dumps(valid).encode(), dict(js, **{"Cko-Idempotency-Key": "a"}), False),
        ("amount not a number", "/payments", json.dumps(dict(valid, amount="ten")).encode(),
         dict(js, **{"Cko-Idempotency-Key": "b"}), True),
        ("source of no type", "/payments", json.dumps(dict(valid, source={"token": "x"})).encode(),
         dict(js, **{"Cko-Idempotency-Key": "c"}), True),
        ("no idempotency key", "/payments", json.dumps(valid).encode(), js, True),
        ("token of no token_data", "/tokens", json.dumps({"type": "applepay"}).encode(),
         dict(js, Authorization="Bearer pk_sbox_fake_public"), True),
        ("token with the secret key", "/tokens", json.dumps({"type": "applepay", "token_data": {
            "version": "EC_v1", "data": "x", "signature": "y", "header": {}}}).encode(), js, True),
    ]
else:
    from adyen_fake import AdyenFake
    fake = AdyenFake("AQEself", "ExampleECOM")
    js = {"X-API-Key": "AQEself", "Content-Type": "application/json"}
    valid = {"merchantAccount": "ExampleECOM", "reference": "x", "amount": {"currency": "USD", "value": 100},
             "returnUrl": "https://shop.example/",
             "paymentMethod": {"type": "applepay", "applePayToken": base64.b64encode(json.dumps(
                 {"version": "EC_v1", "data": "x", "signature": "y", "header": {}}).encode()).decode()}}
    cases = [
        ("valid", "/v71/payments", json.dumps(valid).encode(), dict(js, **{"Idempotency-Key": "a"}), False),
        ("amount not a number", "/v71/payments",
         json.dumps(dict(valid, amount={"currency": "USD", "value": "ten"})).encode(), dict(js, **{"Idempotency-Key": "b"}), True),
        ("no merchant account", "/v71/payments",
         json.dumps({k: v for k, v in valid.items() if k != "merchantAccount"}).encode(), dict(js, **{"Idempotency-Key": "c"}), True),
        ("no idempotency key", "/v71/payments", json.dumps(valid).encode(), js, True),
        ("applePayToken not a token", "/v71/payments", json.dumps(dict(valid, paymentMethod={
            "type": "applepay", "applePayToken": "eyJ2ZXJzaW9uIjoiRUNfdjEifQ=="})).encode(),
         dict(js, **{"Idempotency-Key": "d"}), True),
        ("key longer than 64", "/v71/payments", json.dumps(valid).encode(), dict(js, **{"Idempotency-Key": "k" * 65}), True),
    ]

port = fake.serve()
report = {"provider": provider, "cases": {}, "missed": []}
for name, path, body, headers, bad in cases:
    before = len(fake.mismatches)
    status = send(port, path, body, headers)
    caught = len(fake.mismatches) > before
    report["cases"][name] = {"status": status, "mismatch": caught}
    if caught != bad:
        report["missed"].append({"case": name, "mismatches": fake.mismatches[before:]})
if provider == "stripe":
    create = b"amount=100&currency=usd&payment_method_types[0]=card"
    keyed = lambda key: dict(form, **{"Idempotency-Key": key})
    first = exchange(port, "/v1/payment_intents", create, keyed("replay"))
    intent = json.loads(first[1])["id"]
    exchange(port, "/v1/payment_intents/%s/cancel" % intent, b"", keyed("cancel-replay"))
    again = exchange(port, "/v1/payment_intents", create, keyed("replay"))
    report["cases"]["first answer replayed byte for byte"] = {"same": again == first}
    other = exchange(port, "/v1/payment_intents", b"amount=200&currency=usd&payment_method_types[0]=card",
                     keyed("replay"))
    report["cases"]["key reused with other parameters"] = {"status": other[0]}
    fake.faults.append({"path": "/v1/payment_intents", "kind": "hold", "seconds": 1, "times": 1})
    held = []
    thread = threading.Thread(target=lambda: held.append(exchange(port, "/v1/payment_intents", create, keyed("held"))))
    thread.start()
    time.sleep(0.3)
    meanwhile = exchange(port, "/v1/payment_intents", create, keyed("held"))
    thread.join()
    report["cases"]["key in use while the first runs"] = {"status": meanwhile[0], "first": held[0][0]}
    if again != first or json.loads(again[1])["status"] != "requires_payment_method":
        report["missed"].append({"case": "first answer replayed byte for byte"})
    if other[0] != 400 or json.loads(other[1])["error"]["type"] != "idempotency_error":
        report["missed"].append({"case": "key reused with other parameters", "answer": other[1].decode()})
    if meanwhile[0] != 409 or json.loads(meanwhile[1])["error"]["code"] != "idempotency_key_in_use" \
            or held[0][0] != 200:
        report["missed"].append({"case": "key in use while the first runs", "answers": [meanwhile[0], held[0][0]]})

    # Stripe's Customer rule: a PaymentMethod used once without a Customer is refused the second time; one saved to
    # a Customer (customer + setup_future_usage) is charged again off-session through that Customer.
    def method(key):
        token = json.dumps({"version": "EC_v1", "data": "x", "signature": "y", "header": {}})
        made = exchange(port, "/v1/tokens", urllib.parse.urlencode({"pk_token": token}).encode(), keyed("tok-" + key))
        body = urllib.parse.urlencode({"type": "card", "card[token]": json.loads(made[1])["id"]}).encode()
        return json.loads(exchange(port, "/v1/payment_methods", body, keyed("pm-" + key))[1])["id"]

    def charge(key, **fields):
        body = dict({"amount": "100", "currency": "usd", "payment_method_types[0]": "card", "confirm": "true"},
                    **fields)
        status, answer = exchange(port, "/v1/payment_intents", urllib.parse.urlencode(body).encode(), keyed(key))
        return status, json.loads(answer)

    bare = method("bare")
    first = charge("bare-1", payment_method=bare)
    reused = charge("bare-2", payment_method=bare, off_session="true")
    report["cases"]["a method used without a Customer is not reused"] = {"first": first[0], "again": reused[0]}
    if first[0] != 200 or reused[0] != 400 or "without being attached to a Customer" not in \
            reused[1]["error"].get("message", ""):
        report["missed"].append({"case": "a method used without a Customer is not reused", "answers": [first, reused]})
    status, customer = exchange(port, "/v1/customers", b"metadata[transaction_id]=tx", keyed("cus"))
    customer = json.loads(customer)["id"]
    saved = method("saved")
    first = charge("saved-1", payment_method=saved, customer=customer, setup_future_usage="off_session")
    renewed = charge("saved-2", payment_method=saved, customer=customer, off_session="true")
    without = charge("saved-3", payment_method=saved, off_session="true")
    report["cases"]["a method saved to a Customer is charged again through it"] = {
        "first": first[0], "renewal": renewed[0], "without the customer": without[0]}
    if status != 200 or first[0] != 200 or renewed[0] != 200 or renewed[1]["status"] != "succeeded" \
            or without[0] != 400:
        report["missed"].append({"case": "a method saved to a Customer is charged again through it",
                                 "answers": [first, renewed, without]})
    before = len(fake.mismatches)
    send(port, "/v1/customers", b"metadata[transaction_id]=tx&colour=red", keyed("cus-bad"))
    report["cases"]["customer with an undocumented parameter"] = {"mismatch": len(fake.mismatches) > before}
    if len(fake.mismatches) == before:
        report["missed"].append({"case": "customer with an undocumented parameter"})
    if len(fake.mismatches) > before + 1:
        report["missed"].append({"case": "the Customer rule's requests", "mismatches": fake.mismatches[before:]})
if provider == "checkout":
    body = json.dumps(dict(valid, reference="held")).encode()
    fake.faults.append({"path": "/payments", "kind": "hold", "seconds": 1, "times": 1})
    held = []
    thread = threading.Thread(target=lambda: held.append(
        exchange(port, "/payments", body, dict(js, **{"Cko-Idempotency-Key": "held"}))))
    thread.start()
    time.sleep(0.3)
    meanwhile = exchange(port, "/payments", body, dict(js, **{"Cko-Idempotency-Key": "held"}))
    thread.join()
    report["cases"]["key in use while the first runs"] = {"status": meanwhile[0], "first": held[0][0]}
    if meanwhile[0] != 429 or json.loads(meanwhile[1])["error_codes"] != ["duplicate_request"]:
        report["missed"].append({"case": "key in use while the first runs", "answers": [meanwhile[0], held[0][0]]})
fake.stop()
print(json.dumps(report, indent=1))
sys.exit(1 if report["missed"] else 0)
