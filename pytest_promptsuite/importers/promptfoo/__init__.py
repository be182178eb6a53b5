"""promptfoo configs into suites."""
