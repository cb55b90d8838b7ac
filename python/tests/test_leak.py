"""No leak across 10,000 forward/backward calls: the resident set size (from
/proc/self/statm) stays flat once the first calls have warmed the pools."""
import gc
import os

import numpy as np
import pytest

from onnxgrad import OrtGradientForwardBackward

PAGE = os.sysconf("SC_PAGE_SIZE")
# AddressSanitizer keeps freed blocks in quarantine: the RSS then grows with every call
pytestmark = pytest.mark.skipif(bool(os.environ.get("ONNXGRAD_SANITIZED")),
                                reason="RSS is meaningless under AddressSanitizer")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def run_calls(inst, n, batch, seed_shape, fails=False):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 5)).astype(np.float32)
    for i in range(n):
        xi = x + np.float32(i % 7)  # a fresh input array each call
        y, = inst.forward([xi], training=True)
        grads = inst.backward([np.ones(seed_shape, np.float32)])
        assert len(grads) == 3
        inst.forward([xi])
        if fails:
            try:
                inst.forward([xi.astype(np.float64)], training=True)
            except ValueError:
                pass
            try:
                inst.backward()
            except ValueError:
                pass


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
@pytest.mark.parametrize("batch", [1, 64])
def test_rss_stable_over_10000_calls(linreg, batch):
    fw = OrtGradientForwardBackward(linreg, threads=1)
    inst = fw.new_instance()
    run_calls(inst, 1000, batch, (batch, 1), fails=True)  # warm-up: pools, caches
    gc.collect()
    before = rss_bytes()
    run_calls(inst, 10000, batch, (batch, 1), fails=True)
    gc.collect()
    grown = rss_bytes() - before
    # one leaked output per call would be 10,000 x (tensor struct + data) > 1 MB
    assert grown < 512 * 1024, "RSS grew by %d bytes over 10,000 calls" % grown
    assert inst.pending == 0


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_rss_stable_creating_objects(linreg):
    def cycle():
        fw = OrtGradientForwardBackward(linreg, threads=1)
        inst = fw.new_instance()
        inst.forward([np.ones((2, 5), np.float32)], training=True)  # left pending
        return inst.forward([np.ones((2, 5), np.float32)])

    # The allocators' free lists settle over the first thousand objects (RSS grows by about
    # half a megabyte there, leveling off, with or without a leak); a leak keeps growing.
    # So 3,000 objects are measured after a warm-up of 1,200: about 0.6 MB of growth here
    # without a leak, 2.0 MB with the sessions' kernel arrays leaked (a few hundred bytes
    # per object), planted to check that this test sees it.
    for _ in range(1200):
        cycle()
    gc.collect()
    before = rss_bytes()
    for _ in range(3000):
        cycle()
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 1024 * 1024, "RSS grew by %d bytes over 3,000 objects" % grown
