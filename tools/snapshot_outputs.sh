#!/usr/bin/env bash
# Snapshot every output the domain refactoring must keep byte-identical (issue 35):
# `analyze --json` and `summarize` (table and --json) of the shipped log sets, and the
# published reports of params/published/*.yaml.  Usage: tools/snapshot_outputs.sh DIR
# Compare two snapshots with tools/diff_outputs.py BEFORE AFTER.
set -u
out=${1:?usage: snapshot_outputs.sh DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
bb="$root/.venv/bin/benchbook"
mkdir -p "$out/cli"
cd "$root"
for set in ../shared/reference-logs/* ../shared/reference-logs-variants/* examples/logs/*; do
  [ -d "$set" ] || continue
  name=$(echo "$set" | tr '/.' '__')
  "$bb" analyze --json "$set" > "$out/cli/$name.analyze.json" 2> "$out/cli/$name.analyze.err"
  "$bb" summarize "$set" > "$out/cli/$name.summarize.txt" 2> "$out/cli/$name.summarize.err"
  "$bb" summarize --json "$set" > "$out/cli/$name.summarize.json" 2>> "$out/cli/$name.summarize.err"
done
if [ "${SKIP_PUBLISH:-0}" != 1 ]; then
  "$bb" publish --quiet --force params/published/*.yaml --reports "$out/reports" > "$out/publish.log" 2>&1
fi
