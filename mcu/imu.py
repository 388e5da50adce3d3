# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# IMU drivers over an I2C bus (machine.I2C on the chips, the virtual board's emulated bus on the unix port):
# MPU-6050 family and LSM6DS3, chosen by the board config's imu.part. docs/firmware.md, "Sensors".
#
# The bus interface is machine.I2C's: readfrom_mem_into(addr, reg, buf) and writeto_mem(addr, reg, buf), both
# raising OSError on a NACK (EIO/ENODEV) or a timeout (ETIMEDOUT). Nothing here waits: the init sequence is two
# steps (begin(): check WHO_AM_I and reset; configure(): after the reset time, wake and set the ranges), so a
# part that resets never blocks the slow loop, and a part that does not answer costs one failed transfer.
#
# read() is allocation-free after construction (one preallocated buffer, readfrom_mem_into, integer scaling):
# mcu/tests/mptest_imu.py proves it under micropython.heap_lock(). Output in board axes (REP-103: x forward,
# y left, z up) after the config's axis map and signs: gyro in urad/s, acceleration in mm/s^2 (the wire's units).
from array import array

from micropython import const

# MPU-6000/MPU-6050 Register Map and Descriptions (RM-MPU-6000A): 14 data bytes from ACCEL_XOUT_H, big-endian
# (accel x, y, z, temperature, gyro x, y, z). The MPU-6500/9250 keep these registers.
MPU_SMPLRT_DIV = const(0x19)
MPU_CONFIG = const(0x1A)
MPU_GYRO_CONFIG = const(0x1B)      # FS_SEL in bits 4:3: 250, 500, 1000, 2000 deg/s
MPU_ACCEL_CONFIG = const(0x1C)     # AFS_SEL in bits 4:3: 2, 4, 8, 16 g
MPU_ACCEL_XOUT_H = const(0x3B)
MPU_PWR_MGMT_1 = const(0x6B)       # 0x80 DEVICE_RESET; after reset 0x40 (SLEEP); 0x01 awake, PLL on the X gyro
MPU_WHO_AM_I = const(0x75)
MPU_IDS = (0x68, 0x70, 0x71)       # MPU-6050, MPU-6500, MPU-9250
MPU_RESET_MS = const(100)
MPU_STARTUP_MS = const(30)          # gyro start-up time (datasheet: 30 ms typical): the data registers hold 0 until
MPU_DLPF_44HZ = const(3)           # CONFIG DLPF_CFG 3: gyro 42 Hz / accel 44 Hz bandwidth, gyro output rate 1 kHz

# LSM6DS3 datasheet (DocID026899): 12 data bytes from OUTX_L_G, little-endian (gyro x, y, z, accel x, y, z)
LSM_WHO_AM_I = const(0x0F)
LSM_CTRL1_XL = const(0x10)         # ODR_XL bits 7:4, FS_XL bits 3:2 (00 2 g, 01 16 g, 10 4 g, 11 8 g)
LSM_CTRL2_G = const(0x11)          # ODR_G bits 7:4, FS_G bits 3:2 (00 245, 01 500, 10 1000, 11 2000 deg/s)
LSM_CTRL3_C = const(0x12)          # 0x01 SW_RESET; 0x40 BDU (no torn samples); 0x04 IF_INC (auto-increment)
LSM_OUTX_L_G = const(0x22)
LSM_IDS = (0x69, 0x6A)             # LSM6DS3, LSM6DS3TR-C
LSM_RESET_MS = const(20)
LSM_STARTUP_MS = const(70)          # gyro turn-on time (datasheet): no output data before it
LSM_ODR_104 = const(4)             # ODR code 0100: 104 Hz
LSM_ODR_208 = const(5)             # 0101: 208 Hz

_GYRO_FS = (250, 500, 1000, 2000)
_ACCEL_FS = (2, 4, 8, 16)
_LSM_FS_XL = (0, 2, 3, 1)           # FS_XL codes for 2, 4, 8, 16 g
_DEG = 0.017453292519943295
G0 = 9.80665                        # standard gravity, m/s^2

# sensitivities per full-scale step (datasheets): deg/s per LSB and g per LSB
_MPU_GYRO_LSB = (1 / 131.0, 1 / 65.5, 1 / 32.8, 1 / 16.4)
_MPU_ACCEL_LSB = (1 / 16384.0, 1 / 8192.0, 1 / 4096.0, 1 / 2048.0)
_LSM_GYRO_LSB = (8.75e-3, 17.5e-3, 35e-3, 70e-3)
_LSM_ACCEL_LSB = (0.061e-3, 0.122e-3, 0.244e-3, 0.488e-3)

STARTING = const(0)                 # begin() not run, or failed
RESETTING = const(1)                # reset written; configure() once ready_in_ms has passed
RUNNING = const(2)


def fixed_scale(x):
    """(m, s) with x ~= m / 2**s and m < 2**15: |raw| <= 2**15 times m stays a small int (< 2**30)."""
    s = 0
    while x * (1 << (s + 1)) < 32768.0 and s < 30:
        s += 1
    return int(x * (1 << s) + 0.5), s


class WrongPart(Exception):
    """Something answers at the address, but its WHO_AM_I is not the configured part's."""


