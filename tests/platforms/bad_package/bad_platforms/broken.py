"""A platform whose module cannot be imported."""

import dabench_sdk_that_is_not_installed  # noqa: F401
