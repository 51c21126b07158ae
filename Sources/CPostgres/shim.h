#ifndef CPOSTGRES_SHIM_H
#define CPOSTGRES_SHIM_H
#include <libpq-fe.h>

/* PG_DIAG_SQLSTATE and PG_DIAG_MESSAGE_PRIMARY are character-literal macros, which Swift does not import. */
static inline int CPostgres_DIAG_SQLSTATE(void) { return PG_DIAG_SQLSTATE; }
static inline int CPostgres_DIAG_MESSAGE_PRIMARY(void) { return PG_DIAG_MESSAGE_PRIMARY; }

#endif
