# SPDX-License-Identifier: Apache-2.0
# Keep a NumPy array in a store and read it back, whole and in part,
# without an extra copy: the bytes land straight in the array's memory,
# each chunk verified on the way.
#
#   python3 python_arrays.py STORE_DIR
import sys

import numpy as np

import chunkstore


def main(location):
    weights = np.arange(1_000_000, dtype=np.float32).reshape(1000, 1000)
    with chunkstore.Store.open(location, create=True) as store:
        published = store.publish(weights, name="model/weights")
        print(published["id"], published["version"])

        # The whole array, read into memory the array owns.
        restored = np.empty_like(weights)
        with store.open("model/weights") as f:
            f.readinto(restored)
        assert np.array_equal(restored, weights)

        # One row, read at its offset: only the chunk that holds it is read.
        row = np.empty(1000, dtype=np.float32)
        with store.open(published["id"]) as f:
            f.seek(500 * row.nbytes)
            f.readinto(row)
        assert np.array_equal(row, weights[500])

        # A name that does not exist is an exception, with the command's exit code.
        try:
            store.open("model/missing")
        except chunkstore.NotFound as e:
            print("not found, exit code", e.exit_code)


if __name__ == "__main__":
    main(sys.argv[1])
