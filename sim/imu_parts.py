# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Register-level models of the IMU parts the firmware's driver (mcu/imu.py) speaks, on an emulated I2C bus: the
# virtual board's "chips". MicroPython (unix port) and CPython, language only.
#
# What is modelled is what a driver can get wrong: WHO_AM_I, the reset (every register back to its default, the
# part asleep / powered down), the power and rate registers (no new data until the driver wakes it), the full-scale
# registers (the LSB the part outputs in depends on them), the data registers' byte order (MPU-6050 big-endian,
# LSM6DS3 little-endian), register auto-increment on burst reads (LSM6DS3: only with CTRL3_C IF_INC, which is set
# at reset, and a driver that clears it reads one register over and over), and a part that stops answering (every
# transfer NACKs, as a disconnected or browned-out part does).
#
# The physics (true rates, bias, drift, noise, scale error) is the plant's (sim/plant.py); a part only turns the
# values it is given into register bytes with its current full scale.
_DEG = 0.017453292519943295
G0 = 9.80665

EIO = 5                 # a NACK: MicroPython's machine.I2C raises OSError(EIO) (rp2) or ENODEV
ETIMEDOUT = 110


class I2CBus:
    """machine.I2C's memory interface over emulated parts: readfrom_mem_into / writeto_mem raise OSError(EIO)
    when nothing answers at the address (no part, or a part that stopped answering). lock: None, or a lock held for
    each transfer. The virtual board needs none: a part's data registers are swapped in whole by the control
    thread (a burst read sees one sample, as the real parts latch their outputs during a burst read)."""

    def __init__(self, lock=None):
        self.parts = {}
        self.lock = lock
        self.nacks = 0
        self.transfers = 0

    def attach(self, part):
        self.parts[part.address] = part

    def _part(self, addr):
        p = self.parts.get(addr)
        if p is None or not p.answering:
            self.nacks += 1
            raise OSError(EIO)
        return p

    def readfrom_mem_into(self, addr, reg, buf):
        self._transfer(addr, reg, buf, True)

    def writeto_mem(self, addr, reg, buf):
        self._transfer(addr, reg, buf, False)

    def _transfer(self, addr, reg, buf, read):
        lock = self.lock
        if lock is not None:
            lock.acquire()
        try:
            p = self._part(addr)
            self.transfers += 1
            if read:
                p.read_into(reg, buf)
            else:
                for i in range(len(buf)):
                    p.write(reg + i, buf[i])
        finally:
            if lock is not None:
                lock.release()

    def scan(self):
        return sorted(a for a, p in self.parts.items() if p.answering)


def _i16(x):
    v = int(x + 0.5) if x >= 0 else -int(-x + 0.5)
    return 32767 if v > 32767 else (-32768 if v < -32768 else v)


class _Part:
    address = 0
    regs_len = 128

    data_at = 0                 # first data register
    data_len = 0
    DEFAULT_ADDRESS = 0
    DEFAULTS = ()               # (register, value) after power-on and reset; every other register 0
    WHO_REG = 0
    RESET = (0, 0)              # (register, bit): writing the bit resets the part

    def __init__(self, address=None):
        self.address = self.DEFAULT_ADDRESS if address is None else address
        self.answering = True
        self.regs = bytearray(self.regs_len)
        self.data = bytearray(self.data_len)    # the data registers: replaced whole by each new sample
        self.writes = []            # (reg, value) in order: the init sequence a test checks
        self.resets = 0
        self.samples = 0
        self.reset()

    def reset(self):
        r = self.regs
        for i in range(len(r)):
            r[i] = 0
        for reg, v in self.DEFAULTS:
            r[reg] = v
        self.data = bytearray(self.data_len)
        self.resets += 1

    def read_into(self, reg, buf):
        r = self.regs
        d = self.data               # one sample for the whole burst
        lo = self.data_at
        hi = lo + self.data_len
        n = len(buf)
        inc = self.auto_increment()
        for i in range(n):
            a = reg + i if inc else reg
            if lo <= a < hi:
                buf[i] = d[a - lo]
            else:
                buf[i] = r[a] if a < self.regs_len else 0

    def write(self, reg, value):
        self.writes.append((reg, value))
        v = value & 0xFF
        if reg == self.RESET[0] and v & self.RESET[1]:
            self.reset()                # the bit clears itself; the part is asleep / powered down again
            return
        if reg == self.WHO_REG or self.data_at <= reg < self.data_at + self.data_len:
            return                      # read-only
        self.regs[reg] = v

    def _put16(self, d, at, value, big):
        v = value & 0xFFFF
        hi = v >> 8
        lo = v & 0xFF
        i = at - self.data_at
        if big:
            d[i] = hi
            d[i + 1] = lo
        else:
            d[i] = lo
            d[i + 1] = hi


