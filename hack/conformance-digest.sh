#!/usr/bin/env bash
# conformance-digest.sh LOG: a short account of a failed conformance run, printed last.
#
# CI keeps only a part of a run's output, mostly its end, and the end of `go test -v` is
# the list of a few hundred subtest results. What explains a failure (what each failing
# subtest last got back, and what Envoy answered) is far above it. This prints, after
# everything else, for each failing subtest its last lines that say what it waited for,
# then the last request lines Envoy answered with an error. Each line is cut to 400
# bytes.
set -euo pipefail
log=${1:?usage: conformance-digest.sh LOG}

echo "conformance digest (from ${log}):"
awk '
  # go test -v names the test whose output follows in these headers; parallel tests
  # interleave, so every line belongs to the last test named.
  /^=== (RUN|CONT|NAME) / { current = $3; next }
  /^ *--- FAIL: / { order[++n] = $3; next }
  /not ready yet|timeout while waiting|[Ee]xpected|[Ff]ailed|Error/ {
    line = $0; sub(/^ +/, "", line)
    if (length(line) > 400) line = substr(line, 1, 400)
    last2[current] = last1[current]; last1[current] = line
  }
  END {
    for (i = 1; i <= n; i++) {
      name = order[i]
      if (!(name in last1)) continue
      print "  FAIL " name
      if (last2[name] != "") print "    " last2[name]
      print "    " last1[name]
    }
  }
' "$log"
# The audit lines the diagnostics printed for requests Envoy answered with an error.
grep -E '"responseCode":[45][0-9][0-9]' "$log" | tail -n 6 | cut -c1-400 | sed 's/^ */  /' || true
