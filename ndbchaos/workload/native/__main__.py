"""``python -m ndbchaos.workload.native build``: compile the native client driver (idempotent);
``path``: print where the build for this source lives."""

from __future__ import annotations

import sys

from . import NativeUnavailable, build, library_path


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "build"
    if what == "path":
        print(library_path())
        return 0
    if what != "build":
        print(f"usage: python -m ndbchaos.workload.native [build|path] (not {what!r})", file=sys.stderr)
        return 2
    try:
        print(build())
    except NativeUnavailable as e:
        print(f"native client driver: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
