# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# GENERATED FILE, do not edit: made by tools/gen_fixedstep.py from tools/fixedstep/*.py.in (edit the template,
# then run `python tools/gen_fixedstep.py`; tests/test_gen_fixedstep.py fails while this file and the tool's
# output differ; a `# >> FILE:LINE` line says where the lines after it come from). The template's SX / CLAMP /
# GAIN macros are written out here, one copy per use, because a viper-to-viper call costs more than the block
# (docs/firmware.md, "Control step: one function, generated").
# The control step in fixed point: the one place that names the scaling and the layout of the preallocated
# arrays the step works on, and the @micropython.viper functions that run every control period.
#
# This module holds nothing but constants and viper code, so a port without the viper emitter (CircuitPython)
# fails on exactly this import and control.py falls back to the float law in control_float.py.
#
# >> tools/fixedstep/layout.py.in:6
# Fixed-point scaling (docs/firmware.md explains the ranges and why every product fits 32 bits):
#   duty          Q16: 1.0 (100 % PWM) = DUTY_ONE = 65536. The hal takes Q15 (duty >> 1, clamped +-32767).
#   integrator    Q28 (= Q16 << IQ): fine enough that ki*err*dt of 1 count/s still moves it.
#   velocities    counts/s << VQ (Q8): measured speed, setpoints, setpoint steps, derivative.
#   gains         (m, s, xl) triples: gain = m / 2**s with 0 <= m <= 32768, 0 <= s <= 45; the input is clamped
#                 to +-xl first, so every term saturates at its stated limit. A term is the exact floor of
#                 x*m/2**s computed from x's high and low 15-bit halves (hi = (x >> 15)*m, lo = (x & 0x7FFF)*m):
#                 both partial products stay below 2**30 for |x| < 2**30, so nothing overflows 32 bits.
#   times         periods (dt is the constant 1/control_hz; never a timestamp difference).
import micropython
from micropython import const

DQ = const(16)                  # duty fraction bits
DUTY_ONE = const(65536)         # 1 << DQ
IQ = const(12)                  # extra integrator bits: integrator is Q(DQ + IQ)
VQ = const(8)                   # velocity fraction bits
TERM_MAX = const(262144)        # 4 x full duty (Q16): any one duty term saturates here
I_MAX = const(1073741823)       # integrator clamp, Q28 (= TERM_MAX << IQ, minus 1)
I_TERM_MAX = const(268435456)   # one period's integrator change at most 1.0 duty (Q28): I + 2 terms < 2**31
X_MAX = const(1073741823)       # largest |input| of a gain term (2**30 - 1): the split product stays < 2**31
V_MAX_COUNTS = const(1048576)   # documented speed range: |setpoint|, |measured| <= 2**20 counts/s (a raw speed
#                                 beyond it is clamped), so Q8 speeds stay below 2**28 and differences below 2**30
TMASK = const(0x3FFFFFFF)       # ticks_us differences are taken modulo 2**30 (short intervals only)
EDGE_Q = const(256000000)       # 10**6 << VQ: an edge interval in us -> Q8 counts/s
VQ_MAX = const(268435456)       # V_MAX_COUNTS << VQ: the largest Q8 speed
SPAN_MAX = const(262144)        # the longest edge interval timed, us (2**18: > the idle limit of 1/4 s)
IRR_UP = const(8)               # edge regularity: shared.params.IRREGULAR_UP (a const here: viper inlines it)

# ---- state array st (array('i', ST_LEN)): per wheel block at WHEEL * WS, then globals ----
W_PREV = const(0)               # raw encoder counter at the previous period
W_POS = const(1)                # position, counts, direction sign applied (wraps at 32 bits like STATE's int32)
W_VEL = const(2)                # velocity estimate, Q8 counts/s (filtered)
W_RAW = const(3)                # unfiltered velocity this period, counts/s
W_SPC = const(4)                # commanded setpoint Q8 (after the joint max-speed scaling; zero under deadman)
W_SP = const(5)                 # setpoint after the joint acceleration limit, Q8
W_I = const(6)                  # integrator, Q28 duty
W_VPREV = const(7)              # previous velocity estimate for the derivative, Q8
W_DF = const(8)                 # filtered derivative of the measurement, Q8 counts/s per period
W_OUT = const(9)                # output after the clamp, Q16 duty
W_UNSAT = const(10)             # output before the clamp, Q16 duty
W_PDFF = const(11)              # P - D + feedforward of the last period, Q16 (bumpless gain changes)
W_STALL = const(12)             # periods saturated without motion
W_TRACK = const(13)             # periods with tracking error above the limit
W_IDLE = const(14)              # periods since the last period with counts (0x3FFFFFFF: none yet)
W_DIR = const(15)               # direction of the last edge, +1 / -1
W_DUTY = const(16)              # duty written to the hal, Q15, motor sign applied
W_SPN = const(17)               # new command staged by the link (slow path), Q8
W_DSP = const(18)               # setpoint step of this period, Q8 (kA feedforward)
W_ENC = const(19)               # encoder plausibility checks failed in a row
W_TE = const(20)                # edge timing: ticks_us of the last counted edge (edge backends)
W_EP = const(21)                # edge timing: us per count since the edge before (whole us, >= 1), 0: unknown
W_EQ = const(22)                # edge timing: the speed those counts took, Q8 counts/s (unsigned, exact to 1/256)
W_IRR = const(23)               # edge regularity score: + IRR_UP per interval that jumps, - 1 per one that does not
W_DPREV = const(24)             # edge regularity: |counts| of the last period with counts
WS = const(25)                  # per-wheel stride
G_REQ = const(50)               # request bits from the slow path (REQ_*), cleared by the step when done
G_ENABLED = const(51)           # 1: outputs energized and the PID runs
G_FAULT = const(52)             # latched fault code (shared.protocol FAULT_*), 0 = none
G_STATUS = const(53)            # STATE status byte (shared.protocol ST_*)
G_AGE = const(54)               # periods since the last valid SET_VEL
G_CMD_NEW = const(55)           # 1: W_SPN of both wheels hold a new command (written last by the link)
G_TICKS = const(56)             # periods run (the supervisor's progress mark)
G_DEADMAN = const(57)           # 1 while the deadman holds the setpoints at zero
G_TRIPS = const(58)             # deadman trips while enabled
G_WDT = const(59)               # 1: the board came back from a watchdog reset (ST_WDT_RESET until CLEAR_FAULT)
G_BANK = const(60)              # active gain bank (0/1)
G_BANK_REQ = const(61)          # bank the slow path asks for; the step switches at a period boundary
G_T0 = const(62)                # ticks_us at the start of the last period
G_PER_MIN = const(63)           # shortest period seen, us
G_PER_MAX = const(64)           # longest period seen, us
G_EXEC_MAX = const(65)          # longest step execution, us
G_EXEC_AVG = const(66)          # average step execution, Q8 us (exponential, 1/128 per period)
G_OVERRUNS = const(67)          # periods that started later than 1.5 x nominal
G_NSTAT = const(68)             # periods that contributed to the statistics
G_TLM_CNT = const(69)           # telemetry decimation counter
G_TLM_DIV = const(70)           # periods per telemetry record (0: off)
G_SB = const(71)                # -2**31 again, for log() which gets no k array
G_XFAULT = const(72)            # a fault the slow path asks the step to latch (FAULT_BATTERY_LOW), 0 = none
G_ESTOP = const(73)             # 1 while the e-stop input reads open (ST_ESTOP)
G_XSTATUS = const(74)           # status bits the slow path owns (ST_BATTERY_LOW), ORed into G_STATUS
G_DMZ = const(75)               # deadman: periods since the ramp brought both setpoints to zero (to K_REST_N)
G_REST0 = const(76)             # deadman: left position (W_POS) where the wheels must rest after K_REST_N
G_REST1 = const(77)             # deadman: right position, same
# ---- the move engine (move(), docs/firmware.md "Moves"): two axes, D (distance: the wheels' mean count) and H
# (heading: half their difference, in the same wheel counts), each run on a trapezoid profile or held at its
# target. Positions Q12 counts, speeds Q16 counts per period, accelerations Q16 counts per period^2 ----
M_CANCEL = const(78)            # 1: end every move (the slow path asked: SET_VEL, a new queue, ENABLE, CLEAR)
M_LEASE = const(79)             # periods since the host's last MOVE or MOVE_LEASE
M_HNEW = const(80)              # 1: M_HG/M_HE hold a new heading sample (written last by the slow path)
M_HG = const(81)                # heading sample: the board's heading (gyro, else encoders), Q12 H counts, unwrapped
M_HE = const(82)                # heading sample: the encoders' H (pr - pl << 11) at that moment
M_HGC = const(83)               # the engine's copy of M_HG
M_HEC = const(84)               # the engine's copy of M_HE
M_HOK = const(85)               # 1: the copy was taken after the positions' last restart (ENABLE, ZERO)
M_ON = const(86)                # 1: the engine drives the wheels
M_HVALID = const(87)            # 1: the heading target is still the last move's (kept across queues)
M_DBASE = const(88)             # the counts' sum (pl + pr) where D is 0
M_STALL = const(89)             # periods with a path error above K_MSTALL_E
M_SETTLE = const(90)            # periods the last move has been within its tolerances
M_TAIL = const(91)              # moves queued since boot (the slow path writes it, after the slot)
M_HEADN = const(92)             # moves ended since boot (the engine writes it): queued = M_TAIL - M_HEADN
M_NENDS = const(93)             # ends recorded (written after the entry)
M_ENDS = const(94)              # the last 4 ends: (id, reason) pairs at M_ENDS + 2 * (n & 3)
M_ED = const(102)               # the last period's path errors, Q12: D
M_EH = const(103)               # ... H
M_AX = const(104)               # axis blocks: D at M_AX, H at M_AX + AXS
A_REF = const(0)                # reference position, Q12 (D from M_DBASE, H absolute)
A_FRAC = const(1)               # the reference's fraction below Q12 (Q16 units, 0..15)
A_V = const(2)                  # reference speed along A_DIR, Q16 counts/period (>= 0)
A_VMAX = const(3)               # profile: cruise speed
A_ACC = const(4)                # profile: acceleration
A_VEND = const(5)               # profile: speed at the target (the next move's on the same axis; 0: stop there)
A_TGT = const(6)                # profile: target, Q12 (absolute: the sum of the moves' deltas)
A_DIR = const(7)                # profile: +1 / -1
A_BUSY = const(8)               # 1: a profile runs on the axis
A_DEC = const(9)                # 1: the profile has begun its final deceleration
A_CPL = const(10)               # 1: the axis follows the other one (an arc)
AXS = const(11)                 # axis stride
M_CBP = const(126)              # arc coupling: the primary's reference at the start
M_CBS = const(127)              # ... the follower's reference at the start
M_CM = const(128)               # ... the ratio follower/primary = M_CM / 2**M_CS (|ratio| <= 1, s >= 15)
M_CS = const(129)
M_SLOTS = const(130)            # the queue: 4 slots of SLS words, slot n & 3 for the n-th move queued
S_ID = const(0)                 # the host's id for the move (u16)
S_ST = const(1)                 # 0 free, 1 queued, 2 running, 3 its profile is done (settling)
S_AX = const(2)                 # primary axis: 0 D, 1 H
S_DELTA = const(3)              # the primary axis's change, Q12 (signed)
S_VMAX = const(4)               # cruise speed, Q16 counts/period
S_ACC = const(5)                # acceleration, Q16 counts/period^2
S_VEND = const(6)               # speed at its end (the next move's cruise speed when it continues the line)
S_CM = const(7)                 # arc: the follower's ratio m (signed; 0: no follower, the other axis holds)
S_CS = const(8)                 # arc: the ratio's shift
S_TMO = const(9)                # periods it may run before it ends as timed out
S_AGE = const(10)               # periods it has run
S_FDELTA = const(11)            # arc: the follower's change, Q12 (where it ends exactly)
SLS = const(12)                 # slot stride
ST_LEN = const(178)

