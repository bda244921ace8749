"""Shared fixtures for the Python tests."""
import os
import tempfile
import zlib

import numpy as np
import pytest

# Hermetic compile cache: tests never read or write the user's ~/.cache/jitflow.
os.environ.setdefault("JITFLOW_CACHE_DIR", tempfile.mkdtemp(prefix="jitflow-test-cache-"))


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from the test's id: every test (and every parametrization of
    it) draws its own inputs, and a failure reproduces exactly when the test is rerun alone."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
