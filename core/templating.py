"""The `{{name}}` variable of prompt templates, for every part that finds one.

The server (playground.templating, playground.calls.export.spec) uses this pattern.
The Python SDK (sdk/python/promptyard/template.py) and the editor
(static/js/playground/editor.js) ship apart from the server and keep copies;
tests/test_template_variable.py holds those equal to this one."""

from __future__ import annotations

import re

VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
