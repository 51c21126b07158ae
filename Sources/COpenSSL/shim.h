#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/cms.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* Function-like macros and casts Swift cannot import directly. Add only what is needed. */
static inline void COpenSSL_free(void *p) { OPENSSL_free(p); }
static inline long COpenSSL_BIO_get_mem_data(BIO *bio, char **out) { return BIO_get_mem_data(bio, out); }

/* Cryptography core (token): one-shot SHA-2 and X.509 verification. */
#include <openssl/sha.h>
#include <openssl/x509_vfy.h>

#endif
