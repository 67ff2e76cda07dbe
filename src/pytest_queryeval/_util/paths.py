"""How a path is shown in messages and reports.

Reports are committed as baselines and shared, so a path inside the project is shown relative
to its root, never as this machine's absolute path. Both sides are resolved: a root reached
through a symlink must not turn every file under it into an absolute path.
"""

from __future__ import annotations

from pathlib import Path


def display(path: Path, root: Path, *, resolve: bool = True) -> str:
    """``path`` relative to ``root`` (``.`` for the root itself), or as given when outside it.

    ``resolve=False`` keeps an absolute ``path`` as it is: a ``queryeval.yaml`` that is a
    symlink is named where the suite has it, not where it points.
    """
    try:
        return str((path.resolve() if resolve else path).relative_to(root.resolve()))
    except ValueError:
        return str(path)