# move ends (shared.protocol MOVE_END_*)
END_ARRIVED = const(1)
END_STALLED = const(2)
END_TIMEOUT = const(3)
END_CANCELLED = const(4)
END_FAULTED = const(5)
END_LEASE = const(6)

# request bits (G_REQ)
REQ_ENABLE = const(1)           # zero commands, PID state, encoder reference and positions; energize
REQ_DISABLE = const(2)          # outputs off, PID state zeroed
REQ_ZERO = const(4)             # positions to zero
REQ_CLEAR = const(8)            # clear the latched fault and the watchdog flag (stays disabled)
REST_COUNTS = const(2)          # deadman: a wheel further than this from its rest position is still moving

# ---- gain/limit array k (array('i', K_LEN)): two banks of KB words, then globals ----
K_AV = const(0)                 # velocity filter alpha = dt/(vel_tau + dt): Q8 -> Q8     (m, s, xl)
K_P = const(3)                  # kp: error Q8 -> duty Q16
K_I = const(6)                  # ki*dt: error Q8 -> integrator Q28
K_AW = const(9)                 # dt/Tt: (out - unsat) Q16 -> integrator Q28
K_AD = const(12)                # derivative filter alpha = dt/(kd_tau + dt): Q8 -> Q8
K_D = const(15)                 # kd/dt: filtered measurement step Q8 -> duty Q16
K_V = const(18)                 # kv: setpoint Q8 -> duty Q16
K_A = const(21)                 # ka/dt: setpoint step Q8 -> duty Q16
K_KS = const(24)                # ks, duty Q16
K_DB = const(25)                # deadband compensation, duty Q16
K_MAXD = const(26)              # output clamp, duty Q16
K_SPMAX = const(27)             # max wheel speed, Q8 counts/s
K_ACC = const(28)               # max setpoint step per period, Q8 counts/s
K_DM_N = const(29)              # deadman: periods without SET_VEL before the ramp to zero
K_DIS_N = const(30)             # periods without SET_VEL before de-energizing
K_STALL_N = const(31)           # periods saturated without motion before FAULT
K_STALL_V = const(32)           # |speed| below this counts as no motion, Q8
K_TRACK_N = const(33)           # periods of tracking error before FAULT
K_TRACK_E = const(34)           # tracking error limit, Q8
K_OVER_V = const(35)            # over-speed limit (1.5 x max wheel speed), Q8
K_ENC_N = const(36)             # encoder plausibility: failed checks (one per 2 periods) before FAULT; 0: off
K_ENC_0 = const(37)             # encoder plausibility: kS + deadband, Q16 duty
K_ENC_M = const(38)             # encoder plausibility: enc_margin, Q16 duty
K_ENC_SH = const(39)            # encoder plausibility: shift of the two multipliers below
K_ENC_IR = const(40)            # (1/kV)/enc_ratio: Q16 duty -> Q8 counts/s, << K_ENC_SH (< 2**14)
K_ENC_IV = const(41)            # 1/kV: Q16 duty -> Q8 counts/s, << K_ENC_SH (< 2**14)
KB = const(42)                  # bank size
K_SB = const(84)                # -2**31: sign-extends ptr32 loads on 64-bit hosts ((x ^ sb) - sb), no-op on 32
K_HZ = const(85)                # control rate
K_MASK = const(86)              # encoder counter mask: 0xFFFF or -1 (32 bits)
K_HALF = const(87)              # encoder counter half range: 0x8000 or -2**31
K_MS = const(88)                # motor mirrored, left, right (1: the duty's sign is flipped, 0: not)
K_ES = const(90)                # encoder mirrored, left, right (1: the count's sign is flipped, 0: not)
K_EDGE = const(92)              # 1: speed from the edges' times (the backend times them and vel_edges is 1)
K_IDLE_MAX = const(93)          # periods without counts after which the edge-timed speed is zero
K_OVR_US = const(94)            # a period longer than this (1.5 x nominal, us) is an overrun
K_ESTOP_M = const(95)           # e-stop: the input bit in IO_IN (0: no e-stop input)
K_ESTOP_C = const(96)           # e-stop: the bit's value while the stop circuit is closed (K_ESTOP_M or 0)
K_REST_N = const(97)            # deadman: periods after the ramp reached zero within which the wheels must rest
K_IRR_N = const(98)             # edge regularity: the score (W_IRR) that latches FAULT_ENCODER; 0: off
K_LEASE_N = const(99)           # moves: periods without MOVE/MOVE_LEASE before the braked stop (END_LEASE)
K_MKD_M = const(100)            # moves: D error Q12 -> wheel speed Q8 counts/s, m / 2**s (m < 2**14)
K_MKD_S = const(101)
K_MKH_M = const(102)            # moves: H error, same
K_MKH_S = const(103)
K_MTOL_D = const(104)           # moves: arrived within this D error, Q12
K_MTOL_H = const(105)           # moves: ... and this H error, Q12
K_MSTALL_E = const(106)         # moves: a path error above this, Q12 ...
K_MSTALL_N = const(107)         # ... for this many periods: END_STALLED, outputs off
K_MSETTLE_N = const(108)        # moves: periods within the tolerances before the last move has arrived
K_MACC = const(109)             # moves: max_accel as Q16 counts/period^2: two moves overlap only within it
K_LEN = const(110)

