#!/usr/bin/env python3
"""Dispatch console benchmark: a demo server with 4,990 more orders imported
through the console's CSV import, then 60 requests per page over one
keep-alive connection; prints median and p90 milliseconds and page sizes.
The issue's aim: the board with 5,000 orders in <= 30 ms median on SQLite,
a page <= 100 KB of HTML+CSS+JS.

    scripts/console-bench.py            (VROOMX_BINARY=.build/release/vroomx to measure a release build)
"""
import http.client, os, re, socket, subprocess, tempfile, time, statistics, urllib.parse
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
data = tempfile.mkdtemp(prefix="vroomx-console-bench-")
binary = os.environ.get("VROOMX_BINARY", os.path.join(root, ".build/debug/vroomx"))
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]
log = open(data + "/log", "w")
p = subprocess.Popen([binary, "serve", "--demo", "--port", str(port)], env=dict(os.environ, VROOMX_DATA_DIR=data), stdout=log, stderr=subprocess.STDOUT)
time.sleep(4)
c = http.client.HTTPConnection("127.0.0.1", port)
cookies = {}
def req(method, path, body=None, headers={}):
    h = dict(headers); h["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items()); h["Origin"] = f"http://127.0.0.1:{port}"
    if body is not None: h["Content-Type"] = "application/x-www-form-urlencoded"
    c.request(method, path, body=body, headers=h); r = c.getresponse(); text = r.read()
    for k, v in r.getheaders():
        if k.lower() == "set-cookie":
            name, val = v.split(";")[0].split("=", 1); cookies[name] = val
    return r.status, text.decode()
s, html = req("GET", "/sign-in")
token = re.search(r'name="_signin" value="([^"]+)"', html).group(1)
email = "dispatch@demo-carrier.example"
req("POST", "/sign-in", urllib.parse.urlencode({"email": email, "_signin": token}))
time.sleep(0.5)
code = re.findall(r"sign-in code: (\d{6})", open(data + "/log").read())[-1]
s, _ = req("POST", "/sign-in/code", urllib.parse.urlencode({"email": email, "code": code, "_signin": token}))
s, html = req("GET", "/board")
csrf = re.search(r'name="_csrf" value="([^"]+)"', html).group(1)
lines = ["number,pickup_address,delivery_address,revenue,year,make,model,vin,pickup_from,pickup_name,delivery_name"]
for i in range(4990):
    lines.append(f"B-{i:05d},\"{i} Harbor Rd, Savannah, GA\",\"{i} Main St, Orlando, FL\",{900 + i % 300},2019,Toyota,Camry,4T1B11HK5KU{i:06d},2026-12-{1 + i % 28:02d},Lot {i},Dealer {i}")
t = time.time()
s, html = req("POST", "/orders/import", urllib.parse.urlencode({"csv": "\n".join(lines), "_csrf": csrf}))
print("import 4,990 orders:", s, f"{time.time() - t:.2f} s")
for path in ["/board?status=new", "/board?status=new&q=camry&sort=pickup_desc&page=40", "/trips", "/drivers"]:
    times = []
    for _ in range(60):
        t = time.perf_counter(); s, html = req("GET", path); times.append((time.perf_counter() - t) * 1000)
    print(f"{path}: median {statistics.median(times):.1f} ms, p90 {sorted(times)[53]:.1f} ms, {len(html.encode())} bytes HTML")
css = os.path.getsize(os.path.join(root, "Sources/VroomXServer/Console/Static/console.css")); js = os.path.getsize(os.path.join(root, "Sources/VroomXServer/Console/Static/console.js"))
print(f"css {css} bytes, js {js} bytes")
p.terminate(); p.wait(timeout=30)
