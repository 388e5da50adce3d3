# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""~/clear_fault (std_srvs/Trigger): the one way the ROS graph clears a board's latched fault, on a person's
decision. The bridge never clears a latched safety fault on its own (viperdrive.board.recovery).

CLEAR_FAULT on the board, then success only when nothing is latched any more: an e-stop whose circuit is still
open stays latched (success false, and the message says so); a board that does not answer is a failure with the
reason. After a clear the bridge takes the board back on its next tick (recovery), and it moves again only on a
command newer than that.
"""
import logging
from collections.abc import Callable

from viperdrive.shared import protocol

from ..board.records import fault_text
from ..board.recovery import LINK, Recovery
from ..errors import UserError
from . import msgs, qos
from .node import RosNode, take_valid

log = logging.getLogger("viperdrive.ros2")

NODE_NAME = "viperdrive"        # the ROS node name the graph shows (in the bridge's namespace)
CLEAR_FAULT_SERVICE = NODE_NAME + "/clear_fault"    # ~/clear_fault of that node: /NS/viperdrive/clear_fault


class ClearFaultService:
    """The service of one bridge. board: its Board; recovery: its Recovery; on_cleared(): called when the board
    confirmed nothing is latched (the bridge forgets the board's fault account)."""

    def __init__(self, node: RosNode, board, recovery: Recovery, on_cleared: Callable[[], None]):
        self.board = board
        self.recovery = recovery
        self._on_cleared = on_cleared
        self.calls = 0                  # requests answered
        self.requests, self.replies = node.service(CLEAR_FAULT_SERVICE, msgs.TriggerRequest, msgs.TriggerResponse,
                                                   qos.default_qos())

    def serve(self) -> None:
        """Answer each request waiting (at most 8 a tick)."""
        for rq in take_valid(self.requests, 8):
            ok, text = self.clear()
            self.calls += 1
            (log.warning if ok else log.error)("~/clear_fault: %s", text)
            reply = msgs.TriggerResponse(client_guid=rq.client_guid, sequence_number=rq.sequence_number,
                                         success=ok, message=text)
            try:
                self.replies.write(reply)
            except Exception as e:      # a client that left: nothing to answer
                log.warning("~/clear_fault: reply not sent (%s: %s)", type(e).__name__, e)

    def clear(self) -> tuple[bool, str]:
        """(success, the sentence for the reply and the log)."""
        outage = self.recovery.outage
        if outage is not None and outage.kind == LINK:
            return False, f"the board is not reachable ({outage.reason}): nothing cleared"
        try:
            cleared = self.board.clear_fault()
            code = self.board.diag().get("fault_code", 0) or 0
        except UserError as e:
            return False, f"the board did not clear: {e}"
        if code:
            return False, (f"still latched: {fault_text(code)}" + (
                " (the e-stop circuit is open: close it first)" if code == protocol.FAULT_ESTOP else ""))
        self._on_cleared()
        self.recovery.cleared()
        if not cleared:
            return True, "no fault was latched"
        if self.recovery.policy == "never" and outage is not None:
            return True, f"cleared {fault_text(cleared)}; --recover never: restart the bridge to drive again"
        return True, f"cleared {fault_text(cleared)}; the board is taken back, and moves on a new command"
