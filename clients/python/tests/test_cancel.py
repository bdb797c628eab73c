"""Cancelling a governed call: an asyncio task cancelled while toolgate
waits for a person closes the approval request; one cancelled while the
function runs stops it and is audited as cancelled."""

from __future__ import annotations

import asyncio

import pytest

from toolgate import Toolgate

from .conftest import Daemon, wait_for


def test_cancelling_a_call_waiting_for_approval_closes_the_request(daemon: Daemon) -> None:
    ran: list[int] = []
    with Toolgate("cancel-waiting") as tg:

        @tg.govern
        async def slow_delete(record: int) -> str:
            """Deletes a record (a person must approve)."""
            ran.append(record)
            return "deleted"

        async def scenario() -> None:
            task = asyncio.create_task(slow_delete(5))
            req = await asyncio.to_thread(
                wait_for,
                "the approval request",
                lambda: next((r for r in daemon.approvals() if r["tool"] == "slow_delete"), None),
            )
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.to_thread(
                wait_for,
                "the request to be closed",
                lambda: True if all(r["id"] != req["id"] for r in daemon.approvals()) else None,
            )

        asyncio.run(scenario())
        assert ran == []
        row = daemon.audit_row("slow_delete", error_kind="cancelled")
        assert row["caller"]["agent_id"] == "cancel-waiting"
        # The connection stays usable after a cancel.
        assert tg.register([]) == []


def test_cancelling_a_running_call_reports_it_cancelled(daemon: Daemon) -> None:
    with Toolgate("cancel-running") as tg:
        started = asyncio.Event()
        finished: list[bool] = []

        @tg.govern
        async def long_job(seconds: int) -> str:
            """Runs for a while."""
            started.set()
            await asyncio.Event().wait()  # until cancelled
            finished.append(True)
            return "done"

        async def scenario() -> None:
            task = asyncio.create_task(long_job(60))
            await asyncio.wait_for(started.wait(), 20)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(scenario())
        assert finished == []
        row = daemon.audit_row("long_job", error_kind="cancelled")
        assert row["caller"]["agent_id"] == "cancel-running"
        assert row["decision"] == "allowed"
