"""A new leader starts from the decider's view: what it lacks on the first list was
deleted while nobody watched, and is published as such under the usual ids."""

from __future__ import annotations

from msgspec.structs import replace

from lavalog.controller.decider.core.state import JobState, PodGroupRecord
from lavalog.controller.watchers.core import translate
from lavalog.controller.watchers.core.changes import ChangeType, relisted
from lavalog.controller.watchers.core.objects import Job, ObjectMeta
from lavalog.controller.watchers.core.translate import Translator
from lavalog.controller.watchers.service.unwatched import known_jobs, known_podgroups
from lavalog.events.observations import JobDeleted, PodGroupObserved


def state(name: str, uid: str, *, namespace: str = "team", podgroup_uid: str = "") -> JobState:
    group = PodGroupRecord(name=f"{name}-{uid}", uid=podgroup_uid) if podgroup_uid else None
    return replace(JobState(key=f"{namespace}/{name}"), uid=uid, podgroup=group)


def listed(name: str, uid: str, namespace: str = "team") -> Job:
    return Job(metadata=ObjectMeta(name=name, namespace=namespace, uid=uid, resource_version="7"))


def test_a_job_the_decider_has_and_the_list_lacks_is_published_deleted() -> None:
    states = [state("gone", "u1"), state("kept", "u2"), state("renamed", "u3")]
    known = known_jobs(states, namespace=None)
    # "renamed" was deleted and made again under the same name: a new uid
    changes = relisted(known, [listed("kept", "u2"), listed("renamed", "u4")])
    translator = Translator(translate.JOBS)
    deleted = [translator.deleted(c.obj, 5.0) for c in changes if c.type is ChangeType.DELETED]
    assert deleted == [
        JobDeleted(id="job/u1/deleted", key="team/gone", job_uid="u1", time=5.0),
        JobDeleted(id="job/u3/deleted", key="team/renamed", job_uid="u3", time=5.0),
    ]
    # those still there are published again, with the ids they had
    again = [translator.changed(c.obj, 5.0) for c in changes if c.type is not ChangeType.DELETED]
    assert [o.id for o in again if o is not None] == ["job/u2/0", "job/u4/0"]


def test_a_podgroup_the_decider_has_and_the_list_lacks_is_published_deleted() -> None:
    states = [state("a", "u1", podgroup_uid="pg1"), state("b", "u2")]
    known = known_podgroups(states, namespace=None)
    assert list(known) == ["pg1"]  # a job without an observed PodGroup has none to lose
    [change] = relisted(known, [])
    observation = Translator(translate.PODGROUPS).deleted(change.obj, 5.0)
    assert isinstance(observation, PodGroupObserved)
    assert (observation.id, observation.key, observation.job_uid, observation.podgroup) == (
        "podgroup/pg1/deleted",
        "team/a",
        "u1",
        "a-u1",
    )
    assert observation.deleted


def test_only_the_watched_namespace_and_known_jobs_count() -> None:
    states = [state("a", "u1"), state("b", "u2", namespace="other"), state("early", "")]
    assert list(known_jobs(states, namespace="team")) == ["u1"]
    assert list(known_jobs(states, namespace=None)) == ["u1", "u2"]
