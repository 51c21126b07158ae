"""A provider fake and the configuration that points the merchant server at it: shared by end_to_end.py and
scripts/crash_test.py."""
import os

# Adyen's HMAC key, in hex, as its Customer Area shows one.
ADYEN_HMAC_KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"


def private_file(workdir, name, text):
    path = os.path.join(workdir, name)
    with open(path, "w") as file:
        file.write(text + "\n")
    os.chmod(path, 0o600)
    return name


def base_url(provider, port):
    """The fake's base URL as the connector is configured with it (Adyen's carries its API version)."""
    return "http://127.0.0.1:%d" % port + ("/v71" if provider == "adyen" else "")


def configure(provider, workdir):
    """A provider's fake and the `processor` section that points at it (key files written owner-only in
    `workdir`; `baseURL`, `applePay` and `timeoutSeconds` left to the caller)."""
    if provider == "stripe":
        from stripe_fake import StripeFake
        fake = StripeFake("sk_test_fake_secret")
        section = {"kind": "stripe", "secretKeyFile": private_file(workdir, "stripe.key", "sk_test_fake_secret"),
                   "webhookSecretFile": private_file(workdir, "stripe.whsec", "whsec_fake")}
    elif provider == "checkout":
        from checkout_fake import CheckoutFake
        fake = CheckoutFake("sk_sbox_fake_secret")
        from checkout_fake import PUBLIC_KEY
        section = {"kind": "checkout", "secretKeyFile": private_file(workdir, "checkout.key", "sk_sbox_fake_secret"),
                   "publicKeyFile": private_file(workdir, "checkout.pub", PUBLIC_KEY),
                   "processingChannelId": "pc_fakechannel000000000000000", "webhookSecretFile":
                       private_file(workdir, "checkout.whsec", "checkout-webhook-secret")}
    else:
        from adyen_fake import AdyenFake
        fake = AdyenFake("AQEfakeAdyenApiKey", "ExampleECOM")
        section = {"kind": "adyen", "apiKeyFile": private_file(workdir, "adyen.key", "AQEfakeAdyenApiKey"),
                   "merchantAccount": "ExampleECOM", "webhookHMACKeyFile": private_file(workdir, "adyen.hmac", ADYEN_HMAC_KEY)}
    return fake, section
