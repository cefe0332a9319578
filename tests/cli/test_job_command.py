"""`lavalog job ...` writes exactly the Command `vcctl job ...` writes (volcano-sh/volcano
`pkg/cli/util/util.go` `CreateJobCommand`, type in volcano-sh/apis
`pkg/apis/bus/v1alpha1/commands.go`)."""

from __future__ import annotations

from lavalog.controller.commands import ACTIONS, command_object


def test_the_command_is_vcctls_with_the_target_under_its_json_name():
    controller_ref = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "mpi",
        "uid": "8d1b-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert command_object("team-a", "mpi", "8d1b-uid", "AbortJob") == {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {
            "generateName": "mpi-abortjob-",
            "namespace": "team-a",
            "ownerReferences": [controller_ref],
        },
        "target": controller_ref,
        "action": "AbortJob",
    }


def test_suspend_and_resume_are_vcctls_actions():
    assert (ACTIONS["suspend"], ACTIONS["resume"]) == ("AbortJob", "ResumeJob")