class Mpu6050(_Part):
    """MPU-6050 (RM-MPU-6000A): WHO_AM_I 0x75 = 0x68, PWR_MGMT_1 0x6B reset value 0x40 (SLEEP), GYRO_CONFIG 0x1B /
    ACCEL_CONFIG 0x1C full scale in bits 4:3, data from 0x3B big-endian: accel x y z, temperature, gyro x y z."""
    WHO = 0x68
    WHO_REG = 0x75
    DEFAULT_ADDRESS = 0x68
    DEFAULTS = ((0x75, 0x68), (0x6B, 0x40))         # WHO_AM_I; PWR_MGMT_1 SLEEP
    RESET = (0x6B, 0x80)                            # PWR_MGMT_1 DEVICE_RESET
    data_at = 0x3B
    data_len = 14
    GYRO_LSB_DPS = (131.0, 65.5, 32.8, 16.4)
    ACCEL_LSB_G = (16384.0, 8192.0, 4096.0, 2048.0)

    def auto_increment(self):
        return True

    def awake(self):
        return not self.regs[0x6B] & 0x40

    def sample_period(self):
        """Seconds between new samples: the gyro output rate (8 kHz, 1 kHz with the DLPF on) / (1 + SMPLRT_DIV);
        None while asleep (no new data)."""
        if not self.awake():
            return None
        dlpf = self.regs[0x1A] & 7
        base = 1000.0 if 1 <= dlpf <= 6 else 8000.0
        return (1 + self.regs[0x19]) / base

    def gyro_fs(self):
        return (self.regs[0x1B] >> 3) & 3

    def accel_fs(self):
        return (self.regs[0x1C] >> 3) & 3

    def sample(self, gyro_rad_s, accel_m_s2, temp_c=25.0):
        """New data in the part's axes (rad/s, m/s^2): into the data registers at the configured full scale, if
        the part is awake (asleep, the registers keep what they had: zeros after a reset)."""
        if not self.awake():
            return
        gl = self.GYRO_LSB_DPS[self.gyro_fs()]
        al = self.ACCEL_LSB_G[self.accel_fs()]
        d = bytearray(self.data_len)
        for i in range(3):
            self._put16(d, 0x3B + 2 * i, _i16(accel_m_s2[i] / G0 * al), True)
            self._put16(d, 0x43 + 2 * i, _i16(gyro_rad_s[i] / _DEG * gl), True)
        self._put16(d, 0x41, _i16((temp_c - 36.53) * 340.0), True)
        self.data = d
        self.samples += 1


class Lsm6ds3(_Part):
    """LSM6DS3 (DocID026899): WHO_AM_I 0x0F = 0x69, CTRL1_XL 0x10 / CTRL2_G 0x11 (ODR bits 7:4, 0 = power-down;
    FS bits 3:2), CTRL3_C 0x12 (reset value 0x04: IF_INC; bit 0 SW_RESET), data from 0x22 little-endian: gyro x y z
    (OUTX_L_G..), accel x y z (OUTX_L_XL 0x28..)."""
    WHO = 0x69
    WHO_REG = 0x0F
    DEFAULT_ADDRESS = 0x6A
    DEFAULTS = ((0x0F, 0x69), (0x12, 0x04))         # WHO_AM_I; CTRL3_C IF_INC
    RESET = (0x12, 0x01)                            # CTRL3_C SW_RESET
    data_at = 0x20              # OUT_TEMP_L, then gyro and accel
    data_len = 14
    GYRO_MDPS = (8.75, 17.5, 35.0, 70.0)            # FS_G 00 245, 01 500, 10 1000, 11 2000 deg/s
    ACCEL_MG = {0: 0.061, 2: 0.122, 3: 0.244, 1: 0.488}   # FS_XL 00 2 g, 10 4 g, 11 8 g, 01 16 g

    def auto_increment(self):
        return bool(self.regs[0x12] & 0x04)

    ODR_HZ = (0.0, 12.5, 26.0, 52.0, 104.0, 208.0, 416.0, 833.0, 1660.0, 3330.0, 6660.0)

    def sample_period(self):
        """Seconds between new gyro samples (CTRL2_G's ODR), None while the gyro is powered down."""
        code = self.regs[0x11] >> 4
        if code == 0 or code >= len(self.ODR_HZ):
            return None
        return 1.0 / self.ODR_HZ[code]

    def gyro_on(self):
        return self.regs[0x11] >> 4 != 0

    def accel_on(self):
        return self.regs[0x10] >> 4 != 0

    def sample(self, gyro_rad_s, accel_m_s2, temp_c=25.0):
        """New data in the part's axes: gyro and accel each only while its ODR is not power-down (a powered-down
        sensor keeps its last output)."""
        if not (self.gyro_on() or self.accel_on()):
            return
        d = bytearray(self.data)
        if self.gyro_on():
            lsb = self.GYRO_MDPS[(self.regs[0x11] >> 2) & 3] * 1e-3
            for i in range(3):
                self._put16(d, 0x22 + 2 * i, _i16(gyro_rad_s[i] / _DEG / lsb), False)
        if self.accel_on():
            lsb = self.ACCEL_MG[(self.regs[0x10] >> 2) & 3] * 1e-3
            for i in range(3):
                self._put16(d, 0x28 + 2 * i, _i16(accel_m_s2[i] / G0 / lsb), False)
        self._put16(d, 0x20, _i16((temp_c - 25.0) * 16.0), False)
        self.data = d
        self.samples += 1


PARTS = {"mpu6050": Mpu6050, "lsm6ds3": Lsm6ds3}


def make_part(name, address=None):
    cls = PARTS.get(name)
    if cls is None:
        raise ValueError("unknown IMU part %r (one of %s)" % (name, ", ".join(sorted(PARTS))))
    return cls(address)
