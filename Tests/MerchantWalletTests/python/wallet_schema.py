#!/usr/bin/env python3
"""Checks JSON documents against the Wallet Orders JSON Schema written from Apple's field tables
(Tests/Fixtures/wallet-orders/wallet-orders.schema.json), with the `jsonschema` package: an implementation that
shares nothing with the Swift code under test.

    wallet_schema.py SCHEMA [--def NAME] FILE...

Checks each FILE as an Order (or as the schema's $defs/NAME) and prints one JSON line:
{"results": [{"file": FILE, "errors": ["path: message", ...]}, ...]}. Exit 0 when it could check every file.
"""
import json
import sys

import jsonschema


def main(argv):
    schema = json.load(open(argv[1], encoding="utf-8"))
    files = argv[2:]
    if files[:1] == ["--def"]:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/" + files[1]}
        files = files[2:]
    validator = jsonschema.Draft202012Validator(schema)
    results = []
    for name in files:
        with open(name, encoding="utf-8") as handle:
            document = json.load(handle)
        errors = sorted(
            "/".join(str(part) for part in error.absolute_path) + ": " + error.message
            for error in validator.iter_errors(document))
        results.append({"file": name, "errors": errors})
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