class Imu:
    """One IMU part on bus at cfg["address"]; cfg: the board config's validated imu object."""

    def __init__(self, bus, cfg):
        self.bus = bus
        self.part = cfg["part"]
        self.addr = cfg["address"]
        self.map = tuple(cfg["map"])
        self.sign = tuple(cfg["sign"])
        fs = _GYRO_FS.index(cfg["gyro_fs_dps"])
        afs = _ACCEL_FS.index(cfg["accel_fs_g"])
        self.fs = fs
        self.afs = afs
        self.rate_hz = cfg.get("rate_hz", 100)
        if self.part == "mpu6050":
            self.who_reg = MPU_WHO_AM_I
            self.ids = MPU_IDS
            self.data_reg = MPU_ACCEL_XOUT_H
            self.buf = bytearray(14)
            self.big = 1
            self.gyro_at = 8            # gyro x high byte in the burst (after accel and temperature)
            self.accel_at = 0
            self.reset_ms = MPU_RESET_MS
            self.startup_ms = MPU_STARTUP_MS
            g_lsb = _MPU_GYRO_LSB[fs]
            a_lsb = _MPU_ACCEL_LSB[afs]
        elif self.part == "lsm6ds3":
            self.who_reg = LSM_WHO_AM_I
            self.ids = LSM_IDS
            self.data_reg = LSM_OUTX_L_G
            self.buf = bytearray(12)
            self.big = 0
            self.gyro_at = 0
            self.accel_at = 6
            self.reset_ms = LSM_RESET_MS
            self.startup_ms = LSM_STARTUP_MS
            g_lsb = _LSM_GYRO_LSB[fs]
            a_lsb = _LSM_ACCEL_LSB[afs]
        else:
            raise ValueError("unknown IMU part %r" % (self.part,))
        # LSB -> urad/s and mm/s^2 as m / 2**s
        self.gm, self.gs = fixed_scale(g_lsb * _DEG * 1e6)
        self.am, self.as_ = fixed_scale(a_lsb * G0 * 1e3)
        self.one = bytearray(1)
        self.raw = array("i", [0] * 6)     # part axes: gyro x, y, z, accel x, y, z (LSB)
        self.out = array("i", [0] * 6)     # board axes: gyro x, y, z (urad/s), accel x, y, z (mm/s^2)
        self.who = -1                      # the WHO_AM_I read by the last begin()
        self.phase = STARTING
        self.reads = 0

    # ---- init: two steps, no waiting ----

    def _write(self, reg, value):
        self.one[0] = value
        self.bus.writeto_mem(self.addr, reg, self.one)

    def _read_reg(self, reg):
        self.bus.readfrom_mem_into(self.addr, reg, self.one)
        return self.one[0]

    def begin(self):
        """Check WHO_AM_I and reset the part. -> ms until configure() may run. OSError: no answer;
        WrongPart: another part's WHO_AM_I."""
        self.phase = STARTING
        who = self._read_reg(self.who_reg)
        self.who = who
        if who not in self.ids:
            raise WrongPart("WHO_AM_I 0x%02x at 0x%02x, %s has %s" % (who, self.addr, self.part,
                                                                       "/".join("0x%02x" % i for i in self.ids)))
        if self.big:
            self._write(MPU_PWR_MGMT_1, 0x80)      # DEVICE_RESET: every register to its default (asleep)
        else:
            self._write(LSM_CTRL3_C, 0x01)         # SW_RESET
        self.phase = RESETTING
        return self.reset_ms

    def configure(self):
        """After the reset time: wake the part, set the output rate, filter and full scales, and check the gyro
        range register reads back. -> ms until its first sample is there (startup_ms: read() before gives the
        zeros of the reset). OSError: no answer (begin() again)."""
        if self.big:
            self._write(MPU_PWR_MGMT_1, 0x01)      # awake, clock from the X gyro's PLL (better than the RC clock)
            self._write(MPU_CONFIG, MPU_DLPF_44HZ)
            self._write(MPU_SMPLRT_DIV, 1000 // self.rate_hz - 1)
            self._write(MPU_GYRO_CONFIG, self.fs << 3)
            self._write(MPU_ACCEL_CONFIG, self.afs << 3)
            ok = self._read_reg(MPU_GYRO_CONFIG) == self.fs << 3
        else:
            odr = LSM_ODR_104 if self.rate_hz <= 104 else LSM_ODR_208
            self._write(LSM_CTRL3_C, 0x44)         # BDU + IF_INC
            self._write(LSM_CTRL1_XL, (odr << 4) | (_LSM_FS_XL[self.afs] << 2))
            self._write(LSM_CTRL2_G, (odr << 4) | (self.fs << 2))
            ok = self._read_reg(LSM_CTRL2_G) == (odr << 4) | (self.fs << 2)
        if not ok:
            # it answers but did not take the configuration: treat as not answering properly, start again
            self.phase = STARTING
            raise OSError(5)
        self.phase = RUNNING
        return self.startup_ms

    # ---- the sample: allocation-free ----

    def read(self):
        """One burst read of gyro and accel into self.out (board axes, urad/s and mm/s^2). OSError on a NACK or a
        timeout. No allocation."""
        buf = self.buf
        self.bus.readfrom_mem_into(self.addr, self.data_reg, buf)
        raw = self.raw
        big = self.big
        g = self.gyro_at
        a = self.accel_at
        for i in range(6):
            j = g + 2 * i if i < 3 else a + 2 * (i - 3)
            if big:
                v = (buf[j] << 8) | buf[j + 1]
            else:
                v = buf[j] | (buf[j + 1] << 8)
            if v & 0x8000:
                v -= 0x10000
            raw[i] = v
        out = self.out
        gm = self.gm
        gs = self.gs
        am = self.am
        as_ = self.as_
        gr = 1 << (gs - 1) if gs else 0
        ar = 1 << (as_ - 1) if as_ else 0
        for i in range(3):
            src = self.map[i]
            v = (raw[src] * gm + gr) >> gs
            out[i] = v if self.sign[i] > 0 else -v
            v = (raw[3 + src] * am + ar) >> as_
            out[3 + i] = v if self.sign[i] > 0 else -v
        self.reads += 1
        return True
