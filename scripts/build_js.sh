#!/usr/bin/env bash
# Bundles each page's entry module into one file, so a page loads its script in one
# step instead of a chain of imports (docs/contributing.md, "How to add a page"). The entries are the files the
# templates load as {% static 'dist/X.js' %}: static/js/X.js and its imports become
# static/dist/X.js (esbuild, pinned in package-lock.json; scripts/install.sh --dev runs
# npm ci). The bundles are committed, so running the app needs no Node.
#   scripts/build_js.sh          rebuild static/dist
#   scripts/build_js.sh --check  fail if static/dist differs from a fresh build, or a
#                                template loads a module from static/js directly
set -euo pipefail
cd "$(dirname "$0")/.."
esbuild=node_modules/.bin/esbuild
[ -x "$esbuild" ] || npm ci --no-audit --no-fund --silent

entries=$(grep -rhoE "static 'dist/[^']+\.js'" templates | sed -E "s/static 'dist\/(.*)'/\1/" | sort -u)
out=static/dist
if [ "${1:-}" = --check ]; then
  if direct=$(grep -rnoE "static 'js/[^']+\.js'" templates); then
    echo "templates load modules from static/js; load the bundle (static 'dist/...') instead:" >&2
    echo "$direct" >&2
    exit 1
  fi
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
for entry in $entries; do
  "$esbuild" "static/js/$entry" --bundle --format=esm --log-level=warning --outfile="$out/$entry"
done
if [ "${1:-}" = --check ]; then
  diff -r "$out" static/dist >/dev/null || {
    echo "static/dist is not the bundle of static/js: run scripts/build_js.sh and commit it" >&2
    diff -rq "$out" static/dist >&2
    exit 1
  }
else
  # No bundle of an entry the templates no longer load.
  find static/dist -name '*.js' | while read -r file; do
    grep -qxF "${file#static/dist/}" <<<"$entries" || rm "$file"
  done
fi
