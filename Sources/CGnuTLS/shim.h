#ifndef CGNUTLS_SHIM_H
#define CGNUTLS_SHIM_H
#include <stddef.h>
#include <gnutls/gnutls.h>

/* libmicrohttpd (built on GnuTLS) hands out the connection's session as `void *`: this converts it. */

/* The peer's leaf certificate (DER) of a TLS session, and GnuTLS's verification of the peer's chain against the
   session's trusted CAs (0 = trusted). `*der` points into the session (valid while it lives); `*der_length` is 0
   when the peer sent no certificate. Returns a GnuTLS error code (0 on success). */
static inline int CGnuTLS_peer_certificate(
    void *session, const unsigned char **der, size_t *der_length, unsigned int *verify_status) {
    *der = NULL;
    *der_length = 0;
    *verify_status = (unsigned int)-1;
    if (session == NULL) { return GNUTLS_E_INVALID_SESSION; }
    gnutls_session_t tls = (gnutls_session_t)session;
    unsigned int count = 0;
    const gnutls_datum_t *chain = gnutls_certificate_get_peers(tls, &count);
    if (chain == NULL || count == 0) { return 0; }
    *der = chain[0].data;
    *der_length = chain[0].size;
    return gnutls_certificate_verify_peers2(tls, verify_status);
}

#endif
