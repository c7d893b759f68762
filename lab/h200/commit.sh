#!/usr/bin/env bash
# Run in the checkout right before a device call: writes .lca-commit (HEAD, "-dirty" when the tree
# differs from it). The file is untracked but not ignored, so it travels with the working tree; on the
# device, where the copy has no .git, study.sh exports it as LCA_GIT_COMMIT and env.json records it
# (git_commit_source tells which). git_commit() leaves this file out of its dirty check.
set -euo pipefail
cd "$(dirname "$0")/../.."
commit=$(git rev-parse HEAD)
[ -z "$(git status --porcelain -- . ':!.lca-commit')" ] || commit="$commit-dirty"
echo "$commit" > .lca-commit
echo "$commit"
