"""Starting a container when its NodeManager is restarting: the AM retries, and a retry that finds the container
already on the node (an earlier try started it and lost its answer) counts as started, not as a failed launch
that would run the task again elsewhere."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from am.client import ContainerLaunchError, NMClient, NMTokenCache
from proto import shepherd_pb2 as pb

CID = "container_1700000000000_0001_01_000002"
CONTAINER = pb.Container(container_id=CID, node_id=pb.NodeId(host="127.0.0.1", port=1))
EXISTS = f"Container {CID} already exists on this node: it already is running (a container is launched once)"


class Answers(NMClient):
    """An NMClient whose NodeManager answers from a script: an exception to raise or a response to return."""

    def __init__(self, *answers: Any) -> None:
        super().__init__(NMTokenCache())
        self.answers = list(answers)
        self.calls = 0

    async def _call(self, operation: str, node: str, request: Any) -> Any:
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def unavailable() -> ContainerLaunchError:
    return ContainerLaunchError("StartContainers", "UNAVAILABLE", "connection refused", retryable=True)


def exists() -> pb.StartContainersResponse:
    return pb.StartContainersResponse(failed=[pb.ContainerError(container_id=CID, exception="YarnException",
                                                                message=EXISTS)])


def start(client: NMClient, retry_s: float = 5.0) -> None:
    asyncio.run(client.start_container(CONTAINER, pb.ContainerLaunchContext(commands=["true"]), retry_s=retry_s))


def test_a_restarting_node_is_tried_again_until_it_starts_the_container() -> None:
    client = Answers(unavailable(), unavailable(), pb.StartContainersResponse(succeeded=[CID]))
    start(client)
    assert client.calls == 3


def test_a_retry_that_finds_the_container_running_counts_as_started() -> None:
    client = Answers(unavailable(), exists())
    start(client)  # no error: the task is not run again elsewhere
    assert client.calls == 2


def test_a_first_try_that_finds_the_container_is_still_an_error() -> None:
    with pytest.raises(ContainerLaunchError, match="already exists"):
        start(Answers(exists()))


def test_a_node_that_stays_away_fails_the_launch_in_the_end() -> None:
    client = Answers(*[unavailable() for _ in range(20)])
    with pytest.raises(ContainerLaunchError, match="UNAVAILABLE"):
        start(client, retry_s=0.5)
    assert 2 <= client.calls < 20
