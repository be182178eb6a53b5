"""Stage tests for ``results.policy``: where thresholds and the allowed regression come from."""

from __future__ import annotations

from pytest_promptsuite.results.policy import ThresholdPolicy


def test_threshold_sources_in_order_of_precedence() -> None:
    policy = ThresholdPolicy(slices={"inj": 1.0}, option=0.8, config_default=0.9)
    assert policy.threshold("inj") == (1.0, "config slice")
    assert policy.threshold("other") == (0.8, "option")
    assert ThresholdPolicy(config_default=0.9).threshold("x") == (0.9, "config default")
    assert ThresholdPolicy().threshold("x") == (1.0, "default")
    assert ThresholdPolicy(max_regression_option=0.1, max_regression_config=0.2).max_regression() == (
        0.1, "option"
    )
    assert ThresholdPolicy(max_regression_config=0.2).max_regression() == (0.2, "config")
    assert ThresholdPolicy().max_regression() == (0.0, "default")


def test_policy_round_trips_through_its_dict() -> None:
    policy = ThresholdPolicy(
        slices={"inj": 1.0}, option=0.8, config_default=0.9, builtin=0.5, max_regression_option=0.1,
        max_regression_config=0.2,
    )
    assert list(policy.to_dict()) == [
        "slices", "option", "config_default", "builtin", "max_regression_option", "max_regression_config"
    ]
    assert ThresholdPolicy.from_dict(policy.to_dict()) == policy
    assert ThresholdPolicy.from_dict({}) == ThresholdPolicy()
