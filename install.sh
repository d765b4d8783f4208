#!/usr/bin/env bash
# Install calipers from this checkout (editable) into the active Python environment, with
# llama.cpp built for this CPU and checked to run the embedded model:
#
#   bash install.sh && calipers run          # the quick start
#   bash install.sh '.[dev]'                 # with extras; arguments are what pip installs
set -euo pipefail
cd "$(dirname "$0")"
# shellcheck source=scripts/llama-build.sh
. scripts/llama-build.sh
python3 -m pip install -e "${@:-.}"
llama_check_or_rebuild python3
