"""A fake of Checkout.com's payments API as its spec in Tests/Fixtures/psp/checkout documents it (the current
"NAS" multi-file spec, bundled here the way its build does: paths/a@b.yaml is /a/b, components/<kind>/**/X.yaml is
#/components/<kind>/X). Every request is validated against its operation's requestBody schema (discriminators
followed), every answer against the documented response schema; an idempotency store on `Cko-Idempotency-Key`;
`/tokens` authenticated with the public key (as the spec says), the rest with the secret key; payments by id,
voids and refunds as actions.

As Checkout.com behaves, beyond the spec's shapes:
- a payment taken by `/_fake/async` answers `202` `status: Pending` ("Payment asynchronous or further action
  required", `paths/payments.yaml`) and stays Pending until `decide` gives the signed `payment_approved` /
  `payment_declined` webhook;
- a refund answers `202 Refund accepted` (`paths/payments@{id}@refunds.yaml`) and stays pending until
  `decide_refund` gives `payment_refunded` / `payment_refund_declined`
  (https://www.checkout.com/docs/previous/reporting-and-insights/webhooks/webhook-examples/payment_pending shows
  the event shape);
- `GET /payments?reference=REF` lists the payments of a reference ("Get payment lists", `paths/payments.yaml`);
- the first 2xx answer for a `Cko-Idempotency-Key` comes back byte for byte; a 4xx is not kept; a request sent
  while one with the same key still runs is answered 429 `duplicate_request`
  (https://www.checkout.com/docs/developer-resources/api/idempotency);
- webhooks are signed as the merchant server checks them: `Cko-Signature`, the hex HMAC-SHA256 of the raw body
  under the webhook secret.
"""
import copy
import glob
import hashlib
import hmac
import itertools
import json
import os
import re
import time
import urllib.parse

import yaml

from fake_common import Answer, Fake, Spec, SpecMismatch

VECTORS = os.environ.get("PSP_VECTORS", os.path.join(os.path.dirname(__file__), "../../../Fixtures/psp"))
PUBLIC_KEY = "pk_sbox_fake_public"


LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(path):
    with open(path) as file:
        return yaml.load(file, Loader=LOADER)


def bundle(root):
    """The spec as one document. A file YAML cannot read (the spec has one with a tab) is left out: a reference to
    it then fails validation, so it can only matter if our requests or answers use it."""
    document = load(os.path.join(root, "swagger.yaml"))
    document["paths"] = {}
    for path in glob.glob(os.path.join(root, "paths", "*.yaml")):
        name = os.path.basename(path)[:-5]
        if name.startswith("_"):
            continue
        document["paths"]["/" + name.replace("@", "/")] = load(path)
    components = {}
    for kind in ("schemas", "parameters", "responses", "headers", "securitySchemes"):
        for path in glob.glob(os.path.join(root, "components", kind, "**", "*.yaml"), recursive=True):
            try:
                components.setdefault(kind, {})[os.path.basename(path)[:-5]] = load(path)
            except yaml.YAMLError:
                continue
    document["components"] = components
    return document


def timestamp(offset=0):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + offset))


