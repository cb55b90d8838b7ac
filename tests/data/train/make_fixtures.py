#!/usr/bin/env python3
"""Regenerate the small .npy/.npz fixtures of tests/unit/test_data.c (deterministic).

    python3 tests/data/train/make_fixtures.py     # writes next to this script

The arrays are the same on every run (the archives' timestamps are not).  The values are
simple formulas so that test_data.c can check every element:
X[i, j] = i + j / 10 (times a per-file scale), y[i] = i % 3, weights (i + 1) / 2.
"""
import os
import struct
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(HERE, name)


def grid(n, f, dtype):
    return (np.arange(n)[:, None] + np.arange(f)[None, :] / 10).astype(dtype)


def main():
    # 2-D .npy, float64 [5, 4]: columns 0..2 features, column 3 target (the default)
    a = grid(5, 4, np.float64)
    a[:, 3] = np.arange(5) % 3
    np.save(path("table.npy"), a)
    # int32 .npy [4, 3]
    np.save(path("table_int.npy"), (np.arange(12).reshape(4, 3) * 2).astype(np.int32))
    # a 1-D .npy: refused (a dataset .npy is 2-D)
    np.save(path("vector.npy"), np.arange(6, dtype=np.float32))

    # savez (stored): image-shaped float64 features, int64 labels, float32 weights
    x = (np.arange(6 * 2 * 3).reshape(6, 1, 2, 3) / 4).astype(np.float64)
    np.savez(path("stored.npz"), X=x, y=np.arange(6, dtype=np.int64) % 3,
             sample_weight=((np.arange(6) + 1) / 2).astype(np.float32))
    # savez_compressed (deflate): float32 [40, 4] features, int32 labels
    np.savez_compressed(path("compressed.npz"), X=grid(40, 4, np.float32),
                        y=(np.arange(40) % 3).astype(np.int32))
    # other default names, float16 features, bool labels, an extra array
    np.savez(path("names.npz"), data=grid(3, 2, np.float16), labels=np.array([True, False, True]),
             extra=np.zeros(2))
    # float labels: fine as float32 targets, 2.5 refused as int64
    np.savez(path("float_labels.npz"), X=grid(3, 2, np.float32),
             y=np.array([1.0, 2.5, 0.0]))
    # sample counts that differ
    np.savez(path("mismatch.npz"), X=grid(5, 2, np.float32), y=np.zeros(4, dtype=np.int64))

    # written to a stream that cannot seek: zipfile then uses data descriptors (flag bit 3)
    # and the local headers hold no sizes; only the central directory has them
    class Stream:
        def __init__(self, f):
            self.f = f

        def write(self, b):
            return self.f.write(b)

        def flush(self):
            self.f.flush()

        def read(self, n=-1):  # numpy takes objects with read() as files; never called
            raise OSError("write-only")

    with open(path("streamed.npz"), "wb") as f:
        np.savez_compressed(Stream(f), X=grid(4, 2, np.float32), y=np.arange(4))
    with open(path("streamed.npz"), "rb") as f:
        assert f.read(8)[6] & 8, "no data descriptor"

    # zip64: python's zipfile writes zip64 central extras and end records past ZIP64_LIMIT;
    # lowering the limit makes a small archive use them, then the classic end record's
    # fields are saturated (0xFFFF / 0xFFFFFFFF) so that only the zip64 ones are usable.
    saved = zipfile.ZIP64_LIMIT
    zipfile.ZIP64_LIMIT = 16
    try:
        np.savez_compressed(path("zip64.npz"), X=grid(7, 3, np.float32),
                            y=np.arange(7, dtype=np.int64))
    finally:
        zipfile.ZIP64_LIMIT = saved
    with open(path("zip64.npz"), "rb") as f:
        b = bytearray(f.read())
    eocd = b.rfind(b"PK\x05\x06")
    assert eocd > 0 and b[eocd - 20:eocd - 16] == b"PK\x06\x07", "no zip64 locator"
    struct.pack_into("<HHHHIIH", b, eocd + 4, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    with open(path("zip64.npz"), "wb") as f:
        f.write(b)

    # every archive reads back in numpy
    for name in ["stored", "compressed", "names", "float_labels", "mismatch", "streamed",
                 "zip64"]:
        with np.load(path(name + ".npz")) as z:
            for k in z.files:
                z[k]
    with np.load(path("zip64.npz")) as z:
        assert z["X"].shape == (7, 3) and z["y"][6] == 6


if __name__ == "__main__":
    main()
