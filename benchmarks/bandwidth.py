"""Measured device memory bandwidth: the copy rate a decode step can hope for, next to the datasheet's.

The roofline's decode floor is weight bytes / bandwidth. The datasheet figure (H200: 4.8 TB/s)
is a peak no kernel reaches; a large device-to-device ``copy_`` (read + write, counted as
2 × bytes) is the practical ceiling. Timed with the device synchronized, after warm-up,
repeated; median and spread printed as JSON:

    python -m benchmarks.bandwidth [--gib 4] [--repeats 20] [--device cuda] [-o bandwidth.json]

Feed the median to the report with ``python compare.py report ... --bandwidth-gbps X`` to draw the floor
at the measured rate instead of the datasheet's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any


def copy_bandwidth(n_bytes: int, repeats: int, device: str) -> dict[str, Any]:
    """Device-to-device copy rate of one ``n_bytes`` buffer, counted as 2 x bytes (read + write) per copy:
    median, min and max GB/s over ``repeats`` copies, each timed with the device synchronized, after three
    warm-up copies."""
    import torch

    src = torch.empty(n_bytes, dtype=torch.uint8, device=device)
    src.fill_(1)
    dst = torch.empty_like(src)
    cuda = src.device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for _ in range(3):  # warm-up
        dst.copy_(src)
    sync()
    seconds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst.copy_(src)
        sync()
        seconds.append(time.perf_counter() - t0)
    gbps = sorted(2 * n_bytes / s / 1e9 for s in seconds)
    return {
        "device": torch.cuda.get_device_name(src.device) if cuda else "cpu",
        "bytes": n_bytes,
        "repeats": repeats,
        "copy_gbps_median": statistics.median(gbps),
        "copy_gbps_min": gbps[0],
        "copy_gbps_max": gbps[-1],
        "method": "dst.copy_(src) of one uint8 buffer, 2 x bytes / wall time, synchronized per copy",
    }


def main(argv: list[str] | None = None) -> int:
    """The command line: measures, prints the result as JSON (also to ``--out``); exit 2 for a non-positive
    ``--gib`` or ``--repeats`` below 1."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.bandwidth",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--gib", type=float, default=4.0, help="buffer size in GiB (default: 4)")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--device", default="cuda")
    p.add_argument("-o", "--out", type=Path, default=None, help="also write the JSON here")
    args = p.parse_args(argv)
    if args.gib <= 0 or args.repeats < 1:
        p.error("--gib must be positive and --repeats at least 1")
    result = copy_bandwidth(int(args.gib * 2**30), args.repeats, args.device)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
