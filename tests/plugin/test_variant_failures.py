"""Variants and repeats are visible: a failing case's header and first line name them, and
``--lf`` / ``--ff`` re-run exactly the items that failed."""

from __future__ import annotations

import pytest

from tests.suite import Suite


CONFIG = '[template]\ntemplate_file = "v1.txt"\n[variants.v1]\n[variants.v2]\ntemplate_file = "v2.txt"\n'
CASES = (
    '{"case_id": "f-1", "input": "x", "slice": "s", "must_include": ["A"]}\n'
    '{"case_id": "f-2", "input": "y", "slice": "s"}\n'
)


@pytest.fixture
def two_variants(suite: Suite) -> Suite:
    """Two cases and two variants; f-1 fails under v2, whose template drops the ``A`` it needs."""
    suite.config(CONFIG)
    suite.write("v1.txt", "A {input}")
    suite.write("v2.txt", "B {input}")
    suite.cases(CASES)
    return suite


def test_the_failure_header_names_the_variant_and_the_repeat(two_variants: Suite) -> None:
    result = two_variants.run("--prompt-repeat", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*_ case f-1[[]v2[]][[]repeat-0[]] [[]s[]] _*",
            "cases.jsonl:1: f-1 [[]variant v2[]] [[]slice s[]] failed 1 check",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*_ case f-1[[]v2[]][[]repeat-1[]] [[]s[]] _*",
            "cases.jsonl:1: f-1 [[]variant v2[]] [[]repeat 1[]] [[]slice s[]] failed 1 check",
        ]
    )


@pytest.mark.parametrize("repeat", [[], ["--prompt-repeat", "2"]], ids=["variants", "variants-and-repeats"])
def test_last_failed_reruns_exactly_the_failed_items(two_variants: Suite, repeat: list[str]) -> None:
    first = two_variants.run(*repeat)
    failed = 2 if repeat else 1
    first.assert_outcomes(passed=4 * (len(repeat) or 1) - failed, failed=failed)
    again = two_variants.run("--lf", *repeat)
    again.assert_outcomes(failed=failed, deselected=4 * (len(repeat) or 1) - failed)
    again.stdout.no_fnmatch_line("*known failures not in selected tests*")
    first_fail = two_variants.run("--ff", "-v", *repeat)
    first_fail.stdout.fnmatch_lines(["cases.jsonl::f-1[[]v2[]]* FAILED*"])
    assert first_fail.stdout.lines.index(
        next(line for line in first_fail.stdout.lines if line.startswith("cases.jsonl::"))
    ) == first_fail.stdout.lines.index(next(line for line in first_fail.stdout.lines if "FAILED" in line))


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_an_unread_vars_field_is_a_warning_at_the_end_of_the_run(suite: Suite, xdist: list[str]) -> None:
    suite.config({"template": {"template": "{input}"}})
    suite.cases([{"case_id": "a", "input": "x", "slice": "s", "vars": {"tone": "dry"}}])
    result = suite.run(*xdist)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*promptsuite: warnings*",
            "cases.jsonl:1: vars field 'tone' (in 1 case, first a) is read by no template of the suite",
        ]
    )
    assert sum("vars field 'tone'" in line for line in result.stdout.lines) == 1  # once, not once per worker


def test_a_node_id_selects_one_variant_or_every_variant_of_a_case(two_variants: Suite) -> None:
    two_variants.run("cases.jsonl::f-1[v2]", "-p", "no:cacheprovider", paths=()).assert_outcomes(failed=1)
    two_variants.run("cases.jsonl::f-2", "-p", "no:cacheprovider", paths=()).assert_outcomes(passed=2)
