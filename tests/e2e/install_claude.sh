#!/usr/bin/env bash
# Install the real Claude Code CLI for the end-to-end tests (npm only, idempotent): the oldest
# release ccmemory supports and the latest it was verified on (src/ccmemory/compat.py).
#
# The package's postinstall is blocked by npm here, so its bin/ stub is never
# replaced; the tests run the native binary of the platform package directly
# (<prefix>/claude-code-<version>/node_modules/@anthropic-ai/claude-code-<platform>/claude).
# Prefix: $CCMEMORY_CLAUDE_PREFIX, else ~/.cache/ccmemory-test (the same default
# testing/claude_code.py looks in). Versions: $CCMEMORY_CLAUDE_VERSIONS, else both pinned
# ones: a plain `npm install` picks another release on each Node version.
# Never fails the build: without npm or the registry the tests skip and say why.
set -uo pipefail

prefix="${CCMEMORY_CLAUDE_PREFIX:-$HOME/.cache/ccmemory-test}"
versions="${CCMEMORY_CLAUDE_VERSIONS:-2.1.197 2.1.330}"

find_binary() {
    for candidate in "$1"/node_modules/@anthropic-ai/claude-code-*/claude; do
        if [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
    done
    return 1
}

for version in $versions; do
    dir="$prefix/claude-code-$version"
    binary="$(find_binary "$dir")"
    if [ -n "$binary" ] && "$binary" --version 2>/dev/null | grep -q "^$version "; then
        echo "claude-code $version already installed at $binary"
        continue
    fi
    if ! command -v npm >/dev/null 2>&1; then
        echo "npm not found: the Claude Code end-to-end tests will be skipped" >&2
        exit 0
    fi
    mkdir -p "$dir"
    if ! npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$version"; then
        echo "npm install @anthropic-ai/claude-code@$version failed: its end-to-end tests will be skipped" >&2
        continue
    fi
    binary="$(find_binary "$dir")"
    if [ -n "$binary" ]; then
        echo "claude-code installed: $("$binary" --version) at $binary"
    else
        echo "npm finished but no native claude binary for this platform is under $dir: its tests will be skipped" >&2
    fi
done
