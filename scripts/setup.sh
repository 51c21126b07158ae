#!/usr/bin/env bash
# Installs everything the project needs on Debian 12; does nothing when it is all present.
set -euo pipefail

DEBIAN_PACKAGES=(
    pkg-config
    openssl libssl-dev          # all cryptography, X.509 and CMS
    sqlite3 libsqlite3-dev      # the embedded order store
    libmicrohttpd-dev           # the HTTP server
    libcurl4-openssl-dev curl   # outgoing TLS with a client certificate (merchant validation), HTTP/2 to APNs
    libgnutls28-dev             # the sandbox gateway: reading a client certificate from libmicrohttpd's TLS session
    libnghttp2-dev              # the sandbox APNs: an HTTP/2 server (with OpenSSL for TLS and ALPN)
    chromium chromium-driver    # tests only: the browser test of the checkout page
    postgresql libpq-dev        # the shared order store (libpq) and the private cluster `make test` starts
    libjemalloc-dev             # the allocator of the `applepay` binary
)
# Tests only: an independent implementation; the browser test; the Wallet Orders schema and the payment providers'
# fakes, which validate against the providers' OpenAPI specs (module:PyPI name when they differ).
PYTHON_PACKAGES=(cryptography selenium jsonschema openapi_schema_validator:openapi-schema-validator yaml:PyYAML)

missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
for entry in "${PYTHON_PACKAGES[@]}"; do
    module="${entry%%:*}"
    package="${entry#*:}"
    if ! "$PYTHON" -c "import $module" 2>/dev/null; then
        echo "setup: installing Python package $package (tests only)" >&2
        "$PYTHON" -m pip install -q "$package"
    fi
done

# Swift packages: where the offline mirrors of the Swift server ecosystem are on this machine, SwiftPM fetches the
# public URLs of Package.swift from them (their use.sh writes .swiftpm/configuration/mirrors.json, which git
# ignores). Elsewhere SwiftPM resolves from GitHub. SWIFTPM_MIRRORS names another folder.
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
for mirrors in "${SWIFTPM_MIRRORS:-}" "$ROOT/../shared/swiftpm-mirrors" /work/shared/swiftpm-mirrors; do
    if [ -n "$mirrors" ] && [ -x "$mirrors/use.sh" ]; then
        [ -f "$ROOT/.swiftpm/configuration/mirrors.json" ] || echo "setup: Swift packages from $mirrors" >&2
        "$mirrors/use.sh" "$ROOT"
        break
    fi
done
