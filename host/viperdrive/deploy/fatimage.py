# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""A FAT12 volume in memory: a CIRCUITPY drive as CircuitPython makes it, with files in it, as bytes.

The emulated Pico on CircuitPython (host/viperdrive/rigs/pico.py) has no USB mass storage host: its CIRCUITPY drive
is written here and put into the chip's flash at 0x100000, which is what a user's copy onto the mounted drive leaves
there. The geometry is CircuitPython's own for a 1 MiB drive on a 2 MB RP2040 board: 2048 sectors of 512 bytes, one
sector per cluster, one FAT, 512 root entries, label CIRCUITPY, no partition table (what
`mkfs.fat -C -F 12 -S 512 -s 1 -f 1 -r 512 -n CIRCUITPY` makes). Names that are not plain upper-case 8.3 get VFAT
long-name entries, as every desktop OS writes them. Folders are made as needed (`add("hal/rp2.py", data)`).

    vol = FatVolume()
    vol.add("code.py", b"import main\\n")
    image = vol.image()         # 1 MiB
    vol.files()                 # {"code.py": b"..."}, read back from the image (tests)
"""
from __future__ import annotations

import struct

SECTOR = 512
DIR_ENTRY = 32
ATTR_READ_ONLY, ATTR_VOLUME, ATTR_DIR, ATTR_ARCHIVE, ATTR_LFN = 0x01, 0x08, 0x10, 0x20, 0x0F
LFN_CHARS = 13
FAT12_MAX_CLUSTERS = 4084
# 2026-01-01 00:00 in FAT's date/time fields (a fixed stamp: the same files give the same image)
FAT_DATE = ((2026 - 1980) << 9) | (1 << 5) | 1
FAT_TIME = 0
_SHORT_OK = set("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'()-@^_`{}~")


class FatError(ValueError):
    pass


def _short_parts(name: str) -> tuple[str, str] | None:
    """(base, ext) when name is already a valid upper-case 8.3 name, else None."""
    base, dot, ext = name.partition(".")
    if not base or len(base) > 8 or len(ext) > 3 or "." in ext or (dot and not ext):
        return None
    if not all(c in _SHORT_OK for c in base + ext):
        return None
    return base, ext


def _short_alias(name: str, taken: set[bytes]) -> bytes:
    """The 8.3 alias of a long name (BASE~N.EXT), unique in its folder."""
    base, _, ext = name.rpartition(".") if "." in name[1:] else (name, "", "")
    clean = lambda s: "".join(c if c in _SHORT_OK else "_" for c in s.upper().replace(" ", "").replace(".", ""))
    base, ext = clean(base) or "_", clean(ext)[:3]
    for n in range(1, 1000):
        tail = f"~{n}"
        alias = (base[:8 - len(tail)] + tail).ljust(8).encode() + ext.ljust(3).encode()
        if alias not in taken:
            return alias
    raise FatError(f"no free short name for {name!r}")


def _checksum(short: bytes) -> int:
    s = 0
    for b in short:
        s = (((s & 1) << 7) + (s >> 1) + b) & 0xFF
    return s


def _entry(short: bytes, attr: int, cluster: int, size: int) -> bytes:
    return struct.pack("<11sBBBHHHHHHHI", short, attr, 0, 0, FAT_TIME, FAT_DATE, FAT_DATE, 0, FAT_TIME, FAT_DATE,
                       cluster, size)


def _lfn_entries(name: str, short: bytes) -> list[bytes]:
    units = list(name.encode("utf-16-le"))
    chars = [units[i] | (units[i + 1] << 8) for i in range(0, len(units), 2)]
    if len(chars) > 255:
        raise FatError(f"name too long for FAT: {name!r}")
    if len(chars) % LFN_CHARS:
        chars += [0x0000] + [0xFFFF] * (LFN_CHARS - 1 - len(chars) % LFN_CHARS)
    parts = [chars[i:i + LFN_CHARS] for i in range(0, len(chars), LFN_CHARS)]
    ck = _checksum(short)
    out = []
    for i, part in enumerate(parts):
        seq = (i + 1) | (0x40 if i == len(parts) - 1 else 0)
        c = part
        out.append(struct.pack("<B5HBBB6HH2H", seq, *c[0:5], ATTR_LFN, 0, ck, *c[5:11], 0, *c[11:13]))
    return out[::-1]            # the last part first, the entry with seq 1 right before the short entry


class _Dir:
    def __init__(self):
        self.entries: dict[str, bytes | _Dir] = {}     # name -> a file's bytes or a folder


def _entries(d: _Dir) -> int:
    """Directory entries a folder takes: ".", "..", and per item its short entry and long-name entries."""
    n = 2
    for name in d.entries:
        n += 1 + (0 if _short_parts(name) else -(-len(name.encode("utf-16-le")) // 2 // LFN_CHARS))
    return n


class FatVolume:
    def __init__(self, sectors: int = 2048, label: str = "CIRCUITPY", root_entries: int = 512,
                 volume_id: int = 0x56445256):
        self.sectors = sectors
        self.label = label.upper()
        self.root_entries = root_entries
        self.volume_id = volume_id
        self.root = _Dir()
        root_sectors = root_entries * DIR_ENTRY // SECTOR
        # FAT sectors: enough 12-bit entries for every cluster the rest of the volume holds
        self.fat_sectors = 1
        while True:
            clusters = sectors - 1 - self.fat_sectors - root_sectors
            if (clusters + 2) * 3 // 2 + 1 <= self.fat_sectors * SECTOR:
                break
            self.fat_sectors += 1
        self.root_sector = 1 + self.fat_sectors
        self.data_sector = self.root_sector + root_sectors
        self.clusters = sectors - self.data_sector
        if self.clusters > FAT12_MAX_CLUSTERS:
            raise FatError(f"{sectors} sectors is too big for FAT12")

    def add(self, path: str, data: bytes) -> None:
        """A file at path ("a/b.py": folders made as needed); an existing one is replaced."""
        *folders, name = [p for p in path.replace("\\", "/").split("/") if p]
        d = self.root
        for f in folders:
            sub = d.entries.setdefault(f, _Dir())
            if not isinstance(sub, _Dir):
                raise FatError(f"{path}: {f} is a file")
            d = sub
        if isinstance(d.entries.get(name), _Dir):
            raise FatError(f"{path} is a folder")
        d.entries[name] = bytes(data)

    # ---- writing ----
    def image(self) -> bytes:
        img = bytearray(self.sectors * SECTOR)
        fat = [0] * (self.clusters + 2)
        fat[0], fat[1] = 0xFF8, 0xFFF
        next_free = [2]

        def alloc(nbytes: int) -> int:
            n = max(1, -(-nbytes // SECTOR))
            first = next_free[0]
            if first + n > self.clusters + 2:
                raise FatError(f"the drive is full ({self.clusters * SECTOR} bytes)")
            for c in range(first, first + n):
                fat[c] = c + 1
            fat[first + n - 1] = 0xFFF
            next_free[0] = first + n
            return first

        def put(cluster: int, data: bytes) -> None:
            off = (self.data_sector + cluster - 2) * SECTOR
            img[off:off + len(data)] = data

        def dir_bytes(d: _Dir, own: int, parent: int) -> bytes:
            raw: list[bytes] = []
            if own:
                raw.append(_entry(b".          ", ATTR_DIR, own, 0))
                raw.append(_entry(b"..         ", ATTR_DIR, parent, 0))
            else:
                raw.append(_entry(self.label.ljust(11)[:11].encode(), ATTR_VOLUME, 0, 0))
            taken: set[bytes] = set()
            for name, item in d.entries.items():
                parts = _short_parts(name)
                if parts is not None and parts[0].ljust(8).encode() + parts[1].ljust(3).encode() not in taken:
                    short = parts[0].ljust(8).encode() + parts[1].ljust(3).encode()
                    lfn: list[bytes] = []
                else:
                    short = _short_alias(name, taken)
                    lfn = _lfn_entries(name, short)
                taken.add(short)
                if isinstance(item, _Dir):
                    cluster = alloc(_entries(item) * DIR_ENTRY)
                    sub = dir_bytes(item, cluster, own)
                    put(cluster, sub)
                    raw += lfn + [_entry(short, ATTR_DIR, cluster, 0)]
                else:
                    data = item
                    cluster = alloc(len(data)) if data else 0
                    if data:
                        put(cluster, data)
                    raw += lfn + [_entry(short, ATTR_ARCHIVE, cluster, len(data))]
            return b"".join(raw)

        root = dir_bytes(self.root, 0, 0)
        if len(root) > self.root_entries * DIR_ENTRY:
            raise FatError("too many entries in the drive's top folder")
        img[self.root_sector * SECTOR:self.root_sector * SECTOR + len(root)] = root
        # boot sector: jump, OEM name, BPB, extended BPB, signature
        bpb = struct.pack("<3s8sHBHBHHBHHHII", b"\xEB\x3C\x90", b"mkfs.fat", SECTOR, 1, 1, 1, self.root_entries,
                          self.sectors, 0xF8, self.fat_sectors, 32, 64, 0, 0)
        ebpb = struct.pack("<BBBI11s8s", 0x80, 0, 0x29, self.volume_id, self.label.ljust(11)[:11].encode(),
                           b"FAT12   ")
        img[0:len(bpb)] = bpb
        img[len(bpb):len(bpb) + len(ebpb)] = ebpb
        img[510:512] = b"\x55\xAA"
        # the FAT: 12-bit entries, two per three bytes
        packed = bytearray(self.fat_sectors * SECTOR)
        for i, v in enumerate(fat):
            o = i * 3 // 2
            if i & 1:
                packed[o] = (packed[o] & 0x0F) | ((v << 4) & 0xF0)
                packed[o + 1] = (v >> 4) & 0xFF
            else:
                packed[o] = v & 0xFF
                packed[o + 1] = (packed[o + 1] & 0xF0) | ((v >> 8) & 0x0F)
        img[SECTOR:SECTOR + len(packed)] = packed
        return bytes(img)


# ---- reading (what a drive holds: the tests' check, and a look at a drive CircuitPython wrote) ----
def read_files(image: bytes) -> dict[str, bytes]:
    """Every file on a FAT12 volume image: {path: data} (long names where present)."""
    bps, spc, reserved, nfats, root_entries, total, _media, fat_sectors = struct.unpack_from("<HBHBHHBH", image, 11)
    if image[510:512] != b"\x55\xAA" or bps != SECTOR or spc != 1:
        raise FatError("not a FAT12 volume with 512-byte sectors and one sector per cluster")
    fat = image[reserved * bps:(reserved + fat_sectors) * bps]
    root_sector = reserved + nfats * fat_sectors
    data_sector = root_sector + root_entries * DIR_ENTRY // bps

    def entry(c: int) -> int:
        o = c * 3 // 2
        v = fat[o] | (fat[o + 1] << 8)
        return v >> 4 if c & 1 else v & 0xFFF

    def chain(c: int) -> bytes:
        out = bytearray()
        seen = 0
        while 2 <= c < 0xFF8 and seen < total:
            off = (data_sector + c - 2) * bps
            out += image[off:off + bps]
            c = entry(c)
            seen += 1
        return bytes(out)

    def walk(raw: bytes, prefix: str, out: dict) -> None:
        lfn: dict[int, str] = {}
        for i in range(0, len(raw) - DIR_ENTRY + 1, DIR_ENTRY):
            e = raw[i:i + DIR_ENTRY]
            if e[0] == 0:
                break
            if e[0] == 0xE5:
                lfn = {}
                continue
            attr = e[11]
            if attr == ATTR_LFN:
                seq = e[0] & 0x1F
                units = e[1:11] + e[14:26] + e[28:32]
                text = units.decode("utf-16-le")
                lfn[seq] = text.split("\x00")[0]
                continue
            if attr & ATTR_VOLUME:
                lfn = {}
                continue
            short = e[0:8].decode().rstrip() + ("." + e[8:11].decode().rstrip() if e[8:11].strip() else "")
            name = "".join(lfn[k] for k in sorted(lfn)) if lfn else short
            lfn = {}
            if name in (".", ".."):
                continue
            cluster = struct.unpack_from("<H", e, 26)[0]
            size = struct.unpack_from("<I", e, 28)[0]
            if attr & ATTR_DIR:
                walk(chain(cluster), prefix + name + "/", out)
            else:
                out[prefix + name] = chain(cluster)[:size]

    files: dict[str, bytes] = {}
    walk(image[root_sector * bps:data_sector * bps], "", files)
    return files


__all__ = ["FatVolume", "FatError", "read_files"]
