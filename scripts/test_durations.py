"""Write tests/durations.json (seconds per test file, setup and teardown
included) from the JUnit XML of a whole run:

    scripts/test.sh --junitxml=/tmp/junit.xml && .venv/bin/python scripts/test_durations.py /tmp/junit.xml

Under pytest-xdist the longest files start first (tests/conftest.py); the
figures only order the work, so a stale file costs speed, never a result.
"""

import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "durations.json"


def main(junit_xml: str) -> None:
    seconds: dict[str, float] = defaultdict(float)
    for case in ElementTree.parse(junit_xml).getroot().iter("testcase"):
        path = case.get("classname", "").split(".")
        # classname "tests.chat.test_api" or "tests.chat.test_api.TestClass": the module's path.
        while path and not path[-1].startswith("test_"):
            path.pop()
        if path:
            seconds["/".join(path) + ".py"] += float(case.get("time") or 0)
    ranked = dict(sorted(((k, round(v, 1)) for k, v in seconds.items()), key=lambda kv: -kv[1]))
    OUT.write_text(json.dumps(ranked, indent=0) + "\n")
    print(f"{OUT}: {len(ranked)} files, {sum(ranked.values()):.0f} s in all")


if __name__ == "__main__":
    main(sys.argv[1])
