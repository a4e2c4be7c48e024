"""One `{{name}}` pattern: the copies that ship apart from the server (the SDK,
the editor's JavaScript) are the server's own (core/templating.py)."""

import re

from promptyard import template as sdk_template

from core.templating import VARIABLE
from tests.livesubprocess import ROOT


def test_the_sdk_finds_variables_with_the_servers_pattern():
    assert sdk_template.VARIABLE.pattern == VARIABLE.pattern


def test_the_editor_finds_variables_with_the_servers_pattern():
    editor = (ROOT / "static/js/playground/editor.js").read_text()
    (source,) = re.findall(r"export const VARIABLE = /(.+)/g;", editor)
    assert source == VARIABLE.pattern
