"""A TCP proxy that can cut every connection through it: fault drills against a local cluster (the state store
unreachable, in tests/integration/test_store_faults.py and bench/soak.py)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Self


class Proxy:
    """A TCP proxy on 127.0.0.1 in its own thread; ``cut()`` drops every connection and refuses new ones until
    ``restore()``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="pg-proxy")
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.StreamWriter] = set()

    def __enter__(self) -> Self:
        self._thread.start()
        self._call(self._listen())
        return self

    def __exit__(self, *exc: object) -> None:
        self._call(self._close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    def cut(self) -> None:
        self._call(self._close())

    def restore(self) -> None:
        self._call(self._listen())

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for w in list(self._conns):
            w.transport.abort()
        self._conns.clear()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._conns |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._conns -= {writer, up_writer}
