"""A fault-injecting HTTP server for the remote-reading tests: loopback only, bounded in requests
and lifetime, stopping by itself.

It serves a directory laid out like Common Crawl (``crawl-data/CC-MAIN-XXXX-XX/wet.paths.gz`` and
the files) with ``Range`` support, ``ETag`` and ``Last-Modified``, and scripts faults per path and
attempt: ``faults[path] = ["cut:300000", None]`` cuts the first response after 300,000 bytes and
serves the second whole. Faults:

- ``cut:N``: headers promise the whole body, the connection closes after N bytes;
- ``short:N``: the same, but the body ends cleanly (the client sees a short body);
- ``status:503:RA`` (``status:429``, ``status:500``...): that status, with ``Retry-After: RA``
  when given;
- ``stall:T``: send half the body, then nothing for T seconds;
- ``trickle:T``: one byte every T seconds (each read gets a byte: only a deadline ends it);
- ``changed``: serve another version of the object (other bytes, other ETag) from now on;
- ``norange``: ignore the Range header (send the whole object, status 200);
- ``status:404``: permanent.

``random_rate`` adds seeded random transient faults (cut, 503, 500, short) to that share of
requests. The server counts requests per path and the most simultaneous connections.
"""
from __future__ import annotations

import gzip
import http.server
import random
import threading
import time
from pathlib import Path
from typing import Optional


class FaultServer:
    MAX_REQUESTS = 20_000
    LIFETIME = 600.0

    def __init__(self, root: Path, faults: Optional[dict] = None, random_rate: float = 0.0,
                 seed: int = 0) -> None:
        self.root = Path(root)
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        self.random_rate = random_rate
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.requests: dict[str, int] = {}
        self.changed: set[str] = set()
        self.open = 0
        self.max_open = 0
        self.total = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                server.handle(self)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.stopped = threading.Event()  # ends a trickle when the test is done
        self.timer = threading.Timer(self.LIFETIME, self.stop)
        self.timer.daemon = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FaultServer:
        self.thread.start()
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopped.set()
        self.timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()

    # ------------------------------------------------------------------ one request

    def _body(self, path: str) -> Optional[bytes]:
        if path.endswith("/"):  # a folder's page (a package index's simple API)
            path += "index.html"
        file = (self.root / path.lstrip("/")).resolve()
        if self.root.resolve() not in file.parents or not file.is_file():
            return None
        data = file.read_bytes()
        if path in self.changed:  # another version: the same records, one page's text altered
            raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
            data = gzip.compress(raw.replace(b"the ", b"teh ", 1))
        return data

    def _fault(self, path: str) -> Optional[str]:
        with self.lock:
            script = self.faults.get(path)
            if script:
                return script.pop(0)
            if self.random_rate and self.rng.random() < self.random_rate:
                return self.rng.choice(["cut:0.5", "status:503:0", "status:500", "short:0.3"])
        return None

    def handle(self, request: http.server.BaseHTTPRequestHandler) -> None:
        with self.lock:
            self.total += 1
            self.open += 1
            self.max_open = max(self.max_open, self.open)
            path = request.path
            self.requests[path] = self.requests.get(path, 0) + 1
            over = self.total > self.MAX_REQUESTS
        try:
            if over:
                request.send_error(503, "request budget of the test server spent")
                return
            self._serve(request, path)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with self.lock:
                self.open -= 1

    def _serve(self, request, path: str) -> None:
        fault = self._fault(path)
        if fault == "changed":
            self.changed.add(path)
            fault = None
        if fault and fault.startswith("status:"):
            _, code, *rest = fault.split(":")
            request.send_response(int(code))
            if rest:
                request.send_header("Retry-After", rest[0])
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        body = self._body(path)
        if body is None:
            request.send_error(404)
            return
        start = 0
        ranged = "" if fault == "norange" else request.headers.get("Range", "")
        if ranged.startswith("bytes="):
            start = int(ranged[6:].split("-")[0])
        etag = f'"{hash((path, path in self.changed)) & 0xFFFFFFFF:08x}"'
        part = body[start:]
        request.send_response(206 if start else 200)
        request.send_header("Content-Length", str(len(part)))
        request.send_header("ETag", etag)
        request.send_header("Accept-Ranges", "bytes")
        if start:
            request.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        request.end_headers()
        if fault and fault.startswith(("cut:", "short:")):
            kind, amount = fault.split(":")
            n = int(float(amount) * len(part)) if "." in amount else int(amount)
            request.wfile.write(part[:n])
            request.wfile.flush()
            request.close_connection = True
            if kind == "cut":
                request.connection.shutdown(2)
            return
        if fault and fault.startswith("trickle:"):
            pause = float(fault.split(":")[1])
            for k in range(len(part)):
                if self.stopped.is_set():
                    break
                request.wfile.write(part[k:k + 1])
                request.wfile.flush()
                self.stopped.wait(pause)
            request.close_connection = True
            return
        if fault and fault.startswith("stall:"):
            half = len(part) // 2
            request.wfile.write(part[:half])
            request.wfile.flush()
            time.sleep(float(fault.split(":")[1]))
            request.close_connection = True
            return
        request.wfile.write(part)
