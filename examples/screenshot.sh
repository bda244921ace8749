#!/usr/bin/env bash
# Executes examples/notebook_tour.ipynb in a Jupyter kernel, renders it to HTML with nbconvert
# and photographs the page with headless Chromium (Debian's chromium), to see what a user sees.
# Not part of `make test`. Usage: examples/screenshot.sh [output dir] [window height in px]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/notebook}
height=${2:-7000}
mkdir -p "$out"
.venv/bin/jupyter nbconvert --to html --execute examples/notebook_tour.ipynb \
  --ExecutePreprocessor.timeout=300 --output-dir "$out" --output notebook_tour
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "no Chromium found (Debian: apt-get install chromium); the HTML is $out/notebook_tour.html" >&2
  exit 1
fi
# --no-sandbox: Chromium refuses to run as root with its sandbox, as in containers.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,"$height" \
  --screenshot="$(pwd)/$out/notebook_tour.png" "file://$(pwd)/$out/notebook_tour.html" 2>/dev/null
echo "screenshot: $out/notebook_tour.png (page: $out/notebook_tour.html)"
