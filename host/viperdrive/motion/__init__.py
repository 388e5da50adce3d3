# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""SI math above the Board: how a differential-drive robot moves, and the fixed-rate cycle that drives it.

- kinematics.py: twist <-> wheel speeds, the joint saturation and the angular envelope
- drive.py: DriveController (limits, joint saturation and ramp, command timeout, fixed-rate output)
- odometry.py: Odometry from wheel positions (midpoint integration, covariances)
- loop.py: FixedRateLoop (absolute deadlines) and DriveLoop (read -> odometry -> controller -> write)
- scripts.py: scripted drives (square, spin, figure8, a file of segments) closed on the odometry
- arm.py: manipulator kinematics (planar chains: FK, analytic and damped least squares IK)
"""
