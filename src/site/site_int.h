/*
 * site/site_int.h — what the files of site/ share.
 */
#ifndef MCG_SITE_INT_H
#define MCG_SITE_INT_H

#include "site/site.h"

#include <git2.h>

/*
 * The status.json of record commit id (a new reference), at most
 * MCG_SITE_MAX_STATUS bytes; NULL when it cannot be read or parsed. For
 * records held already: an incoming one is checked stricter (check.c).
 */
json_t *mcg_site_record_read(git_repository *g, const git_oid *id);

#endif
