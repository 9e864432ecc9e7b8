# Shared by scripts/run and scripts/test: make sure .venv exists and holds the project.
# $1: the pip extras to install ("" or "[test]").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=".venv/.installed$1"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  # -qq: errors only (pip warns about every unreachable index of the machine's pip.conf)
  .venv/bin/python -m pip install -qq --upgrade pip
  .venv/bin/python -m pip install -qq -e ".$1"
  touch "$stamp"
fi
