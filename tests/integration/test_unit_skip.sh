#!/usr/bin/env bash
# A unit test program with a skipped case (mcg_test_skip, tests/unit/testlib)
# exits 77, which ctest reports as skipped, not as passed; it names the
# reason; with MCGIT_REQUIRE_ALL=1 the case fails instead; with nothing
# skipped it exits 0. Uses tests/unit/skip_probe.c (one passing case, one
# skipping).
. "$(dirname "$0")/lib.sh"
P=$(dirname "$MCGIT")/tests/skip_probe
[ -x "$P" ] || skip "no skip_probe next to $MCGIT"
mkdir -p "$T/skips"
expect_rc 77 "a program with a skipped case exits 77 (skipped, not passed)" -- \
  env -u MCGIT_REQUIRE_ALL MCGIT_SKIP_DIR="$T/skips" "$P"
expect_grep "skipped: skip_probe: the probe's reason" "$T/out" "it names the reason"
expect_grep "the probe's reason" "$T/skips/skip_probe" "and records it for tests/run-all.sh"
expect_rc 1 "with MCGIT_REQUIRE_ALL=1 a skipped case fails" -- env MCGIT_REQUIRE_ALL=1 "$P"
expect_grep "a required case cannot run: the probe.s reason" "$T/err" "naming why"
expect_rc 0 "with nothing skipped it exits 0" -- env -u MCGIT_REQUIRE_ALL SKIP_PROBE_NONE=1 "$P"
finish
