"""Stage tests for ``formats.tomlio``: the line of every key of a TOML file."""

from __future__ import annotations

from pytest_promptsuite.formats.tomlio import key_lines


def test_key_lines_keep_the_line_of_every_key() -> None:
    text = (
        '[suite]\ncases = ["c.jsonl"]\n# note\n[model]\nparams = { temperature = 0, seed = 1 }\n'
        'notes = """\nfake = 1\n"""\n[[checks]]\nslice = "*"\n[[checks]]\nslice = "a"\n'
        '[variants."v 1"]\ntemplate_file = "x"\n'
    )
    lines = key_lines(text)
    assert lines["suite.cases"] == 2
    assert lines["model.params.seed"] == 5
    assert lines["model.notes"] == 6 and "model.fake" not in lines  # inside a multi-line string
    assert (lines["checks[0].slice"], lines["checks[1].slice"]) == (10, 12)
    assert lines["variants.v 1.template_file"] == 14