class CheckoutFake(Fake):
    name = "checkout"
    idempotency_header = "Cko-Idempotency-Key"
    charge_path = "/payments"
    refund_path = "/payments/*/refunds"
    void_suffixes = ("/voids",)
    settles_by_look_up = True

    def __init__(self, secret):
        super().__init__(secret)
        self.spec = Spec(bundle(os.path.join(VECTORS, "checkout/api-reference-2023-07/nas_spec")))
        with open(os.path.join(VECTORS, "checkout/examples/checkout-payment-response-201-approved.json")) as file:
            self.approved_example = json.load(file)
        self.counter = itertools.count(1)
        self.payments, self.tokens, self.actions = {}, {}, []

    def new_id(self, prefix):
        return "%s_%s" % (prefix, ("fake%022d" % next(self.counter)))

    def authorised(self, headers):
        return headers.get("authorization") in ("Bearer " + self.credentials, "Bearer " + PUBLIC_KEY)

    def error_body(self, status):
        return None

    def ledger_charges(self):
        """Every payment as the crash test reads a ledger."""
        with self.lock:
            return [{"idempotencyKey": p.get("metadata", {}).get("transaction_id"), "reference": p["id"],
                     "status": "approved" if p["approved"] else "processing" if p["status"] == "Pending"
                     else "declined", "amount": p["amount"],
                     "currencyCode": p["currency"]} for p in self.payments.values()]

    # -- validation
    def validate_request(self, method, path, headers, raw):
        template, operation = self.spec.operation(method, path)
        key = "Bearer " + (PUBLIC_KEY if template == "/tokens" else self.credentials)
        if headers.get("authorization") != key:
            raise SpecMismatch("%s takes the %s key" % (template, "public" if template == "/tokens" else "secret"))
        if method == "GET":
            return
        if headers.get("content-type") != "application/json":
            raise SpecMismatch("Checkout.com takes JSON bodies")
        if template != "/tokens" and not headers.get("cko-idempotency-key"):
            raise SpecMismatch("a payment request without Cko-Idempotency-Key")
        body = json.loads(raw or b"null")
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        if template == "/payments":
            schema = {"$ref": "#/components/schemas/PaymentRequest"}  # not a payout
        self.spec.validate(schema, body, "request body")
        if template == "/tokens" and (body.get("type") != "applepay" or
                                      set(body.get("token_data", {})) != {"version", "data", "signature", "header"}):
            raise SpecMismatch("an Apple Pay token request needs type applepay and the whole token_data")

    def validate_answer(self, method, path, answer):
        template, operation = self.spec.operation(method, path)
        schema = self.spec.response_schema(operation, answer.status)
        if template == "/payments" and method == "POST" and answer.status == 202:
            schema = {"$ref": "#/components/schemas/PaymentAcceptedResponse"}  # not a payout's (oneOf is ambiguous)
        if template == "/payments/{id}" and answer.status == 200:
            schema = {"$ref": "#/components/schemas/PaymentDetails"}  # likewise: a Pending payment fits both
        if schema is not None and answer.body is not None:
            self.spec.validate(schema, answer.body, "answer %d" % answer.status)

    def conflict(self, key):
        return Answer(409, None)

    # Checkout.com keeps only a request processed successfully (2xx) for its key; a concurrent request with the key
    # is answered 429 (https://www.checkout.com/docs/developer-resources/api/idempotency), with the spec's 429 body.
    def saves(self, answer):
        return 200 <= answer.status < 300

    def in_use(self, key):
        return Answer(429, {"request_id": self.new_id("req"), "error_type": "request_invalid",
                            "error_codes": ["duplicate_request"]})

    # -- the API
    def handle(self, method, path, query, headers, raw):
        if method == "GET":
            if path == "/payments":
                reference = dict(urllib.parse.parse_qsl(query)).get("reference")
                found = [self.details(p) for p in reversed(list(self.payments.values()))
                         if p.get("reference") == reference]
                return Answer(200, {"limit": 10, "skip": 0, "total_count": len(found), "data": found[:10]})
            match = re.fullmatch(r"/payments/([^/]+)", path)
            if match and match.group(1) in self.payments:
                return Answer(200, self.details(self.payments[match.group(1)]))
            match = re.fullmatch(r"/payments/([^/]+)/actions", path)
            if match and match.group(1) in self.payments:
                return Answer(200, self.payment_actions(self.payments[match.group(1)]))
            return Answer(404, None)
        body = json.loads(raw)
        if path == "/tokens":
            token = {"type": "applepay", "token": self.new_id("tok"), "expires_on": timestamp(900),
                     "expiry_month": 12, "expiry_year": 2030, "last4": "4242", "bin": "424242",
                     "token_format": "cryptogram_3ds"}
            self.tokens[token["token"]] = token
            return Answer(201, token)
        return self.idempotent_json(headers, path, body)

    def post(self, path, body):
        if path == "/payments":
            return self.pay(body)
        match = re.fullmatch(r"/payments/([^/]+)/(voids|refunds)", path)
        if not match or match.group(1) not in self.payments:
            return Answer(404, None)
        payment = self.payments[match.group(1)]
        action = {"action_id": self.new_id("act"), "reference": body.get("reference", ""),
                  "_links": {"payment": {"href": "https://api.sandbox.checkout.com/payments/" + payment["id"]}}}
        if match.group(2) == "voids":
            if not payment["approved"] or payment["balances"]["total_refunded"] or payment["status"] == "Voided":
                return Answer(403, None)
            payment["status"] = "Voided"
            payment["balances"]["total_voided"] = payment["amount"]
        else:
            amount = body.get("amount", payment["amount"] - payment["balances"]["total_refunded"])
            if not payment["approved"] or payment["status"] == "Voided" or \
                    amount > payment["amount"] - payment["balances"]["total_refunded"]:
                return Answer(422, {"request_id": self.new_id("req"), "error_type": "request_invalid",
                                    "error_codes": ["refund_amount_exceeds_balance"]})
            action["amount"] = amount
            action["pending"] = True  # until decide_refund: 202 "Refund accepted"
            payment["balances"]["total_refunded"] += amount
            payment["status"] = "Refunded" if payment["balances"]["total_refunded"] == payment["amount"] \
                else "Partially Refunded"
        self.actions.append(dict(action, type=match.group(2), payment=payment["id"]))
        return Answer(202, {k: v for k, v in action.items() if k not in ("amount", "pending")})

    def pay(self, body):
        source = body["source"]
        if source["type"] == "token" and source["token"] not in self.tokens:
            return Answer(422, {"request_id": self.new_id("req"), "error_type": "request_invalid",
                                "error_codes": ["token_invalid"]})
        if source["type"] == "token":
            self.tokens.pop(source["token"])  # single use
        if source["type"] == "id" and not any(p["source"].get("id") == source["id"] for p in self.payments.values()):
            return Answer(422, {"request_id": self.new_id("req"), "error_type": "request_invalid",
                                "error_codes": ["source_id_invalid"]})
        payment = copy.deepcopy(self.approved_example)
        decline = self.take_decline()
        payment.update(id=self.new_id("pay"), action_id=self.new_id("act"), amount=body["amount"],
                       currency=body["currency"], reference=body.get("reference"), processed_on=timestamp(),
                       expires_on=timestamp(30 * 86400), metadata=body.get("metadata", {}))
        payment["source"]["id"] = payment["source"]["id"] if source["type"] == "id" else self.new_id("src")
        if self.take_async("charge"):
            payment["source"].update(card_type="Credit", card_category="Consumer")  # as below
            payment.update(approved=False, status="Pending", response_code=None, response_summary=None)
            for field in ("auth_code", "response_code", "response_summary"):
                payment.pop(field, None)
            payment["balances"] = {"total_authorized": 0, "total_voided": 0, "available_to_void": 0,
                                   "total_captured": 0, "available_to_capture": 0, "total_refunded": 0,
                                   "available_to_refund": 0}
            payment["_links"] = {k: {"href": "https://api.sandbox.checkout.com/payments/%s%s" % (payment["id"], suffix)}
                                 for k, suffix in (("self", ""), ("actions", "/actions"))}
            self.payments[payment["id"]] = payment
            return Answer(202, {"id": payment["id"], "status": "Pending", "reference": payment.get("reference"),
                                "_links": {"self": payment["_links"]["self"]}})
        # Checkout.com's example says CREDIT and CONSUMER; its spec's enums say Credit and Consumer.
        payment["source"].update(card_type="Credit", card_category="Consumer")
        if decline:
            codes = {"insufficient_funds": ("20051", "Insufficient Funds")}
            code, summary = codes.get(decline.get("reason"), ("20005", "Declined - Do Not Honour"))
            payment.update(approved=False, status="Declined", response_code=code, response_summary=summary)
            payment.pop("auth_code", None)
        else:
            payment.update(approved=True, status="Authorized", response_code="10000", response_summary="Approved")
        payment["balances"] = {"total_authorized": body["amount"] if payment["approved"] else 0, "total_voided": 0,
                               "available_to_void": 0, "total_captured": 0, "available_to_capture": 0,
                               "total_refunded": 0, "available_to_refund": 0}
        links = {k: {"href": "https://api.sandbox.checkout.com/payments/%s%s" % (payment["id"], suffix)}
                 for k, suffix in (("self", ""), ("actions", "/actions"))}
        payment["_links"] = links
        self.payments[payment["id"]] = payment
        return Answer(201, self.public(payment))

    @staticmethod
    def public(payment):
        # `balances` is left out: the spec's PaymentResponseBalances requires an `id` no real answer has.
        return {k: v for k, v in payment.items() if k not in ("metadata", "balances")}

    # -- asynchronous outcomes, decided later
    def webhook(self, event_type, data, secret="checkout-webhook-secret"):
        body = json.dumps({"id": self.new_id("evt"), "type": event_type, "version": "1.0.33",
                           "created_on": timestamp(), "data": data}).encode()
        signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return {"Content-Type": "application/json", "Cko-Signature": signature}, body

    def decide(self, transaction_id, approved=True):
        """The Pending payment of `transaction_id` approved (Authorized) or declined, and its webhook."""
        with self.lock:
            payment = next(p for p in self.payments.values()
                           if p.get("metadata", {}).get("transaction_id") == transaction_id
                           and p["status"] == "Pending")
            if approved:
                payment.update(approved=True, status="Authorized", response_code="10000", response_summary="Approved")
                payment["balances"]["total_authorized"] = payment["amount"]
            else:
                payment.update(status="Declined", response_code="20005", response_summary="Declined - Do Not Honour")
            data = {"id": payment["id"], "action_id": self.new_id("act"), "reference": payment.get("reference"),
                    "amount": payment["amount"], "currency": payment["currency"], "processed_on": timestamp(),
                    "metadata": payment.get("metadata", {})}
            if not approved:
                data["response_summary"] = payment["response_summary"]
            return self.webhook("payment_approved" if approved else "payment_declined", data)

    def stale_failure(self, transaction_id):
        """A `payment_declined` of the payment of `transaction_id`, delivered late and out of order."""
        with self.lock:
            payment = next(p for p in self.payments.values()
                           if p.get("metadata", {}).get("transaction_id") == transaction_id)
            data = {"id": payment["id"], "action_id": self.new_id("act"), "reference": payment.get("reference"),
                    "amount": payment["amount"], "currency": payment["currency"], "processed_on": timestamp(),
                    "response_summary": "Declined - Do Not Honour", "metadata": payment.get("metadata", {})}
        return self.webhook("payment_declined", data)

    def decide_refund(self, refund_key, succeeded=True):
        """The pending refund whose reference is `refund_key` (cut to 50) decided, and its webhook."""
        with self.lock:
            action = next(a for a in self.actions if a["type"] == "refunds" and a.get("pending")
                          and a["reference"] == refund_key[:50])
            action["pending"] = False
            action["approved"] = succeeded
            payment = self.payments[action["payment"]]
            if not succeeded:
                payment["balances"]["total_refunded"] -= action["amount"]
            data = {"id": payment["id"], "action_id": action["action_id"], "reference": action["reference"],
                    "amount": action["amount"], "currency": payment["currency"], "processed_on": timestamp(),
                    "metadata": payment.get("metadata", {})}
            return self.webhook("payment_refunded" if succeeded else "payment_refund_declined", data)

    def details(self, payment):
        return {"id": payment["id"], "requested_on": payment["processed_on"], "source": payment["source"],
                "amount": payment["amount"], "currency": payment["currency"], "payment_type": "Regular",
                "reference": payment.get("reference"), "status": payment["status"], "approved": payment["approved"],
                "metadata": payment.get("metadata", {}), "_links": payment["_links"]}

    def payment_actions(self, payment):
        """`GET /payments/{id}/actions` ("Get payment actions", https://api-reference.checkout.com/#operation/
        getPaymentActions): the authorization, then each decided void and refund with whether it was approved. A
        refund still being processed (202 Accepted, no webhook yet) is not listed as decided."""
        code = lambda approved: ("10000", "Approved") if approved else ("20005", "Declined - Do Not Honour")
        actions = [{"id": self.new_id("act"), "type": "Authorization", "processed_on": payment["processed_on"],
                    "amount": payment["amount"], "approved": payment["approved"],
                    "response_code": code(payment["approved"])[0], "response_summary": code(payment["approved"])[1]}]
        for action in self.actions:
            if action["payment"] != payment["id"] or action.get("pending"):
                continue
            approved = action.get("approved", True)
            actions.append({"id": action["action_id"], "type": "Refund" if action["type"] == "refunds" else "Void",
                            "processed_on": payment["processed_on"], "amount": action.get("amount", payment["amount"]),
                            "approved": approved, "response_code": code(approved)[0],
                            "response_summary": code(approved)[1], "reference": action["reference"]})
        return actions

    def state(self):
        return {"payments": list(self.payments.values()), "actions": self.actions}
