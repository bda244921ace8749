"""`python -m jitflow.info` (and the `jitflow` command): prints jf.config.info(), the facts a
bug report needs; `--version` prints the version only, `--json` the dict as JSON."""
import argparse
import json
import sys

from .core import config
from .core.version import __version__


def main(argv=None):
    parser = argparse.ArgumentParser(prog="jitflow", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"jitflow {__version__}")
    parser.add_argument("--json", action="store_true", help="print the facts as one JSON object")
    args = parser.parse_args(argv)
    facts = config.info()
    if args.json:
        print(json.dumps(facts, indent=1))
        return 0
    width = max(len(k) for k in facts)
    for key, value in facts.items():
        if isinstance(value, list):
            value = " ".join(value) if value else "-"
        print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
