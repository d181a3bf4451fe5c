#!/usr/bin/env bash
# Install the real Claude Code CLI for the end-to-end tests (npm only, idempotent).
#
# The package's postinstall is blocked by npm here, so its bin/ stub is never
# replaced; the tests run the native binary of the platform package directly
# (node_modules/@anthropic-ai/claude-code-<platform>/claude).
# Prefix: $CCMEMORY_CLAUDE_PREFIX, else ~/.cache/ccmemory-test/claude-code
# (the same default tests/e2e/claude_cli.py looks in). The version is pinned
# ($CCMEMORY_CLAUDE_VERSION overrides it): it is the one the facts in
# shared/specs/claude-code.md were verified against, and a plain `npm install`
# picks an older one on Node < 22.
# Never fails the build: without npm or the registry the tests skip and say why.
set -uo pipefail

prefix="${CCMEMORY_CLAUDE_PREFIX:-$HOME/.cache/ccmemory-test/claude-code}"
version="${CCMEMORY_CLAUDE_VERSION:-2.1.330}"

find_binary() {
    for candidate in "$prefix"/node_modules/@anthropic-ai/claude-code-*/claude; do
        if [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
    done
    return 1
}

binary="$(find_binary)"
if [ -n "$binary" ] && "$binary" --version 2>/dev/null | grep -q "^$version "; then
    echo "claude-code $version already installed at $binary"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "npm not found: the Claude Code end-to-end tests will be skipped" >&2
    exit 0
fi
mkdir -p "$prefix"
if ! npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$version"; then
    echo "npm install @anthropic-ai/claude-code@$version failed: the Claude Code end-to-end tests will be skipped" >&2
    exit 0
fi
binary="$(find_binary)"
if [ -n "$binary" ]; then
    echo "claude-code installed: $("$binary" --version) at $binary"
else
    echo "npm finished but no native claude binary for this platform is under $prefix: the end-to-end tests will be skipped" >&2
fi
