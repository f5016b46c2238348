"""The unit tests' own fixtures."""

import pytest

from ndbchaos import settings


@pytest.fixture(autouse=True)
def fresh_settings():
    """Every unit test starts from the environment it sets (``monkeypatch.setenv`` before its
    first use of the settings): the process' settings, read once, are forgotten around each."""
    settings.use(None)
    yield
    settings.use(None)
