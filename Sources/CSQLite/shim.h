#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast of -1 to a destructor pointer, which Swift cannot import. */
static inline sqlite3_destructor_type CSQLite_TRANSIENT(void) { return SQLITE_TRANSIENT; }

/* sqlite3_config is variadic, which Swift cannot call: memory statistics off (SQLITE_CONFIG_MEMSTATUS), so that
   SQLite's allocations take no process-wide mutex to count themselves. Before SQLite's first use only. */
static inline int CSQLite_disableMemoryStatus(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }

#endif
