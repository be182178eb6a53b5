"""NeMo Guardrails' Jinja filters with NeMo's names and input shapes, against NeMo's outputs on the same inputs
(recorded from nemoguardrails 0.10.1 in ``tests/fixtures/nemo``)."""

from __future__ import annotations

import pytest

from pytest_promptsuite.dialects.nemo.nemo_filters import NEMO_FILTERS
from pytest_promptsuite.errors import TemplateError
from tests.fixtures.nemo.inputs import COLANG
from tests.fixtures.nemo.inputs import EVENTS
from tests.fixtures.nemo.inputs import ON_COLANG
from tests.fixtures.nemo.inputs import ON_EVENTS
from tests.fixtures.nemo.inputs import V2
from tests.unit.dialects.nemo.support import EXPECTED
from tests.unit.dialects.nemo.support import make_filter


class TestFiltersAsNeMo:
    @pytest.mark.parametrize("name", ON_EVENTS)
    def test_on_an_event_history(self, name: str) -> None:
        assert NEMO_FILTERS[name](EVENTS) == EXPECTED["filters"][name]

    @pytest.mark.parametrize("name", ON_COLANG)
    def test_on_colang_text(self, name: str) -> None:
        assert NEMO_FILTERS[name](COLANG) == EXPECTED["filters"][name]

    def test_the_others(self) -> None:
        assert NEMO_FILTERS["to_messages_v2"](V2) == EXPECTED["filters"]["to_messages_v2"]
        assert NEMO_FILTERS["first_turns"](COLANG, 1) == EXPECTED["filters"]["first_turns"]
        assert NEMO_FILTERS["last_turns"](COLANG, 1) == EXPECTED["filters"]["last_turns"]
        assert NEMO_FILTERS["indent"]("a\n\nb", 2) == EXPECTED["filters"]["indent"]

    def test_every_filter_of_nemo_is_here(self) -> None:
        assert set(EXPECTED["filters"]) | {"to_messages_v2"} == set(NEMO_FILTERS)

    def test_a_wrong_input_shape_names_the_filter(self) -> None:
        with pytest.raises(TemplateError, match="NeMo filter 'to_messages' expects Colang history text"):
            NEMO_FILTERS["to_messages"]([{"role": "user", "content": "x"}])
        with pytest.raises(TemplateError, match="NeMo filter 'colang' expects an event history"):
            NEMO_FILTERS["colang"]('user "x"')

    def test_hooks_answer_nemo_names_apart_from_ours(self) -> None:
        assert make_filter("nemo.to_messages") is NEMO_FILTERS["to_messages"]
        assert make_filter("to_messages") is not NEMO_FILTERS["to_messages"]
        assert make_filter("verbose_v1") is None  # NeMo's filters apply under NeMo semantics only
