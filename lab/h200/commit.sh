#!/usr/bin/env bash
# Run in the checkout right before a device call: writes .lca-commit (HEAD, "-dirty" when the tree
# differs from it). The file is ignored (.gitignore), so a device call carries it: name ".lca-commit" in
# the call's carry beside the bundle part. On the device, where the copy has no .git, study.sh exports it
# as LCA_GIT_COMMIT and env.json records it (git_commit_source tells which).
set -euo pipefail
cd "$(dirname "$0")/../.."
commit=$(git rev-parse HEAD)
[ -z "$(git status --porcelain -- . ':!.lca-commit')" ] || commit="$commit-dirty"
echo "$commit" > .lca-commit
echo "$commit"
