# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive dashboard`: the board's tuning and status page, served to a browser on this machine.

core.Dashboard owns the board on one thread (the streams, the commands, the page's deadman); server.DashboardServer
serves the page (static/: HTML, script and style written here, no library and no CDN), a Server-Sent Events stream
and a JSON API, behind a token, a Host check and an Origin check (docs/dashboard.md); api checks every command's
fields, types and ranges in one place."""
