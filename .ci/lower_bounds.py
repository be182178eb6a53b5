"""Write pip constraints that pin every runtime and test dependency to the lower bound pyproject.toml declares.

Usage: python .ci/lower_bounds.py [pyproject.toml] > constraints.txt
Each requirement whose marker holds here must carry a `>=` bound; a requirement without one is an error.
"""

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement


def lower_bounds(pyproject: Path) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    lines: list[str] = []
    for text in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        floors = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if len(floors) != 1:
            raise SystemExit(f"{pyproject}: {text!r} needs exactly one '>=' lower bound")
        lines.append(f"{requirement.name}=={floors[0]}")
    return lines


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent.parent / "pyproject.toml"
    print("\n".join(lower_bounds(path)))
