# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""False-accept rate of the frame Parser on random bytes, next to the theoretical rate (docs/protocol.md).

A random byte position starts a falsely accepted frame when its byte is the sync byte (p = 1/256), the next
byte is a legal LEN 1..64 (p = 64/256) and the two CRC bytes match (p = 2**-16):
    p = 2**-8 * 2**-2 * 2**-16 = 2**-26 = 1.49e-8 per byte, i.e. 0.0149 per MB (1 MB = 10**6 bytes).
The intermediate counts are checked against theory too: candidate frames whose CRC gets checked
(sync + legal LEN, 2**-10 per byte) and length errors (sync + illegal LEN, 2**-8 * 192/256 per byte).

Prints:
  protocol_false_accept frames=... bytes=... rate_per_mb=... theory_per_mb=... crc_checks=... theory_crc_checks=...
      length_errors=... theory_length_errors=... upper95_per_mb=... seconds=...
upper95_per_mb is the one-sided 95% Poisson upper bound on the true rate given the count seen: at 0.0149 per MB,
10 MB shows no false frame 86% of the time, so the count alone cannot confirm the rate; the bound shows it is
not above theory by more than chance allows.
"""
from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scipy.stats import chi2  # noqa: E402

from shared import protocol as P  # noqa: E402

SIZE = 10 * 10**6
SEED = 2026
CHUNK = 4096


def theory_per_byte() -> tuple[float, float, float]:
    """(false accept, CRC check, length error) probabilities for one random byte position."""
    p_sync = 1 / 256
    p_len_ok = P.MAX_LEN / 256          # LEN in 1..MAX_LEN
    p_crc = 2.0 ** -16
    return p_sync * p_len_ok * p_crc, p_sync * p_len_ok, p_sync * (1 - p_len_ok)


def main() -> int:
    data = random.Random(SEED).randbytes(SIZE)
    p = P.Parser()
    t0 = time.perf_counter()
    frames = 0
    for i in range(0, SIZE, CHUNK):
        frames += len(p.feed(data[i:i + CHUNK]))
    dt = time.perf_counter() - t0
    if p.bytes_in != p.frame_bytes + p.garbage_bytes + p.pending():
        print("bench_fuzz: counters do not add up", file=sys.stderr)
        return 1
    p_false, p_check, p_len = theory_per_byte()
    mb = SIZE / 1e6
    upper95 = chi2.ppf(0.95, 2 * (frames + 1)) / 2 / mb
    print("protocol_false_accept frames=%d bytes=%d rate_per_mb=%.4f theory_per_mb=%.4f crc_checks=%d "
          "theory_crc_checks=%.0f length_errors=%d theory_length_errors=%.0f upper95_per_mb=%.3f seconds=%.1f"
          % (frames, SIZE, frames / mb, p_false * 1e6, p.crc_errors + frames, p_check * SIZE, p.length_errors,
             p_len * SIZE, upper95, dt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
