#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/* MHD_start_daemon is variadic; wrappers for the option lists this project uses go here. */

/* Starts a daemon bound to `address` (an IPv4 or IPv6 sockaddr) with the options HTTPServer uses.
   `thread_pool_size` 0 or 1 means no pool; `per_ip_connection_limit` 0 means none. `notify` (may be NULL) is told
   when each connection opens and closes; `accept_policy` (may be NULL) is asked before each is accepted. With `tls_key_pem` and `tls_certificate_pem` (NUL-terminated PEM, not
   NULL) the daemon speaks HTTPS (pass MHD_USE_TLS in `flags`); with `tls_client_trust_pem` too it asks clients for
   a certificate (GnuTLS's CERT_REQUEST: checking it is the caller's job, see CGnuTLS). Returns NULL when the daemon
   cannot start. */
static inline struct MHD_Daemon *CMicroHTTPD_start_daemon(
    unsigned int flags, const struct sockaddr *address, unsigned int thread_pool_size,
    unsigned int connection_timeout_seconds, unsigned int connection_limit, unsigned int per_ip_connection_limit,
    size_t connection_memory_limit, MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context,
    MHD_NotifyConnectionCallback notify, void *notify_context,
    MHD_AcceptPolicyCallback accept_policy, void *accept_policy_context,
    const char *tls_key_pem, const char *tls_certificate_pem, const char *tls_client_trust_pem) {
    struct MHD_OptionItem tls[] = {
        { MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)tls_key_pem },
        { MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)tls_certificate_pem },
        { tls_client_trust_pem != NULL ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, (void *)tls_client_trust_pem },
        { MHD_OPTION_END, 0, NULL },
    };
    if (tls_key_pem == NULL || tls_certificate_pem == NULL) { tls[0].option = MHD_OPTION_END; }
    uint16_t port = 0;
    if (address->sa_family == AF_INET) {
        port = ntohs(((const struct sockaddr_in *)address)->sin_port);
    } else if (address->sa_family == AF_INET6) {
        port = ntohs(((const struct sockaddr_in6 *)address)->sin6_port);
    }
    return MHD_start_daemon(flags, port, accept_policy, accept_policy_context, handler, handler_context,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size > 1 ? thread_pool_size : 0,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_connection_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_NOTIFY_CONNECTION, notify, notify_context,
        MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
}

/* MHD_get_connection_info is variadic: the client's address as text (IPv4 dotted, IPv6 without brackets) in
   `buffer`; returns 0 when written, -1 when unknown. */
static inline int CMicroHTTPD_client_address(struct MHD_Connection *connection, char *buffer, size_t length) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    const struct sockaddr *address = info->client_addr;
    const void *raw = NULL;
    if (address->sa_family == AF_INET) {
        raw = &((const struct sockaddr_in *)address)->sin_addr;
    } else if (address->sa_family == AF_INET6) {
        raw = &((const struct sockaddr_in6 *)address)->sin6_addr;
    } else {
        return -1;
    }
    return inet_ntop(address->sa_family, raw, buffer, (socklen_t)length) == NULL ? -1 : 0;
}

/* MHD_get_connection_info is variadic: the connection's socket, or -1. */
static inline int CMicroHTTPD_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

/* MHD_get_daemon_info is variadic: the port the daemon is bound to (0 if unknown). */
static inline uint16_t CMicroHTTPD_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/* MHD_get_connection_info is variadic: the connection's gnutls_session_t, NULL without TLS. */
static inline void *CMicroHTTPD_tls_session(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return info == NULL ? NULL : info->tls_session;
}

/* Whether this libmicrohttpd was built with HTTPS (GnuTLS). */
static inline int CMicroHTTPD_supports_tls(void) { return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES; }

#endif
