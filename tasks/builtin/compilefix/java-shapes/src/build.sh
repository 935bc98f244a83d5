#!/bin/sh
# Compiles every Java source of the tree into /tmp/classes (the tree itself
# may be read-only).
set -e
rm -rf /tmp/classes
mkdir -p /tmp/classes
javac -d /tmp/classes $(find . -name '*.java' | sort)
