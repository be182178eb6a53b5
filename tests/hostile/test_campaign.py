"""The attack campaign (``tests/hostile/campaign.py``) at its base size: for every class of attack,
no traceback, no hang, nothing lost and nothing leaked; every refusal a clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.campaign import campaign
from tests.hostile.campaign import table
from tests.loopback import LoopbackServer


pytestmark = pytest.mark.slow


def test_every_attack_class_ends_clean(loopback: LoopbackServer, tmp_path: Path) -> None:
    tallies = campaign(tmp_path, loopback)

    print(table(tallies))
    for tally in tallies:
        assert tally.tried > 0, tally
        assert (tally.traceback, tally.hang, tally.lost, tally.leak) == (0, 0, 0, 0), tally
        assert tally.clear + tally.accepted == tally.tried, tally
    by_name = {t.name: t for t in tallies}
    assert by_name["case-file mutations"].clear > 0 and by_name["case-file mutations"].accepted > 0
    for name in ("prompts.yml bombs and mutations", "Jinja escapes and bombs", "files and code from outside"):
        assert by_name[name].clear > 0, name
