#!/usr/bin/env bash
# Installs promtool, which deploy/prometheus's tests run (promtool check rules,
# promtool test rules), as .cache/bin/promtool. Idempotent, quiet.
#
# By default it is Debian's: only /usr/bin/promtool is taken out of the
# prometheus package (apt-get download, dpkg-deb), which is about 20 MB and
# ten seconds; installing the package would also install a Prometheus server
# and start it. MURPHY_PROMTOOL_FROM=go builds it from the Go module proxy
# instead, at the version of the PromQL parser the Go tests use (go.mod):
# current, but more than ten minutes on two cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/.cache/bin
[ -x "$bin/promtool" ] && exit 0
mkdir -p "$bin"
case "${MURPHY_PROMTOOL_FROM:-debian}" in
go)
	GOBIN=$bin go install github.com/prometheus/prometheus/cmd/promtool@v0.315.0
	;;
debian)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	download() { (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root prometheus >/dev/null 2>&1); }
	if ! download; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >/dev/null
		download
	fi
	dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -O ./usr/bin/promtool >"$tmp/promtool"
	chmod 0755 "$tmp/promtool"
	"$tmp/promtool" --version >/dev/null
	mv "$tmp/promtool" "$bin/promtool"
	;;
*)
	echo "MURPHY_PROMTOOL_FROM=${MURPHY_PROMTOOL_FROM}: want debian or go" >&2
	exit 2
	;;
esac
