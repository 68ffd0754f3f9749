/*
 * testpoint.c — named pause points for the power-cut tests (tests/vm): with
 * MCGIT_TEST_PAUSE_AT=NAME in its environment the agent stops for good at
 * the point NAME, after saying so on stderr (the journal and the console of
 * a systemd host), so that a test can cut the power exactly there. Unset,
 * as always outside those tests, a point costs one mcg_env_get().
 */
#include "agent/agent_int.h"
#include "osenv/osenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void mcg_agent_testpoint(const char *name)
{
    const char *want = mcg_env_get("MCGIT_TEST_PAUSE_AT");
    if (!want || strcmp(want, name) != 0)
        return;
    mcg_log_line(NULL, "mcgit: paused at %s", name);
    for (;;)
        pause();
}
