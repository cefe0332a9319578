"""Commands reach the job they name, as in Volcano (which goes by `target.name`)."""

from __future__ import annotations

from msgspec.structs import replace

from tests.decider.support import command, given, phases, when


def test_a_command_whose_target_has_no_uid_acts_on_the_job_of_that_name():
    _, decisions = when(given("Running"), replace(command("AbortJob"), job_uid=""))
    assert phases(decisions)[:1] == ["Aborting"]
