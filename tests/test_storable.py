"""core.storable: what PostgreSQL's text and jsonb can hold."""

from core.storable import storable


def test_should_drop_nul_and_replace_lone_surrogates_at_any_depth():
    value = {"a\x00": ["x\ud800y", {"k": "\udfff\x00"}], "n": 3, "ok": "é😀"}
    assert storable(value) == {"a": ["x\ufffdy", {"k": "\ufffd"}], "n": 3, "ok": "é😀"}


def test_should_leave_other_values_alone():
    assert storable(None) is None and storable(1.5) == 1.5 and storable("plain") == "plain"