# ---- io array (array('i', IO_LEN)) between the Python tick wrapper and the step ----
IO_T0 = const(0)                # ticks_us at the start of this period
IO_T1 = const(1)                # ticks_us when the previous period's step finished
IO_DL = const(2)                # duty out, Q15, left (motor sign applied)
IO_DR = const(3)                # duty out, Q15, right
IO_IN = const(4)                # digital inputs read at the start of this period (the e-stop's bit: K_ESTOP_M)
IO_LEN = const(6)

# ---- telemetry record, written by log() into telemetry.Ring (the field order of its records) ----
TLM_T = const(0)                # ticks_us
TLM_L = const(1)                # left: setpoint counts/s, measured counts/s, output Q15, integrator Q15
TLM_R = const(5)                # right: same four fields
TLM_STATUS = const(9)
TLM_REC = const(10)


# >> tools/fixedstep/requests.py.in:5
@micropython.viper
def requests(st_a, c_a):
    """Carry out the slow path's requests (G_REQ) at a period boundary: nothing stale survives an ENABLE."""
    st = ptr32(st_a)
    c = ptr32(c_a)
    req = int(st[G_REQ])
    if req & (REQ_ENABLE | REQ_DISABLE | REQ_CLEAR):
        # every enable/disable/clear starts the PID from rest and drops commands: no integrator or setpoint
        # left from before, so the output starts at zero (a bumpless start) and nothing stale is driven
        w = 0
        while w < 2:
            b = w * WS
            st[b + W_SPC] = 0
            st[b + W_SPN] = 0
            st[b + W_SP] = 0
            st[b + W_DSP] = 0
            st[b + W_I] = 0
            st[b + W_DF] = 0
            st[b + W_VPREV] = st[b + W_VEL]     # no derivative kick from an old measurement
            st[b + W_OUT] = 0
            st[b + W_UNSAT] = 0
            st[b + W_PDFF] = 0
            st[b + W_STALL] = 0
            st[b + W_TRACK] = 0
            st[b + W_ENC] = 0
            st[b + W_IRR] = 0
            st[b + W_DUTY] = 0
            w += 1
        st[G_CMD_NEW] = 0
        st[G_DEADMAN] = 0
        st[G_DMZ] = 0
        st[G_AGE] = 0
        st[G_ENABLED] = 0
        if int(st[M_TAIL]) != int(st[M_HEADN]):
            st[M_CANCEL] = 1        # the moves end as cancelled in this period (move() runs after this)
        st[M_HVALID] = 0
    if req & REQ_CLEAR:
        # an e-stop that is still open stays latched: it clears only once the circuit is closed again
        if int(st[G_ESTOP]) == 0:
            st[G_FAULT] = 0
        st[G_WDT] = 0
    if req & (REQ_ENABLE | REQ_ZERO):
        # the encoders' reference: positions restart at zero from the current raw counters
        st[W_POS] = 0
        st[WS + W_POS] = 0
        st[W_PREV] = c[0]
        st[WS + W_PREV] = c[1]
        st[M_HOK] = 0               # a heading sample from before the restart does not fit the new positions
    if req & REQ_ENABLE:
        # a latched fault refuses enabling (the link NACKs before asking; this is the last line)
        if int(st[G_FAULT]) == 0:
            st[G_ENABLED] = 1
    st[G_REQ] = 0


