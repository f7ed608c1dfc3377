#!/usr/bin/env bash
# Dead code in the package: anything of webhook/ that nothing uses, with the tests and benchmarks counted as
# users (they exercise the public API). Vulture reads all three trees plus the allowlist, and only findings in
# webhook/ fail the check.
set -euo pipefail
cd "$(dirname "$0")/../.."
VULTURE=${VULTURE:-.venv/bin/vulture}
found=$("$VULTURE" webhook tests bench hack/lint/vulture_allow.py --min-confidence 60 \
  --ignore-decorators "@pytest.fixture,@web.middleware" | grep '^webhook/' || true)
if [ -n "$found" ]; then
  echo "dead code (delete it, or add it to hack/lint/vulture_allow.py with the reason it is alive):" >&2
  echo "$found" >&2
  exit 1
fi
echo "no dead code in webhook/"
