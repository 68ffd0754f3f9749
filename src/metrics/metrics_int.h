/*
 * metrics_int.h — shared inside metrics/.
 */
#ifndef MCG_METRICS_INT_H
#define MCG_METRICS_INT_H

#include "metrics/metrics.h"

#include <microhttpd.h>

/*
 * Connection deadlines for the listener (deadline.c). libmicrohttpd only
 * knows an idle timeout: a client that sends one header byte before each
 * timeout holds its connection for ever. The guard gives every request an
 * absolute deadline instead: a connection must have sent its request line,
 * headers and body and have been answered within deadline_ms of its start
 * (or of its previous request's end, on a kept-alive connection), or it is
 * cut (shutdown(2) on its socket; libmicrohttpd then closes it as for a
 * client that went away). A thread of the guard looks every 100 ms.
 *
 * Wiring: MHD_OPTION_NOTIFY_CONNECTION with mcg_conn_guard_notify and the
 * guard as its closure; mcg_conn_guard_request_started from the first call
 * of the access handler, mcg_conn_guard_request_done from the request
 * completion callback. Free the guard after MHD_stop_daemon (NULL: no-op).
 * mcg_conn_guard_new returns NULL when its thread cannot start.
 */
typedef struct mcg_conn_guard mcg_conn_guard;
/* per_address: the most connections one client address holds; a new one
 * past it cuts that address's oldest request instead of being refused. */
mcg_conn_guard *mcg_conn_guard_new(unsigned slots, unsigned deadline_ms, unsigned per_address);
void mcg_conn_guard_free(mcg_conn_guard *g);
void mcg_conn_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                           enum MHD_ConnectionNotificationCode toe);
/* Its headers are in: conn is being answered (never cut to make room). */
void mcg_conn_guard_request_started(mcg_conn_guard *g, struct MHD_Connection *conn);
void mcg_conn_guard_request_done(mcg_conn_guard *g, struct MHD_Connection *conn);
/* Connections cut so far. */
unsigned long mcg_conn_guard_cuts(mcg_conn_guard *g);

#endif
