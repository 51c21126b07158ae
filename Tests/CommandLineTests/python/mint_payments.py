"""Creates COUNT checkouts (alternating between the servers) and writes, for each, the payment body with a freshly
minted sandbox token to OUT/body-N.json, beside the checkout's id and client secret (the Checkout-Secret header of its
routes). Usage: mint_payments.py APPLEPAY SANDBOX OUT COUNT URL..."""
import json
import subprocess
import sys
import urllib.request

applepay, sandbox, out, count, urls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
contact = {"locality": "Cupertino", "administrativeArea": "CA", "postalCode": "95014", "countryCode": "US"}


def post(url, body, secret=None):
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers["Checkout-Secret"] = secret
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


for index in range(count):
    url = urls[index % len(urls)]
    checkout = post(url + "/v1/checkouts", {"items": [{"sku": "MUG-01", "quantity": 1 + index % 3}]})
    update = post(url + "/v1/checkouts/%s/shipping-contact" % checkout["id"], contact, checkout["clientSecret"])
    token = subprocess.run(
        [applepay, "sandbox", "mint", sandbox, "--amount", update["newTotal"]["amount"], "--currency", "USD",
         "--application-data", checkout["paymentRequest"]["applicationData"]],
        check=True, capture_output=True, text=True, timeout=60).stdout
    body = {"token": json.loads(token), "shippingContact": contact}
    with open("%s/body-%d.json" % (out, index), "w") as file:
        json.dump({"checkoutId": checkout["id"], "checkoutSecret": checkout["clientSecret"], "body": body}, file)
