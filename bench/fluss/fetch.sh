#!/usr/bin/env bash
# Assembles the Fluss baseline of `lakestream bench` from Maven Central:
# the jars of pom.xml (beside this script) and their runtime dependencies
# into DEST/jars (20 jars, 155 MB: the server and the client are shaded
# jars of 86 and 69 MB). The harness runs it, embedded in the binary, when
# DEST/jars is absent; run it by hand to fill the cache before a short run:
#
#   bash bench/fluss/fetch.sh .cache/fluss
set -euo pipefail
dest=${1:?usage: fetch.sh DEST}
here=$(cd "$(dirname "$0")" && pwd)
command -v mvn >/dev/null || { echo "fetch.sh: mvn not found on PATH (apt-get install maven)" >&2; exit 1; }
mkdir -p "$dest"
dest=$(cd "$dest" && pwd) # Maven resolves a relative -DoutputDirectory against the pom's folder
tmp=$(mktemp -d "$dest/jars.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mvn -q -B -Dstyle.color=never -f "$here/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp"
ls "$tmp"/fluss-server-*.jar "$tmp"/fluss-client-*.jar "$tmp"/zookeeper-3*.jar >/dev/null
rm -rf "$dest/jars"
mv "$tmp" "$dest/jars"
trap - EXIT
echo "fetch.sh: $(ls "$dest/jars" | wc -l) jars in $dest/jars"
