"""Rebuild the packaged Adult file from the authors' 5-client CSV split.

Not imported by the package; kept so the shipped file can be reproduced::

    python -m skfedida.datasets._pack ../shared/data/adult/C5

writes ``skfedida/datasets/data/adult_c5.csv.gz`` (all 15 CSV files, one row
per original row, with ``split`` and ``client`` columns added and the test
files' unnamed row-name column dropped; gzip with a
fixed timestamp so the bytes are reproducible).
"""

import gzip
import io
import sys
from pathlib import Path

import pandas as pd

SPLIT_FILES = {"train": "train", "val": "val", "test": "tests"}
N_CLIENTS = 5


def pack(source_dir, destination):
    frames = []
    for split, prefix in SPLIT_FILES.items():
        for client in range(1, N_CLIENTS + 1):
            frame = pd.read_csv(Path(source_dir) / f"{prefix}_S{client}.csv")
            # The test files carry R's row names as an unnamed first column.
            frame = frame.drop(
                columns=[c for c in frame.columns if c.startswith("Unnamed")]
            )
            frame.insert(0, "client", client)
            frame.insert(0, "split", split)
            frames.append(frame)
    text = pd.concat(frames, ignore_index=True).to_csv(index=False)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9, mtime=0) as gz:
        gz.write(text.encode("utf-8"))
    Path(destination).write_bytes(buffer.getvalue())


if __name__ == "__main__":
    pack(sys.argv[1], Path(__file__).parent / "data" / "adult_c5.csv.gz")
