"""A fake of Stripe's PaymentIntents API as the spec in Tests/Fixtures/psp/stripe documents it: form-encoded
requests validated against each operation's requestBody schema (values coerced as the schema types them),
answers built from Stripe's own fixtures and validated against the response schemas, an idempotency store (a key
reused with other parameters is Stripe's `idempotency_error`), PaymentIntents, tokens, PaymentMethods, refunds.

Not in Stripe's public spec and accepted by name only: `pk_token`, `pk_token_instrument_name`,
`pk_token_payment_network`, `pk_token_transaction_id` on /v1/tokens (what Stripe's iOS SDK sends), and
`payment_method_options[card][network_token][cryptogram|electronic_commerce_indicator]` on a confirmation, and
`card[tokenization_method|cryptogram|eci]` on /v1/tokens: a merchant-decrypted Apple Pay token as a network token
(enabled per account; ActiveMerchant's Stripe Payment Intents gateway sends it so, `tokenize_apple_google`,
https://github.com/activemerchant/active_merchant/blob/master/lib/active_merchant/billing/gateways/stripe_payment_intents.rb).
A device PAN sent as a plain `card[number]` (a PaymentMethod, or a card token without `tokenization_method`) is
refused: it is a network token, and Stripe would treat it as a card number typed in.

As Stripe behaves, beyond the spec:
- every request must pin `Stripe-Version` to the spec's `info.version` (Stripe recommends naming the version on
  each request, https://docs.stripe.com/upgrades);
- a key whose first request is still executing is refused with 409 `idempotency_key_in_use` and nothing is saved
  (https://docs.stripe.com/idempotency: "the request conflicts with another that's executing concurrently");
- a PaymentIntent confirmed by `/_fake/async` stays `processing` (an asynchronous payment,
  https://docs.stripe.com/docs/payments/paymentintents/lifecycle) and a refund `pending` until `decide` gives the
  signed `payment_intent.succeeded` / `.payment_failed` or `refund.updated` / `refund.failed` webhook;
- a PaymentIntent is cancelled only before it is confirmed: `succeeded`, `processing` and `canceled` refuse
  (https://docs.stripe.com/api/payment_intents/cancel);
- a PaymentMethod is reused only through the Customer it is attached to: a PaymentIntent confirmed with `customer`
  and `setup_future_usage` attaches its method to that Customer once it is confirmed
  (https://docs.stripe.com/api/payment_intents/create#create_payment_intent-setup_future_usage), and a later payment
  names both `customer` and `payment_method` (https://docs.stripe.com/payments/save-during-payment). A method used
  once without a Customer is refused with Stripe's `invalid_request_error` "This PaymentMethod was previously used
  without being attached to a Customer or was detached from a Customer, and may not be used again."
  (https://docs.stripe.com/api/payment_methods/attach); one attached to a Customer is refused for a payment that does
  not name that Customer.

`POST /v1/customers` is not in the spec subset (its Customer object is, `components.schemas.customer`): its form
fields are checked against the parameters the API reference documents (https://docs.stripe.com/api/customers/create,
`CUSTOMER_CREATE_PARAMETERS`), its answer against the Customer schema.
"""
import copy
import hashlib
import hmac
import itertools
import json
import os
import re
import time
import urllib.parse

from fake_common import Answer, Fake, Spec, SpecMismatch

VECTORS = os.environ.get("PSP_VECTORS", os.path.join(os.path.dirname(__file__), "../../../Fixtures/psp"))

PK_TOKEN_FIELDS = ("pk_token", "pk_token_instrument_name", "pk_token_payment_network", "pk_token_transaction_id")
NETWORK_TOKEN_FIELDS = ("cryptogram", "electronic_commerce_indicator")
CARD_TOKEN_FIELDS = ("tokenization_method", "cryptogram", "eci")
# The parameters of "Create a customer" (https://docs.stripe.com/api/customers/create) and the form type of each:
# str, int, or dict (an object or a list, checked no further: the connector sends none of them).
CUSTOMER_CREATE_PARAMETERS = {
    "address": dict, "balance": int, "cash_balance": dict, "coupon": str, "description": str, "email": str,
    "expand": dict, "invoice_prefix": str, "invoice_settings": dict, "metadata": dict, "name": str,
    "next_invoice_sequence": int, "payment_method": str, "phone": str, "preferred_locales": dict,
    "promotion_code": str, "shipping": dict, "source": str, "tax": dict, "tax_exempt": str, "tax_id_data": dict,
    "test_clock": str,
}
REUSED_WITHOUT_CUSTOMER = ("This PaymentMethod was previously used without being attached to a Customer or was "
                           "detached from a Customer, and may not be used again.")


