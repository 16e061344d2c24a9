"""A stand-in for Flickr's REST API on loopback, for the daemon benchmark: every search near a point finds
one photo 20 m north-east of it, and every download gets the same real JPEG (640 px, from demo/photos).
The responses have the shape Sources/FieldLogTestSupport/FakeFlickr.swift serves (and Flickr does).
"""
import datetime
import http.server
import json
import threading
import urllib.parse

from pathlib import Path

API_KEY = "bench0123456789abcdef0123456789ab"


class FakeFlickr:
    def __init__(self, jpeg: Path):
        self.jpeg = jpeg.read_bytes()
        self.searches = 0
        self.downloads = 0
        handler = self._handler()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}/services/rest/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()

    def _handler(self):
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                if url.path.startswith("/img/"):
                    fake.downloads += 1
                    return self.reply("image/jpeg", fake.jpeg)
                query = dict(urllib.parse.parse_qsl(url.query))
                if query.get("api_key") != API_KEY:
                    return self.reply("application/json", b'{"stat":"fail","code":100,"message":"Invalid API Key"}')
                fake.searches += 1
                lat, lon = float(query["lat"]), float(query["lon"])
                photo_id = f"{abs(round(lat * 1e5))}{abs(round(lon * 1e5))}"
                # Ten minutes apart, as a walker's own photos would be: one owner's shots seconds apart are a
                # burst, of which fieldlog shows one.
                taken = (datetime.datetime(2024, 5, 18, 9) + datetime.timedelta(minutes=10 * fake.searches)).strftime(
                    "%Y-%m-%d %H:%M:%S")
                photo = {
                    "id": photo_id, "owner": "12345678@N00", "secret": "abc123", "server": "65535", "farm": 66,
                    "title": f"Near {lat:.4f}, {lon:.4f}", "ispublic": 1, "license": 4, "ownername": "Bench",
                    "datetaken": taken, "latitude": lat + 0.00013, "longitude": lon + 0.00022,
                    "accuracy": "16", "url_z": f"http://127.0.0.1:{fake.port}/img/{photo_id}.jpg",
                    "height_z": 480, "width_z": "640",
                }
                body = {"photos": {"page": 1, "pages": 1, "perpage": 100, "total": 1, "photo": [photo]}, "stat": "ok"}
                self.reply("application/json", json.dumps(body).encode())

            def reply(self, content_type, body):
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler
