#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>
/* The event loop that drives a multi handle (Glibc's Swift module has neither header). */
#include <sys/epoll.h>
#include <sys/eventfd.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic: typed wrappers. */
static inline CURLcode CCurl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode CCurl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode CCurl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode CCurl_setopt_write_function(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f);
}
static inline CURLcode CCurl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode CCurl_setopt_header_function(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, f);
}
/* CURLOPT_XFERINFOFUNCTION: called during a transfer (about once a second when idle); non-zero aborts it. */
static inline CURLcode CCurl_setopt_xferinfo_function(
    CURL *h, int (*f)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) {
    return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f);
}
static inline CURLcode CCurl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode CCurl_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
/* A blob option (CURLOPT_SSLCERT_BLOB, CURLOPT_SSLKEY_BLOB, CURLOPT_CAINFO_BLOB): curl copies the bytes. */
static inline CURLcode CCurl_setopt_blob(CURL *h, CURLoption o, const void *data, size_t length) {
    struct curl_blob blob;
    blob.data = (void *)data;
    blob.len = length;
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(h, o, &blob);
}

/* curl_multi_setopt, curl_share_setopt and CURLINFO_PRIVATE are variadic too. */
static inline CURLMcode CCurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode CCurl_multi_setopt_pointer(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode CCurl_multi_setopt_socket_function(CURLM *m, int (*f)(CURL *, curl_socket_t, int, void *, void *)) {
    return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, f);
}
static inline CURLMcode CCurl_multi_setopt_timer_function(CURLM *m, int (*f)(CURLM *, long, void *)) {
    return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, f);
}
static inline CURLSHcode CCurl_share_setopt_long(CURLSH *s, CURLSHoption o, long v) { return curl_share_setopt(s, o, v); }
static inline CURLcode CCurl_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }

#endif
