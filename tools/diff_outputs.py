"""Diff two output snapshots of tools/snapshot_outputs.sh, ignoring ids, times and paths.

Usage: python tools/diff_outputs.py BEFORE AFTER  (exit 1 and a unified diff when they differ)

The refactoring of issue 35 must leave every report, summary JSON and `analyze --json`
byte-identical apart from what changes on every publish: run ids, digests, timestamps,
durations and absolute paths.  The executed notebooks and kernel logs are not compared:
their code cells are the notebook's source, which the change rewrites on purpose.
"""

import difflib
import json
import re
import sys
from pathlib import Path

NOISE = [
    (re.compile(r"\d{8}T\d{6}Z(-[0-9a-f]{8})?"), "<STAMP>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2}| UTC)?"), "<TIME>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<UUID>"),
    (re.compile(r'"digest": "[0-9a-f]+"'), '"digest": "<DIGEST>"'),
    (re.compile(r"/tmp/[\w.-]+"), "<TMP>"),
    (re.compile(r'id="cell-id=[0-9a-f]{8}"'), 'id="cell-id=<ID>"'),  # papermill's injected cell: new each run
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"), "<WIDGET>"),  # an ipywidgets model id: new each run
]
SKIPPED = {".ipynb", ".log", ".lock"}


def normalised(path: Path) -> list[str]:
    """The file's lines with ids, times and paths replaced by placeholders."""
    text = path.read_text(encoding="utf-8", errors="replace")
    for pattern, placeholder in NOISE:
        text = pattern.sub(placeholder, text)
    return [_widget_state(line) for line in text.splitlines(keepends=True)]


def _widget_state(line: str) -> str:
    """ipywidgets' saved state is a mapping keyed by the models' random ids, in their order: its models,
    each written canonically, in sorted order (the same widgets, whatever ids they drew)."""
    if not line.startswith('{"state": {'):
        return line
    try:
        models = json.loads(line.replace("\\/", "/"))["state"].values()
    except (ValueError, AttributeError):
        return line
    return json.dumps(sorted(json.dumps(m, sort_keys=True) for m in models)) + "\n"


def compared(root: Path) -> set[Path]:
    """The files of a snapshot that must be identical, relative to it."""
    return {
        p.relative_to(root)
        for p in root.rglob("*")
        if p.is_file() and p.suffix not in SKIPPED and "executed" not in p.parts and p.name != "publish.log"
    }


def main(before: Path, after: Path) -> int:
    different = 0
    for rel in sorted(compared(before) | compared(after)):
        a, b = before / rel, after / rel
        if not a.exists() or not b.exists():
            print(f"only in {'after' if b.exists() else 'before'}: {rel}")
            different += 1
            continue
        lines = list(difflib.unified_diff(normalised(a), normalised(b), str(a), str(b), n=1))
        if lines:
            different += 1
            sys.stdout.writelines(line[:400] + ("\n" if len(line) > 400 else "") for line in lines[:60])
    print(f"{len(compared(before) | compared(after))} files compared, {different} differ")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
