"""`watch --serve`: the output folder on localhost (the standard library's http.server), and a
page that reloads itself after a rebuild. Each HTML page served gets a few lines of script that
ask /__chalkboard__/version every half second and reload the page when the answer changes; the
script is added as the page is served, never to the file written. Nothing is cached by the
browser, so a reload shows what is in the folder now."""
from __future__ import annotations

import errno
import http.server
import secrets
import threading
from functools import partial
from pathlib import Path

from ..runtime.lifecycle import held

VERSION_PATH = "/__chalkboard__/version"
RELOAD_SCRIPT = ("<script>/* chalkboard watch --serve: reload after a rebuild (only in served pages) */\n"
                 "(function(){var seen=null;setInterval(function(){fetch('" + VERSION_PATH + "',{cache:'no-store'})"
                 ".then(function(r){return r.text()}).then(function(v){if(seen===null)seen=v;"
                 "else if(v!==seen)location.reload()}).catch(function(){})},500)})();</script>\n")


class Version:
    """What the served pages compare: this run's token and a count of rebuilds."""

    def __init__(self):
        self.token, self.count, self.lock = secrets.token_hex(4), 0, threading.Lock()

    def bump(self) -> None:
        with self.lock:
            self.count += 1

    def __str__(self) -> str:
        return f"{self.token}-{self.count}"


def with_reload(html: bytes) -> bytes:
    """The page with the reload script before its closing </body> (at its end if it has none)."""
    at = html.lower().rfind(b"</body>")
    script = RELOAD_SCRIPT.encode()
    return html + script if at < 0 else html[:at] + script + html[at:]


class _Handler(http.server.SimpleHTTPRequestHandler):
    version: Version = None

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format, *args):   # quiet: the loop's lines are the rebuilds'
        pass

    def do_GET(self):
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        if path == VERSION_PATH:
            return self._send(str(self.version).encode(), "text/plain; charset=utf-8")
        if path == "/":
            self.send_response(302)
            self.send_header("Location", "/report.html")
            self.end_headers()
            return None
        local = Path(self.translate_path(path))
        if local.suffix == ".html" and local.is_file():
            try:
                body = local.read_bytes()
            except OSError:
                return self.send_error(404)
            return self._send(with_reload(body), "text/html; charset=utf-8")
        return super().do_GET()

    def _send(self, body: bytes, kind: str):
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server:
    """The output folder served on 127.0.0.1:``port`` (0: a free port) from a thread."""

    def __init__(self, out: Path, port: int, version: Version):
        from ..cli.common import UserError

        handler = type("Handler", (_Handler,), {"version": version})
        try:
            self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), partial(handler, directory=str(out)))
        except OSError as e:
            hint = "; choose another with --port" if e.errno == errno.EADDRINUSE else ""
            raise UserError(f"--port {port}: {e.strerror or e}{hint}") from None
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/report.html"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="serve", daemon=True)
        with held():   # started holding the user's signals, as its request threads will: they reach the main thread
            self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
