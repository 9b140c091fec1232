#!/usr/bin/env bash
# Runs every test and ends with "N passed, N failed". Exits non-zero on any failure or when no test ran.
set -uo pipefail
cd "$(dirname "$0")"
scripts/ensure-packages.sh mariadb chromium haproxy || { echo "could not install test dependencies"; echo "0 passed, 1 failed"; exit 1; }

results=$PWD/TestResults
rm -rf "$results"; mkdir -p "$results"
dotnet build Queue.slnx -c Release -nologo -v quiet -clp:ErrorsOnly
build=$?
if [ $build -ne 0 ]; then
  echo "build failed"
  echo "0 passed, 1 failed"
  exit 1
fi
dotnet test tests/Queue.Tests/Queue.Tests.csproj -c Release --no-build -nologo \
  --logger "trx;LogFileName=results.trx" --logger "console;verbosity=normal" --results-directory "$results" "$@" \
  2>&1 | tee "$results/console.log"
status=$?

passed=0; failed=0
for trx in "$results"/*.trx; do
  [ -f "$trx" ] || continue
  counters=$(grep -o '<Counters [^>]*>' "$trx" | head -1)
  p=$(echo "$counters" | sed -n 's/.* passed="\([0-9]*\)".*/\1/p'); f=$(echo "$counters" | sed -n 's/.* failed="\([0-9]*\)".*/\1/p')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
done
if [ $status -ne 0 ] && [ $failed -eq 0 ]; then failed=1; fi
# CI shows only the end of the output: repeat each failure's name and message there (80 lines each).
if [ $failed -gt 0 ] && [ -f "$results/console.log" ]; then
  echo "---- failures ----"
  awk '/^  Failed /{on=1; n=0} /^  (Passed|Skipped) /{on=0} on && n < 80 {print; n++}' "$results/console.log"
  echo "------------------"
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ] && [ $passed -gt 0 ] && [ $status -eq 0 ]
