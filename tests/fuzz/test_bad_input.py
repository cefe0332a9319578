"""Bad input never stops the controller (issue 9, item 5).

Broken Job, Pod, PodGroup and Command objects are sent to the simulated cluster's API
server, as strict as a real one: what it refuses (a 4xx, say a null where its schema
wants a string) a real cluster cannot hold either, and is no input for the controller;
what it accepts reaches the watchers. Random bytes go to every topic. The controller keeps
running and keeps working (a job submitted afterwards runs its normal course, after a
restart too), every Job whose spec is at fault is rejected with a Warning Event and a
Failed status, and every undecodable message on `lavalog.observed` is dead-lettered.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import partial

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.harness import read_topic
from lavalog.controller.kafka import KafkaSettings, create_producer, ensure_topics, topic_name
from lavalog.controller.kube import KubeError
from lavalog.events import topics
from lavalog.events.deadletter import DeadLetter
from lavalog.simulator import registry
from lavalog.simulator.selectors import Selector
from tests.e2e.conftest import (
    JOBS,
    NAMESPACE,
    System,
    job_phase,
    make_kafka,
    running_system,
)
from tests.e2e.jobs import job, task
from tests.fuzz.objects import Obj, base_command, base_job, base_pod, base_podgroup, broken

pytestmark = pytest.mark.integration

EVERYTHING = Selector()

#: hypothesis runs synchronously inside the async test: each example only writes
FUZZ = settings(
    max_examples=60,
    deadline=None,
    database=None,
    # the same seed every run; the examples still vary with the process (hypothesis mixes
    # in constants of every local module imported so far), so the assertions that need
    # some broken Jobs of each kind count on `REFUSED` too
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
P, R = "Pending", "Running"
#: Jobs three times as often: most broken Jobs fail the schema and never reach lavalog
KINDS = ["job", "job", "job", "pod", "podgroup", "command"]
#: where each kind is created (the body's own apiVersion and kind may be broken)
COLLECTIONS = {
    "job": JOBS,
    "pod": f"/api/v1/namespaces/{NAMESPACE}/pods",
    "podgroup": f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{NAMESPACE}/podgroups",
    "command": f"/apis/bus.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/commands",
}
#: the API server validates every kind's metadata (the store indexes by it); what it
#: leaves to each kind's schema is broken: a Job's spec, a pod's or PodGroup's status
#: (their spec feeds the simulator's own scheduler), a Command's action and target
METADATA = (("metadata",),)


def _refused(name: str, edit: Callable[[Obj], None]) -> Obj:
    manifest = base_job(name)
    edit(manifest["spec"])
    return manifest


#: broken Jobs of the fuzz's own kinds (a value of the right type, wrong for admission)
#: that the schema lets through and admission refuses, whatever the draw
REFUSED = [
    _refused("refused-task-twice", lambda spec: spec["tasks"][1].update(name="ps")),
    _refused("refused-action", lambda spec: spec["policies"][0].update(action="PodFailed")),
    _refused("refused-min-available", lambda spec: spec.update(minAvailable=5)),
]


async def kafka_for(bootstrap: str) -> KafkaSettings:
    kafka = make_kafka(bootstrap)
    await ensure_topics(kafka)
    return kafka


async def runs_normally(system: System, name: str) -> None:
    """A job submitted now goes Pending, Running, Completed: the controller works."""
    await system.submit(job(name, task("worker", 2, "sleep 20")))
    await system.until_phase(name, ["Completed", "Failed"], 60)
    assert system.log.phase_path(name) == [P, R, "Completed"]


def has_phase(system: System, name: str) -> bool:
    return job_phase(system.log.job(name)) != ""


def has_rejection_event(system: System, name: str) -> bool:
    return any(
        e.obj.get("involvedObject", {}).get("name") == name
        and e.obj.get("reason") == "InvalidSpec"
        and e.obj.get("type") == "Warning"
        for e in system.cluster.objects.store.scan(registry.EVENT, NAMESPACE, EVERYTHING)
    )


async def test_broken_objects_through_the_watchers(kafka_broker: str) -> None:
    async with running_system(await kafka_for(kafka_broker)) as system:
        numbers = itertools.count()
        drawn: list[tuple[str, Obj]] = []

        @FUZZ
        @given(kind=st.sampled_from(KINDS), data=st.data())
        def draw(kind: str, data: st.DataObject) -> None:
            n = next(numbers)
            ghost = f"ghost-{n}"  # a job the controller does not know
            if kind == "job":
                obj = data.draw(broken(base_job(f"fuzz-{n}"), within=("spec",)))
            elif kind == "pod":
                obj = data.draw(broken(base_pod(f"{ghost}-worker-0", ghost), within=("status",)))
            elif kind == "podgroup":
                obj = data.draw(broken(base_podgroup(f"{ghost}-pg", ghost), within=("status",)))
            else:
                obj = data.draw(broken(base_command(f"{ghost}-cmd", ghost), keep=METADATA))
            drawn.append((kind, obj))

        draw()
        drawn += [("job", manifest) for manifest in REFUSED]
        jobs = [
            obj["metadata"]["name"]
            for kind, obj in drawn
            if await accepted(system, COLLECTIONS[kind], obj) and kind == "job"
        ]
        assert jobs, "the API server accepts some of the broken Jobs"

        # every broken Job the server accepted is either admitted or rejected, none ignored
        for name in jobs:
            await system.log.until(partial(has_phase, system, name), 30, str(system.log.job(name)))
        rejected = [
            n
            for n in jobs
            if (system.log.job(n) or {})["status"]["state"].get("reason") == "InvalidSpec"
        ]
        for name in rejected:
            found = system.log.job(name) or {}
            assert job_phase(found) == "Failed" and system.log.phase_path(name) == ["Failed"], name
            await system.log.until(partial(has_rejection_event, system, name), 30, name)
        print(f"{len(drawn)} broken objects, {len(jobs)} Jobs accepted, {len(rejected)} refused")
        assert {m["metadata"]["name"] for m in REFUSED} <= set(rejected)
        await runs_normally(system, "after-broken-objects")
        assert not system.replicas[0].task.done()


async def accepted(system: System, collection: str, obj: Obj) -> bool:
    """Create `obj` through the API server; False when it refuses it as invalid."""
    try:
        await system.kube.request("POST", collection, body=obj)
    except KubeError as exc:
        if 400 <= exc.status < 500:
            return False
        raise
    return True


async def test_random_bytes_on_every_topic(kafka_broker: str) -> None:
    kafka = await kafka_for(kafka_broker)
    async with running_system(kafka) as system:
        messages: list[tuple[str, bytes | None, bytes]] = []

        @FUZZ
        @given(
            topic=st.sampled_from(topics.ALL_TOPICS),
            key=st.none() | st.binary(max_size=20) | st.just(f"{NAMESPACE}/victim".encode()),
            value=st.binary(max_size=200),
        )
        def collect(topic: str, key: bytes | None, value: bytes) -> None:
            messages.append((topic, key, value))

        collect()
        sent: set[tuple[int, int]] = set()
        async with create_producer(kafka) as producer:
            for topic, key, value in messages:
                done = await producer.send_and_wait(topic_name(kafka, topic), value, key=key)
                if topic == topics.OBSERVED:
                    sent.add((done.partition, done.offset))

        await runs_normally(system, "after-bytes")
        await system.replicas[0].halt()  # a new replica restores from the garbage too
        await system.start_replica("e2e-2")
        await system.ready()
        await runs_normally(system, "after-restart")

        letters = await read_topic(kafka, topics.DEADLETTER, kafka.deadletter_partitions)
        decoded = []
        for record in letters:
            try:
                decoded.append(msgspec.json.decode(record.value, type=DeadLetter))
            except msgspec.DecodeError:
                continue  # our own random bytes on the dead letter topic
        observed = topic_name(kafka, topics.OBSERVED)
        assert {(d.partition, d.offset) for d in decoded if d.topic == observed} == sent
        assert all(d.consumer == "decider" for d in decoded)
