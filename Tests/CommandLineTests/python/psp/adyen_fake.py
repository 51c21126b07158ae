"""A fake of Adyen's Checkout API v71 as its OpenAPI 3.1 spec in Tests/Fixtures/psp/adyen documents it: every
request validated against its operation's requestBody schema, every answer against the documented response
schema; `X-API-Key`; an idempotency store on `Idempotency-Key` (at most 64 characters, as the spec says); payments
by pspReference; refunds, cancels and reversals `received`, their outcome left to webhooks (as Adyen does). Adyen
has no look-up of a payment.

A payment taken by `/_fake/async` answers `resultCode: Received` ("the payment request was successfully received
and will be processed", https://docs.adyen.com/online-payments/build-your-integration/payment-result-codes) and
`decide` gives its AUTHORISATION webhook later; a refund is `received` and `decide_refund` gives its REFUND
webhook (success true or false), signed as Adyen signs them.
"""
import base64
import hashlib
import hmac
import itertools
import json
import os
import re

from fake_common import Answer, Fake, Spec, SpecMismatch

VECTORS = os.environ.get("PSP_VECTORS", os.path.join(os.path.dirname(__file__), "../../../Fixtures/psp"))


class AdyenFake(Fake):
    name = "adyen"
    idempotency_header = "Idempotency-Key"
    charge_path = "/v71/payments"
    refund_path = "/v71/payments/*/refunds"
    void_suffixes = ("/cancels", "/reversals")
    settles_by_look_up = False
    prefix = "/v71"

    def __init__(self, api_key, merchant_account):
        super().__init__(api_key)
        with open(os.path.join(VECTORS, "adyen/CheckoutService-v71.json")) as file:
            self.spec = Spec(json.load(file), version="3.1")
        self.merchant_account = merchant_account
        self.counter = itertools.count(1)
        self.payments, self.modifications = {}, []

    def psp_reference(self):
        return "FAKE%012d" % next(self.counter)

    def authorised(self, headers):
        return headers.get("x-api-key") == self.credentials

    def unauthorised_body(self):
        return None

    def error_body(self, status):
        return {"status": status, "errorCode": "000" if status >= 500 else "702", "message": "status %d" % status,
                "errorType": "internal" if status >= 500 else "validation"}

    def ledger_charges(self):
        """Every payment as the crash test reads a ledger."""
        with self.lock:
            return [{"idempotencyKey": p["merchantReference"], "reference": p["pspReference"],
                     "status": "approved" if p["resultCode"] == "Authorised" else "processing"
                     if p["resultCode"] == "Received" else "declined",
                     "amount": p["amount"]["value"], "currencyCode": p["amount"]["currency"]}
                    for p in self.payments.values()]

    def api_path(self, path):
        if not path.startswith(self.prefix):
            raise SpecMismatch("not under %s" % self.prefix)
        return path[len(self.prefix):]

    # -- validation
    def validate_request(self, method, path, headers, raw):
        path = self.api_path(path)
        template, operation = self.spec.operation(method, path)
        if headers.get("content-type") != "application/json":
            raise SpecMismatch("Adyen takes JSON bodies")
        key = headers.get("idempotency-key")
        if template != "/paymentMethods" and not key:
            raise SpecMismatch("a payment request without Idempotency-Key")
        if key is not None and len(key) > 64:
            raise SpecMismatch("Idempotency-Key longer than the spec's 64 characters")
        body = json.loads(raw or b"null")
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        self.spec.validate(schema, body, "request body")
        if body.get("merchantAccount") != self.merchant_account:
            raise SpecMismatch("another merchant account")
        method_details = body.get("paymentMethod", {})
        if method_details.get("type") == "applepay":
            token = json.loads(base64.b64decode(method_details["applePayToken"], validate=True))
            if set(token) != {"version", "data", "signature", "header"}:
                raise SpecMismatch("applePayToken is not base64 of an Apple Pay paymentData")

    def validate_answer(self, method, path, answer):
        _, operation = self.spec.operation(method, self.api_path(path))
        schema = self.spec.response_schema(operation, answer.status)
        if schema is not None and answer.body is not None:
            self.spec.validate(schema, answer.body, "answer %d" % answer.status)

    def conflict(self, key):
        return Answer(422, {"status": 422, "errorCode": "704", "message": "request already processed or in progress",
                            "errorType": "validation"})

    # -- the API
    def handle(self, method, path, query, headers, raw):
        path = self.api_path(path)
        body = json.loads(raw)
        if path == "/paymentMethods":
            return Answer(200, {"paymentMethods": [{"type": "applepay", "name": "Apple Pay"}]})
        return self.idempotent_json(headers, path, body)

    def post(self, path, body):
        if path == "/payments":
            return self.pay(body)
        match = re.fullmatch(r"/payments/([^/]+)/(refunds|cancels|reversals)", path)
        payment = self.payments.get(match.group(1)) if match else None
        if payment is None or payment["resultCode"] != "Authorised":
            return Answer(422, {"status": 422, "errorCode": "167", "message": "Original pspReference required",
                                "errorType": "validation"})
        answer = {"merchantAccount": body["merchantAccount"], "paymentPspReference": payment["pspReference"],
                  "pspReference": self.psp_reference(), "status": "received"}
        if body.get("reference"):
            answer["reference"] = body["reference"]
        if match.group(2) == "refunds":
            answer["amount"] = body["amount"]
            answer["pending"] = True
            payment["refunded"] = payment.get("refunded", 0) + body["amount"]["value"]
        else:
            payment["reversed"] = True
        self.modifications.append(dict(answer, kind=match.group(2)))
        return Answer(201, {k: v for k, v in answer.items() if k != "pending"})

    def pay(self, body):
        if body["paymentMethod"].get("storedPaymentMethodId"):
            known = any(p.get("stored") == body["paymentMethod"]["storedPaymentMethodId"] for p in self.payments.values())
            if not known:
                return Answer(422, {"status": 422, "errorCode": "800", "message": "Contract not found",
                                    "errorType": "validation"})
        decline = self.take_decline()
        payment = {"pspReference": self.psp_reference(), "merchantReference": body["reference"],
                   "amount": body["amount"]}
        if decline:
            reasons = {"insufficient_funds": ("Not enough balance", "12")}
            reason, code = reasons.get(decline.get("reason"), ("Refused", "2"))
            payment.update(resultCode="Refused", refusalReason=reason, refusalReasonCode=code)
        elif self.take_async("charge"):
            payment.update(resultCode="Received")
        else:
            payment.update(resultCode="Authorised", additionalData={"authCode": "044925"})
            if body.get("storePaymentMethod"):
                payment["stored"] = "FAKESTORED%06d" % next(self.counter)
                payment["additionalData"]["tokenization.storedPaymentMethodId"] = payment["stored"]
        self.payments[payment["pspReference"]] = payment
        return Answer(200, {k: v for k, v in payment.items() if k not in ("stored", "refunded", "reversed")})

    def notification(self, item, hmac_key_hex):
        """A notification of one item, signed as Adyen signs it (HMAC-SHA256 with the hex key over the item's eight
        fields, base64): (headers, body bytes)."""
        fields = [item["pspReference"], item.get("originalReference", ""), item["merchantAccountCode"],
                  item["merchantReference"], str(item["amount"]["value"]), item["amount"]["currency"],
                  item["eventCode"], item["success"]]
        signature = base64.b64encode(hmac.new(bytes.fromhex(hmac_key_hex), ":".join(fields).encode(),
                                              hashlib.sha256).digest()).decode()
        item["additionalData"] = {"hmacSignature": signature}
        body = {"live": "false", "notificationItems": [{"NotificationRequestItem": item}]}
        return {"Content-Type": "application/json"}, json.dumps(body).encode()

    def authorisation_webhook(self, merchant_reference, hmac_key_hex):
        """The AUTHORISATION notification Adyen sends for the payment of `merchant_reference`: (headers, body)."""
        payment = next(p for p in self.payments.values() if p["merchantReference"] == merchant_reference)
        item = {"amount": payment["amount"], "eventCode": "AUTHORISATION", "eventDate": "2026-12-01T12:00:00+01:00",
                "merchantAccountCode": self.merchant_account, "merchantReference": merchant_reference,
                "pspReference": payment["pspReference"], "success": "true" if payment["resultCode"] == "Authorised"
                else "false", "reason": "044925:0492:12/2030", "paymentMethod": "applepay"}
        return self.notification(item, hmac_key_hex)

    def decide(self, merchant_reference, hmac_key_hex, approved=True):
        """The Received payment of `merchant_reference` authorised or refused, and its AUTHORISATION webhook."""
        with self.lock:
            payment = next(p for p in self.payments.values()
                           if p["merchantReference"] == merchant_reference and p["resultCode"] == "Received")
            if approved:
                payment.update(resultCode="Authorised", additionalData={"authCode": "044925"})
            else:
                payment.update(resultCode="Refused", refusalReason="Refused")
        return self.authorisation_webhook(merchant_reference, hmac_key_hex)

    def stale_failure(self, merchant_reference, hmac_key_hex):
        """An AUTHORISATION with success=false for the payment of `merchant_reference`, delivered late and out of
        order (Adyen does not promise the order of notifications)."""
        payment = next(p for p in self.payments.values() if p["merchantReference"] == merchant_reference)
        item = {"amount": payment["amount"], "eventCode": "AUTHORISATION", "eventDate": "2026-12-01T11:59:00+01:00",
                "merchantAccountCode": self.merchant_account, "merchantReference": merchant_reference,
                "pspReference": payment["pspReference"], "success": "false", "reason": "Refused",
                "paymentMethod": "applepay"}
        return self.notification(item, hmac_key_hex)

    def decide_refund(self, refund_key, hmac_key_hex, succeeded=True):
        """The received refund whose reference is `refund_key` decided, and its REFUND webhook (`success`)."""
        with self.lock:
            refund = next(m for m in self.modifications
                          if m["kind"] == "refunds" and m.get("pending") and m.get("reference") == refund_key[:80])
            refund["pending"] = False
            if not succeeded:
                self.payments[refund["paymentPspReference"]]["refunded"] -= refund["amount"]["value"]
        item = {"amount": refund["amount"], "eventCode": "REFUND", "eventDate": "2026-12-01T12:00:00+01:00",
                "merchantAccountCode": self.merchant_account, "merchantReference": refund["reference"],
                "pspReference": refund["pspReference"], "originalReference": refund["paymentPspReference"],
                "success": "true" if succeeded else "false", "reason": "" if succeeded else "Insufficient balance",
                "paymentMethod": "applepay"}
        return self.notification(item, hmac_key_hex)

    def state(self):
        return {"payments": list(self.payments.values()), "modifications": self.modifications}
