#!/usr/bin/env bash
# `npm test`. With arguments it is tap with them (`npm test -- test/me.test.ts`). Without, it runs every test file
# two at a time, then a few files one at a time (docs/tooling.md#tests):
# - the fault tests time how fast the service reacts under load (readiness 503 within 100 ms of SIGTERM); beside
#   another file on a 2-core machine they timed that file's load instead (166 ms in one run, 29 ms alone);
# - docs-pkce runs the README's shell steps for 200 verifiers: 800 `node` processes that keep both cores busy.
set -u
alone=(test/faults-postgres.test.ts test/faults-shutdown.test.ts test/docs-pkce.test.ts)
if [ $# -gt 0 ]; then exec tap "$@"; fi
excluded=()
for f in "${alone[@]}"; do excluded+=("--exclude=$f"); done
tap "${excluded[@]}"
together=$?
tap --jobs=1 "${alone[@]}"
apart=$?
exit $(( together != 0 || apart != 0 ))
