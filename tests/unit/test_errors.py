"""Stage tests for ``errors``: did-you-mean, ``nearest`` among the names a value could have meant."""

from __future__ import annotations

from pytest_promptsuite.errors import nearest


def test_nearest_ranks_by_edit_distance_over_the_whole_name() -> None:
    assert nearest("must_inlcude", ["must_not_include", "must_include"]) == "must_include"
    assert nearest("traveler_tier", ["input", "traveller_tier", "tier"]) == "traveller_tier"
    # difflib's ratio prefers the long shared run 'include'; the whole name is one edit from 'inlcude'
    assert nearest("inlcude", ["must_include", "include", "exclude"]) == "include"
    # whole-name distance: 'contains-json' is 3 edits from 'contains-some', 'contains-any' 4
    assert nearest("contains-some", ["contains-any", "contains-json"]) == "contains-json"


def test_nearest_prefers_the_same_prefix_among_equally_close_names() -> None:
    assert nearest("abcx", ["zbcx", "abcy"]) == "abcy"
    assert nearest("tier", ["tiers", "xtier"]) == "tiers"


def test_nearest_refuses_what_is_no_likely_typo() -> None:
    assert nearest("ab", ["cd"]) is None
    assert nearest("threshold", ["input", "answer"]) is None
    assert nearest("same", ["same"]) is None  # a name that exists is no typo of itself
    assert nearest("alfa", ["alpha"]) == "alpha"
