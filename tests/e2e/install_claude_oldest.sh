#!/usr/bin/env bash
# Install Claude Code 2.1.197, the oldest version ccmemory supports, beside the latest one
# (npm only, idempotent, never fails the build), for the tests that run on both.
# Prefix: $CCMEMORY_CLAUDE_OLDEST_PREFIX, else ~/.cache/ccmemory-test/claude-code-2.1.197.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
CCMEMORY_CLAUDE_PREFIX="${CCMEMORY_CLAUDE_OLDEST_PREFIX:-$HOME/.cache/ccmemory-test/claude-code-2.1.197}" \
CCMEMORY_CLAUDE_VERSION=2.1.197 bash "$here/install_claude.sh"
