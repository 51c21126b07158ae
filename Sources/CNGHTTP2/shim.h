#ifndef CNGHTTP2_SHIM_H
#define CNGHTTP2_SHIM_H
/* An HTTP/2 server over TLS: nghttp2 for the protocol, OpenSSL's libssl for TLS and ALPN. */
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

/* Function-like macros Swift cannot import. */
static inline long CNGHTTP2_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
#endif
