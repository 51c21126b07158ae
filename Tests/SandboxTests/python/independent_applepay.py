#!/usr/bin/env python3
"""An independent Apple Pay token implementation, used only by the Swift tests.

It shares no code with the Swift modules: it follows Apple's published token format with
Python's `cryptography` package, so that tokens minted by Swift are opened here and tokens
minted here are opened by Swift.

  decrypt TOKEN.json --cert MERCHANT.pem --key MERCHANT.key.pem
      Prints {"payload": <decrypted JSON>, "merchantIdentifierHash": hex} or exits 1 with a reason.
  mint --sandbox DIR --kind EC_v1|RSA_v1 --payload PAYLOAD.json [--application-data-hash HEX]
      Prints a whole PKPaymentToken signed with the sandbox's leaf key for that kind.
"""
import argparse
import base64
import hashlib
import json
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.serialization import pkcs7

MERCHANT_ID_OID = x509.ObjectIdentifier("1.2.840.113635.100.6.32")
ZERO_IV = bytes(16)


def fail(message):
    sys.stderr.write("independent_applepay: " + message + "\n")
    sys.exit(1)


def spki_der(cert):
    return cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def merchant_identifier_hash(cert):
    """The raw 32 bytes of OID 1.2.840.113635.100.6.32 (a UTF8String of 64 hex characters)."""
    value = cert.extensions.get_extension_for_oid(MERCHANT_ID_OID).value.value
    if len(value) != 66 or value[0] != 0x0C or value[1] != 0x40:
        fail("merchant identifier extension is not a 64-character UTF8String")
    return bytes.fromhex(value[2:].decode("ascii"))


def ec_symmetric_key(shared_secret, merchant_hash):
    kdf_input = (b"\x00\x00\x00\x01" + shared_secret + b"\x0did-aes256-GCM" + b"Apple" + merchant_hash)
    return hashlib.sha256(kdf_input).digest()


def load_token(path):
    with open(path, "rb") as handle:
        token = json.load(handle)
    return token.get("paymentData", token)


def decrypt(args):
    payment_data = load_token(args.token)
    with open(args.cert, "rb") as handle:
        cert = x509.load_pem_x509_certificate(handle.read())
    with open(args.key, "rb") as handle:
        key = serialization.load_pem_private_key(handle.read(), password=None)
    header = payment_data["header"]
    expected_hash = base64.b64encode(hashlib.sha256(spki_der(cert)).digest()).decode()
    if header["publicKeyHash"] != expected_hash:
        fail("publicKeyHash does not match the merchant certificate")
    ciphertext = base64.b64decode(payment_data["data"])
    merchant_hash = merchant_identifier_hash(cert)
    if payment_data["version"] == "EC_v1":
        ephemeral = serialization.load_der_public_key(base64.b64decode(header["ephemeralPublicKey"]))
        shared = key.exchange(ec.ECDH(), ephemeral)
        symmetric = ec_symmetric_key(shared, merchant_hash)
    elif payment_data["version"] == "RSA_v1":
        symmetric = key.decrypt(
            base64.b64decode(header["wrappedKey"]),
            padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None))
        if len(symmetric) != 16:
            fail("wrapped key is not 16 bytes")
    else:
        fail("unknown version")
    plaintext = AESGCM(symmetric).decrypt(ZERO_IV, ciphertext, None)
    print(json.dumps({"payload": json.loads(plaintext), "merchantIdentifierHash": merchant_hash.hex()}))


def mint(args):
    def read(name):
        with open(os.path.join(args.sandbox, name), "rb") as handle:
            return handle.read()

    with open(args.payload, "rb") as handle:
        payload = handle.read()
    json.loads(payload)  # must be JSON
    transaction_id = os.urandom(32)
    if args.kind == "EC_v1":
        cert = x509.load_pem_x509_certificate(read("payment-processing-ec.pem"))
        ephemeral = ec.generate_private_key(ec.SECP256R1())
        shared = ephemeral.exchange(ec.ECDH(), cert.public_key())
        symmetric = ec_symmetric_key(shared, merchant_identifier_hash(cert))
        key_bytes = ephemeral.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        header = {"ephemeralPublicKey": base64.b64encode(key_bytes).decode()}
        leaf_cert = x509.load_pem_x509_certificate(read("leaf-ec.pem"))
        leaf_key = serialization.load_pem_private_key(read("leaf-ec.key.pem"), password=None)
    else:
        cert = x509.load_pem_x509_certificate(read("payment-processing-rsa.pem"))
        symmetric = os.urandom(16)
        key_bytes = cert.public_key().encrypt(
            symmetric, padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None))
        header = {"wrappedKey": base64.b64encode(key_bytes).decode()}
        leaf_cert = x509.load_pem_x509_certificate(read("leaf-rsa.pem"))
        leaf_key = serialization.load_pem_private_key(read("leaf-rsa.key.pem"), password=None)
    intermediate = x509.load_pem_x509_certificate(read("intermediate.pem"))
    data = AESGCM(symmetric).encrypt(ZERO_IV, payload, None)
    application_data = bytes.fromhex(args.application_data_hash) if args.application_data_hash else b""
    signed_content = key_bytes + data + transaction_id + application_data
    signature = (
        pkcs7.PKCS7SignatureBuilder()
        .set_data(signed_content)
        .add_signer(leaf_cert, leaf_key, hashes.SHA256())
        .add_certificate(intermediate)
        .sign(serialization.Encoding.DER,
              [pkcs7.PKCS7Options.DetachedSignature, pkcs7.PKCS7Options.Binary, pkcs7.PKCS7Options.NoCapabilities]))
    header["publicKeyHash"] = base64.b64encode(hashlib.sha256(spki_der(cert)).digest()).decode()
    header["transactionId"] = transaction_id.hex()
    if args.application_data_hash:
        header["applicationData"] = args.application_data_hash
    token = {
        "paymentData": {
            "version": args.kind,
            "data": base64.b64encode(data).decode(),
            "signature": base64.b64encode(signature).decode(),
            "header": header,
        },
        "paymentMethod": {"displayName": "Visa 0492", "network": "Visa", "type": "debit"},
        "transactionIdentifier": transaction_id.hex().upper(),
    }
    print(json.dumps(token))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    decrypt_parser = commands.add_parser("decrypt")
    decrypt_parser.add_argument("token")
    decrypt_parser.add_argument("--cert", required=True)
    decrypt_parser.add_argument("--key", required=True)
    mint_parser = commands.add_parser("mint")
    mint_parser.add_argument("--sandbox", required=True)
    mint_parser.add_argument("--kind", choices=["EC_v1", "RSA_v1"], required=True)
    mint_parser.add_argument("--payload", required=True)
    mint_parser.add_argument("--application-data-hash")
    args = parser.parse_args()
    {"decrypt": decrypt, "mint": mint}[args.command](args)


if __name__ == "__main__":
    main()
