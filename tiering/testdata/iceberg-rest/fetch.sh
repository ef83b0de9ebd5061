#!/usr/bin/env bash
# Assembles Apache Iceberg's REST catalog test server from Maven Central:
# the jars of pom.xml (beside this script) and their runtime dependencies
# into DEST/jars. tiering/rest_test.go runs it when DEST/jars is absent;
# run it by hand to fill the cache:
#
#   bash tiering/testdata/iceberg-rest/fetch.sh .cache/iceberg-rest
set -euo pipefail
dest=${1:?usage: fetch.sh DEST}
here=$(cd "$(dirname "$0")" && pwd)
command -v mvn >/dev/null || { echo "fetch.sh: mvn not found on PATH (apt-get install maven)" >&2; exit 1; }
mkdir -p "$dest"
# Absolute: Maven resolves a relative outputDirectory against the pom's
# directory, not the working directory.
dest=$(cd "$dest" && pwd)
tmp=$(mktemp -d "$dest/jars.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mvn -q -B -Dstyle.color=never -f "$here/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp"
ls "$tmp"/iceberg-open-api-*-test-fixtures.jar >/dev/null
rm -rf "$dest/jars"
mv "$tmp" "$dest/jars"
trap - EXIT
echo "fetch.sh: $(ls "$dest/jars" | wc -l) jars in $dest/jars"
