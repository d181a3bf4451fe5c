#!/usr/bin/env bash
# Install the MCP Inspector CLI for tests/test_mcp_inspector.py (npm only, idempotent).
#
# Prefix: $CCMEMORY_INSPECTOR_PREFIX, else ~/.cache/ccmemory-test/inspector (the
# same default the test looks in). The version is pinned ($CCMEMORY_INSPECTOR_VERSION
# overrides it): 2.x wants the mode flag (--cli) first.
# Never fails the build: without npm or the registry the test skips and says why.
set -uo pipefail

prefix="${CCMEMORY_INSPECTOR_PREFIX:-$HOME/.cache/ccmemory-test/inspector}"
version="${CCMEMORY_INSPECTOR_VERSION:-2.12.0}"
bin="$prefix/node_modules/.bin/mcp-inspector"
manifest="$prefix/node_modules/@modelcontextprotocol/inspector/package.json"

if [ -x "$bin" ] && [ -f "$manifest" ] && grep -q "\"version\": \"$version\"" "$manifest"; then
    echo "MCP Inspector $version already installed at $bin"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "npm not found: the MCP Inspector test will be skipped" >&2
    exit 0
fi
mkdir -p "$prefix"
if ! npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/inspector@$version"; then
    echo "npm install @modelcontextprotocol/inspector@$version failed: the MCP Inspector test will be skipped" >&2
    exit 0
fi
if [ -x "$bin" ]; then
    echo "MCP Inspector $version installed at $bin"
else
    echo "npm finished but $bin is missing: the MCP Inspector test will be skipped" >&2
fi
