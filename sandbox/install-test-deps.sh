#!/usr/bin/env bash
# Installs what the sandbox and its tests need: bubblewrap, the system
# Python 3 that runs inside the sandbox (/usr/bin/python3), a C compiler and
# the C library's headers (the workers' fork server is compiled when a pool
# starts), and the toolchains of the compile-fix tasks' offline builds (gcc
# and make, a JDK's javac, git for the real-repository tests; Go is the
# project's own).
# Idempotent, quiet.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
[ -x /usr/bin/python3 ] || need+=(python3)
[ -x /usr/bin/gcc ] || need+=(gcc)
[ -f /usr/include/stdio.h ] || need+=(libc6-dev)
[ -x /usr/bin/make ] || need+=(make)
[ -x /usr/bin/patch ] || need+=(patch)
[ -x /usr/bin/git ] || need+=(git)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
if [ "${#need[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq "${need[@]}" >/dev/null
fi
# The Maven compile-fix test builds offline from the local repository: make
# sure the plugins `mvn compile` needs are in it (fetched once from Maven
# Central).
if command -v mvn >/dev/null 2>&1 && [ ! -d "$HOME/.m2/repository/org/apache/maven/plugins/maven-compiler-plugin" ]; then
	tmp=$(mktemp -d)
	mkdir -p "$tmp/src/main/java/x"
	printf '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion><groupId>x</groupId><artifactId>x</artifactId><version>1</version><properties><maven.compiler.source>17</maven.compiler.source><maven.compiler.target>17</maven.compiler.target></properties></project>\n' >"$tmp/pom.xml"
	printf 'package x;\npublic class A {}\n' >"$tmp/src/main/java/x/A.java"
	(cd "$tmp" && mvn -B -q compile >/dev/null 2>&1) || echo "warning: could not fetch the Maven compiler plugin; the Maven compile-fix test will skip" >&2
	rm -rf "$tmp"
fi