# >> tools/fixedstep/fixedstep.py.in:24
@micropython.viper
def step(st_a, k_a, c_a, e_a, io_a):
    """One control period for both wheels. Allocation-free: ints and ptr32 over preallocated arrays only.

    c_a: raw encoder counters (left, right) read this period; e_a: edge backends: ticks_us of each wheel's last
    counted edge (read where the count changed), then of the moment each wheel's count was taken;
    io_a: IO_* words (tick start, previous tick end in; duties out).
    """
    st = ptr32(st_a)
    k = ptr32(k_a)
    c = ptr32(c_a)
    e = ptr32(e_a)
    io = ptr32(io_a)
    sb = int(k[K_SB])

    # ---- loop statistics: measured, never used as dt ----
    t0 = int(io[IO_T0])
    if int(st[G_TICKS]) > 0:
        per = (t0 - int(st[G_T0])) & TMASK
        ex = (int(io[IO_T1]) - int(st[G_T0])) & TMASK      # the previous period's execution time
        if ex > 0x7FFFFF:
            ex = 0x7FFFFF
        if int(st[G_NSTAT]) == 0:
            st[G_PER_MIN] = per
            st[G_PER_MAX] = per
            st[G_EXEC_MAX] = ex
            st[G_EXEC_AVG] = ex << 8
        else:
            if per < int(st[G_PER_MIN]):
                st[G_PER_MIN] = per
            if per > int(st[G_PER_MAX]):
                st[G_PER_MAX] = per
            if ex > int(st[G_EXEC_MAX]):
                st[G_EXEC_MAX] = ex
            avg = int(st[G_EXEC_AVG])
            st[G_EXEC_AVG] = avg + (((ex << 8) - avg) >> 7)
        st[G_NSTAT] = int(st[G_NSTAT]) + 1
        if per > int(k[K_OVR_US]):
            st[G_OVERRUNS] = int(st[G_OVERRUNS]) + 1
    st[G_T0] = t0
    st[G_TICKS] = (int(st[G_TICKS]) + 1) & TMASK

    if int(st[G_REQ]) != 0:
        requests(st_a, c_a)
    if int(st[M_TAIL]) != int(st[M_HEADN]) or int(st[M_CANCEL]) != 0:
        # >> tools/fixedstep/moves.py.in:5
        # ---- the move engine (docs/firmware.md, "Moves"), written into the step: a viper call costs ~15 us on
        # an RP2040, a tenth of the period's budget at 1 kHz. It starts the next move when the axes allow,
        # advances each axis's trapezoid and stages the wheel speeds that follow both references (their speed
        # plus a P term on the position error) as this period's command; it ends moves (arrived, stalled, timed
        # out, cancelled, faulted, lease expired). `break` leaves it ----
        while True:
            why = 0
            leave = 0
            if int(st[M_CANCEL]) != 0:
                why = END_CANCELLED         # whoever cancelled stages the command that follows (SET_VEL, or zero)
            elif int(st[G_FAULT]) != 0:
                why = END_FAULTED
            elif int(st[G_ENABLED]) == 0:
                why = END_CANCELLED
            else:
                n = int(st[M_LEASE]) + 1
                st[M_LEASE] = n
                if n > int(k[K_LEASE_N]):
                    why = END_LEASE
            if why != 0:
                st[M_CANCEL] = 0
                if int(st[M_TAIL]) != int(st[M_HEADN]):
                    move_end_all(st_a, why)
                    if why == END_LEASE:
                        # the host is gone: command zero, the acceleration limit brakes both wheels to rest
                        st[G_CMD_NEW] = 0
                        st[W_SPN] = 0
                        st[WS + W_SPN] = 0
                        st[G_CMD_NEW] = 1
                break

            # ---- measured D and H, Q12: H from the slow path's heading sample plus the encoders' change since ----
            if int(st[M_HNEW]) != 0:
                st[M_HGC] = st[M_HG]
                st[M_HEC] = st[M_HE]
                st[M_HNEW] = 0
                st[M_HOK] = 1
            if int(st[M_HOK]) == 0:
                break                      # no heading since the positions restarted: the move waits (<= 10 ms)
            pl = (int(st[W_POS]) ^ sb) - sb
            pr = (int(st[WS + W_POS]) ^ sb) - sb
            if int(st[M_ON]) == 0:
                if int(st[W_SP]) != 0 or int(st[WS + W_SP]) != 0:
                    # the wheels still follow an earlier command (SET_VEL, an interrupted move): the first move of a
                    # queue starts from rest, so command zero and let the acceleration limit brake them first
                    st[G_CMD_NEW] = 0
                    st[W_SPN] = 0
                    st[WS + W_SPN] = 0
                    st[G_CMD_NEW] = 1
                    break
                # the first move of a queue: D starts here; H keeps the last queue's target unless something else
                # moved the robot since (absolute heading targets: turns add up, never re-zeroed per move)
                st[M_DBASE] = pl + pr
                d = M_AX
                st[d + A_REF] = 0
                st[d + A_TGT] = 0
                st[d + A_V] = 0
                st[d + A_FRAC] = 0
                h = M_AX + AXS
                if int(st[M_HVALID]) == 0:
                    x = ((int(st[M_HGC]) ^ sb) - sb) + (((pr - pl) << 11) - ((int(st[M_HEC]) ^ sb) - sb))
                    st[h + A_REF] = x
                    st[h + A_TGT] = x
                else:
                    st[h + A_REF] = st[h + A_TGT]
                st[h + A_V] = 0
                st[h + A_FRAC] = 0
                st[M_ON] = 1
                st[M_HVALID] = 1
                st[M_STALL] = 0
                st[M_SETTLE] = 0
            dm = ((pl + pr) - ((int(st[M_DBASE]) ^ sb) - sb)) << 11
            hm = ((int(st[M_HGC]) ^ sb) - sb) + (((pr - pl) << 11) - ((int(st[M_HEC]) ^ sb) - sb))

            # ---- each axis's trapezoid: brake when the distance left is what braking to A_VEND takes ----
            a = M_AX
            while a < M_AX + AXS + AXS:
                if int(st[a + A_BUSY]) != 0 and int(st[a + A_CPL]) == 0:
                    ref = (int(st[a + A_REF]) ^ sb) - sb
                    tgt = (int(st[a + A_TGT]) ^ sb) - sb
                    dr = (int(st[a + A_DIR]) ^ sb) - sb
                    r = (tgt - ref) * dr
                    v = int(st[a + A_V])
                    acc = int(st[a + A_ACC])
                    ve = int(st[a + A_VEND])
                    vm = int(st[a + A_VMAX])
                    # braking distance to ve, Q12: n periods at the mean speed (the slow path keeps vm**2 / (16 acc)
                    # below 2**29, so the product fits), plus one period's travel
                    bd = 0
                    if v > ve:
                        bd = ((v - ve) // acc + 1) * ((v + ve) >> 5) + (v >> 4)
                    if v > ve and r <= bd:
                        st[a + A_DEC] = 1
                        v -= acc
                        if v < ve:
                            v = ve
                    elif v < vm:
                        v += acc
                        if v > vm:
                            v = vm
                    elif v > vm:
                        v -= acc
                        if v < vm:
                            v = vm
                    t = int(st[a + A_FRAC]) + v
                    adv = t >> 4
                    st[a + A_FRAC] = t & 15
                    if adv >= r:
                        # there: the reference stops exactly on the target and carries ve into the next move
                        st[a + A_REF] = tgt
                        st[a + A_FRAC] = 0
                        st[a + A_BUSY] = 0
                        st[a + A_DEC] = 0
                        v = ve
                        o = a + A_CPL + AXS if a == M_AX else a + A_CPL - AXS
                        if int(st[o]) != 0:
                            # the arc's follower ends on its own target with it
                            st[o] = 0
                            st[o - A_CPL + A_REF] = st[o - A_CPL + A_TGT]
                            st[o - A_CPL + A_BUSY] = 0
                            st[o - A_CPL + A_V] = 0
                        n = int(st[M_HEADN])
                        while n != int(st[M_TAIL]):
                            q = M_SLOTS + (n & 3) * SLS
                            if int(st[q + S_ST]) == 2 and int(st[q + S_AX]) * AXS + M_AX == a:
                                st[q + S_ST] = 3
                                break
                            n = (n + 1) & TMASK
                    else:
                        st[a + A_REF] = ref + adv * dr
                    st[a + A_V] = v
                a += AXS

            # ---- start the next queued move: its axes free, and every running move already braking to its end ----
            n = int(st[M_HEADN])
            tail = int(st[M_TAIL])
            ok = 1
            while n != tail:
                q = M_SLOTS + (n & 3) * SLS
                sst = int(st[q + S_ST])
                if sst == 2:
                    if int(st[M_AX + int(st[q + S_AX]) * AXS + A_DEC]) == 0:
                        ok = 0
                elif sst == 1:
                    a = M_AX + int(st[q + S_AX]) * AXS
                    o = M_AX + AXS if a == M_AX else M_AX
                    cm = (int(st[q + S_CM]) ^ sb) - sb
                    # overlapping the other axis's braking only while both accelerations together fit max_accel
                    # (both axes are in wheel counts: the inner wheel takes their sum)
                    if ok and int(st[a + A_BUSY]) == 0 and int(st[a + A_CPL]) == 0 and (
                            (cm == 0 and (int(st[o + A_BUSY]) == 0 or int(st[o + A_ACC]) + int(st[q + S_ACC])
                                          <= int(k[K_MACC])))
                            or (int(st[o + A_BUSY]) == 0 and int(st[o + A_CPL]) == 0)):
                        if a == M_AX:
                            # D restarts near 0 for each move (exact: whole counts of the sum move into the base)
                            x = ((int(st[a + A_REF]) ^ sb) - sb) >> 11
                            st[M_DBASE] = ((int(st[M_DBASE]) ^ sb) - sb) + x
                            st[a + A_REF] = ((int(st[a + A_REF]) ^ sb) - sb) - (x << 11)
                            dm -= x << 11
                        delta = (int(st[q + S_DELTA]) ^ sb) - sb
                        st[a + A_TGT] = ((int(st[a + A_REF]) ^ sb) - sb) + delta
                        st[a + A_DIR] = 1 if delta >= 0 else -1
                        st[a + A_VMAX] = st[q + S_VMAX]
                        st[a + A_ACC] = st[q + S_ACC]
                        st[a + A_VEND] = st[q + S_VEND]
                        st[a + A_DEC] = 0
                        st[a + A_BUSY] = 1
                        if cm != 0:
                            st[o + A_CPL] = 1
                            st[o + A_BUSY] = 1
                            st[M_CBP] = st[a + A_REF]
                            st[M_CBS] = st[o + A_REF]
                            st[M_CM] = cm
                            st[M_CS] = st[q + S_CS]
                            st[o + A_TGT] = ((int(st[o + A_REF]) ^ sb) - sb) + ((int(st[q + S_FDELTA]) ^ sb) - sb)
                        st[q + S_ST] = 2
                        st[q + S_AGE] = 0
                        st[M_SETTLE] = 0
                    break
                n = (n + 1) & TMASK

            # ---- the references' speeds, Q8 counts/s, signed; an arc's follower from its primary ----
            hz = int(k[K_HZ])
            vout0 = 0
            vout1 = 0
            a = M_AX
            while a < M_AX + AXS + AXS:
                if int(st[a + A_BUSY]) != 0 and int(st[a + A_CPL]) == 0:
                    v = int(st[a + A_V])
                    x = (v >> 8) * hz + (((v & 255) * hz) >> 8)
                    if ((int(st[a + A_DIR]) ^ sb) - sb) < 0:
                        x = -x
                    if a == M_AX:
                        vout0 = x
                    else:
                        vout1 = x
                a += AXS
            a = M_AX
            while a < M_AX + AXS + AXS:
                if int(st[a + A_CPL]) != 0:
                    o = M_AX + AXS if a == M_AX else M_AX
                    m = (int(st[M_CM]) ^ sb) - sb
                    sh = int(st[M_CS])
                    neg = 0
                    if m < 0:
                        m = -m
                        neg = 1
                    # follower = base + (primary - its base) * m / 2**sh, from 15-bit halves (|x| < 2**30, m <= 2**15)
                    x = ((int(st[o + A_REF]) ^ sb) - sb) - ((int(st[M_CBP]) ^ sb) - sb)
                    if x < 0:
                        x = -x
                        neg ^= 1
                    y = (((x >> 15) * m) >> (sh - 15)) + (((x & 0x7FFF) * m) >> sh)
                    st[a + A_REF] = ((int(st[M_CBS]) ^ sb) - sb) + (-y if neg else y)
                    x = vout1 if a == M_AX else vout0
                    neg = 1 if ((int(st[M_CM]) ^ sb) - sb) < 0 else 0
                    if x < 0:
                        x = -x
                        neg ^= 1
                    y = (((x >> 15) * m) >> (sh - 15)) + (((x & 0x7FFF) * m) >> sh)
                    if neg:
                        y = -y
                    if a == M_AX:
                        vout0 = y
                    else:
                        vout1 = y
                a += AXS

            # ---- P on each axis's position error: (e * m) >> s from e's 12-bit halves (|e| clamped to 2**27,
            # m < 2**14, s >= 12: move_kp_* <= 64, so both partial products fit 31 bits) ----
            ed = ((int(st[M_AX + A_REF]) ^ sb) - sb) - dm
            eh = ((int(st[M_AX + AXS + A_REF]) ^ sb) - sb) - hm
            st[M_ED] = ed
            st[M_EH] = eh
            a = 0
            while a < 2:                    # D, then H (K_MKH_M, K_MKH_S follow K_MKD_M, K_MKD_S)
                x = ed if a == 0 else eh
                if x > 134217728:
                    x = 134217728
                elif x < -134217728:
                    x = -134217728
                m = int(k[K_MKD_M + a + a])
                sh = int(k[K_MKD_S + a + a])
                t = (((x >> 12) * m) >> (sh - 12)) + (((x & 4095) * m) >> sh)
                if a == 0:
                    vout0 += t
                else:
                    vout1 += t
                a += 1

            # ---- ends: stalled (a path error held above the limit), timed out, arrived ----
            ae = ed if ed >= 0 else -ed
            x = eh if eh >= 0 else -eh
            if x > ae:
                ae = x
            if ae > int(k[K_MSTALL_E]):
                n = int(st[M_STALL]) + 1
                st[M_STALL] = n
                if n >= int(k[K_MSTALL_N]):
                    # blocked: the outputs go off in this period (step() sees G_ENABLED 0), the host must ENABLE again
                    move_end_all(st_a, END_STALLED)
                    st[G_ENABLED] = 0
                    break
            else:
                st[M_STALL] = 0
            n = int(st[M_HEADN])
            tail = int(st[M_TAIL])
            while n != tail:
                q = M_SLOTS + (n & 3) * SLS
                sst = int(st[q + S_ST])
                if sst >= 2:
                    x = int(st[q + S_AGE]) + 1
                    st[q + S_AGE] = x
                    if x > int(st[q + S_TMO]):
                        move_end_all(st_a, END_TIMEOUT)
                        st[G_CMD_NEW] = 0
                        st[W_SPN] = 0
                        st[WS + W_SPN] = 0
                        st[G_CMD_NEW] = 1
                        leave = 1
                        break
                n = (n + 1) & TMASK
            if leave:
                break
            n = int(st[M_HEADN])
            while n != tail:
                q = M_SLOTS + (n & 3) * SLS
                if int(st[q + S_ST]) != 3:
                    break
                if ((n + 1) & TMASK) == tail:
                    # the last move: arrived once both errors stay within the tolerances
                    x = ed if ed >= 0 else -ed
                    y = eh if eh >= 0 else -eh
                    if x <= int(k[K_MTOL_D]) and y <= int(k[K_MTOL_H]):
                        st[M_SETTLE] = int(st[M_SETTLE]) + 1
                    else:
                        st[M_SETTLE] = 0
                    if int(st[M_SETTLE]) < int(k[K_MSETTLE_N]):
                        break
                why = END_ARRIVED
                ne = int(st[M_NENDS])
                st[M_ENDS + (ne & 3) * 2] = st[q + S_ID]
                st[M_ENDS + (ne & 3) * 2 + 1] = why
                st[M_NENDS] = (ne + 1) & TMASK
                st[q + S_ST] = 0
                n = (n + 1) & TMASK
                st[M_HEADN] = n
            if n == tail:
                # the queue is done: the wheels are commanded zero (at rest on the target already)
                move_end_all(st_a, END_ARRIVED)
                vout0 = 0
                vout1 = 0

            # ---- stage the wheel speeds as a command (not while a gain bank switch waits for a quiet period) ----
            if int(st[G_BANK_REQ]) != int(st[G_BANK]):
                break
            lim = int(k[int(st[G_BANK]) * KB + K_SPMAX])
            x = vout0 - vout1
            if x > lim:
                x = lim
            elif x < -lim:
                x = -lim
            y = vout0 + vout1
            if y > lim:
                y = lim
            elif y < -lim:
                y = -lim
            st[G_CMD_NEW] = 0
            st[W_SPN] = x
            st[WS + W_SPN] = y
            st[G_CMD_NEW] = 1
            break

    # >> tools/fixedstep/fixedstep.py.in:71
    kb = int(st[G_BANK]) * KB
    enabled = int(st[G_ENABLED])

    # >> tools/fixedstep/intake.py.in:5
    # ---- command intake and deadman ----
    moved = 0
    if int(st[G_CMD_NEW]) != 0:
        if int(st[W_SPN]) != int(st[W_SPC]) or int(st[WS + W_SPN]) != int(st[WS + W_SPC]):
            moved = 1
        st[W_SPC] = st[W_SPN]
        st[WS + W_SPC] = st[WS + W_SPN]
        st[G_CMD_NEW] = 0
        st[G_AGE] = 0
        st[G_DEADMAN] = 0
        st[G_DMZ] = 0
    else:
        age = int(st[G_AGE])
        if age < 0x3FFFFFFF:
            age += 1
            st[G_AGE] = age
        if age > int(k[kb + K_DM_N]):
            # the host went quiet: command zero and let the acceleration limit ramp both wheels down
            # (stop category 1); the trip counts once, and only when it stops a driving board
            if int(st[G_DEADMAN]) == 0:
                st[G_DEADMAN] = 1
                if enabled:
                    st[G_TRIPS] = int(st[G_TRIPS]) + 1
            st[W_SPC] = 0
            st[WS + W_SPC] = 0
            if enabled and int(st[W_SP]) == 0 and int(st[WS + W_SP]) == 0:
                # the ramp has brought both setpoints to zero: within K_REST_N periods the loop brakes the wheels
                # to rest; after that a wheel further than REST_COUNTS from where it was then is still moving (a
                # relay experiment oscillating at kp max about a zero setpoint, a hand turning it) and the outputs
                # go off: a deadman stop that does not stop is cut, never left driving until deadman_disable_ms
                n = int(st[G_DMZ])
                if n < int(k[K_REST_N]):
                    st[G_DMZ] = n + 1
                    st[G_REST0] = st[W_POS]
                    st[G_REST1] = st[WS + W_POS]
                else:
                    x = ((int(st[W_POS]) ^ sb) - sb) - ((int(st[G_REST0]) ^ sb) - sb)
                    y = ((int(st[WS + W_POS]) ^ sb) - sb) - ((int(st[G_REST1]) ^ sb) - sb)
                    if x > REST_COUNTS or x < -REST_COUNTS or y > REST_COUNTS or y < -REST_COUNTS:
                        st[G_ENABLED] = 0
                        enabled = 0
            if age > int(k[kb + K_DIS_N]) and enabled and int(st[W_SP]) == 0 and int(st[WS + W_SP]) == 0:
                # long silence: de-energize; the host must ENABLE again (which zeroes everything). Only once the
                # ramp has brought both setpoints to zero: with deadman_disable_ms <= deadman_ms, or a gap
                # shorter than the braking time max_wheel_speed/max_accel, cutting power on time alone would
                # let the wheels coast (stop category 0) instead of being braked (category 1).
                st[G_ENABLED] = 0
                enabled = 0

    # >> tools/fixedstep/setpoint.py.in:5
    # ---- gain bank: switch only here, at a period boundary, and remember to make it bumpless. The transfer
    # moves the integrator by the jump of the other terms since the last period, so a new setpoint taken in the
    # same period would count as part of that jump and be cancelled: the switch then waits one period (commands
    # come at the link's rate, far below the control rate, so it waits one period, not forever) ----
    bump = 0
    bank = int(st[G_BANK_REQ])
    if bank != int(st[G_BANK]) and moved == 0:
        st[G_BANK] = bank
        bump = 1
        kb = bank * KB

    # ---- joint acceleration limit: one factor for both wheels keeps the ratio of their steps ----
    dl = 0
    dr = 0
    if enabled:
        spl = (int(st[W_SP]) ^ sb) - sb
        spr = (int(st[WS + W_SP]) ^ sb) - sb
        dl = ((int(st[W_SPC]) ^ sb) - sb) - spl
        dr = ((int(st[WS + W_SPC]) ^ sb) - sb) - spr
        acc = int(k[kb + K_ACC])
        peak = dl if dl >= 0 else -dl
        pr = dr if dr >= 0 else -dr
        if pr > peak:
            peak = pr
        if peak > acc:
            # each step becomes acc * (step / peak): the ratios in Q15 (|r| <= 1), taken after shifting the
            # steps down together until peak << 15 fits 31 bits; the larger wheel steps by exactly acc
            p = peak
            ql = dl
            qr = dr
            while p >= 16384:
                p >>= 1
                ql >>= 1
                qr >>= 1
            # rounded to nearest, not floored: a floor would bias every ramp step the same way
            rl = (((ql << 16) // p) + 1) >> 1
            rr = (((qr << 16) // p) + 1) >> 1
            dl = ((acc >> 15) * rl) + ((((acc & 0x7FFF) * rl) + 16384) >> 15)
            dr = ((acc >> 15) * rr) + ((((acc & 0x7FFF) * rr) + 16384) >> 15)
        st[W_SP] = spl + dl
        st[WS + W_SP] = spr + dr
    else:
        # disabled: setpoints rest at zero, nothing stale is kept for later
        st[W_SP] = 0
        st[WS + W_SP] = 0
    st[W_DSP] = dl
    st[WS + W_DSP] = dr

    # >> tools/fixedstep/fixedstep.py.in:78
    hz = int(k[K_HZ])
    mask = int(k[K_MASK])
    half = int(k[K_HALF])
    fault = int(st[G_FAULT])
    sat_any = 0
    w = 0
    while w < 2:
        b = w * WS
        # >> tools/fixedstep/encoder.py.in:6
        # ---- encoder: wrap-safe delta at 16 or 32 bits; the direction sign is applied here, only here ----
        raw = int(c[w])
        d = (raw - int(st[b + W_PREV])) & mask
        if d & half:
            d -= half + half
        st[b + W_PREV] = raw
        if int(k[K_ES + w]):
            d = -d
        st[b + W_POS] = int(st[b + W_POS]) + d

        # ---- raw speed, Q8 counts/s: from the edges' times where the backend times them, else counts x rate ----
        idle = int(st[b + W_IDLE])
        rev = 0                                 # 1: this period's counts go against the last ones
        if d != 0:
            x = (int(st[b + W_DIR]) ^ sb) - sb
            if (d > 0 and x < 0) or (d < 0 and x > 0):
                rev = 1
            st[b + W_DIR] = 1 if d > 0 else -1
        rq = 0
        stop = 0
        ep = 0
        if int(k[K_EDGE]):
            if d != 0:
                # e[w]: when the last counted edge came (ticks_us). Over the |d| counts since the last edge of an
                # earlier period the wheel took span us: exact at constant speed whatever the counts per period.
                # Without a recent earlier edge (the first after a rest or after boot) there is no interval yet.
                te = int(e[w])
                eq = 0
                # no interval across a reversal: a count back and forth (an encoder dithering on an edge at rest)
                # says nothing about speed
                if idle < int(k[K_IDLE_MAX]) and rev == 0:
                    span = (te - int(st[b + W_TE])) & TMASK
                    ad = d if d > 0 else -d
                    # span <= SPAN_MAX: the idle limit keeps real spans below it (an edge time before the last
                    # one, or from nowhere, is a backend's glitch); ad < 8192: beyond, counts x rate is as good
                    if span > 0 and span <= SPAN_MAX and ad < 8192:
                        ep = span // ad
                        if ep < 1:
                            ep = 1
                        # ad counts in span us, Q8 counts/s: ad * 10**6 * 256 / span, in two parts so every product
                        # stays below 2**31 (the remainder < span <= 2**18, ad < 2**13)
                        q = EDGE_Q // span
                        if q > VQ_MAX // ad:
                            eq = VQ_MAX
                        else:
                            eq = q * ad + ((EDGE_Q - q * span) * ad) // span
                            if eq > VQ_MAX:
                                eq = VQ_MAX
                        # edge regularity, the encoder check's witness where the duty model is blind (below
                        # ~0.1 m/s): at a steady speed a period's counts differ from the last period's by at most
                        # one, and consecutive edge intervals agree within the jitter of an edge (the phases of a
                        # quadrature cycle within ~30 %). Counts lost at random break both: the counts per period
                        # scatter by ~sqrt(counts), single intervals jump by whole intervals (x2, x3). A jump (the
                        # counts by 2 + 1/8 of them or more, or the interval by more than 7/4) adds IRR_UP, any other
                        # period with counts takes 1 off: a slip's or a bump's few jumps fade, lost counts (jumps in
                        # 1 of 9 periods or more) build the score up to K_IRR_N: FAULT_ENCODER. Only while driven and
                        # commanded, in the same direction as the last counts; the counts' rule only between two
                        # periods with counts (idle 0)
                        n = int(k[K_IRR_N])
                        op = int(st[b + W_EP])
                        if n != 0 and enabled != 0 and op > 0 and int(st[b + W_SP]) != 0:
                            x = int(st[b + W_IRR])
                            pd = int(st[b + W_DPREV]) if idle == 0 else ad
                            dd = ad - pd if ad > pd else pd - ad
                            hi = ad if ad > pd else pd
                            if dd * 8 >= 16 + hi or (ep > op and ep * 4 > op * 7) or (op > ep and op * 4 > ep * 7):
                                x += IRR_UP
                                if x >= n and fault == 0:
                                    fault = 8 + w   # FAULT_ENCODER_LEFT / RIGHT
                            elif x > 0:
                                x -= 1
                            st[b + W_IRR] = x
                        st[b + W_DPREV] = ad
                st[b + W_EP] = ep
                st[b + W_EQ] = eq
                st[b + W_TE] = te
                idle = 0
            elif idle < 0x3FFFFFFF:
                idle += 1
            st[b + W_IDLE] = idle
            ep = int(st[b + W_EP])
            if idle >= int(k[K_IDLE_MAX]):
                ep = 0
                stop = 1                        # no count for the idle limit: at rest
        if ep > 0:
            rq = int(st[b + W_EQ])
            if d == 0:
                # a period without a count: no edge for age us, so the wheel turns no faster than one count per
                # age; once the next edge is a whole interval overdue it has stopped (reads zero, filter and all,
                # two intervals after the last edge). Only then: a period with counts has its fresh interval, and a
                # missed edge at speed (a glitch, a half-dead encoder) must not read as a stop
                age = (int(e[2 + w]) - int(st[b + W_TE])) & TMASK
                if age > 0x1FFFFFFF:
                    age = 0                     # a backend's glitch: no time has passed
                if age > ep + ep:
                    rq = 0
                    stop = 1
                elif age > ep:
                    x = EDGE_Q // age
                    if x < rq:
                        rq = x
            if ((int(st[b + W_DIR]) ^ sb) - sb) < 0:
                rq = -rq
        elif d > 1 or d < -1 or int(k[K_EDGE]) == 0:
            # counts x rate: no edge timing, or several counts but no interval yet. A glitch beyond the speed range
            # is clamped, never wrapped: |d| is bounded before the product (|d| <= 2**20 and hz <= 1000 keep d*hz
            # below 2**30). One count without an interval (the first after a rest, or one back: an encoder
            # dithering on an edge) leaves the speed at zero: a lone count is no speed
            if d > V_MAX_COUNTS:
                rv = V_MAX_COUNTS
            elif d < -V_MAX_COUNTS:
                rv = -V_MAX_COUNTS
            else:
                rv = d * hz
                if rv > V_MAX_COUNTS:
                    rv = V_MAX_COUNTS
                elif rv < -V_MAX_COUNTS:
                    rv = -V_MAX_COUNTS
            rq = rv << VQ
        st[b + W_RAW] = rq >> VQ

        # ---- one-pole velocity filter, Q8 ----
        v = (int(st[b + W_VEL]) ^ sb) - sb
        x = rq - v
        m = int(k[kb + K_AV])
        sh = int(k[kb + K_AV + 1])
        xl = int(k[kb + K_AV + 2])
        if x > xl:
            x = xl
        elif x < -xl:
            x = -xl
        if sh >= 15:
            t = (((x >> 15) * m) + (((x & 0x7FFF) * m) >> 15)) >> (sh - 15)
        else:
            t = (((x >> 15) * m) << (15 - sh)) + (((x & 0x7FFF) * m) >> sh)
        v += t
        if stop:
            v = 0                               # a stop the edges prove is a fact, not noise to filter
        st[b + W_VEL] = v

        # >> tools/fixedstep/pid.py.in:6
        if enabled:
            sp = (int(st[b + W_SP]) ^ sb) - sb
            err = sp - v

            # P on the error
            x = err
            m = int(k[kb + K_P])
            sh = int(k[kb + K_P + 1])
            xl = int(k[kb + K_P + 2])
            if x > xl:
                x = xl
            elif x < -xl:
                x = -xl
            if sh >= 15:
                tp = (((x >> 15) * m) + (((x & 0x7FFF) * m) >> 15)) >> (sh - 15)
            else:
                tp = (((x >> 15) * m) << (15 - sh)) + (((x & 0x7FFF) * m) >> sh)

            # D on the measurement (no kick on setpoint steps), through a one-pole filter. With kd = 0 (the
            # default) neither runs and the filter rests at zero, so switching kd on later starts it from rest
            vprev = (int(st[b + W_VPREV]) ^ sb) - sb
            st[b + W_VPREV] = v
            td = 0
            md = int(k[kb + K_D])
            if md != 0:
                df = (int(st[b + W_DF]) ^ sb) - sb
                x = (v - vprev) - df
                m = int(k[kb + K_AD])
                sh = int(k[kb + K_AD + 1])
                xl = int(k[kb + K_AD + 2])
                if x > xl:
                    x = xl
                elif x < -xl:
                    x = -xl
                if sh >= 15:
                    t = (((x >> 15) * m) + (((x & 0x7FFF) * m) >> 15)) >> (sh - 15)
                else:
                    t = (((x >> 15) * m) << (15 - sh)) + (((x & 0x7FFF) * m) >> sh)
                df += t
                st[b + W_DF] = df
                if df != 0:                 # an exact zero term costs nothing
                    x = df
                    sh = int(k[kb + K_D + 1])
                    xl = int(k[kb + K_D + 2])
                    if x > xl:
                        x = xl
                    elif x < -xl:
                        x = -xl
                    if sh >= 15:
                        td = (((x >> 15) * md) + (((x & 0x7FFF) * md) >> 15)) >> (sh - 15)
                    else:
                        td = (((x >> 15) * md) << (15 - sh)) + (((x & 0x7FFF) * md) >> sh)
            else:
                st[b + W_DF] = 0

            # feedforward: kS*sign(sp) + kV*sp + kA*dsp/dt
            x = sp
            m = int(k[kb + K_V])
            sh = int(k[kb + K_V + 1])
            xl = int(k[kb + K_V + 2])
            if x > xl:
                x = xl
            elif x < -xl:
                x = -xl
            if sh >= 15:
                tf = (((x >> 15) * m) + (((x & 0x7FFF) * m) >> 15)) >> (sh - 15)
            else:
                tf = (((x >> 15) * m) << (15 - sh)) + (((x & 0x7FFF) * m) >> sh)
            x = (int(st[b + W_DSP]) ^ sb) - sb
            m = int(k[kb + K_A])
            if m != 0 and x != 0:           # kA acts only while the setpoint ramps
                sh = int(k[kb + K_A + 1])
                xl = int(k[kb + K_A + 2])
                if x > xl:
                    x = xl
                elif x < -xl:
                    x = -xl
                if sh >= 15:
                    t = (((x >> 15) * m) + (((x & 0x7FFF) * m) >> 15)) >> (sh - 15)
                else:
                    t = (((x >> 15) * m) << (15 - sh)) + (((x & 0x7FFF) * m) >> sh)
                tf += t
            if sp > 0:
                tf += int(k[kb + K_KS])
            elif sp < 0:
                tf -= int(k[kb + K_KS])

            pdff = tf + tp - td
            ig = (int(st[b + W_I]) ^ sb) - sb
            if bump:
                # new gains this period: move the integrator by the jump of the other terms (bumpless transfer)
                jump = ((int(st[b + W_PDFF]) ^ sb) - sb) - pdff
                if jump > TERM_MAX:     # bounded before the shift: ig + (TERM_MAX << IQ) still fits 32 bits
                    jump = TERM_MAX
                elif jump < -TERM_MAX:
                    jump = -TERM_MAX
                ig += jump << IQ
                if ig > I_MAX:
                    ig = I_MAX
                elif ig < -I_MAX:
                    ig = -I_MAX
            st[b + W_PDFF] = pdff

            u = pdff + (ig >> IQ)
            if sp != 0:
                # deadband compensation only while a motion is commanded: a resting motor is not kicked
                if u > 0:
                    u += int(k[kb + K_DB])
                elif u < 0:
                    u -= int(k[kb + K_DB])
            maxd = int(k[kb + K_MAXD])
            out = u
            sat = 0
            if out > maxd:
                out = maxd
                sat = 1
            elif out < -maxd:
                out = -maxd
                sat = 1

            # back-calculation anti-windup: I += ki*err*dt + (out - unsat)*dt/Tt
            x = err
            m = int(k[kb + K_I])
            sh = int(k[kb + K_I + 1])
            xl = int(k[kb + K_I + 2])
            if x > xl:
                x = xl
            elif x < -xl:
                x = -xl
            if sh >= 15:
                t = (((x >> 15) * m) + (((x & 0x7FFF) * m) >> 15)) >> (sh - 15)
            else:
                t = (((x >> 15) * m) << (15 - sh)) + (((x & 0x7FFF) * m) >> sh)
            ig += t
            x = out - u
            if sat:                         # out - u is zero unless the output is clamped
                m = int(k[kb + K_AW])
                sh = int(k[kb + K_AW + 1])
                xl = int(k[kb + K_AW + 2])
                if x > xl:
                    x = xl
                elif x < -xl:
                    x = -xl
                if sh >= 15:
                    t = (((x >> 15) * m) + (((x & 0x7FFF) * m) >> 15)) >> (sh - 15)
                else:
                    t = (((x >> 15) * m) << (15 - sh)) + (((x & 0x7FFF) * m) >> sh)
                ig += t
            if ig > I_MAX:
                ig = I_MAX
            elif ig < -I_MAX:
                ig = -I_MAX
            st[b + W_I] = ig
            st[b + W_OUT] = out
            st[b + W_UNSAT] = u
            if sat:
                sat_any = 1

            # ---- limits checked every period: stall, tracking error, over-speed -> latched fault ----
            av = v if v >= 0 else -v
            if sat and av < int(k[kb + K_STALL_V]):
                n = int(st[b + W_STALL]) + 1
                st[b + W_STALL] = n
                if n >= int(k[kb + K_STALL_N]) and fault == 0:
                    fault = 1 + w           # FAULT_STALL_LEFT / RIGHT
            else:
                st[b + W_STALL] = 0
            ae = err if err >= 0 else -err
            if ae > int(k[kb + K_TRACK_E]):
                n = int(st[b + W_TRACK]) + 1
                st[b + W_TRACK] = n
                if n >= int(k[kb + K_TRACK_N]) and fault == 0:
                    fault = 3 + w           # FAULT_TRACKING_LEFT / RIGHT
            else:
                st[b + W_TRACK] = 0
            if av > int(k[kb + K_OVER_V]) and fault == 0:
                fault = 5 + w               # FAULT_OVERSPEED_LEFT / RIGHT
            # (encoder plausibility: after the wheel loop, one wheel per period)

            duty = out >> 1                 # Q16 -> the hal's Q15
            if duty > 32767:
                duty = 32767
            elif duty < -32767:
                duty = -32767
            if int(k[K_MS + w]):
                duty = -duty
            st[b + W_DUTY] = duty
        else:
            st[b + W_OUT] = 0
            st[b + W_UNSAT] = 0
            st[b + W_DUTY] = 0
            st[b + W_VPREV] = v
        # >> tools/fixedstep/fixedstep.py.in:89
        w += 1

    # >> tools/fixedstep/checks.py.in:6
    # ---- encoder plausibility, one wheel per period (alternating: each at control_hz / 2) ----
    # A half-dead encoder: the loop drives the wheel faster to make up the lost counts, so speed and setpoint
    # agree. Measured moving as commanded (above stall_speed), but the duty beyond kS + deadband predicts more than
    # enc_ratio x the measured speed AND the duty beyond kS + deadband + enc_margin predicts more than it (the
    # speeds a duty predicts: duty / kV), for enc_ms: FAULT_ENCODER_LEFT / RIGHT. docs/firmware.md
    if enabled:
        en = int(k[kb + K_ENC_N])          # 0: off (enc_ms 0, or no kV: no model to judge by)
        if en:
            w = int(st[G_TICKS]) & 1
            b = w * WS
            n = 0
            sp = (int(st[b + W_SP]) ^ sb) - sb
            if sp != 0:
                x = (int(st[b + W_OUT]) ^ sb) - sb
                y = (int(st[b + W_VEL]) ^ sb) - sb
                if sp < 0:
                    x = -x
                    y = -y
                if y > int(k[kb + K_STALL_V]):
                    x -= int(k[kb + K_ENC_0])      # the duty beyond kS + deadband
                    z = x - int(k[kb + K_ENC_M])   # ... and beyond enc_margin
                    if z > 0:
                        # |out| <= max_duty (2**16) and the multipliers < 2**14: the products fit 31 bits
                        sh = int(k[kb + K_ENC_SH])
                        if ((x * int(k[kb + K_ENC_IR])) >> sh) > y and ((z * int(k[kb + K_ENC_IV])) >> sh) > y:
                            n = int(st[b + W_ENC]) + 1
                            if n >= en and fault == 0:
                                fault = 8 + w   # FAULT_ENCODER_LEFT / RIGHT
            st[b + W_ENC] = n

    # ---- e-stop (normally closed: any other level is a press or a broken wire) and the slow path's faults ----
    em = int(k[K_ESTOP_M])
    if em != 0:
        if (int(io[IO_IN]) & em) != int(k[K_ESTOP_C]):
            st[G_ESTOP] = 1
            fault = 10                  # FAULT_ESTOP: outranks whatever the wheels found this period
            st[G_FAULT] = 10            # latched also while disabled: ENABLE is refused until it is cleared
        else:
            st[G_ESTOP] = 0
    xf = int(st[G_XFAULT])
    if xf != 0:
        st[G_XFAULT] = 0
        if fault == 0:
            fault = xf
        if int(st[G_FAULT]) == 0:
            st[G_FAULT] = xf
    if fault != 0 and enabled:
        # latched: outputs off now (no ramp: stop category 0), the PID state is dropped; only CLEAR_FAULT then
        # ENABLE drives again
        if int(st[G_FAULT]) == 0 or fault == 10:
            st[G_FAULT] = fault
        st[G_ENABLED] = 0
        enabled = 0
        st[W_DUTY] = 0
        st[WS + W_DUTY] = 0
        st[W_I] = 0
        st[WS + W_I] = 0
        st[W_OUT] = 0
        st[WS + W_OUT] = 0
        st[W_SP] = 0
        st[WS + W_SP] = 0
        sat_any = 0

    io[IO_DL] = st[W_DUTY]
    io[IO_DR] = st[WS + W_DUTY]

    status = 0
    if enabled:
        status |= 0x01              # ST_ENABLED
    if int(st[G_DEADMAN]):
        status |= 0x02              # ST_DEADMAN
    if int(st[G_FAULT]):
        status |= 0x04              # ST_FAULT
    if sat_any:
        status |= 0x08              # ST_SATURATED
    if int(st[G_WDT]):
        status |= 0x10              # ST_WDT_RESET
    if int(st[G_ESTOP]):
        status |= 0x40              # ST_ESTOP
    st[G_STATUS] = status | int(st[G_XSTATUS])


# >> tools/fixedstep/move_end_all.py.in:5
@micropython.viper
def move_end_all(st_a, why: int):
    """End every queued and running move with reason why (recorded in order), stop both profiles."""
    st = ptr32(st_a)
    n = int(st[M_HEADN])
    tail = int(st[M_TAIL])
    while n != tail:
        o = M_SLOTS + (n & 3) * SLS
        ne = int(st[M_NENDS])
        st[M_ENDS + (ne & 3) * 2] = st[o + S_ID]
        st[M_ENDS + (ne & 3) * 2 + 1] = why
        st[M_NENDS] = (ne + 1) & TMASK
        st[o + S_ST] = 0
        n = (n + 1) & TMASK
    st[M_HEADN] = n
    a = M_AX
    while a < M_AX + AXS + AXS:
        st[a + A_BUSY] = 0
        st[a + A_V] = 0
        st[a + A_DEC] = 0
        st[a + A_CPL] = 0
        st[a + A_FRAC] = 0
        a += AXS
    st[M_ON] = 0
    st[M_STALL] = 0
    st[M_SETTLE] = 0
    if why != END_ARRIVED:
        st[M_HVALID] = 0


# >> tools/fixedstep/log.py.in:5
@micropython.viper
def log(st_a, buf_a, hdr_a):
    """Every G_TLM_DIV periods append one record to the telemetry ring (telemetry.Ring: buf, hdr = [head, mask]):
    t_us, then per wheel setpoint and speed (counts/s), output and integrator (Q15 duty), then status."""
    st = ptr32(st_a)
    div = int(st[G_TLM_DIV])
    if div <= 0:
        return
    cnt = int(st[G_TLM_CNT]) + 1
    if cnt < div:
        st[G_TLM_CNT] = cnt
        return
    st[G_TLM_CNT] = 0
    ring = ptr32(buf_a)
    hdr = ptr32(hdr_a)
    sb = int(st[G_SB])
    head = int(hdr[0])
    o = (head & int(hdr[1])) * TLM_REC
    ring[o + TLM_T] = st[G_T0]
    w = 0
    while w < 2:
        b = w * WS
        q = o + TLM_L + w * 4
        ring[q] = (((int(st[b + W_SP]) ^ sb) - sb) + 128) >> VQ
        ring[q + 1] = (((int(st[b + W_VEL]) ^ sb) - sb) + 128) >> VQ
        # the wire's int16 fields: full duty (and an integrator beyond it) clamp at +-32767
        x = ((int(st[b + W_OUT]) ^ sb) - sb) >> 1
        if x > 32767:
            x = 32767
        elif x < -32767:
            x = -32767
        ring[q + 2] = x
        x = ((int(st[b + W_I]) ^ sb) - sb) >> (IQ + 1)
        if x > 32767:
            x = 32767
        elif x < -32767:
            x = -32767
        ring[q + 3] = x
        w += 1
    ring[o + TLM_STATUS] = st[G_STATUS]
    hdr[0] = head + 1               # publish last: the reader never sees a half-written record as new