def parse_form(raw):
    """`a[b][0]=v&…` into nested dicts (lists stay dicts with digit keys until the schema says array)."""
    result = {}
    for name, value in urllib.parse.parse_qsl(raw.decode(), keep_blank_values=True, strict_parsing=bool(raw)):
        parts = re.findall(r"[^\[\]]+", name)
        if not parts or name.count("[") != name.count("]"):
            raise SpecMismatch("malformed form field name %r" % name)
        node = result
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise SpecMismatch("form field %r given twice with different shapes" % name)
        if parts[-1] in node:
            raise SpecMismatch("form field %r given twice" % name)
        node[parts[-1]] = value
    return result


class StripeFake(Fake):
    name = "stripe"
    idempotency_header = "Idempotency-Key"
    # The request that charges, for fault injection; Stripe's lost answers are settled by looking up.
    charge_path = "/v1/payment_intents/*/confirm"
    refund_path = "/v1/refunds"
    void_suffixes = ("/cancel",)
    settles_by_look_up = True

    def ledger_charges(self):
        """Every PaymentIntent as the crash test reads a ledger: one per transaction id."""
        with self.lock:
            return [{"idempotencyKey": i["metadata"].get("transaction_id"), "reference": i["id"],
                     "status": "approved" if i["status"] == "succeeded" else i["status"], "amount": i["amount"],
                     "currencyCode": i["currency"].upper()} for i in self.intents.values()]

    def __init__(self, secret):
        super().__init__(secret)
        self.spec = Spec(json.load(open(os.path.join(VECTORS, "stripe/spec3-subset-2023-09-12.json"))))
        self.fixtures = json.load(open(os.path.join(VECTORS, "stripe/fixtures3-2023-09-12.json")))["resources"]
        self.counter = itertools.count(1)
        self.intents, self.tokens, self.methods, self.refunds, self.customers = {}, {}, {}, {}, {}
        self.used_methods = set()  # PaymentMethods a PaymentIntent was confirmed with

    def new_id(self, prefix):
        return "%s_fake%08d" % (prefix, next(self.counter))

    def authorised(self, headers):
        return headers.get("authorization") == "Bearer " + self.credentials

    def unauthorised_body(self):
        return {"error": {"type": "invalid_request_error", "message": "Invalid API Key provided."}}

    def error_body(self, status):
        return {"error": {"type": "api_error", "message": "status %d" % status}}

    # -- validation
    def coerce(self, schema, value):
        schema = self.spec.resolve(schema or {})
        if "anyOf" in schema:
            for alternative in schema["anyOf"]:
                candidate = self.coerce(alternative, value)
                try:
                    self.spec.validate(alternative, candidate, "alternative")
                    return candidate
                except SpecMismatch:
                    continue
            return value
        kind = schema.get("type")
        if isinstance(value, str):
            if kind == "integer" and re.fullmatch(r"-?\d+", value):
                return int(value)
            if kind == "boolean" and value in ("true", "false"):
                return value == "true"
            return value
        if isinstance(value, dict):
            if kind == "array" and all(k.isdigit() for k in value):
                ordered = [value[k] for k in sorted(value, key=int)]
                if sorted(value, key=int) != [str(i) for i in range(len(value))]:
                    raise SpecMismatch("array indexes are not 0..n-1")
                return [self.coerce(schema.get("items"), v) for v in ordered]
            properties = schema.get("properties", {})
            extra = schema.get("additionalProperties")
            return {k: self.coerce(properties.get(k, extra if isinstance(extra, dict) else {}), v)
                    for k, v in value.items()}
        return value

    @staticmethod
    def validate_customer_form(form):
        """A `POST /v1/customers` body against the parameters the API reference documents (not in the spec subset);
        metadata within Stripe's limits (50 keys of up to 40 characters, values up to 500:
        https://docs.stripe.com/metadata)."""
        for name, value in form.items():
            kind = CUSTOMER_CREATE_PARAMETERS.get(name)
            if kind is None:
                raise SpecMismatch("Create a customer has no parameter %r" % name)
            if kind is int and not (isinstance(value, str) and re.fullmatch(r"-?\d+", value)):
                raise SpecMismatch("customer %s must be an integer" % name)
            if kind is str and not isinstance(value, str):
                raise SpecMismatch("customer %s must be a string" % name)
            if kind is dict and not isinstance(value, dict):
                raise SpecMismatch("customer %s must be an object" % name)
        metadata = form.get("metadata", {})
        if len(metadata) > 50 or any(not isinstance(v, str) or len(k) > 40 or len(v) > 500
                                     for k, v in metadata.items()):
            raise SpecMismatch("customer metadata beyond Stripe's limits")

    def validate_request(self, method, path, headers, raw):
        if path == "/v1/customers" and method == "POST":
            template, operation = path, None
        else:
            template, operation = self.spec.operation(method, path)
        if headers.get("stripe-version") != self.spec.document["info"]["version"]:
            raise SpecMismatch("Stripe-Version %r is not the spec's %r" % (
                headers.get("stripe-version"), self.spec.document["info"]["version"]))
        if method == "GET":
            return
        if headers.get("content-type") != "application/x-www-form-urlencoded":
            raise SpecMismatch("Stripe takes form-encoded bodies, got %r" % headers.get("content-type"))
        if not headers.get("idempotency-key"):
            raise SpecMismatch("a POST without Idempotency-Key")
        if len(headers["idempotency-key"]) > 255:
            raise SpecMismatch("Idempotency-Key longer than 255 characters")
        form = parse_form(raw)
        if operation is None:
            return self.validate_customer_form(form)
        if template == "/v1/tokens" and "card" in form:
            card = form["card"]
            extras = {field: card.pop(field) for field in CARD_TOKEN_FIELDS if field in card}
            if extras.get("tokenization_method") != "apple_pay" or not extras.get("cryptogram"):
                raise SpecMismatch("a device PAN goes as a network token: tokenization_method apple_pay and its "
                                   "cryptogram")
        if template == "/v1/payment_methods" and "number" in form.get("card", {}):
            raise SpecMismatch("a device PAN sent as a plain card[number]: send it as a network token")
        if template == "/v1/tokens" and "card" not in form:
            for field in PK_TOKEN_FIELDS:
                value = form.pop(field, None)
                if field == "pk_token":
                    token = json.loads(value or "null")
                    if not isinstance(token, dict) or set(token) != {"version", "data", "signature", "header"}:
                        raise SpecMismatch("pk_token is not an Apple Pay paymentData object")
                elif value is not None and not isinstance(value, str):
                    raise SpecMismatch("%s must be a string" % field)
        if template.endswith("/confirm"):
            card = form.get("payment_method_options", {}).get("card", {})
            network_token = card.pop("network_token", None)
            if network_token is not None:
                if set(network_token) - set(NETWORK_TOKEN_FIELDS) or "cryptogram" not in network_token:
                    raise SpecMismatch("network_token takes cryptogram and electronic_commerce_indicator")
                if not card:
                    form["payment_method_options"].pop("card")
                if not form["payment_method_options"]:
                    form.pop("payment_method_options")
        schema = operation["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
        self.spec.validate(schema, self.coerce(schema, form), "request body")

    def validate_answer(self, method, path, answer):
        if path == "/v1/customers" and method == "POST":
            schema = {"$ref": "#/components/schemas/customer"} if answer.status == 200 else \
                {"$ref": "#/components/schemas/error"}
            return self.spec.validate(schema, answer.body, "answer %d" % answer.status)
        _, operation = self.spec.operation(method, path)
        schema = self.spec.response_schema(operation, answer.status)
        if schema is not None:
            self.spec.validate(schema, answer.body, "answer %d" % answer.status)

    def conflict(self, key):
        return Answer(400, {"error": {"type": "idempotency_error",
                                      "message": "Keys for idempotent requests can only be used with the same parameters they were first used with."}})

    def in_use(self, key):
        return Answer(409, {"error": {"type": "idempotency_error", "code": "idempotency_key_in_use",
                                      "message": "There is currently another in-progress request using this "
                                                 "Idempotent Key."}})

    # -- asynchronous outcomes, decided later
    def webhook(self, event_type, data_object, secret="whsec_fake"):
        """A signed Stripe event as Stripe sends it: (headers, body bytes); `Stripe-Signature: t=…,v1=hex`, HMAC-SHA256
        of "t.body" under the endpoint secret (https://stripe.com/docs/webhooks#verify-manually)."""
        body = json.dumps({"id": self.new_id("evt"), "object": "event", "type": event_type,
                           "api_version": self.spec.document["info"]["version"], "created": int(time.time()),
                           "data": {"object": copy.deepcopy(self.public(data_object))}}).encode()
        stamp = int(time.time())
        signature = hmac.new(secret.encode(), b"%d." % stamp + body, hashlib.sha256).hexdigest()
        return {"Content-Type": "application/json", "Stripe-Signature": "t=%d,v1=%s" % (stamp, signature)}, body

    def decide(self, transaction_id, approved=True, reason="generic_decline"):
        """The processing PaymentIntent of `transaction_id` decided: succeeded, or failed with `reason`; the
        webhook that says so."""
        with self.lock:
            intent = next(i for i in self.intents.values()
                          if i["metadata"].get("transaction_id") == transaction_id and i["status"] == "processing")
            if approved:
                intent.update(status="succeeded", amount_received=intent["amount"], latest_charge=self.new_id("ch"))
                return self.webhook("payment_intent.succeeded", intent)
            intent.update(status="requires_payment_method", last_payment_error={
                "type": "card_error", "code": "card_declined", "decline_code": reason,
                "message": "Your card was declined."})
            return self.webhook("payment_intent.payment_failed", intent)

    def stale_failure(self, transaction_id):
        """A `payment_intent.payment_failed` of the payment of `transaction_id` as an earlier attempt would have sent
        it, delivered late (Stripe does not guarantee the order of events, https://docs.stripe.com/webhooks)."""
        with self.lock:
            intent = copy.deepcopy(next(i for i in self.intents.values()
                                        if i["metadata"].get("transaction_id") == transaction_id))
        intent.update(status="requires_payment_method", last_payment_error={
            "type": "card_error", "code": "card_declined", "decline_code": "generic_decline",
            "message": "Your card was declined."})
        return self.webhook("payment_intent.payment_failed", intent)

    def decide_refund(self, refund_key, succeeded=True):
        """The pending refund of `refund_key` (its metadata[refund_key]) decided, and its webhook."""
        with self.lock:
            refund = next(r for r in self.refunds.values()
                          if r["metadata"].get("refund_key") == refund_key and r["status"] == "pending")
            if succeeded:
                refund["status"] = "succeeded"
                return self.webhook("refund.updated", refund)
            refund.update(status="failed", failure_reason="expired_or_canceled_card")
            intent = self.intents[refund["payment_intent"]]
            intent["refunded"] -= refund["amount"]
            return self.webhook("refund.failed", refund)

    # -- the API
    def handle(self, method, path, query, headers, raw):
        form = parse_form(raw) if method == "POST" else {}
        if method == "GET":
            if path in ("/v1/payment_intents", "/v1/refunds"):
                items = self.intents if path == "/v1/payment_intents" else self.refunds
                return self.listed(path, [self.public(i) for i in items.values()], query)
            match = re.fullmatch(r"/v1/payment_intents/([^/]+)", path)
            if match and match.group(1) in self.intents:
                return Answer(200, self.intents[match.group(1)])
            return self.missing("payment_intent")
        fingerprint = (path, raw)
        return self.idempotent(headers.get("idempotency-key"), fingerprint, lambda: self.post(path, form))

    def listed(self, path, items, query):
        """A list page as Stripe answers it: newest first, `created[gte|gt|lte|lt]` filters, `limit` (1 to 100, 10
        by default) and `starting_after` (the last id of the page before), `has_more` when more follow
        (https://docs.stripe.com/api/pagination, https://docs.stripe.com/api/payment_intents/list)."""
        _, operation = self.spec.operation("GET", path)
        declared = {p["name"] for p in operation.get("parameters", [])}
        fields = urllib.parse.parse_qsl(query, keep_blank_values=True)
        for name, _ in fields:
            if re.sub(r"\[.*", "", name) not in declared:
                raise SpecMismatch("GET %s has no parameter %r" % (path, name))
        params = dict(fields)
        bounds = {"gte": lambda c, v: c >= v, "gt": lambda c, v: c > v, "lte": lambda c, v: c <= v,
                  "lt": lambda c, v: c < v}
        for bound, test in bounds.items():
            if "created[%s]" % bound in params:
                value = int(params["created[%s]" % bound])
                items = [i for i in items if test(i["created"], value)]
        if "payment_intent" in params:
            items = [i for i in items if i.get("payment_intent") == params["payment_intent"]]
        items = sorted(items, key=lambda i: (i["created"], i["id"]), reverse=True)
        if "starting_after" in params:
            ids = [i["id"] for i in items]
            items = items[ids.index(params["starting_after"]) + 1:] if params["starting_after"] in ids else []
        limit = int(params.get("limit", 10))
        if not 1 <= limit <= 100:
            return Answer(400, {"error": {"type": "invalid_request_error", "code": "parameter_invalid_integer",
                                          "param": "limit", "message": "limit must be 1 to 100"}})
        return Answer(200, {"object": "list", "data": items[:limit], "has_more": len(items) > limit, "url": path})

    def missing(self, what):
        return Answer(404, {"error": {"type": "invalid_request_error", "code": "resource_missing",
                                      "message": "No such %s" % what}})

    def post(self, path, form):
        if path == "/v1/payment_intents":
            return self.create_intent(form)
        if path == "/v1/customers":
            customer = copy.deepcopy(self.fixtures["customer"])
            customer.update(id=self.new_id("cus"), created=int(time.time()), metadata=form.get("metadata", {}),
                            description=form.get("description"), email=form.get("email"), name=form.get("name"))
            self.customers[customer["id"]] = customer
            return Answer(200, customer)
        if path == "/v1/tokens":
            token = copy.deepcopy(self.fixtures["token"])
            token.update(id=self.new_id("tok"), created=int(time.time()))
            token["card"].update(id=self.new_id("card"), tokenization_method="apple_pay")
            if "number" in form.get("card", {}):
                token["card"]["last4"] = form["card"]["number"][-4:]
            self.tokens[token["id"]] = token
            return Answer(200, token)
        if path == "/v1/payment_methods":
            card = form.get("card", {})
            if "token" in card and card["token"] not in self.tokens:
                return self.missing("token")
            method = copy.deepcopy(self.fixtures["payment_method"])
            method.update(id=self.new_id("pm"), created=int(time.time()),
                          metadata=form.get("metadata", {}))
            if "number" in card:
                method["card"]["last4"] = card["number"][-4:]
            self.methods[method["id"]] = method
            return Answer(200, method)
        if path == "/v1/refunds":
            return self.refund(form)
        match = re.fullmatch(r"/v1/payment_intents/([^/]+)/(confirm|cancel)", path)
        if match:
            intent = self.intents.get(match.group(1))
            if intent is None:
                return self.missing("payment_intent")
            return self.confirm(intent, form) if match.group(2) == "confirm" else self.cancel(intent)
        return self.missing("resource")

    def create_intent(self, form):
        if form.get("customer") is not None and form["customer"] not in self.customers:
            return self.missing("customer")
        intent = copy.deepcopy(self.fixtures["payment_intent"])
        intent.update(id=self.new_id("pi"), amount=int(form["amount"]), currency=form["currency"],
                      created=int(time.time()), metadata=form.get("metadata", {}), canceled_at=None,
                      status="requires_payment_method", customer=form.get("customer"),
                      setup_future_usage=form.get("setup_future_usage"))
        intent["client_secret"] = intent["id"] + "_secret_fake"
        self.intents[intent["id"]] = intent
        if form.get("confirm") == "true":
            return self.confirm(intent, form)
        return Answer(200, intent)

    def confirm(self, intent, form):
        if intent["status"] not in ("requires_payment_method", "requires_confirmation"):
            return Answer(400, {"error": {"type": "invalid_request_error", "code": "payment_intent_unexpected_state",
                                          "message": "This PaymentIntent's status is %s." % intent["status"]}})
        method = form.get("payment_method")
        if method not in self.methods:
            return self.missing("payment_method")
        refused = self.refuses_reuse(self.methods[method], intent)
        if refused:
            return refused
        self.used_methods.add(method)
        intent["payment_method"] = method
        if form.get("setup_future_usage"):
            intent["setup_future_usage"] = form["setup_future_usage"]
        if self.take_async("charge"):
            intent.update(status="processing", last_payment_error=None)
            intent["refunded"] = 0
            self.attach(intent)
            return Answer(200, self.public(intent))
        decline = self.take_decline()
        if decline:
            reason = decline.get("reason", "generic_decline")
            intent["status"] = "requires_payment_method"
            intent["last_payment_error"] = {"type": "card_error", "code": "card_declined", "decline_code": reason,
                                            "message": "Your card was declined."}
            return Answer(402, {"error": {"type": "card_error", "code": "card_declined", "decline_code": reason,
                                          "message": "Your card was declined.", "payment_intent": intent}})
        intent.update(status="succeeded", amount_received=intent["amount"], last_payment_error=None,
                      latest_charge=self.new_id("ch"))
        intent["refunded"] = 0
        self.attach(intent)
        return Answer(200, self.public(intent))

    def refuses_reuse(self, method, intent):
        """Stripe's answer to a PaymentMethod it will not charge for this PaymentIntent, or None: used before without
        a Customer (https://docs.stripe.com/api/payment_methods/attach), or attached to a Customer the PaymentIntent
        does not name (https://docs.stripe.com/payments/save-during-payment: a later payment names both)."""
        attached = method.get("customer")
        if attached is None and method["id"] in self.used_methods:
            message = REUSED_WITHOUT_CUSTOMER
        elif attached is not None and attached != intent.get("customer"):
            message = "The provided PaymentMethod is attached to another Customer than the one of this PaymentIntent."
        else:
            return None
        return Answer(400, {"error": {"type": "invalid_request_error", "param": "payment_method",
                                      "message": message}})

    def attach(self, intent):
        """A confirmed PaymentIntent with `customer` and `setup_future_usage` attaches its PaymentMethod to the
        Customer (https://docs.stripe.com/api/payment_intents/create#create_payment_intent-setup_future_usage)."""
        if intent.get("customer") is not None and intent.get("setup_future_usage"):
            self.methods[intent["payment_method"]]["customer"] = intent["customer"]

    def cancel(self, intent):
        if intent["status"] in ("succeeded", "canceled", "processing"):
            return Answer(400, {"error": {"type": "invalid_request_error", "code": "payment_intent_unexpected_state",
                                          "message": "You cannot cancel this PaymentIntent because it has a status of %s." % intent["status"]}})
        intent.update(status="canceled", canceled_at=int(time.time()), cancellation_reason="abandoned")
        return Answer(200, self.public(intent))

    def refund(self, form):
        intent = self.intents.get(form.get("payment_intent"))
        if intent is None:
            return self.missing("payment_intent")
        if intent["status"] != "succeeded":
            return Answer(400, {"error": {"type": "invalid_request_error", "code": "charge_not_refundable",
                                          "message": "This PaymentIntent has no successful charge."}})
        amount = int(form.get("amount", intent["amount"] - intent.get("refunded", 0)))
        if amount > intent["amount"] - intent.get("refunded", 0):
            return Answer(400, {"error": {"type": "invalid_request_error", "code": "amount_too_large",
                                          "message": "Refund amount is greater than the unrefunded amount."}})
        intent["refunded"] = intent.get("refunded", 0) + amount
        refund = copy.deepcopy(self.fixtures["refund"])
        refund.update(id=self.new_id("re"), amount=amount, currency=intent["currency"], created=int(time.time()),
                      payment_intent=intent["id"], charge=intent["latest_charge"],
                      status="pending" if self.take_async("refund") else "succeeded",
                      metadata=form.get("metadata", {}))
        self.refunds[refund["id"]] = refund
        return Answer(200, refund)

    @staticmethod
    def public(intent):
        return {k: v for k, v in intent.items() if k != "refunded"}

    def state(self):
        return {"payment_intents": [self.public(i) | {"refunded": i.get("refunded", 0)} for i in self.intents.values()],
                "refunds": list(self.refunds.values()), "tokens": len(self.tokens),
                "customers": sorted(self.customers),
                "payment_methods": {m["id"]: m.get("customer") for m in self.methods.values()}}
